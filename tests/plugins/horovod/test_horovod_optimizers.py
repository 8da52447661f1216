"""The optimizer helpers the strategy uses around ``hvd.DistributedOptimizer`` (torch only)."""

from __future__ import annotations

import warnings

import torch

from fulmen_horovod import optimizers as opt_util


def test_named_parameters_use_module_names_and_name_the_rest():
    net = torch.nn.Linear(2, 2)
    extra = torch.nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.SGD([{"params": net.parameters()}, {"params": [extra]}], lr=0.1)
    names = opt_util.named_parameters(net, optimizer)
    assert [n for n, _ in names] == ["weight", "bias", "group1.param0"]
    assert names[2][1] is extra
    assert [n for n, _ in opt_util.named_parameters(None, optimizer)] == [
        "group0.param0", "group0.param1", "group1.param0"]


def test_loading_state_keeps_the_param_group_dictionaries():
    """A scheduler built on the user's optimizer keeps steering the replacement after a load."""
    net = torch.nn.Linear(2, 2)
    user = torch.optim.SGD(net.parameters(), lr=1.0, momentum=0.9)
    replacement = torch.optim.SGD(user.param_groups, lr=1.0)  # shares the dicts, like Horovod
    scheduler = torch.optim.lr_scheduler.StepLR(user, step_size=1, gamma=0.5)
    saved = {"state": {}, "param_groups": [{**user.param_groups[0], "lr": 0.25,
                                            "params": [0, 1]}]}
    opt_util.load_keeping_groups(replacement, saved)
    assert replacement.param_groups[0] is user.param_groups[0]
    assert replacement.param_groups[0]["lr"] == 0.25
    net(torch.ones(1, 2)).sum().backward()
    replacement.step()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: scheduler.step before the user's step
        scheduler.step()
    assert replacement.param_groups[0]["lr"] == user.param_groups[0]["lr"] == 0.125


def test_schedulers_follow_the_replacement_without_warnings():
    net = torch.nn.Linear(2, 2)
    user = torch.optim.SGD(net.parameters(), lr=1.0)
    replacement = torch.optim.SGD(user.param_groups, lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(user, step_size=1, gamma=0.5)
    opt_util.retarget_schedulers([scheduler], user, replacement)
    assert scheduler.optimizer is replacement
    net(torch.ones(1, 2)).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replacement.step()
        scheduler.step()
    assert user.param_groups[0]["lr"] == 0.5


def test_zero_grad_accepts_set_to_none():
    class NoArgZeroGrad(torch.optim.SGD):  # Horovod 0.28's signature
        def zero_grad(self):  # type: ignore[override]
            return super().zero_grad()

    net = torch.nn.Linear(2, 2)
    optimizer = NoArgZeroGrad(net.parameters(), lr=0.1)
    opt_util.accept_set_to_none(optimizer)
    net(torch.ones(1, 2)).sum().backward()
    optimizer.zero_grad(set_to_none=False)
    assert net.weight.grad is not None and not net.weight.grad.any()
    optimizer.zero_grad(set_to_none=True)
    assert net.weight.grad is None
