import torch

import fulmen
from fulmen_strategies import SingleDeviceStrategy


def test_single_device_is_the_default_for_one_device(fake_dists):
    trainer = fulmen.Trainer(devices=1)
    assert isinstance(trainer.strategy, SingleDeviceStrategy)
    assert trainer.strategy.processes_per_node == 1


def test_collectives_are_identities_in_one_process(fake_dists):
    strategy = fulmen.Trainer().strategy
    t = torch.tensor([1.0, 2.0])
    assert strategy.reduce(t) is t
    assert strategy.all_gather(t) is t
    assert strategy.broadcast({"a": 1}) == {"a": 1}
    assert strategy.barrier() is None


def test_module_to_device_moves_registered_buffers(fake_dists):
    class WithBuffer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("sigma", torch.eye(3))

    module = fulmen.Trainer().strategy.module_to_device(WithBuffer())
    assert module.sigma.device == torch.device("cpu")


def test_unattached_strategy_explains_itself():
    import pytest

    with pytest.raises(fulmen.FulmenError, match="is not attached to a selection yet"):
        _ = SingleDeviceStrategy().world_size
