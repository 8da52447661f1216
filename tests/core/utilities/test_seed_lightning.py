"""Lightning's ``tests_fabric/utilities/test_seed.py`` and ``tests_pytorch/utilities/test_seed.py``,
ported to fulmen (``fulmen.utilities``).

fulmen's environment variables are ``FULMEN_GLOBAL_SEED`` and ``FULMEN_SEED_WORKERS``
(``PL_GLOBAL_SEED`` is read too, so a job script written for Lightning keeps its seed). Bad seeds
raise ``fulmen.ConfigurationError``, a ``ValueError`` like Lightning's. Not ported: the tests of
Lightning's private ``_collect_rng_states``/``_generate_seed_sequence`` and the ones that mock
``torch.cuda``.
"""

from __future__ import annotations

import logging
import os
import random
import warnings

import numpy
import pytest
import torch

from fulmen.utilities import isolate_rng, pl_worker_init_function, reset_seed, seed_everything


@pytest.fixture(autouse=True)
def clean_seed_env(monkeypatch):
    for key in ("FULMEN_GLOBAL_SEED", "FULMEN_SEED_WORKERS", "PL_GLOBAL_SEED", "PL_SEED_WORKERS"):
        monkeypatch.delenv(key, raising=False)


def test_default_seed():
    """Test that the default seed is 0 when no seed provided and no environment variable set."""
    assert seed_everything() == 0
    assert os.environ["FULMEN_GLOBAL_SEED"] == "0"


def test_seed_stays_same_with_multiple_seed_everything_calls():
    """Ensure that after the initial seed everything, the seed stays the same for the same run."""
    with pytest.warns(UserWarning, match="No seed found"):
        seed_everything()
    initial_seed = os.environ.get("FULMEN_GLOBAL_SEED")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seed_everything()
    seed = os.environ.get("FULMEN_GLOBAL_SEED")

    assert initial_seed == seed


@pytest.mark.parametrize("variable", ["FULMEN_GLOBAL_SEED", "PL_GLOBAL_SEED"])
def test_correct_seed_with_environment_variable(monkeypatch, variable):
    """Ensure that the seed environment variable is read."""
    monkeypatch.setenv(variable, "2020")
    assert seed_everything() == 2020


def test_invalid_seed(monkeypatch):
    """Ensure that a ValueError is raised if an invalid seed is given."""
    monkeypatch.setenv("FULMEN_GLOBAL_SEED", "invalid")
    with pytest.raises(ValueError, match="Invalid seed specified"):
        seed_everything()


@pytest.mark.parametrize("seed", [10e9, -10e9])
def test_out_of_bounds_seed(seed):
    """Ensure that a ValueError is raised if an out-of-bounds seed is given."""
    with pytest.raises(ValueError, match="is not in bounds"):
        seed_everything(seed)


def test_seed_everything_accepts_valid_seed_argument():
    assert seed_everything(45) == 45


def test_seed_everything_accepts_valid_seed_from_env(monkeypatch):
    monkeypatch.setenv("FULMEN_GLOBAL_SEED", "17")
    assert seed_everything() == 17


def test_seed_everything_non_verbose_no_warning():
    """Ensure that no warning is emitted when verbose is False and no seed is provided."""
    with warnings.catch_warnings(record=True) as caught:
        seed_everything(verbose=False)
    assert caught == []


def test_reset_seed_no_op():
    """Test that the reset_seed function is a no-op when seed_everything() was not used."""
    seed_before = torch.initial_seed()
    reset_seed()
    assert torch.initial_seed() == seed_before
    assert "FULMEN_GLOBAL_SEED" not in os.environ


@pytest.mark.parametrize("workers", [True, False])
def test_reset_seed_everything(workers):
    """Test that we can reset the seed to the initial value set by seed_everything()"""
    seed_everything(123, workers)
    before = torch.rand(1)
    assert os.environ["FULMEN_GLOBAL_SEED"] == "123"
    assert os.environ["FULMEN_SEED_WORKERS"] == str(int(workers))

    reset_seed()
    after = torch.rand(1)
    assert os.environ["FULMEN_GLOBAL_SEED"] == "123"
    assert os.environ["FULMEN_SEED_WORKERS"] == str(int(workers))
    assert torch.allclose(before, after)


def test_reset_seed_non_verbose(caplog):
    with caplog.at_level(logging.INFO, logger="fulmen"):
        seed_everything(123)
        assert [r.getMessage() for r in caplog.records] == ["Seed set to 123"]
        caplog.clear()
        reset_seed()  # should call `seed_everything(..., verbose=False)`
        assert len(caplog.records) == 0


@pytest.mark.parametrize(("num_workers", "num_ranks"), [(16, 16)])
@pytest.mark.parametrize("base_seed", [100, 1024, 2**32 - 1])
def test_pl_worker_init_function(base_seed, num_workers, num_ranks):
    """Every worker of every rank gets its own random streams (Lightning: 64 x 64; 16 x 16 here)."""
    torch_rands = set()
    stdlib_rands = set()
    numpy_rands = set()

    for worker_id in range(num_workers):
        for rank in range(num_ranks):
            seed_everything(base_seed, verbose=False)
            pl_worker_init_function(worker_id, rank)
            torch_rands.add(tuple(torch.randint(0, 1_000_000, (100,)).tolist()))
            stdlib_rands.add(tuple(random.randint(0, 1_000_000) for _ in range(100)))
            numpy_rands.add(tuple(numpy.random.randint(0, 1_000_000, (100,)).tolist()))

    assert len(torch_rands) == num_ranks * num_workers
    assert len(stdlib_rands) == num_ranks * num_workers
    assert len(numpy_rands) == num_ranks * num_workers
    assert len(torch_rands | stdlib_rands | numpy_rands) == 3 * num_workers * num_ranks


def test_isolate_rng():
    """Test that the isolate_rng context manager isolates the random state from the outer scope."""
    torch.rand(1)
    with isolate_rng():
        generated = [torch.rand(2) for _ in range(3)]
    assert torch.equal(torch.rand(2), generated[0])

    numpy.random.rand(1)
    with isolate_rng():
        generated = [numpy.random.rand(2) for _ in range(3)]
    assert numpy.equal(numpy.random.rand(2), generated[0]).all()

    random.random()
    with isolate_rng():
        generated = [random.random() for _ in range(3)]
    assert random.random() == generated[0]


def test_isolate_rng_restores_after_an_exception():
    torch.rand(1)
    with pytest.raises(RuntimeError), isolate_rng():
        expected = torch.rand(2)
        raise RuntimeError("inside")
    assert torch.equal(torch.rand(2), expected)
