"""The CPU-runnable parts of Lightning's ``tests_fabric/test_fabric.py`` and
``tests_fabric/test_wrappers.py``, ported to ``fulmen.Lite``.

Adapted names: ``Fabric`` -> ``fulmen.Lite``, ``_FabricModule``/``_FabricOptimizer``/
``_FabricDataLoader`` -> ``LiteModule``/``LiteOptimizer``/``LiteDataLoader``. Fabric's tests
mostly swap its strategy for a ``Mock`` and assert calls; fulmen's tests never patch internals,
so each ported test checks the same behaviour on a real single-process Lite (what was saved,
what was loaded, what the logger wrote). Errors are ``fulmen.ConfigurationError`` (a
``ValueError``) where Fabric raises ``ValueError`` or ``TypeError``.

Deliberate difference: ``lite.save`` writes a set-up optimizer's state keyed by parameter names
(the portable checkpoint every strategy reads, see docs/checkpointing.md), where Fabric writes
torch's numbered form; ``optimizer.state_dict()`` of the wrapper keeps torch's numbered form.

Not ported: strategy-mock-only tests (DeepSpeed/XLA/FSDP set-up rules, ``_backward_sync_control``,
``_FabricModule`` redirection of ``training_step`` through DDP (``mark_forward_method``), compiled
modules, CLI environment variables, dataloader argument re-instantiation); device tests that need
CUDA or MPS.
"""

from __future__ import annotations

import csv
import os
from typing import Any

import pytest
import torch
from boring import BoringModel
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

import fulmen
from fulmen import ConfigurationError, FulmenError
from fulmen.lite_wrappers import LiteDataLoader, LiteModule, LiteOptimizer
from fulmen.loggers import CSVLogger
from fulmen.seed import pl_worker_init_function

Fabric = fulmen.Lite


def test_run_input_output():
    """Test that the dynamically patched run() method receives the input arguments and returns the result."""

    class RunFabric(Fabric):
        run_args = ()
        run_kwargs: dict[str, Any] = {}

        def run(self, *args, **kwargs):
            self.run_args = args
            self.run_kwargs = kwargs
            return "result"

    fabric = RunFabric(accelerator="cpu")
    result = fabric.run(1, 2, three=3)
    assert result == "result"
    assert fabric.run_args == (1, 2)
    assert fabric.run_kwargs == {"three": 3}


def test_setup_module_and_optimizers():
    """Test that `setup()` can handle no optimizers, one optimizer, or multiple optimizers."""
    fabric = Fabric(devices=1, accelerator="cpu")
    model = nn.Linear(1, 2)
    optimizer0 = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer1 = torch.optim.Adam(model.parameters(), lr=0.1)

    fabric_model = fabric.setup(model)
    assert isinstance(fabric_model, LiteModule)
    assert fabric_model.module is model

    fabric_model, fabric_optimizer = fabric.setup(model, optimizer0)
    assert isinstance(fabric_model, LiteModule)
    assert isinstance(fabric_optimizer, LiteOptimizer)
    assert fabric_model.module is model
    assert fabric_optimizer.optimizer is optimizer0

    fabric_model, fabric_optimizer0, fabric_optimizer1 = fabric.setup(model, optimizer0, optimizer1)
    assert isinstance(fabric_optimizer0, LiteOptimizer)
    assert isinstance(fabric_optimizer1, LiteOptimizer)
    assert fabric_model.module is model
    assert fabric_optimizer0.optimizer is optimizer0
    assert fabric_optimizer1.optimizer is optimizer1


def test_setup_optimizers():
    """Test that `setup_optimizers()` can handle one or more optimizers."""
    fabric = Fabric(accelerator="cpu")
    model = nn.Linear(1, 2)
    optimizer0 = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer1 = torch.optim.Adam(model.parameters(), lr=0.1)

    fabric_optimizer = fabric.setup_optimizers(optimizer0)
    assert isinstance(fabric_optimizer, LiteOptimizer)
    assert fabric_optimizer.optimizer is optimizer0

    fabric_optimizer0, fabric_optimizer1 = fabric.setup_optimizers(optimizer0, optimizer1)
    assert fabric_optimizer0.optimizer is optimizer0
    assert fabric_optimizer1.optimizer is optimizer1


def test_setup_twice_fails():
    """Test that calling `setup` with a model or optimizer that is already wrapped fails."""
    fabric = Fabric(devices=1, accelerator="cpu")
    model = nn.Linear(1, 2)
    optimizer = torch.optim.Adam(model.parameters())

    fabric_model, fabric_optimizer = fabric.setup(model, optimizer)
    with pytest.raises(ValueError, match="A model should be passed only once to the"):
        fabric.setup(fabric_model, optimizer)

    fabric_model, fabric_optimizer = fabric.setup(model, optimizer)
    with pytest.raises(ValueError, match="An optimizer should be passed only once to the"):
        fabric.setup(model, fabric_optimizer)


def test_setup_module_twice_fails():
    fabric = Fabric(devices=1, accelerator="cpu")
    fabric_model = fabric.setup_module(nn.Linear(1, 2))
    with pytest.raises(ValueError, match="A model should be passed only once to the"):
        fabric.setup_module(fabric_model)


def test_setup_optimizers_twice_fails():
    fabric = Fabric(accelerator="cpu")
    optimizer = torch.optim.Adam(nn.Linear(1, 2).parameters())
    fabric_optimizer = fabric.setup_optimizers(optimizer)
    with pytest.raises(ValueError, match="An optimizer should be passed only once to"):
        fabric.setup_optimizers(fabric_optimizer)


def test_setup_dataloaders_unsupported_input():
    """Test that the setup_dataloaders method fails when provided with non-DataLoader objects."""
    fabric = Fabric(accelerator="cpu")
    with pytest.raises(ValueError, match="`setup_dataloaders` requires at least one dataloader"):
        fabric.setup_dataloaders()
    with pytest.raises(ConfigurationError, match="setup_dataloaders got a range"):
        fabric.setup_dataloaders(range(2))


def test_setup_dataloaders_return_type():
    """Test that the setup method returns the dataloaders wrapped as LiteDataLoader and in the right order."""
    fabric = Fabric(devices=1, accelerator="cpu")
    assert isinstance(fabric.setup_dataloaders(DataLoader(range(2))), LiteDataLoader)
    dataset0, dataset1 = range(3), range(4)
    fabric_dataloader0, fabric_dataloader1 = fabric.setup_dataloaders(DataLoader(dataset0), DataLoader(dataset1))
    assert fabric_dataloader0.dataset is dataset0
    assert fabric_dataloader1.dataset is dataset1


def test_setup_dataloaders_twice_fails():
    fabric = Fabric(accelerator="cpu")
    fabric_dataloader = fabric.setup_dataloaders(DataLoader(range(2)))
    with pytest.raises(ValueError, match="A dataloader should be passed only once to the"):
        fabric.setup_dataloaders(fabric_dataloader)


def test_setup_dataloaders_distributed_sampler_not_needed():
    """Test that `use_distributed_sampler` option has no effect when no distributed sampler is needed."""
    custom_sampler = torch.utils.data.RandomSampler(range(10))
    dataloader = DataLoader(range(10), sampler=custom_sampler)
    fabric = Fabric(devices=1, accelerator="cpu")
    fabric_dataloader = fabric.setup_dataloaders(dataloader, use_distributed_sampler=True)
    assert fabric_dataloader.sampler is custom_sampler
    assert not isinstance(fabric_dataloader.sampler, DistributedSampler)


def test_seed_everything(monkeypatch):
    """Test that seed everything is static and sets the worker init function on the dataloader. (fulmen's variables
    are FULMEN_GLOBAL_SEED / FULMEN_SEED_WORKERS; the init function is set on loaders with workers.)"""
    monkeypatch.delenv("FULMEN_GLOBAL_SEED", raising=False)
    monkeypatch.delenv("FULMEN_SEED_WORKERS", raising=False)
    Fabric.seed_everything(3)

    fabric = Fabric(devices=1, accelerator="cpu")
    fabric_dataloader = fabric.setup_dataloaders(DataLoader(range(4), num_workers=1))

    assert fabric_dataloader.worker_init_fn.func is pl_worker_init_function
    assert os.environ["FULMEN_GLOBAL_SEED"] == "3" and os.environ["FULMEN_SEED_WORKERS"] == "1"


def test_rank_properties():
    """The rank properties come from the strategy (a real one here)."""
    fabric = Fabric(accelerator="cpu")
    assert (fabric.world_size, fabric.global_rank, fabric.local_rank, fabric.node_rank) == (1, 0, 0, 0)
    assert fabric.is_global_zero


def test_backward():
    """backward() goes through the strategy: gradients land on the set-up model."""
    fabric = Fabric(accelerator="cpu")
    model = fabric.setup(nn.Linear(2, 1))
    fabric.backward(model(torch.ones(1, 2)).sum())
    assert torch.equal(model.module.weight.grad, torch.ones(1, 2))


def test_autocast():
    """The autocast context is the precision's."""
    fabric = Fabric(accelerator="cpu", precision="bf16-mixed")
    with fabric.autocast():
        assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.bfloat16
    assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.float32


def test_no_backward_sync():
    """`no_backward_sync()` validates the model; for a single device it is a no-op."""
    fabric = Fabric(devices=1, accelerator="cpu")
    model = nn.Linear(3, 3)
    with pytest.raises(ConfigurationError, match=r"pass the model returned by lite.setup"), \
            fabric.no_backward_sync(model):
        pass
    model = fabric.setup(model)
    with fabric.no_backward_sync(model):
        fabric.backward(model(torch.ones(1, 3)).sum())
    with fabric.no_backward_sync(model, enabled=False):
        pass
    assert model.module.weight.grad is not None


def test_launch_without_function():
    """`launch()` without a function prepares this process; methods then work."""
    fabric = Fabric(accelerator="cpu")
    fabric.launch()
    assert fabric.all_reduce(3) == 3


def test_launch_with_function():
    """Test the various ways `Fabric.launch(function)` can be called."""

    def fn_without_args():
        pass

    fabric = Fabric(accelerator="cpu")
    with pytest.raises(ConfigurationError, match="needs to take at least one argument"):
        fabric.launch(fn_without_args)

    def fn_with_one_arg(arg):
        assert isinstance(arg, Fabric)
        fn_with_one_arg.called = True

    fabric = Fabric(accelerator="cpu")
    fabric.launch(fn_with_one_arg)
    assert fn_with_one_arg.called

    # common user mistake
    fabric = Fabric(accelerator="cpu")
    with pytest.raises(ConfigurationError, match="needs to be a callable"):
        fabric.launch(fn_with_one_arg(fabric))


def test_init_module_context():
    """init_module creates parameters on the device, in the precision's dtype; empty_init skips the random fill."""
    fabric = Fabric(accelerator="cpu", precision="64-true")
    with fabric.init_module():
        model = nn.Linear(2, 2)
    assert model.weight.dtype == torch.float64
    torch.manual_seed(0)
    with fabric.init_module(empty_init=True):
        empty = nn.Linear(64, 64, bias=False)
    torch.manual_seed(0)
    with fabric.init_module(empty_init=False):
        filled = nn.Linear(64, 64, bias=False)
    assert not torch.equal(empty.weight, filled.weight)  # no kaiming fill happened


def test_init_tensor_context():
    fabric = Fabric(accelerator="cpu", precision="bf16-true")
    with fabric.init_tensor():
        assert torch.empty(2).dtype == torch.bfloat16
    assert torch.empty(2).dtype == torch.float32


class Recorder:
    def __init__(self):
        self.calls: list[tuple[Any, ...]] = []

    def on_train_end(self, *args, **kwargs):
        self.calls.append((args, kwargs))


def test_callbacks_input():
    callback0, callback1 = Recorder(), Recorder()
    assert Fabric(accelerator="cpu", callbacks=callback0)._callbacks == [callback0]
    assert Fabric(accelerator="cpu", callbacks=[callback0, callback1])._callbacks == [callback0, callback1]


def test_call():
    """Test that `fabric.call` triggers the callback implementations."""
    callback0, callback1 = Recorder(), Recorder()
    fabric = Fabric(accelerator="cpu", callbacks=[callback0, callback1])

    fabric.call("on_train_end")
    assert callback0.calls == callback1.calls == [((), {})]

    fabric.call("on_train_end", "positional", keyword="keyword")
    assert callback0.calls[-1] == (("positional",), {"keyword": "keyword"})

    # Some callbacks don't implement the requested hook
    class Nothing:
        pass

    fabric = Fabric(accelerator="cpu", callbacks=[Recorder(), Nothing()])
    fabric.call("on_train_end")

    # Skip callback attributes that are not callable
    class NotAMethod:
        not_a_method = 1

    fabric = Fabric(accelerator="cpu", callbacks=[NotAMethod()])
    with pytest.warns(UserWarning, match="Skipping the callback `NotAMethod.not_a_method`"):
        fabric.call("not_a_method")


def test_loggers_input(tmp_path):
    logger0, logger1 = CSVLogger(tmp_path), CSVLogger(tmp_path, name="other")
    assert Fabric(accelerator="cpu", loggers=None).loggers == []
    assert Fabric(accelerator="cpu", loggers=[]).loggers == []
    assert Fabric(accelerator="cpu", loggers=logger0).loggers == [logger0]
    assert Fabric(accelerator="cpu", loggers=[logger0, logger1]).loggers == [logger0, logger1]
    assert Fabric(accelerator="cpu", loggers=[logger0, logger1]).logger is logger0


def _rows(logger: CSVLogger) -> list[dict[str, str]]:
    logger.save()
    with open(logger.metrics_file_path) as handle:
        return list(csv.DictReader(handle))


def test_log_and_log_dict(tmp_path):
    """`log`/`log_dict` send the metrics to each logger (Fabric: steps default to None; fulmen counts them)."""
    logger0, logger1 = CSVLogger(tmp_path, name="a"), CSVLogger(tmp_path, name="b")
    fabric = Fabric(accelerator="cpu", loggers=[logger0, logger1])
    fabric.log("test", 1)
    fabric.log("test", 2, step=15)
    fabric.log_dict({"foo": torch.tensor(3), "bar": torch.tensor([4])}, step=16)
    for logger in (logger0, logger1):
        rows = _rows(logger)
        assert [(r["step"], r["test"]) for r in rows[:2]] == [("0", "1"), ("15", "2")]
        assert (rows[2]["foo"], rows[2]["bar"]) == ("3", "4")


def test_log_dict_input_parsing(tmp_path):
    fabric = Fabric(accelerator="cpu", loggers=[CSVLogger(tmp_path)])
    with pytest.raises(ValueError, match=r"it cannot be converted to a scalar."):
        fabric.log("log", torch.tensor([3, 4]))
    with pytest.raises(ValueError, match=r"it cannot be converted to a scalar."):
        fabric.log_dict({"log_dict": torch.tensor([3, 4])})


@pytest.mark.parametrize("setup", [True, False])
def test_save_wrapped_objects(setup, tmp_path):
    """Modules and optimizers in the state, set up or not, are saved as their state dicts."""
    fabric = Fabric(devices=1, accelerator="cpu")
    unwrapped_model = BoringModel()
    unwrapped_optimizer = torch.optim.Adam(unwrapped_model.parameters())
    if setup:
        model, optimizer = fabric.setup(unwrapped_model, unwrapped_optimizer)
    else:
        model, optimizer = unwrapped_model, unwrapped_optimizer
    anything = {"cocofruit": 1}
    fabric.save(tmp_path / "ckpt", {"model": model, "optimizer": optimizer, "anything": anything})
    saved = torch.load(tmp_path / "ckpt", weights_only=True)
    assert saved["anything"] == anything
    assert saved["model"].keys() == unwrapped_model.state_dict().keys()
    numbered = unwrapped_optimizer.state_dict()["param_groups"]
    if setup:  # set up: keyed by parameter names (portable across strategies)
        names = [n for n, _ in unwrapped_model.named_parameters()]
        numbered = [{**g, "params": [names[i] for i in g["params"]]} for g in numbered]
    assert saved["optimizer"]["param_groups"] == numbered


def test_save_filter(tmp_path):
    fabric = Fabric(devices=1, accelerator="cpu")
    model = BoringModel()
    optimizer = torch.optim.Adam(model.parameters())
    anything = {"cocofruit": 1}
    state = {"model": model, "optimizer": optimizer, "anything": anything, "foo": 1}
    save_path = tmp_path / "foo.pth"

    # filter all dicts
    fabric.save(save_path, state, filter={k: lambda k, v: False for k in state})
    assert torch.load(save_path, weights_only=True) == {"foo": 1}

    # bad filters
    with pytest.raises(ConfigurationError, match="should be a dict"):
        fabric.save(save_path, state, filter="foo")
    with pytest.raises(ConfigurationError, match="callable, given 'foo"):
        fabric.save(save_path, state, filter={"model": "foo"})
    with pytest.raises(ConfigurationError, match=r"keys {'asd'} are not present in the state keys"):
        fabric.save(save_path, state, filter={"asd": lambda k, v: True})

    # subset
    fabric.save(save_path, state, filter={
        "model": lambda k, v: "weight" in k,
        "anything": lambda k, v: isinstance(v, int),
        "optimizer": lambda k, v: "param_groups" in k,
    })
    saved = torch.load(save_path, weights_only=True)
    assert saved.keys() == {"model", "optimizer", "anything", "foo"}
    assert saved["model"].keys() == {"layer.weight"}
    assert saved["optimizer"].keys() == {"param_groups"}
    assert saved["anything"] == anything


@pytest.mark.parametrize("setup", [True, False])
def test_load_wrapped_objects(setup, tmp_path):
    """Test that loading happens in-place for model, optimizer, and other user data."""
    fabric = Fabric(accelerator="cpu")
    source = BoringModel()
    source_optimizer = torch.optim.Adam(source.parameters())
    source(torch.ones(1, 32)).sum().backward()
    source_optimizer.step()
    torch.save({"model": source.state_dict(), "optimizer": source_optimizer.state_dict(), "int": 5,
                "dict": {"x": 1}, "extra": "data"}, tmp_path / "ckpt")

    unwrapped_model = BoringModel()
    unwrapped_optimizer = torch.optim.Adam(unwrapped_model.parameters())
    if setup:
        model, optimizer = fabric.setup(unwrapped_model, unwrapped_optimizer)
    else:
        model, optimizer = unwrapped_model, unwrapped_optimizer

    state = {"model": model, "optimizer": optimizer, "int": 0, "dict": {"x": 0}}
    remainder = fabric.load(tmp_path / "ckpt", state)
    assert remainder == {"extra": "data"}
    assert state["int"] == 5 and state["dict"] == {"x": 1}
    assert state["model"] is model and state["optimizer"] is optimizer
    assert torch.equal(unwrapped_model.layer.weight, source.layer.weight)
    assert optimizer.state_dict()["state"][0]["step"] == 1


def test_load_strict_and_partial(tmp_path):
    fabric = Fabric(accelerator="cpu")
    model = fabric.setup(BoringModel())
    torch.save({"model": {"layer.weight": torch.zeros(2, 32)}}, tmp_path / "ckpt")
    with pytest.raises(ConfigurationError, match=r"has no \['step'\].*strict=False"):
        fabric.load(tmp_path / "ckpt", {"model": model, "step": 0})
    state = {"model": model, "step": 0}
    assert fabric.load(tmp_path / "ckpt", state, strict=False) == {}
    assert state["step"] == 0 and torch.equal(model.layer.weight, torch.zeros(2, 32))


def test_load_raw(tmp_path):
    """`load_raw()` loads a plain state dict into a module or optimizer, set up or not."""
    fabric = Fabric(accelerator="cpu")
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.Adam(model.parameters())
    wrapped_model, wrapped_optimizer = fabric.setup(model, optimizer)

    torch.save({"weight": torch.ones(2, 2), "bias": torch.zeros(2)}, tmp_path / "raw.pt")
    fabric.load_raw(tmp_path / "raw.pt", model)
    assert torch.equal(model.weight, torch.ones(2, 2))
    torch.save({"weight": torch.full((2, 2), 2.0)}, tmp_path / "partial.pt")
    fabric.load_raw(tmp_path / "partial.pt", wrapped_model, strict=False)
    assert torch.equal(model.weight, torch.full((2, 2), 2.0))
    with pytest.raises(RuntimeError, match="Missing key"):
        fabric.load_raw(tmp_path / "partial.pt", wrapped_model)

    other = torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), lr=0.5)
    torch.save(other.state_dict(), tmp_path / "opt.pt")
    fabric.load_raw(tmp_path / "opt.pt", wrapped_optimizer)
    assert optimizer.param_groups[0]["lr"] == 0.5 == wrapped_optimizer.param_groups[0]["lr"]


def test_load_accepts_weights_only_false(tmp_path):
    fabric = Fabric(accelerator="cpu")
    torch.save({"foo": 123, "fn": print}, tmp_path / "ckpt.pt")
    remainder = fabric.load(tmp_path / "ckpt.pt", weights_only=False)
    assert remainder["foo"] == 123


def test_barrier_and_broadcast():
    fabric = Fabric(accelerator="cpu")
    fabric.barrier("test")
    assert fabric.broadcast({"a": 1}, src=0) == {"a": 1}


def test_all_gather():
    """`all_gather()` applies itself to collections; numbers become tensors (one process: a leading dim of 1 is not
    added, as in Fabric's single-device strategy)."""
    fabric = Fabric(accelerator="cpu")
    out = fabric.all_gather({"a": torch.tensor(4), "b": [torch.tensor(5), 6], "c": "string"})
    assert out["c"] == "string"
    assert torch.equal(out["a"], torch.tensor(4)) and torch.equal(out["b"][1], torch.tensor(6))
    assert fabric.all_gather(3.0).sum() == 3.0


def test_all_reduce():
    fabric = Fabric(accelerator="cpu")
    out = fabric.all_reduce({"a": torch.tensor(4.0), "b": [torch.tensor(5.0), 6], "c": "string"}, reduce_op="sum")
    assert out["c"] == "string" and out["a"] == 4.0 and out["b"][1] == 6
    assert isinstance(fabric.all_reduce(2), torch.Tensor)
    with pytest.raises(ConfigurationError, match="reduce_op='avg'"):
        fabric.all_reduce(1.0, reduce_op="avg")


def test_rank_zero_first(capsys):
    fabric = Fabric(accelerator="cpu")
    with fabric.rank_zero_first():
        fabric.print("run")
    assert capsys.readouterr().out == "run\n"


@pytest.mark.parametrize(("clip_val", "max_norm"), [(1e-3, None), (None, 1)])
def test_grad_clipping(clip_val, max_norm):
    fabric = Fabric(devices=1, accelerator="cpu")
    torch_model = nn.Linear(1, 1)
    torch_optimizer = torch.optim.SGD(torch_model.parameters(), lr=1e-3)
    model, optimizer = fabric.setup(torch_model, torch_optimizer)
    loss = model(torch.full((1, 1), 100.0).to(fabric.device))
    fabric.backward(loss)
    fabric.clip_gradients(model, optimizer, max_norm=max_norm, clip_val=clip_val)
    grads = torch.cat([p.grad.flatten() for p in torch_model.parameters()])
    if clip_val is not None:
        assert grads.abs().max() <= clip_val + 1e-9
    else:
        assert grads.norm() <= max_norm + 1e-6


def test_verify_launch_called():
    """Methods need `.launch()` first when the strategy starts processes."""
    fabric = Fabric(accelerator="cpu", strategy="ddp", devices=2)
    calls = {
        "setup": lambda: fabric.setup(nn.Linear(1, 1)),
        "setup_module": lambda: fabric.setup_module(nn.Linear(1, 1)),
        "setup_dataloaders": lambda: fabric.setup_dataloaders(DataLoader(range(2))),
        "broadcast": lambda: fabric.broadcast(1),
        "barrier": lambda: fabric.barrier(),
        "all_reduce": lambda: fabric.all_reduce(1),
        "all_gather": lambda: fabric.all_gather(1),
    }
    for name, method in calls.items():
        with pytest.raises(FulmenError, match=r"you must call `.launch\(\)`"):
            method()
        assert name
    with pytest.raises(FulmenError, match=r"you must call `.launch\(\)`"), fabric.init_module():
        pass


# ---------------------------------------------------------------- tests_fabric/test_wrappers.py


def test_fabric_module_wraps_and_attribute_lookup():
    class OriginalModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 3)
            self.attribute = 1

        def method(self):
            return 2

    original_module = OriginalModule()
    fabric_module = Fabric(accelerator="cpu").setup(original_module)
    assert fabric_module.module is original_module
    assert fabric_module.attribute == 1
    assert fabric_module.layer is original_module.layer
    assert fabric_module.method() == 2
    assert fabric_module.forward.__self__.__class__ == LiteModule
    with pytest.raises(AttributeError):
        _ = fabric_module.not_exists


def test_fabric_module_setattr():
    """Test that setattr sets attributes on the original module."""

    class OriginalModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 3)
            self.attribute = 1
            self._x = None

        @property
        def x(self):
            return self._x

        @x.setter
        def x(self, value):
            self._x = value

    original_module = OriginalModule()
    fabric_module = Fabric(accelerator="cpu").setup(original_module)

    fabric_module.new_attribute = 100
    assert original_module.new_attribute == 100

    fabric_module.attribute = 101
    assert "attribute" not in fabric_module.__dict__
    assert fabric_module.attribute == 101
    assert original_module.attribute == 101

    fabric_module.x = 102
    assert original_module.x == 102

    linear = torch.nn.Linear(2, 2)
    fabric_module.linear = linear
    assert isinstance(original_module.linear, torch.nn.Module)
    assert linear in fabric_module.modules()
    assert linear in original_module.modules()


def test_fabric_module_state_dict_access():
    class OriginalModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 3)

    fabric = Fabric(accelerator="cpu")
    fabric_module = fabric.setup(OriginalModule())
    assert set(fabric_module.state_dict().keys()) == {"layer.weight", "layer.bias"}

    weight, bias = torch.rand(3, 2), torch.rand(3)
    fabric_module.load_state_dict({"layer.weight": weight, "layer.bias": bias})
    assert torch.equal(fabric_module.layer.weight, weight)
    assert torch.equal(fabric_module.layer.bias, bias)

    with torch.device("meta"):
        original_module = OriginalModule()
    fabric_module = fabric.setup(original_module, move_to_device=False)
    assert fabric_module.layer.weight.is_meta
    fabric_module.load_state_dict({"layer.weight": weight, "layer.bias": bias}, assign=True)
    assert not fabric_module.layer.weight.is_meta


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fabric_module_device_dtype(dtype):
    fabric = Fabric(accelerator="cpu")
    fabric_module = fabric.setup(nn.Linear(2, 2))
    assert fabric_module.device == torch.device("cpu")
    fabric_module.to(dtype)
    assert fabric_module.module.weight.dtype == dtype


def test_fabric_dataloader_iterator():
    """Iterating the set-up dataloader gives the dataloader's batches."""
    dataloader = DataLoader(range(5), batch_size=2)
    fabric_dataloader = Fabric(accelerator="cpu").setup_dataloaders(dataloader)
    assert len(fabric_dataloader) == len(dataloader) == 3
    iterator, fabric_iterator = iter(dataloader), iter(fabric_dataloader)
    for _ in range(3):
        assert torch.equal(next(iterator), next(fabric_iterator))
    with pytest.raises(StopIteration):
        next(fabric_iterator)


def test_fabric_optimizer_wraps():
    """The set-up optimizer is an instance of the user's optimizer class."""
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fabric_optimizer = Fabric(accelerator="cpu").setup_optimizers(optimizer)
    assert fabric_optimizer.optimizer is optimizer
    assert isinstance(fabric_optimizer, torch.optim.SGD)
    assert isinstance(fabric_optimizer, LiteOptimizer)
    assert type(fabric_optimizer).__name__ == "LiteSGD"


def test_fabric_optimizer_works_with_lr_schedulers():
    """The issue that started this: StepLR(optimizer) accepts the set-up optimizer and changes its learning rate."""
    fabric = Fabric(accelerator="cpu")
    model, optimizer = fabric.setup(nn.Linear(1, 1), torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    fabric.backward(model(torch.ones(1, 1)).sum())
    optimizer.step()
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == 0.5 == optimizer.optimizer.param_groups[0]["lr"]


def test_fabric_optimizer_state_dict_and_load_state_dict():
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.rand(1)).backward()
    optimizer.step()
    state_dict = optimizer.state_dict()

    optimizer = torch.optim.Adam(model.parameters())
    fabric_optimizer = Fabric(accelerator="cpu").setup_optimizers(optimizer)
    assert not fabric_optimizer.state
    fabric_optimizer.load_state_dict(state_dict)
    assert fabric_optimizer.state
    assert fabric_optimizer.optimizer.state_dict()["state"] == state_dict["state"]
    assert fabric_optimizer.state_dict()["state"] == state_dict["state"]


def test_fabric_optimizer_steps():
    model = nn.Linear(1, 1)
    fabric = Fabric(accelerator="cpu")
    model, optimizer = fabric.setup(model, torch.optim.SGD(model.parameters(), lr=0.1))
    before = model.module.weight.detach().clone()

    def closure():
        optimizer.zero_grad()
        loss = model(torch.ones(1, 1)).sum()
        fabric.backward(loss)
        return loss

    assert optimizer.step(closure=closure) is not None
    assert not torch.equal(before, model.module.weight)


def test_fabric_optimizer_zero_grad_kwargs():
    """Fabric adapts `.zero_grad()` arguments to the underlying optimizer."""
    seen = []

    class CustomSGD(torch.optim.SGD):
        def zero_grad(self, set_grads_to_None=False):
            seen.append(set_grads_to_None)

    optimizer = CustomSGD(torch.nn.Linear(1, 1).parameters(), 0.1)
    fabric_optimizer = Fabric(accelerator="cpu").setup_optimizers(optimizer)
    fabric_optimizer.zero_grad()
    fabric_optimizer.zero_grad(set_grads_to_None=True)
    assert seen == [False, True]


def test_a_model_from_another_lite_is_refused():
    lite_a, lite_b = Fabric(accelerator="cpu"), Fabric(accelerator="cpu")
    model, optimizer = lite_a.setup(nn.Linear(1, 1), torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1))
    with pytest.raises(ConfigurationError, match="was set up by another Lite"):
        lite_b.setup(model)
    with pytest.raises(ConfigurationError, match="set up by another Lite"):
        lite_b.setup_optimizers(optimizer)
    with pytest.raises(ConfigurationError, match="this optimizer was set up by another Lite"):
        lite_b.clip_gradients(model, optimizer, max_norm=1.0)
    with pytest.raises(ConfigurationError, match="this model was set up by another Lite"), \
            lite_b.no_backward_sync(model):
        pass
