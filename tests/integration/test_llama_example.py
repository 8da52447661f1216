"""examples/llama: the tiny Llama trains with model_parallel on a 2 x 2 mesh (4 CPU processes,
gloo) and follows a one-process run's loss curve; its TP plan is the one docs/model-parallel.md
shows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from processes import clean_environment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llama"


def train(tmp_path: Path, name: str, *args: str) -> list[float]:
    out = tmp_path / f"{name}.json"
    env = {**clean_environment([]), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(EXAMPLE / "train.py"), *args, "--out", str(out)],
                          capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path,
                          start_new_session=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())["losses"]


@pytest.mark.timeout(300)
def test_tiny_llama_2x2_follows_the_one_process_loss_curve(tmp_path):
    reference = train(tmp_path, "reference", "--devices", "1", "--steps", "4")
    mesh = train(tmp_path, "mesh", "--devices", "4", "--dp", "2", "--tp", "2", "--steps", "4")
    assert len(mesh) == len(reference) == 4
    assert mesh[-1] < mesh[0]
    assert all(abs(a - b) <= 1e-4 * max(1.0, abs(b)) for a, b in zip(mesh, reference)), (
        mesh, reference)


def test_the_documented_plan_is_the_example_plan():
    """docs/model-parallel.md shows the example's plan verbatim (its blocks are run by
    tests/docs), so the template users copy is the one that is tested."""
    source = (EXAMPLE / "parallelize.py").read_text()
    docs = (ROOT / "docs" / "model-parallel.md").read_text()
    for name in ("BLOCK_PLAN", "MODEL_PLAN"):
        plan = re.search(rf"^{name} = {{\n.*?^}}\n", source, re.S | re.M)
        assert plan is not None and plan.group(0) in docs, name
