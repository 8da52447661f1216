"""Started by ``fulmen run`` (this folder leads PYTHONPATH in the processes it starts): serve
Lightning's names from fulmen in every child Python process too (DDP ranks, torchrun workers,
spawned processes), then run the environment's own ``sitecustomize``, if any."""

import importlib.machinery
import importlib.util
import os
import sys

if os.environ.get("FULMEN_LIGHTNING_NAMES") == "1":
    from fulmen.dropin.finder import install

    install()

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
# The environment's own sitecustomize, now that this folder is off sys.path; it takes this
# module's place in sys.modules (the import system returns what is there when this one ends).
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["sitecustomize"] = _module
    _spec.loader.exec_module(_module)
