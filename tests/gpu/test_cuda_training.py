"""fulmen's CUDA path, run on a real GPU: every precision, the gradient scaler, checkpoints with
CUDA random state, bit-exact resume, ``torch.compile``, the NCCL-backed strategies on one device,
DeepSpeed, Lite, the monitors and the generic ``torch.accelerator`` plugin.

``FULMEN_GPU_TIER_DEVICE=cpu`` runs the same tests on the CPU (``tools/device-check.sh
--dry-run`` does): the CUDA-only assertions are then left out, the rest still holds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import fulmen

DEVICE = os.environ.get("FULMEN_GPU_TIER_DEVICE", "cuda")
ON_CUDA = DEVICE == "cuda"
LEAN = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False,
        "enable_model_summary": False, "num_sanity_val_steps": 0}


def data(n: int = 256, features: int = 32, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return TensorDataset(x, y)


def loader(batch_size: int = 32, **kwargs: Any) -> DataLoader:
    return DataLoader(data(), batch_size=batch_size, **kwargs)


class Net(fulmen.Module):
    """32 -> 64 -> 2 with dropout (so the CUDA random stream matters)."""

    def __init__(self, lr: float = 0.05, dropout: float = 0.1) -> None:
        super().__init__()
        self.lr = lr
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                       torch.nn.Dropout(dropout), torch.nn.Linear(64, 2))
        self.losses: list[torch.Tensor] = []
        self.seen: list[tuple[torch.device, torch.dtype]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        out = self(x)
        self.seen.append((x.device, out.dtype))
        loss = F.cross_entropy(out.float(), y)
        self.losses.append(loss.detach())
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> Any:
        return torch.optim.AdamW(self.parameters(), lr=self.lr)


def trainer(**kwargs: Any) -> fulmen.Trainer:
    options: dict[str, Any] = {"accelerator": DEVICE, "devices": 1, "max_epochs": 1, **LEAN}
    options.update(kwargs)
    return fulmen.Trainer(**options)


def weights(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().float().cpu().clone() for k, v in module.state_dict().items()}


def test_auto_selects_cuda_with_one_device_and_sets_it() -> None:
    t = fulmen.Trainer(devices=1, **LEAN) if ON_CUDA else trainer()
    assert t.accelerator.name == DEVICE
    assert t.strategy.name == "single_device"
    assert t.strategy.root_device.type == DEVICE
    if ON_CUDA:
        assert fulmen.Trainer(accelerator="gpu", devices=1, **LEAN).accelerator.name == "cuda"
        assert t.device_ids == [0]


def test_generic_accelerator_plugin_drives_cuda_through_torch_accelerator() -> None:
    from fulmen_accelerators.generic.accelerator import TorchAccelerator

    if not ON_CUDA:
        pytest.skip("torch.accelerator exposes no accelerator on the CPU")
    accelerator = TorchAccelerator()
    assert accelerator.device_type == "cuda" and TorchAccelerator.is_available()
    assert TorchAccelerator.auto_device_count() == torch.cuda.device_count()
    accelerator.setup_device(torch.device("cuda", 0))
    assert torch.cuda.current_device() == 0
    assert "allocated_bytes.all.current" in accelerator.memory_stats(torch.device("cuda", 0))
    model = Net()
    t = trainer(accelerator=accelerator, max_steps=4)
    t.fit(model, loader())
    assert t.strategy.root_device.type == "cuda"
    assert {device.type for device, _ in model.seen} == {"cuda"}


@pytest.mark.parametrize(("precision", "weight_dtype", "compute_dtype"), [
    ("32-true", torch.float32, torch.float32),
    ("16-mixed", torch.float32, torch.float16),
    ("bf16-mixed", torch.float32, torch.bfloat16),
    ("bf16-true", torch.bfloat16, torch.bfloat16),
])
def test_fit_at_each_precision(precision: str, weight_dtype: torch.dtype,
                               compute_dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    model = Net(dropout=0.0)
    t = trainer(precision=precision, max_epochs=3)
    t.fit(model, loader(pin_memory=ON_CUDA))
    assert t.precision == precision
    assert {device.type for device, _ in model.seen} == {DEVICE}
    assert {dtype for _, dtype in model.seen} == {compute_dtype}
    assert {p.dtype for p in model.parameters()} == {weight_dtype}
    assert {p.device.type for p in model.parameters()} == {DEVICE}
    losses = torch.stack(model.losses).float().cpu()
    assert torch.isfinite(losses).all()
    assert losses[-8:].mean() < losses[:8].mean(), losses  # it learns


def test_16_mixed_skips_steps_whose_gradients_overflow() -> None:
    """A batch whose loss is inf: the scaler skips that step (weights unchanged), halves its
    scale, and training goes on."""

    class Overflow(Net):
        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            loss = super().training_step(batch, batch_idx)
            return loss * float("inf") if batch_idx == 2 else loss

        def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
            self.before = weights(self)

        def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
            changed = any(not torch.equal(self.before[k], v) for k, v in weights(self).items())
            self.changed.append(changed)

    model = Overflow(dropout=0.0)
    model.changed = []
    t = trainer(precision="16-mixed", max_steps=5)
    if not ON_CUDA:
        pytest.skip("GradScaler's inf-skipping is checked on CUDA")
    t.fit(model, loader())
    scaler = t.strategy.precision.scaler
    assert scaler is not None
    assert model.changed == [True, True, False, True, True]
    assert scaler.get_scale() == 65536.0 / 2  # halved once, at the overflowing step


def test_checkpoint_holds_cuda_rng_and_scaler_state_and_resume_is_bit_exact(
        tmp_path: Path) -> None:
    """Eight steps straight, saving a checkpoint at step 4 (mid-epoch), == resuming from that
    checkpoint in a new Trainer and Module: the weights, the optimizer, the scaler, the shuffled
    order and the CUDA random stream (dropout) all carry over."""
    from fulmen.callbacks import ModelCheckpoint

    precision = "16-mixed" if ON_CUDA else "bf16-mixed"

    def run(ckpt: str | None = None, seed: int = 7) -> Net:
        fulmen.seed_everything(seed)
        if ON_CUDA:
            torch.cuda.manual_seed_all(seed)
        model = Net(dropout=0.3)
        saver = ModelCheckpoint(dirpath=tmp_path / ("resumed" if ckpt else "straight"),
                                every_n_train_steps=4, save_top_k=-1)
        t = trainer(precision=precision, max_steps=8, max_epochs=3, enable_checkpointing=True,
                    callbacks=[saver])
        t.fit(model, loader(shuffle=True), ckpt_path=ckpt)
        assert t.global_step == 8
        return model

    straight = run()
    path = next((tmp_path / "straight").glob("*step=4*.ckpt"))
    checkpoint = torch.load(path, weights_only=False, map_location="cpu")
    if ON_CUDA:
        assert "cuda" in checkpoint["rng_states"], sorted(checkpoint["rng_states"])
        scaler_states = [v for v in _walk(checkpoint) if isinstance(v, dict) and "scale" in v]
        assert scaler_states, "the GradScaler's state is not in the checkpoint"
    # another seed: the checkpoint must bring its own random state back
    resumed = run(str(path), seed=1234)
    for key, value in weights(straight).items():
        assert torch.equal(value, weights(resumed)[key]), key


def _walk(value: Any) -> Any:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item)


def test_compile_trains_on_the_device_and_keeps_plain_state_dict_keys() -> None:
    torch.manual_seed(0)
    model = Net(dropout=0.0)
    keys = set(model.state_dict())
    t = trainer(precision="bf16-mixed", compile=True, max_epochs=3)
    t.fit(model, loader())
    assert set(model.state_dict()) == keys
    losses = torch.stack(model.losses).float().cpu()
    assert losses[-8:].mean() < losses[:8].mean()


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "model_parallel"])
def test_distributed_strategies_on_one_device(strategy: str) -> None:
    """One process, one device: the model trains on the device. fulmen starts no process group
    for a world of one (ddp, fsdp); ``model_parallel``'s device mesh creates one itself."""
    import torch.distributed as dist

    torch.manual_seed(0)
    model = Net(dropout=0.0)
    if strategy == "model_parallel":
        class Parallel(Net):
            def configure_model(self) -> None:
                from torch.distributed.fsdp import fully_shard

                fully_shard(self.net, mesh=self.device_mesh["data_parallel"])

        model = Parallel(dropout=0.0)
    t = trainer(strategy=strategy, precision="bf16-mixed", max_epochs=2)
    seen: list[str] = []

    class Backend(fulmen.Callback):
        def on_train_start(self, trainer: Any, module: Any) -> None:
            seen.append(dist.get_backend() if dist.is_initialized() else "none")

    t.callbacks.append(Backend())
    t.fit(model, loader())
    if strategy == "model_parallel":
        # torch's init_device_mesh starts its own group for a world of one
        assert seen[0] in ("nccl", "gloo", "undefined"), seen
    else:
        assert seen == ["none"]
    assert {device.type for device, _ in model.seen} == {DEVICE}
    losses = torch.stack(model.losses).float().cpu()
    assert torch.isfinite(losses).all() and losses[-8:].mean() < losses[:8].mean()


def test_deepspeed_zero2_on_one_device() -> None:
    pytest.importorskip("deepspeed")
    if not ON_CUDA:
        pytest.skip("DeepSpeed's CUDA path")
    torch.manual_seed(0)
    model = Net(dropout=0.0)
    t = trainer(strategy="deepspeed_stage_2", precision="bf16-mixed", max_epochs=2)
    t.fit(model, loader())
    losses = torch.stack(model.losses).float().cpu()
    assert torch.isfinite(losses).all() and losses[-8:].mean() < losses[:8].mean()


@pytest.mark.parametrize(("precision", "compute_dtype"), [
    ("32-true", torch.float32), ("16-mixed", torch.float16), ("bf16-mixed", torch.bfloat16),
    ("bf16-true", torch.bfloat16)])
def test_lite_at_each_precision(precision: str, compute_dtype: torch.dtype) -> None:
    lite = fulmen.Lite(accelerator=DEVICE, devices=1, precision=precision)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    model, optimizer = lite.setup(model, optimizer)
    train = lite.setup_dataloaders(loader(pin_memory=ON_CUDA))
    losses = []
    for _ in range(3):
        for x, y in train:
            assert x.device.type == DEVICE
            optimizer.zero_grad()
            with lite.autocast():
                out = model(x)
            assert out.dtype in (compute_dtype, torch.float32)  # the output is cast back
            loss = F.cross_entropy(out.float(), y)
            lite.backward(loss)
            optimizer.step()
            losses.append(loss.detach())
    assert lite.device.type == DEVICE
    values = torch.stack(losses).float().cpu()
    assert torch.isfinite(values).all() and values[-8:].mean() < values[:8].mean()


def test_lite_checkpoint_round_trip_with_the_scaler(tmp_path: Path) -> None:
    if not ON_CUDA:
        pytest.skip("float16 loss scaling is a CUDA feature")
    lite = fulmen.Lite(accelerator="cuda", devices=1, precision="16-mixed")
    net = torch.nn.Linear(32, 2)
    model, optimizer = lite.setup(net, torch.optim.SGD(net.parameters(), lr=0.1))
    scaler = lite.strategy.precision.scaler
    assert scaler is not None
    x = torch.randn(8, 32, device=lite.device)
    lite.backward(model(x).float().sum())
    optimizer.step()
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    scale = scaler.get_scale()  # 65536, or 32768 when the first step overflowed
    # as with Fabric, the scaler travels when the state names it
    lite.save(tmp_path / "state.ckpt", {"model": model, "optimizer": optimizer, "scaler": scaler})
    lite.backward(model(x).float().sum())
    optimizer.step()
    scaler.update(1.0)  # a different scale, which the load must undo
    state = {"model": model, "optimizer": optimizer, "scaler": scaler}
    lite.load(tmp_path / "state.ckpt", state)
    assert next(model.parameters()).device.type == "cuda"
    for key, value in model.state_dict().items():
        assert torch.equal(value, saved[key]), key
    assert scaler.get_scale() == scale


def test_device_stats_and_throughput_monitors(tmp_path: Path) -> None:
    from fulmen.callbacks import DeviceStatsMonitor, ThroughputMonitor
    from fulmen.loggers import CSVLogger
    from fulmen.utilities.throughput import measure_flops

    model = Net(dropout=0.0)
    with torch.device("meta"):
        meta = Net(dropout=0.0)
        x = torch.randn(32, 32)
    model.flops_per_batch = measure_flops(meta, lambda: meta(x), lambda y: y.sum())
    assert model.flops_per_batch > 0
    throughput = ThroughputMonitor(batch_size_fn=lambda batch: batch[0].shape[0], window_size=2)
    logger = CSVLogger(tmp_path)
    t = trainer(max_steps=6, precision="bf16-mixed", log_every_n_steps=1, logger=logger,
                callbacks=[DeviceStatsMonitor(), throughput])
    t.fit(model, loader())
    logged = set(t.logged_metrics)
    assert "train/device/samples_per_sec" in logged, sorted(logged)
    # DeviceStatsMonitor writes to the loggers directly, as Lightning's does
    written = (Path(logger.log_dir) / "metrics.csv").read_text().splitlines()[0].split(",")
    if ON_CUDA:
        assert any(k.startswith("DeviceStatsMonitor.on_train_batch_start/")
                   and "allocated_bytes" in k for k in written), written
        assert throughput.available_flops, "no peak FLOPs for " + torch.cuda.get_device_name()
        assert "train/device/mfu" in logged, sorted(logged)
        assert 0 < float(t.logged_metrics["train/device/mfu"]) < 1


def test_pinned_batches_reach_the_device_and_cuda_flops_table_knows_the_card() -> None:
    from fulmen.utilities.throughput import get_available_flops

    model = Net(dropout=0.0)
    trainer(max_steps=2).fit(model, loader(pin_memory=ON_CUDA, num_workers=1))
    assert {device.type for device, _ in model.seen} == {DEVICE}
    if ON_CUDA:
        name = torch.cuda.get_device_name()
        peak = get_available_flops(torch.device("cuda"), torch.bfloat16)
        assert peak is not None, f"{name!r} is not in the FLOPs table"
        if "H100" in name or "H200" in name:
            assert peak >= 7.5e14, (name, peak)
