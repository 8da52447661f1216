"""``import fulmen`` imports no torch and no plugin; listing plugins imports no target class."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)


def run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_fulmen_imports_neither_torch_nor_plugins():
    loaded = run("import sys, json, fulmen; "
                 "print(json.dumps(sorted(m for m in sys.modules)))")
    assert "torch" not in loaded
    assert not [m for m in loaded if m.startswith("fulmen_")]
    assert "pluggy" not in loaded


def test_public_names_that_need_no_torch_stay_cheap():
    loaded = run("import sys, json, fulmen; fulmen.hookimpl; fulmen.StrategySpec; "
                 "fulmen.ClusterEnvironment; fulmen.ConfigurationError; "
                 "print(json.dumps(sorted(sys.modules)))")
    assert "torch" not in loaded


def test_listing_plugins_imports_no_target_class_and_no_torch():
    loaded = run("import sys, json, io, contextlib\n"
                 "from fulmen.cli import main\n"
                 "with contextlib.redirect_stdout(io.StringIO()): main(['plugins', '--json'])\n"
                 "print(json.dumps(sorted(sys.modules)))")
    assert "torch" not in loaded
    assert "fulmen_accelerators.cpu" in loaded  # the plugin modules answer the hooks...
    targets = [m for m in loaded if m.startswith("fulmen_") and m.rsplit(".", 1)[-1] in
               ("accelerator", "strategy", "precision", "environment")]
    assert targets == []  # ...but their classes stay unimported


def test_an_unknown_attribute_is_an_attribute_error():
    out = run("import json, fulmen\n"
              "try:\n    fulmen.Trainerr\nexcept AttributeError as e:\n"
              "    print(json.dumps({'error': str(e)}))")
    assert out == {"error": "module 'fulmen' has no attribute 'Trainerr'"}


def test_a_run_imports_no_compiler_unless_asked():
    """``torch._dynamo`` takes seconds to import: a run that compiles nothing leaves it out, so a
    launcher starts its processes without waiting for it (torch's optimizers import it when
    constructed, so this validates: no optimizer is built)."""
    loaded = run("import sys, json, torch, fulmen\n"
                 "from torch.utils.data import DataLoader, TensorDataset\n"
                 "class M(fulmen.Module):\n"
                 "    def __init__(self):\n"
                 "        super().__init__(); self.l = torch.nn.Linear(2, 1)\n"
                 "    def validation_step(self, batch, i):\n"
                 "        self.log('v', self.l(batch[0]).sum())\n"
                 "data = DataLoader(TensorDataset(torch.ones(4, 2)), batch_size=2)\n"
                 "fulmen.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,\n"
                 "               enable_progress_bar=False).validate(M(), data)\n"
                 "print(json.dumps(sorted(sys.modules)))")
    assert "torch._dynamo" not in loaded
