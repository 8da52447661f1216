"""The DeepSpeed config: read (dict or JSON file), validated (pydantic), then filled from the
Trainer's flags. Settings the Trainer owns may appear in the config only with the same value;
a contradiction is a ``ConfigurationError`` that names both settings and the fix.

Imports pydantic, not torch or deepspeed, so the rules can be checked anywhere.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fulmen import ConfigurationError

STAGES = {0: "off (plain data parallel through the engine)", 1: "optimizer state sharded",
          2: "optimizer state and gradients sharded",
          3: "parameters, gradients and optimizer state sharded"}
# Every key DeepSpeed 0.19.8's zero_optimization section accepts (it refuses others at engine
# start); checked here so a typo fails when the strategy is built, with a suggestion.
_ZERO_KEYS_TEXT = """
allgather_bucket_size allgather_partitions allgather_sequential compute_grad_norm
contiguous_gradients cpu_offload cpu_offload_param cpu_offload_use_pin_memory elastic_checkpoint
enable_sanity_checks gather_16bit_weights_on_model_save ignore_unused_parameters leaf_module
legacy_stage1 load_from_fp32_weights log_trace_cache_warnings max_live_parameters
max_reuse_distance memory_efficient_linear model_persistence_threshold
module_granularity_threshold offload_optimizer offload_param overlap_comm override_module_apply
param_persistence_threshold parameter_alignment pipeline_loading_checkpoint prefetch_bucket_size
reduce_bucket_size reduce_scatter round_robin_gradients save_muon_momentum_buffer_in_memory stage
stage3_allgather_sequential stage3_gather_16bit_weights_on_model_save
stage3_gather_fp16_weights_on_model_save stage3_max_live_parameters stage3_max_reuse_distance
stage3_model_persistence_threshold stage3_module_granularity_threshold
stage3_param_persistence_threshold stage3_prefetch_bucket_size
stage3_use_all_reduce_for_fetch_params sub_group_size use_all_reduce_for_fetch_params
use_multi_rank_bucket_allreduce zenflow zero_hpz_partition_size zero_quantized_gradients
zero_quantized_nontrainable_weights zero_quantized_weights"""
ZERO_KEYS = frozenset(_ZERO_KEYS_TEXT.split())
PRECISION_SECTIONS = {"16-mixed": "fp16", "bf16-mixed": "bf16", "32-true": None}


class _Open(BaseModel):
    """A section that keeps DeepSpeed settings it does not name (DeepSpeed checks them)."""

    model_config = ConfigDict(extra="allow")


class OffloadOptions(_Open):
    """``offload_optimizer`` / ``offload_param``: where the state lives between uses."""

    device: Literal["cpu", "nvme", "none"] = "cpu"
    nvme_path: str | None = None
    pin_memory: bool | None = None


class ZeroOptions(_Open):
    """The common ZeRO settings (``zero_optimization``); others pass through to DeepSpeed."""

    stage: int = 2
    offload_optimizer: OffloadOptions | None = None
    offload_param: OffloadOptions | None = None
    contiguous_gradients: bool | None = None
    overlap_comm: bool | None = None
    allgather_partitions: bool | None = None
    allgather_bucket_size: int | None = Field(default=None, gt=0)
    reduce_scatter: bool | None = None
    reduce_bucket_size: int | None = Field(default=None, gt=0)
    round_robin_gradients: bool | None = None
    sub_group_size: int | None = Field(default=None, gt=0)
    stage3_prefetch_bucket_size: int | None = Field(default=None, ge=0)
    stage3_param_persistence_threshold: int | None = Field(default=None, ge=0)
    stage3_max_live_parameters: int | None = Field(default=None, ge=0)
    stage3_max_reuse_distance: int | None = Field(default=None, ge=0)
    stage3_gather_16bit_weights_on_model_save: bool | None = None


class HalfOptions(_Open):
    """``fp16`` / ``bf16``: ``enabled`` must agree with the Trainer's precision."""

    enabled: bool = False


class DeepSpeedConfig(_Open):
    """A DeepSpeed config as fulmen reads it (top-level keys it does not name pass through)."""

    zero_optimization: ZeroOptions = Field(default_factory=ZeroOptions)
    fp16: HalfOptions | None = None
    bf16: HalfOptions | None = None
    train_batch_size: int | None = Field(default=None, gt=0)
    train_micro_batch_size_per_gpu: int | None = Field(default=None, gt=0)
    gradient_accumulation_steps: int | None = Field(default=None, gt=0)
    gradient_clipping: float | None = Field(default=None, ge=0)
    zero_allow_untested_optimizer: bool = True
    zero_force_ds_cpu_optimizer: bool = False
    steps_per_print: int | None = Field(default=None, gt=0)
    optimizer: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None


def read_config(config: dict[str, Any] | str | Path | None) -> DeepSpeedConfig:
    """A validated config from a dict, a JSON file path, or nothing (the defaults)."""
    if config is None:
        return DeepSpeedConfig()
    where = "config"
    if isinstance(config, str | Path):
        path = Path(config)
        where = f"config={str(config)!r}"
        if not path.is_file():
            raise ConfigurationError(f"DeepSpeedStrategy({where}): no such file. Pass the path "
                                     "of a DeepSpeed JSON config, or a dict")
        text = path.read_text()
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            line = text.splitlines()[exc.lineno - 1] if text.splitlines() else ""
            raise ConfigurationError(
                f"DeepSpeedStrategy({where}) is not valid JSON: {exc.msg} at line {exc.lineno} "
                f"column {exc.colno} (character {exc.pos}):\n    {line}\n    "
                f"{' ' * (exc.colno - 1)}^\nFix the file (JSON has no comments or trailing "
                "commas), or pass a dict") from exc
    if not isinstance(config, dict):
        raise ConfigurationError(f"DeepSpeedStrategy({where}) must hold a JSON object (a dict "
                                 f"of DeepSpeed settings), got {type(config).__name__}")
    try:
        options = DeepSpeedConfig.model_validate(config)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (got {e.get('input')!r})"
            for e in exc.errors())
        raise ConfigurationError(f"DeepSpeedStrategy({where}) has invalid settings: "
                                 f"{problems}") from None
    for key in sorted(set(options.zero_optimization.model_extra or {}) - ZERO_KEYS):
        close = difflib.get_close_matches(key, sorted(ZERO_KEYS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigurationError(f"DeepSpeedStrategy({where}): zero_optimization has no setting "
                                 f"{key!r}.{hint} DeepSpeed's ZeRO settings: "
                                 f"{', '.join(sorted(ZERO_KEYS))}")
    return options


def check_zero(stage: int, offload_optimizer: bool, offload_parameters: bool) -> None:
    """Reject a stage ZeRO does not have, and offload the stage cannot do."""
    stages = ", ".join(f"{k} ({v})" for k, v in STAGES.items())
    if isinstance(stage, bool) or stage not in STAGES:
        raise ConfigurationError(f"DeepSpeedStrategy(stage={stage!r}): ZeRO has stages "
                                 f"{stages}. Use one of them, or a strategy name "
                                 "deepspeed_stage_1/2/3[_offload]")
    if offload_optimizer and stage < 1:
        raise ConfigurationError(f"DeepSpeedStrategy(stage={stage}, offload_optimizer=True): "
                                 "optimizer offload needs ZeRO stage 1, 2 or 3. Use stage=2 "
                                 "(strategy='deepspeed_stage_2_offload')")
    if offload_parameters and stage < 3:
        raise ConfigurationError(
            f"DeepSpeedStrategy(stage={stage}, offload_parameters=True): only ZeRO stage 3 "
            "shards parameters, so only it can offload them. Use stage=3 "
            "(strategy='deepspeed_stage_3_offload'), or offload_optimizer=True alone")


def _same(ours: Any, theirs: Any) -> bool:
    return ours == theirs or (isinstance(ours, int | float) and isinstance(theirs, int | float)
                              and float(ours) == float(theirs))


def fill(options: DeepSpeedConfig, *, precision: str, world_size: int,
         accumulate_grad_batches: int | None = None, gradient_clip_val: float | None = None,
         gradient_clip_algorithm: str = "norm", batch_size: int | None = None,
         owner: str = "Trainer") -> dict[str, Any]:
    """The DeepSpeed config dict: ``options`` plus what the Trainer's flags say.

    ``None`` means "the Trainer does not say" (Lite): the config's value, else DeepSpeed's
    default, is used.
    """
    config = options.model_dump(exclude_none=True)
    section = PRECISION_SECTIONS.get(precision, "?")
    if section == "?":
        raise ConfigurationError(f"DeepSpeed runs precision '32-true', '16-mixed' or "
                                 f"'bf16-mixed'; {owner}(precision={precision!r}) is none of them")
    for name in ("fp16", "bf16"):
        enabled = bool(config.get(name, {}).get("enabled"))
        if enabled and name != section:
            want = next(k for k, v in PRECISION_SECTIONS.items() if v == name)
            raise ConfigurationError(
                f"the DeepSpeed config enables {name} ({name}.enabled=true) but "
                f"{owner}(precision={precision!r}) asks for "
                f"{'float32' if section is None else section}. Set {owner}(precision={want!r})"
                f", or remove the {name!r} section: fulmen fills it from the precision")
    if section is not None:
        config[section] = {**config.get(section, {}), "enabled": True}

    if accumulate_grad_batches is not None:
        _agree(config, "gradient_accumulation_steps", accumulate_grad_batches,
               f"{owner}(accumulate_grad_batches={accumulate_grad_batches})",
               "accumulate_grad_batches", owner)
        config["gradient_accumulation_steps"] = accumulate_grad_batches
    if gradient_clip_val is not None or owner == "Trainer":
        if gradient_clip_val and gradient_clip_algorithm != "norm":
            raise ConfigurationError(
                f"{owner}(gradient_clip_algorithm={gradient_clip_algorithm!r}): DeepSpeed clips "
                "by norm only (its 'gradient_clipping' setting). Use gradient_clip_algorithm="
                "'norm'")
        clip = float(gradient_clip_val or 0.0)
        _agree(config, "gradient_clipping", clip,
               f"{owner}(gradient_clip_val={gradient_clip_val})", "gradient_clip_val", owner)
        config["gradient_clipping"] = clip
    if batch_size is not None:
        _agree(config, "train_micro_batch_size_per_gpu", batch_size,
               f"the training dataloader's batch_size={batch_size}", "", owner)
        config["train_micro_batch_size_per_gpu"] = batch_size
    config.setdefault("train_micro_batch_size_per_gpu", 1)
    config.setdefault("gradient_accumulation_steps", 1)
    total = (config["train_micro_batch_size_per_gpu"] * config["gradient_accumulation_steps"]
             * world_size)
    if "train_batch_size" in config and config["train_batch_size"] != total \
            and batch_size is not None:
        raise ConfigurationError(
            f"the DeepSpeed config says train_batch_size={config['train_batch_size']}, but "
            f"batch_size {config['train_micro_batch_size_per_gpu']} x accumulate_grad_batches "
            f"{config['gradient_accumulation_steps']} x {world_size} processes = {total}. "
            "Remove train_batch_size from the config (fulmen computes it), or change the "
            "dataloader's batch size")
    config["train_batch_size"] = total
    if config.get("managed_gradient_accumulation", False):
        raise ConfigurationError("the DeepSpeed config sets managed_gradient_accumulation=true; "
                                 "fulmen's loop decides when the optimizer steps "
                                 "(accumulate_grad_batches). Remove the setting")
    config["managed_gradient_accumulation"] = False
    return config


def _agree(config: dict[str, Any], key: str, value: Any, flag: str, flag_name: str,
           owner: str) -> None:
    if key in config and not _same(config[key], value):
        fix = (f"set {owner}({flag_name}={config[key]!r}) and" if flag_name
               else "change the dataloader's batch_size, or")
        raise ConfigurationError(
            f"the DeepSpeed config says {key}={config[key]!r} but {flag} says otherwise. "
            f"{fix[0].upper()}{fix[1:]} remove {key!r} from the config: fulmen fills it from the "
            f"{owner}")
