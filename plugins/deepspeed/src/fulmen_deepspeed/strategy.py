"""``DeepSpeedStrategy``: ZeRO data parallelism through a DeepSpeed engine, one process per device.

The engine owns the backward pass (loss scaling for ``16-mixed``), gradient reduction,
clipping and the optimizer step; fulmen's loop still decides *when* to step (every
``accumulate_grad_batches`` batches), so the engine runs with
``managed_gradient_accumulation=false``. Checkpoints are directories written by every rank
as fulmen's canonical file: the fp32 master weights and the optimizer state assembled from every
rank's ZeRO partition, keyed by parameter names, so any strategy at any world size resumes from
it, and a DeepSpeed run resumes from any strategy's checkpoint (imported into the partitions).
Directories written by older versions through the engine are still read
(:func:`fulmen_deepspeed.consolidation` turns one into a single fp32 state dict).

On a CPU the strategy selects DeepSpeed's CPU accelerator (``DS_ACCELERATOR=cpu``) with gloo;
the first run compiles a small communication op (a C++ compiler is needed once).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import warnings
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch

from fulmen import ConfigurationError, FulmenError
from fulmen.api import as_messages
from fulmen.utilities.forward_redirection import StepDispatcher
from fulmen_deepspeed import config as ds_config
from fulmen_deepspeed.records import RECORDS
from fulmen_strategies.parallel import ParallelStrategy

TAG = "checkpoint"
META = "fulmen_meta.pt"
PREFIX = "module."  # the engine wraps a StepDispatcher whose child is the user's module


class EngineModuleState(dict[str, Any]):
    """A module's state whose master copy lives in the engine (saved as shards, not here)."""


class EngineOptimizerState(dict[str, Any]):
    """Stands for an optimizer state held by the engine (saved as shards, not here)."""


class _EngineForward(torch.nn.Module):
    """What ``strategy.model`` is: calls go through the engine once it exists (so Lite's
    wrapper, created before the optimizer, reaches it), else through the plain module."""

    def __init__(self, strategy: DeepSpeedStrategy, dispatcher: StepDispatcher) -> None:
        super().__init__()
        self.__dict__["_strategy"] = strategy
        self.__dict__["_dispatcher"] = dispatcher

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        engine = self.__dict__["_strategy"].engine
        return (engine or self.__dict__["_dispatcher"])(*args, **kwargs)


class DeepSpeedStrategy(ParallelStrategy):
    """DeepSpeed ZeRO.

    ``stage``: 0-3 (default: the config's, else 2). ``offload_optimizer``: optimizer state and
    step on the CPU (stage 1-3); ``offload_parameters``: parameters on the CPU too (stage 3);
    ``offload_device``: ``"cpu"`` or ``"nvme"`` (with ``nvme_path``). ``config``: a DeepSpeed
    config dict or JSON file path; precision, ``accumulate_grad_batches``,
    ``gradient_clip_val`` and the batch size come from the Trainer and may appear in it only
    with the same value. ``logging_level``: DeepSpeed's logger level.
    """

    shards_parameters = True
    fixed_accumulation = True  # gradient_accumulation_steps is in the engine config
    reseeds_at_setup = frozenset({"Trainer", "Lite"})  # as Lightning's and Fabric's DeepSpeed

    name = RECORDS[0].name  # the plugin's base name, from its records

    def __init__(self, stage: int | None = None, offload_optimizer: bool = False,
                 offload_parameters: bool = False, config: dict[str, Any] | str | Path | None
                 = None, offload_device: str = "cpu", nvme_path: str | None = None,
                 logging_level: int = logging.WARNING,
                 process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None,
                 rendezvous_timeout: float | timedelta | None = None) -> None:
        super().__init__(process_group_backend, timeout, rendezvous_timeout)
        options = ds_config.read_config(config)
        zero = options.zero_optimization
        given = "stage" in zero.model_fields_set
        if stage is not None and given and zero.stage != stage:
            raise ConfigurationError(
                f"DeepSpeedStrategy(stage={stage}) but its config says zero_optimization.stage="
                f"{zero.stage}. Keep one of them (strategy names fix the stage: use "
                f"strategy='deepspeed' with the config, or drop 'stage' from the config)")
        zero.stage = stage if stage is not None else zero.stage
        if offload_optimizer and zero.offload_optimizer is None:
            zero.offload_optimizer = ds_config.OffloadOptions(device=offload_device,  # type: ignore[arg-type]
                                                              nvme_path=nvme_path)
        if offload_parameters and zero.offload_param is None:
            zero.offload_param = ds_config.OffloadOptions(device=offload_device,  # type: ignore[arg-type]
                                                          nvme_path=nvme_path)
        ds_config.check_zero(
            zero.stage, _offloads(zero.offload_optimizer), _offloads(zero.offload_param))
        self.options = options
        self.logging_level = logging_level
        self.engine: Any = None
        self._dispatcher: StepDispatcher | None = None
        self._cast_hook: Any = None  # casts the batch to the engine's fp16/bf16 dtype
        self._batch_size_set = False
        self._warned_backward = False

    @property
    def stage(self) -> int:
        return self.options.zero_optimization.stage

    # ------------------------------------------------------------------ composition

    def check_selection(self, selection: Any) -> list[str]:
        """What only a composed selection shows: the config's precision against the
        Trainer's, and float16 on a CPU without float16 kernels (and what ``ParallelStrategy``
        checks)."""
        return [*as_messages(super().check_selection(selection)),
                *self.selection_problems(selection.precision.name, selection.accelerator.name)]

    def selection_problems(self, precision: str, accelerator: str) -> list[str]:
        """The precision and accelerator problems :meth:`check_selection` reports."""
        problems = []
        try:
            ds_config.fill(self.options, precision=precision, world_size=1,
                           gradient_clip_val=None, owner="Trainer/Lite")
        except ConfigurationError as exc:
            if "enables" in str(exc):
                problems.append(str(exc))
        if precision == "16-mixed" and accelerator == "cpu" and not _cpu_has_fp16():
            problems.append("DeepSpeed with precision='16-mixed' on the CPU needs float16 "
                            "kernels this CPU lacks; use precision='bf16-mixed' or '32-true'")
        return problems

    # ------------------------------------------------------------------ processes

    def setup_environment(self) -> None:
        wanted = "cpu" if self.root_device.type == "cpu" else None
        current = os.environ.get("DS_ACCELERATOR")
        if wanted == "cpu" and current not in (None, "cpu"):
            raise ConfigurationError(f"DS_ACCELERATOR={current!r} but the accelerator is the "
                                     "CPU; unset DS_ACCELERATOR or choose accelerator='cuda'")
        if wanted is None and current == "cpu":
            raise ConfigurationError("DS_ACCELERATOR='cpu' but the accelerator is CUDA; unset "
                                     "DS_ACCELERATOR or choose accelerator='cpu'")
        if wanted:
            os.environ["DS_ACCELERATOR"] = wanted
        os.environ.setdefault("LOCAL_SIZE", str(self.processes_per_node))
        super().setup_environment()
        import torch.distributed as dist

        if not dist.is_initialized():  # one process: DeepSpeed still talks through a group
            dist.init_process_group(self.backend, store=dist.HashStore(), rank=0, world_size=1,
                                    timeout=self.timeout)
            atexit.register(_destroy_single_group)

    # ------------------------------------------------------------------ model and optimizer

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        if self.is_set_up(module):  # fit, then test: keep the engine
            return super().setup_module(module)
        self.engine = None
        return super().setup_module(module)

    def module_to_device(self, module: torch.nn.Module) -> torch.nn.Module:
        return module.to(self.root_device)

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        self._dispatcher = StepDispatcher(module)
        return _EngineForward(self, self._dispatcher)

    def setup_optimizers(self, optimizers: list[Any]) -> list[Any]:
        if self.engine is not None and self.engine.optimizer is not None and \
                [self.engine.optimizer] == optimizers:
            return optimizers
        if len(optimizers) != 1:
            raise ConfigurationError(f"DeepSpeed drives one optimizer per model; got "
                                     f"{len(optimizers)}. Return a single optimizer from "
                                     "configure_optimizers (or set up one in Lite)")
        if self.engine is not None:  # fit again with new optimizers: the old engine lets go
            self.engine.destroy()    # of the parameters (its gradient hooks) first
        self._build_engine(optimizers[0])
        return [self.engine.optimizer]

    def _flags(self) -> dict[str, Any]:
        """The run flags the Trainer handed over (``run_config``); Lite says none."""
        run = self.run_config
        if run.owner != "Trainer":
            return {"owner": run.owner}
        return {"owner": run.owner, "accumulate_grad_batches": run.accumulate_grad_batches,
                "gradient_clip_val": run.gradient_clip_val,
                "gradient_clip_algorithm": run.gradient_clip_algorithm}

    def deepspeed_config(self, batch_size: int | None = None) -> dict[str, Any]:
        """The config handed to the engine: the user's, filled from the Trainer's flags."""
        return ds_config.fill(self.options, precision=self.precision.name,
                              world_size=self.world_size, batch_size=batch_size, **self._flags())

    def _build_engine(self, optimizer: Any) -> None:
        import deepspeed

        deepspeed.utils.logger.setLevel(self.logging_level)
        assert self._dispatcher is not None, "setup_module() first"
        config = self.deepspeed_config()
        half = _half_dtype(config)
        if half is not None and self._cast_hook is None:
            # DeepSpeed owns mixed precision: its fp16/bf16 section keeps the weights in that
            # dtype and turns torch.autocast off inside the engine (on CUDA), so the batch's
            # floating-point tensors must reach the model in that dtype too (as Lightning's
            # DeepSpeedPrecision.convert_input does).
            self._cast_hook = self._dispatcher.register_forward_pre_hook(
                functools.partial(_cast_floats, half), with_kwargs=True)
        self.engine, _, _, _ = deepspeed.initialize(
            model=self._dispatcher, optimizer=optimizer, config=config,
            dist_init_required=False)
        self._batch_size_set = False
        self.barrier("deepspeed-initialized")
        release_shared_memory_name(self.global_rank)

    # ------------------------------------------------------------------ the step

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.engine is None:
            return super().step(method, *args, **kwargs)
        with self.precision.forward_context():
            return self.engine(*args, fulmen_step=method, **kwargs)

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """The engine's backward (loss scaling, ZeRO gradient partitioning). A
        ``Module.backward`` override (``run_backward``) cannot run: warned about once."""
        if self.engine is None:
            raise FulmenError("backward under DeepSpeed needs the engine: set the model up "
                              "with its optimizer first (Lite: model, opt = setup(model, opt))")
        if kwargs.pop("run_backward", None) is not None and not self._warned_backward:
            self._warned_backward = True
            warnings.warn("the module overrides backward(), which DeepSpeed cannot run: its "
                          "engine runs the backward pass itself (loss scaling, ZeRO gradient "
                          "partitioning). The override is ignored", RuntimeWarning, stacklevel=2)
        self.engine.backward(loss, scale_wrt_gas=False, **kwargs)

    def optimizer_step(self, optimizer: Any, closure: Callable[[], Any] | None = None,
                       after_closure: Callable[[], None] | None = None) -> Any:
        result = closure() if closure is not None else None
        if after_closure is not None:
            after_closure()
        if closure is not None and result is None:  # the step skipped its batch
            return None
        self.engine.step()
        return result

    def clip_gradients(self, module: torch.nn.Module, optimizer: Any, clip_val: float,
                       algorithm: str = "norm") -> Any:
        configured = self.engine.gradient_clipping() if self.engine is not None else None
        if algorithm == "norm" and configured is not None and float(configured) == clip_val:
            return None  # the engine clips inside its step
        raise ConfigurationError(
            f"clip_gradients({'max_norm' if algorithm == 'norm' else 'clip_val'}={clip_val}): "
            f"DeepSpeed clips inside its engine, by norm, with the config's gradient_clipping "
            f"(now {configured}). Set DeepSpeedStrategy(config={{'gradient_clipping': "
            f"{clip_val}}}) (Trainer: gradient_clip_val={clip_val}) instead")

    # no_backward_sync is not overridden: the engine decides when gradients are reduced
    # (at its own gradient-accumulation boundaries, from the Trainer's
    # accumulate_grad_batches), so there is nothing this strategy could switch off; it does
    # not claim to skip synchronisation (the conformance kit holds an override to that claim).

    # ------------------------------------------------------------------ data

    def process_dataloader(self, dataloader: Any, stage: str, use_distributed_sampler: bool
                           ) -> Any:
        if stage in ("train", "lite") and self.engine is not None and not self._batch_size_set:
            size = getattr(dataloader, "batch_size", None)
            if isinstance(size, int):
                self.deepspeed_config(batch_size=size)  # raises on a contradiction
                self.engine.set_train_micro_batch_size(size)
                self._batch_size_set = True
        return super().process_dataloader(dataloader, stage, use_distributed_sampler)

    # ------------------------------------------------------------------ state

    def _groups(self) -> list[list[torch.nn.Parameter]]:
        """The module's parameters of each of the user's optimizer groups, as ZeRO holds them."""
        zero = self.engine.optimizer
        return list(zero.fp16_groups if self.stage == 3 else zero.bit16_groups)

    def _full_state(self) -> dict[str, Any]:
        """The whole module state on every rank, parameters from ZeRO's fp32 master copy
        (collective: every rank calls it)."""
        assert self.module is not None
        from deepspeed.utils import safe_get_full_fp32_param

        if self.stage == 3:
            import deepspeed

            with deepspeed.zero.GatheredParameters(list(self.module.parameters()),
                                                   modifier_rank=None):
                state = {k: v.detach().clone().cpu() for k, v in
                         self.module.state_dict().items()}
        else:
            state = {k: v.detach().cpu() for k, v in self.module.state_dict().items()}
        if self.engine is not None and self.stage > 0:
            for name, param in self.module.named_parameters():
                full = safe_get_full_fp32_param(param)
                if full is not None and name in state:
                    state[name] = full.detach().cpu().to(state[name].dtype) \
                        if not state[name].is_floating_point() else full.detach().cpu()
        return state

    def module_state_dict(self, module: torch.nn.Module | None = None) -> dict[str, Any]:
        if self.engine is None or (module is not None and module is not self.module):
            return super().module_state_dict(module)  # not the engine's model
        return self._full_state()

    def load_module_state_dict(self, state: dict[str, Any], strict: bool = True,
                               module: torch.nn.Module | None = None) -> Any:
        if isinstance(state, EngineModuleState):
            return None  # the engine restored it from the shards (an older directory)
        if self.engine is None or (module is not None and module is not self.module):
            return super().load_module_state_dict(state, strict, module)
        assert self.module is not None
        import deepspeed
        from deepspeed.utils import safe_set_full_fp32_param

        with deepspeed.zero.GatheredParameters(list(self.module.parameters()),
                                               modifier_rank=0, enabled=self.stage == 3):
            result = self.module.load_state_dict(state, strict=strict)
        refresh = getattr(self.engine.optimizer, "refresh_fp32_params", None)
        if callable(refresh):  # the optimizer's fp32 master weights follow the new ones
            refresh()
        if self.stage > 0:  # and exactly: the checkpoint's fp32 values, not rounded ones
            for name, param in self.module.named_parameters():
                if name in state and state[name].is_floating_point():
                    safe_set_full_fp32_param(param, state[name].to(torch.float32))
        return result

    def optimizer_state(self, optimizer: Any) -> dict[str, Any]:
        """The canonical (named, whole) optimizer state, assembled from every rank's ZeRO
        partition (collective)."""
        if self.engine is None or self.stage == 0:
            return super().optimizer_state(getattr(optimizer, "optimizer", optimizer)
                                           if self.engine is not None else optimizer)
        from deepspeed.utils import safe_get_full_optimizer_state

        assert self.module is not None
        base = self.engine.optimizer.optimizer  # the user's optimizer, over flat partitions
        flat_states = [base.state.get(p, {}) for g in base.param_groups for p in g["params"]]
        first: dict[str, Any] = next((st for st in flat_states if st), {})
        keys = sorted(k for k, v in first.items() if torch.is_tensor(v) and v.dim() > 0)
        step = first.get("step")
        names = {id(p): n for n, p in self.module.named_parameters()}
        state: dict[str, Any] = {}
        groups = []
        for group, params in zip(base.param_groups, self._groups()):
            groups.append({**{k: v for k, v in group.items() if k != "params"},
                           "params": [names[id(p)] for p in params]})
            for param in params:
                entry: dict[str, Any] = {key: safe_get_full_optimizer_state(param, key)
                                         .detach().cpu().clone() for key in keys}
                if step is not None:
                    entry["step"] = step.detach().cpu().clone() if torch.is_tensor(step) \
                        else torch.tensor(float(step))
                if entry:
                    state[names[id(param)]] = entry
        return {"state": state, "param_groups": groups}

    def load_optimizer_state(self, optimizer: Any, state: dict[str, Any]) -> None:
        """Import a canonical optimizer state (from any strategy and world size) into ZeRO's
        partitions: every rank keeps its part."""
        if isinstance(state, EngineOptimizerState):
            return None  # an older DeepSpeed directory: the engine restored it
        if self.engine is None or self.stage == 0:
            return super().load_optimizer_state(
                getattr(optimizer, "optimizer", optimizer) if self.engine is not None
                else optimizer, state)
        from deepspeed.utils import (
            lazy_init_hp_params_optimizer_state,
            safe_set_full_optimizer_state,
        )

        from fulmen.checkpoint import canonical

        assert self.module is not None
        zero = self.engine.optimizer
        base = zero.optimizer
        groups = self._groups()
        if not canonical.is_keyed_by_name(state):
            order = [p for params in groups for p in params]
            names = {id(p): n for n, p in self.module.named_parameters()}
            state = canonical.by_name(state, [names[id(p)] for p in order])
        if not any(base.state.get(p) for g in base.param_groups for p in g["params"]):
            _initialise_state(base)  # a fresh engine: make the state to write into
            for index, params in enumerate(groups if self.stage < 3 else []):
                lazy_init_hp_params_optimizer_state(params, base.param_groups[index]["params"][0],
                                                    base.state)
        saved = state.get("state", {})
        names = {id(p): n for n, p in self.module.named_parameters()}
        step = None
        for params in groups:
            for param in params:
                entry = saved.get(names[id(param)], {})
                for key, value in entry.items():
                    if key == "step":
                        step = value
                    elif torch.is_tensor(value) and value.dim() > 0:
                        safe_set_full_optimizer_state(param, value.to(torch.float32), key)
        for group, saved_group in zip(base.param_groups, state.get("param_groups", [])):
            group.update({k: v for k, v in saved_group.items() if k != "params"})
        if step is not None:
            for group in base.param_groups:
                for flat in group["params"]:
                    if "step" in base.state.get(flat, {}):
                        old = base.state[flat]["step"]
                        base.state[flat]["step"] = torch.as_tensor(step, dtype=old.dtype) \
                            if torch.is_tensor(old) else float(step)
        return None

    # ------------------------------------------------------------------ checkpoints

    def load_engine_directory(self, target: Path, weights_only: bool = True
                              ) -> dict[str, Any] | None:
        """A DeepSpeed directory an older fulmen wrote (``fulmen_meta.pt`` beside the engine's
        ``checkpoint`` tag), read through the engine on the same world size; None for any
        other directory. Called by :meth:`DeepSpeedLayout.load
        <fulmen_deepspeed.layout.DeepSpeedLayout.load>` when the checkpoint service meets
        such a directory (canonical checkpoints are read by the service itself)."""
        if not ((target / META).is_file() and (target / TAG).is_dir()):
            return None
        from fulmen_deepspeed.consolidation import deepspeed_reads, read_meta

        trusted = not weights_only  # then DeepSpeed reads the files as it likes
        with deepspeed_reads(target, TAG, trusted):
            return self._load_engine_checkpoint(target, read_meta(target, trusted), trusted)

    def _load_engine_checkpoint(self, target: Path, meta: dict[str, Any],
                                trusted: bool) -> dict[str, Any]:
        info = meta.pop("fulmen_deepspeed")
        if self.engine is None:  # no optimizer here (test, predict): the fp32 weights will do
            from fulmen_deepspeed.consolidation import fp32_state_dict

            weights = fp32_state_dict(target, trusted)
            meta.update({key: weights for key in info["modules"]})
            meta.pop("optimizer_states", None)
            return meta
        loaded, _ = self.engine.load_checkpoint(str(target), tag=TAG, load_module_strict=True,
                                                load_optimizer_states=True,
                                                load_lr_scheduler_states=False)
        if loaded is None:
            raise ConfigurationError(f"DeepSpeed could not load {str(target)!r}")
        state = EngineModuleState(self.module_state_dict())
        meta.update({key: state for key in info["modules"]})
        for key, count in info["optimizers"].items():
            meta[key] = ([EngineOptimizerState() for _ in range(count)] if count >= 0
                         else EngineOptimizerState())
        return meta


def _initialise_state(optimizer: Any) -> None:
    """Create a torch optimizer's lazily made state without changing anything: one step
    with zero gradients and a learning rate of 0 (then the step counters are overwritten)."""
    rates = [group.get("lr") for group in optimizer.param_groups]
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for param in params:
        param.grad = torch.zeros_like(param)
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    try:
        optimizer.step()
    finally:
        for group, rate in zip(optimizer.param_groups, rates):
            group["lr"] = rate
        for param in params:
            param.grad = None


def _destroy_single_group() -> None:
    import torch.distributed as dist

    if dist.is_initialized() and dist.get_world_size() == 1:
        dist.destroy_process_group()


def _offloads(options: ds_config.OffloadOptions | None) -> bool:
    return options is not None and options.device != "none"


def _half_dtype(config: dict[str, Any]) -> torch.dtype | None:
    """The dtype a DeepSpeed config's ``bf16`` or ``fp16`` section runs the model in, if any."""
    for section, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        if (config.get(section) or {}).get("enabled"):
            return dtype
    return None


def _cast_floats(dtype: torch.dtype, module: torch.nn.Module, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    from fulmen.apply import apply_to_tensors

    return apply_to_tensors((args, kwargs),
                            lambda t: t.to(dtype) if t.is_floating_point() else t)


def _cpu_has_fp16() -> bool:
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())
    except Exception:
        return False


def release_shared_memory_name(rank: int) -> None:
    """DeepSpeed's CPU all-reduce puts one buffer per rank in ``/dev/shm`` (~66 MB) and never
    unlinks it, so every run would leave its buffers behind until the machine runs out of
    memory. ``deepspeed.initialize`` returns only after this rank mapped every rank's buffer,
    and the barrier before this call means every rank has: the names can go now, the mappings
    stay valid until the processes end (even if they are killed)."""
    name = (f"deepspeed_allreduce_buffer_{os.getuid()}_{os.environ.get('MASTER_ADDR', '')}_"
            f"{os.environ.get('MASTER_PORT', '')}_{rank}")
    with contextlib.suppress(OSError):  # none: a single process, or ranks on several hosts
        os.unlink(Path("/dev/shm") / name)
