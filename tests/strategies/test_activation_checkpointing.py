"""Activation checkpointing recomputes instead of storing, with the same gradients and keys."""

from __future__ import annotations

import pytest
import torch

from fulmen import ConfigurationError
from fulmen_strategies import activation_checkpointing as ac


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return torch.tanh(self.lin(x))


def model() -> torch.nn.Sequential:
    torch.manual_seed(0)
    return torch.nn.Sequential(Block(), Block(), torch.nn.Linear(16, 2))


def grads(net: torch.nn.Module) -> list[torch.Tensor]:
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    net(x).square().sum().backward()
    return [p.grad.clone() for p in net.parameters()]


@pytest.mark.parametrize("policy", [{Block}, Block, lambda m: isinstance(m, Block)],
                         ids=["set", "class", "callable"])
def test_checkpointed_blocks_recompute_with_identical_gradients_and_keys(policy):
    plain, checkpointed = model(), model()
    assert ac.apply(checkpointed, ac.check_policy("FSDPStrategy", policy)) == 2
    assert ac.apply(checkpointed, ac.check_policy("FSDPStrategy", policy)) == 2  # idempotent
    want, got = grads(plain), grads(checkpointed)
    assert all(torch.equal(a, b) for a, b in zip(want, got))
    assert [b.calls for b in checkpointed[:2]] == [2, 2]  # forward, then again in backward
    assert [b.calls for b in plain[:2]] == [1, 1]
    assert list(checkpointed.state_dict()) == list(plain.state_dict())
    with torch.no_grad():
        checkpointed(torch.randn(1, 16))
    assert [b.calls for b in checkpointed[:2]] == [3, 3]  # no recomputation without grad


@pytest.mark.parametrize("policy", [{"Block"}, set(), {int}])
def test_a_bad_policy_names_the_owner_and_what_works(policy):
    with pytest.raises(ConfigurationError, match=r"DDPStrategy\(activation_checkpointing_policy"):
        ac.check_policy("DDPStrategy", policy)


def test_a_policy_that_matches_nothing_warns_with_the_model_classes():
    with pytest.warns(UserWarning, match="matches no submodule of Sequential.*Block, Linear"):
        assert ac.apply(model(), ac.check_policy("DDPStrategy", {torch.nn.Conv2d}),
                        "DDPStrategy") == 0


@pytest.mark.parametrize("strategy", ["fsdp", "ddp"])
def test_fsdp_and_ddp_take_the_policy(strategy):
    """On one process the strategies do not wrap, but the policy is applied on set-up (no
    process is launched here: launching would leave rank variables in this test process)."""
    import fulmen
    from fulmen_strategies import DDPStrategy, FSDPStrategy

    cls = {"fsdp": FSDPStrategy, "ddp": DDPStrategy}[strategy]
    strategy = cls(activation_checkpointing_policy={Block})
    fulmen.Lite(accelerator="cpu", devices=1, strategy=strategy)  # attaches, starts nothing
    net = strategy.wrap_module(model())  # what set-up does (one process: no wrapper)
    net(torch.randn(2, 16)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    assert [b.calls for b in net[:2]] == [2, 2]
