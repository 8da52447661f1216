"""Started by ``fulmen run`` (this folder leads PYTHONPATH in the processes it starts): serve
Lightning's names from fulmen in every child Python process too (DDP ranks, torchrun workers,
spawned processes), then run the environment's own ``sitecustomize``, if any."""

import os
import sys

if os.environ.get("FULMEN_LIGHTNING_NAMES") == "1":
    from fulmen.dropin.finder import install

    install()

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
del sys.modules["sitecustomize"]
try:
    import sitecustomize  # noqa: F401  (the environment's own, now that this folder is off sys.path)
except ImportError:
    pass
