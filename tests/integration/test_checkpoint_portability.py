"""One canonical checkpoint across strategies and world sizes (issue 18): train with one
strategy, resume with another, on real gloo processes.

Each resumed run reports the model weights and the optimizer state as restored, before its
first step: they must equal what the checkpoint holds (so model and optimizer state were
resharded, not reinitialised), the loss must continue where it stopped, and on the same world
size the resumed run ends bit-exactly where an uninterrupted run does. The fast cases run in
``make test``; the ordered-pair matrix runs under ``slow``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from processes import Run, script_runner

from fulmen.checkpoint import canonical, tool

SCRIPTS = Path(__file__).parent / "scripts"
STRATEGIES = ("single_device", "ddp", "fsdp_sharded", "deepspeed", "ddp_sharded")

pytestmark = pytest.mark.timeout(600)


class Runs:
    """Runs of ``portable.py``, each (arguments) run once per test session."""

    def __init__(self, root: Path) -> None:
        self.run = script_runner(root, SCRIPTS, 240)
        self.done: dict[tuple[str, ...], Run] = {}

    def __call__(self, *args: str) -> Run:
        if args not in self.done:
            run = self.run("portable.py", *args)
            assert run.returncode == 0, run.output[-4000:]
            self.done[args] = run
        return self.done[args]

    def first_epoch(self, strategy: str, devices: int) -> Run:
        return self("--strategy", strategy, "--devices", str(devices), "--epochs", "1")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("portable"))


def read(path: Path) -> dict[str, Any]:
    return canonical.read_directory(path) if path.is_dir() else torch.load(path, weights_only=True)


def flat(value: Any) -> torch.Tensor:
    return torch.tensor(value).flatten() if not isinstance(value, torch.Tensor) else \
        value.detach().float().flatten()


def resume(runs: Runs, source: tuple[str, int], target: tuple[str, int]) -> None:
    """``source`` trains one epoch and saves; ``target`` resumes from it for a second."""
    first = runs.first_epoch(*source)
    checkpoint = first.out / "final.ckpt"
    assert checkpoint.is_dir() == (source[0] == "fsdp_sharded" and source[1] > 1)
    saved = read(checkpoint)
    assert saved["fulmen_manifest"]["world_size"] == source[1]
    second = runs("--strategy", target[0], "--devices", str(target[1]), "--epochs", "2",
                  "--resume", str(checkpoint))
    result = second.json("rank0")
    restored = result["restored"]
    for name, value in saved["state_dict"].items():  # the model, as restored, before a step
        assert torch.allclose(flat(restored["weights"][name]), flat(value), atol=1e-6), name
    state = saved["optimizer_states"][0]["state"]
    for name, entry in state.items():  # and the optimizer, by parameter name
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.allclose(flat(restored["optimizer"][name][key]), flat(entry[key]),
                                  atol=1e-6), (name, key)
        assert float(flat(restored["optimizer"][name]["step"])[0]) == float(flat(entry["step"]))
    before = first.json("rank0")
    assert result["global_step"] > before["global_step"]
    last, next_ = before["losses"][-1], result["losses"][0]
    assert abs(next_ - last) < 0.5 * max(last, 0.05) + 0.05, (last, next_)  # no jump back up


@pytest.mark.parametrize(("source", "target"), [
    (("ddp", 2), ("single_device", 1)),
    (("fsdp_sharded", 2), ("ddp", 2)),
    (("deepspeed", 2), ("fsdp_sharded", 2)),
], ids=lambda p: f"{p[0]}{p[1]}")
def test_resume_on_another_strategy(runs: Runs, source: tuple[str, int],
                                    target: tuple[str, int]) -> None:
    resume(runs, source, target)


@pytest.mark.parametrize("strategy", [
    ("ddp", 2),
    *(pytest.param(s, marks=pytest.mark.slow) for s in
      [("single_device", 1), ("fsdp_sharded", 2), ("deepspeed", 2), ("ddp_sharded", 2)]),
], ids=lambda p: f"{p[0]}{p[1]}")
def test_same_world_size_resume_is_bit_exact(runs: Runs, strategy: tuple[str, int]) -> None:
    """Resumed from the end of the first epoch, or from inside it (after step 2), on the same
    strategy and world size: the weights end equal to the uninterrupted run's."""
    args = ("--strategy", strategy[0], "--devices", str(strategy[1]))
    straight = runs(*args, "--epochs", "2").json("rank0")
    checkpoints = [runs.first_epoch(*strategy).out / "final.ckpt",
                   runs(*args, "--epochs", "1", "--save-at", "2").out / "mid.ckpt"]
    for checkpoint in checkpoints:
        resumed = runs(*args, "--epochs", "2", "--resume", str(checkpoint)).json("rank0")
        for name, value in straight["weights"].items():
            assert torch.equal(torch.tensor(value), torch.tensor(resumed["weights"][name])), \
                (checkpoint.name, name)


def seen(run: Run, ranks: int, epoch: int, before: int | None = None) -> list[int]:
    """The sample indices every rank of ``run`` trained on in ``epoch`` (in its batches before
    ``before``)."""
    return [i for rank in range(ranks) for e, index, batch in run.json(f"seen{rank}")
            if e == epoch and (before is None or index < before) for i in batch]


@pytest.mark.parametrize(("source", "target"), [
    (("ddp", 2), ("single_device", 1)),
    pytest.param(("single_device", 1), ("fsdp_sharded", 2), marks=pytest.mark.slow),
    pytest.param(("deepspeed", 2), ("ddp", 1), marks=pytest.mark.slow),
    pytest.param(("ddp", 2), ("ddp", 3), marks=pytest.mark.slow),
], ids=lambda p: f"{p[0]}{p[1]}")
def test_mid_epoch_resume_on_another_world_size(runs: Runs, source: tuple[str, int],
                                                target: tuple[str, int]) -> None:
    """Checkpointed inside the first epoch (16 of its 32 samples trained on), resumed on another
    world size: the epoch goes on after the batches done, rescaled to the new world size.

    Between several processes (each a seeded shuffling distributed sampler, as Lightning: one
    permutation at every world size) the rest of the epoch is the samples not yet seen, each once
    when 16 samples are whole rounds of the new world size, else the last partial round again,
    never a skip. Between one process (the loader's own order) and several, the orders differ
    (as under Lightning): the epoch still ends after its remaining batches, and the resume warns
    that its samples are not exactly the unseen ones."""
    steps = 4 // source[1]
    first = runs("--strategy", source[0], "--devices", str(source[1]), "--epochs", "1",
                 "--save-at", str(steps))
    progress = read(first.out / "mid.ckpt")["loops"]["fit"]["progress"]
    assert progress["epochs"] == {"started": 1, "completed": 0}
    second = runs("--strategy", target[0], "--devices", str(target[1]), "--epochs", "1",
                  "--resume", str(first.out / "mid.ckpt"))
    before, after = seen(first, source[1], 0, steps), seen(second, target[1], 0)
    assert len(before) == len(set(before)) == 16
    rest = set(range(32)) - set(before)
    if (source[1] == 1) != (target[1] == 1):
        assert "not exactly the samples not yet seen" in second.output, second.output[-3000:]
        assert len(after) == 16
    elif 16 % (4 * target[1]) == 0:
        assert sorted(after) == sorted(rest)
    else:
        assert set(after) >= rest and len(after) <= 16 + 4 * target[1]


@pytest.mark.parametrize("source", [
    ("ddp", 2), ("fsdp_sharded", 2), ("deepspeed", 2),  # checkpoints the fast cases wrote
    pytest.param(("single_device", 1), marks=pytest.mark.slow),
    pytest.param(("ddp_sharded", 2), marks=pytest.mark.slow),
], ids=lambda p: f"{p[0]}{p[1]}")
def test_checkpoint_tool_reads_every_strategy(runs: Runs, source: tuple[str, int],
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``fulmen checkpoint inspect|verify|convert|diff`` on each strategy's checkpoint: the
    manifest records the world size and every rank's random states; a conversion to either
    layout holds the same tensors (random states included)."""
    path = str(runs.first_epoch(*source).out / "final.ckpt")
    assert tool.main(["inspect", path, "--json"]) == 0
    origin = json.loads(capsys.readouterr().out)["origin"]
    assert origin["world_size"] == origin["rng_ranks"] == source[1]
    assert tool.main(["inspect", path]) == 0
    assert tool.main(["verify", path]) == 0, capsys.readouterr().out
    for layout in ("file", "dcp"):
        converted = str(tmp_path / f"converted.{layout}")
        assert tool.main(["convert", path, converted, "--to", layout]) == 0
        capsys.readouterr()
        assert tool.main(["diff", path, converted]) == 0, capsys.readouterr().out
        assert tool.main(["verify", converted]) == 0, capsys.readouterr().out
    assert tool.main(["convert", path, str(tmp_path / "w.safetensors"),
                      "--to", "safetensors"]) == 0


@pytest.mark.slow
@pytest.mark.parametrize(("source", "target"),
                         list(itertools.permutations([(s, 2) for s in STRATEGIES[1:]] +
                                                     [("single_device", 1)], 2)),
                         ids=lambda p: f"{p[0]}{p[1]}")
def test_strategy_matrix(runs: Runs, source: tuple[str, int], target: tuple[str, int]) -> None:
    resume(runs, source, target)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["ddp", "fsdp_sharded", "deepspeed"])
@pytest.mark.parametrize(("before", "after"), [(1, 2), (2, 1), (2, 3), (3, 2), (1, 3), (3, 1)])
def test_world_size_changes(runs: Runs, strategy: str, before: int, after: int) -> None:
    resume(runs, (strategy, before), (strategy, after))
