"""``fulmen run SCRIPT [ARGS...]`` / ``fulmen run -m MODULE [ARGS...]``: run an unmodified
Lightning script on fulmen.

The script runs in this process as ``__main__`` (as ``python SCRIPT`` would run it) with
:class:`~fulmen.dropin.finder.LightningFinder` installed, so ``lightning``, ``lightning.pytorch``,
``pytorch_lightning``, ``lightning.fabric`` and ``lightning_fabric`` resolve to fulmen. The
processes it starts (DDP ranks, spawned workers, ``torchrun``) get the finder too: the
environment variable :data:`ENV` and a ``sitecustomize`` that leads ``PYTHONPATH`` install it at
their start. Nothing changes for Python programs started elsewhere, and an installed Lightning
stays what ``import lightning`` gives them.

The script also sees Lightning's look (:mod:`fulmen.look`: ``FULMEN_LOOK=lightning`` unless the
environment sets it): logs under ``lightning_logs/``, Lightning's device lines instead of fulmen's
run banner (``FULMEN_BANNER=1`` shows it), and errors naming ``LightningModule``, ``Fabric``.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from fulmen import look

ENV = "FULMEN_LIGHTNING_NAMES"
BOOT = Path(__file__).resolve().parent / "boot"
USAGE = """usage: fulmen run SCRIPT [ARGS...]
       fulmen run -m MODULE [ARGS...]

Run a PyTorch Lightning or Fabric script unmodified on fulmen: lightning, lightning.pytorch,
pytorch_lightning, lightning.fabric and lightning_fabric resolve to fulmen in this process and in
the processes it starts (DDP ranks, torchrun workers). Under torchrun:
    torchrun --nproc-per-node 2 -m fulmen run SCRIPT [ARGS...]
A Lightning name without a fulmen counterpart is an ImportError naming it.
The script sees Lightning's look: logs in lightning_logs/, Lightning's device lines and class
names in errors; FULMEN_BANNER=1 adds fulmen's run banner, FULMEN_LOOK=fulmen keeps fulmen's look.
`fulmen migrate SCRIPT` rewrites the script for plain `python` instead."""


def activate() -> None:
    """Serve Lightning's names from fulmen here and in every process started from here."""
    from fulmen.dropin.finder import install

    os.environ[ENV] = "1"
    os.environ.setdefault(look.LOOK, "lightning")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(BOOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(BOOT), *paths])
    install()


def main(argv: Sequence[str]) -> int:
    """Run the script or module named in ``argv``; its exit status."""
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    problem = look.check()
    if problem is not None:
        print(f"fulmen run: error: {problem}", file=sys.stderr)
        return 2
    if args[0] == "-m":
        if len(args) < 2:
            print("fulmen run: error: -m needs a module name\n\n" + USAGE, file=sys.stderr)
            return 2
        module, rest = args[1], args[2:]
        activate()
        sys.argv = [module, *rest]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    script = Path(args[0])
    if not script.is_file():
        print(f"fulmen run: error: {args[0]!r} is not a file (fulmen run SCRIPT [ARGS...] runs a "
              "Python script; -m MODULE runs a module)", file=sys.stderr)
        return 2
    activate()
    sys.argv = [str(script), *args[1:]]
    sys.path.insert(0, str(script.resolve().parent))  # as `python SCRIPT` puts it first
    runpy.run_path(str(script), run_name="__main__")
    return 0
