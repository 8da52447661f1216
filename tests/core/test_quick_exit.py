"""A process that built a Trainer or Lite exits without Python's final garbage-collector passes
(fulmen.quick_exit), and nothing else about exiting changes: the exit status, exit handlers,
and files left open by the script (flushed when the modules are torn down)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import atexit, gc, sys
    import fulmen

    # Registered before fulmen's: runs after it, so it sees the frozen collector.
    atexit.register(lambda: print("frozen objects at exit:", gc.get_freeze_count() > 0,
                                  flush=True))
    left_open = open(sys.argv[1], "w")
    left_open.write("written, never closed")  # buffered: flushed only at teardown
    fulmen.{owner}(accelerator="cpu", {extra})
    sys.exit(3)
""")


@pytest.mark.parametrize("owner, extra", [("Trainer", "logger=False"), ("Lite", "")])
def test_exit_handlers_status_and_open_files_survive_the_quick_exit(tmp_path, owner, extra):
    path = tmp_path / "open.txt"
    script = SCRIPT.format(owner=owner, extra=extra)
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "frozen objects at exit: True" in done.stdout
    assert path.read_text() == "written, never closed"


def test_a_process_without_a_trainer_exits_as_python_does(tmp_path):
    script = "import atexit, gc, fulmen; atexit.register(lambda: print(gc.get_freeze_count()))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.stdout.strip() == "0", done.stderr
