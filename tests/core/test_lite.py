"""Lite in one process: the seed's five changes, every method, and the errors."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from tiny_models import loader

import fulmen
from fulmen import ConfigurationError, FulmenError
from fulmen.lite_wrappers import LiteDataLoader, LiteModule, LiteOptimizer


def net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def plain_loop(epochs: int = 2) -> torch.nn.Module:
    torch.manual_seed(0)
    model = net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for x, y in loader(n=32, batch_size=8):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    return model


class SeedLite(fulmen.Lite):
    """The seed's conversion: setup, setup_dataloaders, self.backward."""

    def run(self, epochs: int = 2) -> torch.nn.Module:
        torch.manual_seed(0)
        model = net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model, optimizer = self.setup(model, optimizer)
        dataloader = self.setup_dataloaders(loader(n=32, batch_size=8))
        model.train()
        for _ in range(epochs):
            for x, y in dataloader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                self.backward(loss)
                optimizer.step()
        return model


def test_the_converted_loop_equals_the_plain_loop():
    reference = plain_loop()
    model = SeedLite(accelerator="cpu").run()
    assert isinstance(model, LiteModule) and isinstance(model.module, torch.nn.Sequential)
    for a, b in zip(reference.parameters(), model.parameters()):
        assert torch.equal(a, b)
    assert list(model.state_dict()) == list(reference.state_dict())  # keys unchanged


def test_launch_with_a_function():
    def train(lite: fulmen.Lite, scale: float) -> float:
        return lite.all_reduce(scale * lite.world_size)

    assert fulmen.Lite().launch(train, 2.0) == 2.0


def test_wrappers_are_transparent():
    def body(lite: fulmen.Lite) -> None:
        model = net()
        model.custom = "attribute"
        optimizer = torch.optim.Adam(model.parameters())
        wrapped, wrapped_opt = lite.setup(model, optimizer)
        assert wrapped.custom == "attribute" and wrapped.module[0] is model[0]
        assert isinstance(wrapped_opt, LiteOptimizer) and wrapped_opt.param_groups[0]["lr"] == \
            optimizer.param_groups[0]["lr"]
        data = lite.setup_dataloaders(loader())
        assert isinstance(data, LiteDataLoader) and len(data) == 8 and data.batch_size == 8
        assert lite.to_device({"a": [torch.ones(1)]})["a"][0].device == lite.device

    fulmen.Lite().launch(body)


def test_bf16_mixed_autocasts_the_forward_and_returns_float32():
    def body(lite: fulmen.Lite) -> None:
        seen = {}
        model = net()
        model.register_forward_hook(lambda m, i, o: seen.update(inner=o.dtype))
        wrapped = lite.setup(model)
        out = wrapped(torch.randn(4, 8))
        assert seen["inner"] == torch.bfloat16 and out.dtype == torch.float32
        with lite.autocast():
            assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.bfloat16

    fulmen.Lite(precision="bf16-mixed").launch(body)


def test_16_mixed_scales_the_loss_through_backward_and_step():
    def body(lite: fulmen.Lite) -> float:
        raw = net()
        model, optimizer = lite.setup(raw, torch.optim.SGD(raw.parameters(), lr=0.1))
        x, y = next(iter(loader()))
        lite.backward(F.cross_entropy(model(x), y))
        scaled = float(model.module[0].weight.grad.abs().sum())
        lite.clip_gradients(model, optimizer, max_norm=1.0)
        return scaled

    assert fulmen.Lite(precision="16-mixed").launch(body) > 1000  # scaled by 65536


def test_init_module_uses_the_true_precision_dtype():
    def body(lite: fulmen.Lite) -> torch.dtype:
        with lite.init_module():
            return torch.nn.Linear(2, 2).weight.dtype

    assert fulmen.Lite(precision="bf16-true").launch(body) == torch.bfloat16
    assert fulmen.Lite(precision="64-true").launch(body) == torch.float64
    assert fulmen.Lite().launch(body) == torch.float32


def test_save_and_load_both_forms(tmp_path):
    def body(lite: fulmen.Lite) -> None:
        raw = net()
        model, optimizer = lite.setup(raw, torch.optim.Adam(raw.parameters()))
        x, y = next(iter(loader()))
        lite.backward(F.cross_entropy(model(x), y))
        optimizer.step()
        lite.save(model.state_dict(), tmp_path / "weights.ckpt")
        assert set(lite.load(tmp_path / "weights.ckpt")) == set(model.state_dict())
        lite.save(tmp_path / "full.ckpt", {"model": model, "optimizer": optimizer, "step": 3})
        raw = net()
        fresh, fresh_opt = lite.setup(raw, torch.optim.Adam(raw.parameters()))
        rest = lite.load(tmp_path / "full.ckpt", {"model": fresh, "optimizer": fresh_opt})
        assert rest == {"step": 3}
        for a, b in zip(model.parameters(), fresh.parameters()):
            assert torch.equal(a, b)
        assert fresh_opt.state_dict()["state"][0]["step"] == 1

    fulmen.Lite().launch(body)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.ckpt", "weights.ckpt"]


def test_save_to_an_unwritable_place_leaves_nothing(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)

    def body(lite: fulmen.Lite) -> None:
        lite.save({"a": torch.ones(1)}, locked / "x.ckpt")

    try:
        if os.geteuid() == 0:  # root writes anywhere: use a path under a file instead
            (tmp_path / "file").write_text("")
            with pytest.raises(ConfigurationError, match="cannot create"):
                fulmen.Lite().launch(lambda lite: lite.save({}, tmp_path / "file" / "x.ckpt"))
        else:
            with pytest.raises(ConfigurationError, match="is not writable; nothing was written"):
                fulmen.Lite().launch(body)
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_seed_everything_makes_runs_repeatable():
    def body(lite: fulmen.Lite) -> torch.Tensor:
        lite.seed_everything(7)
        return torch.rand(3)

    assert torch.equal(fulmen.Lite().launch(body), fulmen.Lite().launch(body))


@pytest.mark.parametrize(("call", "message"), [
    (lambda lite: lite.backward(torch.ones(1, requires_grad=True).sum()),
     r"no model was set up"),
    (lambda lite: lite.setup_dataloaders([1, 2, 3]), r"setup_dataloaders got a list"),
    (lambda lite: lite.setup(lite.setup(net())), r"already set up"),
    (lambda lite: lite.clip_gradients(lite.setup(net()), torch.optim.SGD(net().parameters(),
                                                                         lr=1), max_norm=1.0),
     r"optimizer that was not set up"),
    (lambda lite: lite.clip_gradients(None, None), r"give exactly one of max_norm= or clip_val="),
])
def test_misuse_is_explained(call, message):
    with pytest.raises(FulmenError, match=message):
        fulmen.Lite().launch(call)


def test_methods_work_in_a_plain_script_and_multi_process_strategies_need_launch():
    lite = fulmen.Lite(accelerator="cpu")  # one process: no launch() needed, as with Fabric
    assert lite.all_reduce(1.0) == 1.0
    model = lite.setup(net())
    assert model.device == lite.device == torch.device("cpu")
    ddp = fulmen.Lite(accelerator="cpu", strategy="ddp", devices=2)
    with pytest.raises(FulmenError, match=r"lite.all_reduce\(\) was called before the processes "
                       r"started: strategy 'ddp' runs 2 processes, so you must call `.launch\(\)`"):
        ddp.all_reduce(1.0)


def test_rank_zero_first_and_print(capsys):
    def body(lite: fulmen.Lite) -> None:
        with lite.rank_zero_first():
            lite.print("first")
        lite.barrier()

    fulmen.Lite().launch(body)
    assert capsys.readouterr().out == "first\n"


def test_replace_sampler_is_the_legacy_spelling():
    def body(lite: fulmen.Lite) -> None:
        with pytest.warns(fulmen.FulmenDeprecationWarning, match="use_distributed_sampler"):
            lite.setup_dataloaders(loader(), replace_sampler=False)

    fulmen.Lite().launch(body)


def test_no_backward_sync_is_a_context():
    def body(lite: fulmen.Lite) -> Any:
        model = lite.setup(net())
        with lite.no_backward_sync(model):
            return "ok"

    assert fulmen.Lite().launch(body) == "ok"


def test_save_and_load_keep_several_models_apart(tmp_path):
    """A GAN-style loop sets up two models: each checkpoint entry is its own model's state."""

    class TwoModels(fulmen.Lite):
        def run(self) -> None:
            gen, disc = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)
            gen, g_opt = self.setup(gen, torch.optim.Adam(gen.parameters()))
            disc, d_opt = self.setup(disc, torch.optim.Adam(disc.parameters()))
            state = {"gen": gen, "disc": disc, "g_opt": g_opt, "d_opt": d_opt}
            self.save(tmp_path / "gan.ckpt", state)
            saved = torch.load(tmp_path / "gan.ckpt", weights_only=True)
            assert saved["gen"]["weight"].shape == (8, 4)
            assert saved["disc"]["weight"].shape == (1, 8)
            with torch.no_grad():
                gen.weight.zero_()
                disc.weight.zero_()
            self.load(tmp_path / "gan.ckpt", state)
            assert torch.equal(gen.weight, saved["gen"]["weight"])
            assert torch.equal(disc.weight, saved["disc"]["weight"])

    TwoModels(accelerator="cpu").run()
