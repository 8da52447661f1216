"""The face fulmen shows: its own, or Lightning's for Lightning code run by ``fulmen run``.

One setting, the environment variable ``FULMEN_LOOK``: ``fulmen`` (the default) or
``lightning``. ``fulmen run`` sets ``lightning`` unless it is set already, and the processes it
starts (DDP ranks, spawned workers) inherit it. Under the Lightning look:

- the default log folder is ``lightning_logs`` (the default ``name`` of ``CSVLogger`` and
  ``TensorBoardLogger``, so also the default logger's folder under ``default_root_dir``), not
  ``fulmen_logs``;
- fulmen's run banner (``fulmen fit:`` and what was composed) and its line about watching for stop
  notices are not printed; Lightning's device lines (``GPU available: ...``, ``TPU available:
  ...``) are, as Lightning prints them: when the Trainer is built, on global rank zero, through
  Lightning's ``lightning.pytorch`` logger (so a script's ``logging`` set-up for Lightning
  applies to them);
- fulmen's error messages, and the warnings it gives through ``rank_zero_warn``, name the
  user-facing classes by Lightning's names (:data:`LIGHTNING_NAMES`: ``fulmen.Module`` ->
  ``LightningModule``, ``Lite`` -> ``Fabric``..., and ``lite.save(...)`` -> ``fabric.save(...)``).

``FULMEN_BANNER=1`` shows the banner under either look, ``FULMEN_BANNER=0`` hides it under
either. This module imports only the standard library.
"""

from __future__ import annotations

import logging
import os
import re
import warnings

LOOK = "FULMEN_LOOK"
BANNER = "FULMEN_BANNER"
LOOKS = ("fulmen", "lightning")
_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

#: fulmen's user-facing names as its messages spell them -> Lightning's, shown under the
#: Lightning look. Qualified names only, except ``Lite`` (a word only fulmen uses).
LIGHTNING_NAMES = {
    "fulmen.Module": "LightningModule",
    "fulmen.DataModule": "LightningDataModule",
    "fulmen.Lite": "Fabric",
    "fulmen.Fabric": "Fabric",
    "fulmen.Trainer": "Trainer",
    "fulmen.Callback": "Callback",
    "fulmen.ConfigurationError": "MisconfigurationException",
    "Lite": "Fabric",
}
_NAMES = re.compile(r"(?<![\w.])(" + "|".join(
    re.escape(name) for name in sorted(LIGHTNING_NAMES, key=len, reverse=True)) + r")\b")
#: ``lite.save(...)``, ``lite.launch`` -> ``fabric.save(...)``, ``fabric.launch`` (not a quoted or
#: slashed file name such as ``'lite.ckpt'``)
_LITE_CALLS = re.compile(r"(?<![\w./\\'\"])lite\.(?=[a-z_]\w*)")


def current() -> str:
    """``"fulmen"`` or ``"lightning"``, from ``FULMEN_LOOK`` (an unknown value warns and reads as
    ``"fulmen"``; ``fulmen run`` refuses it)."""
    given = os.environ.get(LOOK, "").strip().lower()
    if not given:
        return "fulmen"
    if given not in LOOKS:
        warnings.warn(f"{LOOK}={os.environ[LOOK]!r} is not a look; use one of "
                      f"{', '.join(LOOKS)} (fulmen's own is used)", stacklevel=2)
        return "fulmen"
    return given


def lightning() -> bool:
    """True under the Lightning look (``fulmen run``)."""
    return current() == "lightning"


def check(environ: dict[str, str] | None = None) -> str | None:
    """Why ``FULMEN_LOOK`` or ``FULMEN_BANNER`` in ``environ`` (default: this process's) is not
    valid, or None."""
    environ = dict(os.environ) if environ is None else environ
    look = environ.get(LOOK, "").strip().lower()
    if look and look not in LOOKS:
        return f"{LOOK}={environ[LOOK]!r}: use one of {', '.join(LOOKS)}"
    banner = environ.get(BANNER, "").strip().lower()
    if banner and banner not in _YES + _NO:
        return f"{BANNER}={environ[BANNER]!r}: use 1 (show fulmen's run banner) or 0 (hide it)"
    return None


def default_log_name() -> str:
    """The loggers' default ``name``: ``lightning_logs`` under the Lightning look, else
    ``fulmen_logs``."""
    return "lightning_logs" if lightning() else "fulmen_logs"


def show_banner() -> bool:
    """Print fulmen's run banner? ``FULMEN_BANNER`` says; unset, only under fulmen's look."""
    given = os.environ.get(BANNER, "").strip().lower()
    if given in _YES:
        return True
    if given in _NO:
        return False
    return not lightning()


def display(text: str) -> str:
    """``text`` with fulmen's user-facing names replaced by Lightning's under the Lightning look
    (``"got a Linear; it takes a fulmen.Module"`` -> ``"... a LightningModule"``, and a method
    ``lite.save(...)`` -> ``fabric.save(...)``); else as given."""
    if not lightning():
        return text
    text = _NAMES.sub(lambda match: LIGHTNING_NAMES[match.group(1)], text)
    return _LITE_CALLS.sub("fabric.", text)


def lightning_info(message: str) -> None:
    """Log ``message`` at INFO on Lightning's ``lightning.pytorch.utilities.rank_zero`` logger,
    which gets Lightning's own set-up first (``lightning.pytorch`` at INFO with a stderr handler
    unless the root logger has one; what ``import lightning.pytorch`` does)."""
    parent = logging.getLogger("lightning.pytorch")
    if parent.level == logging.NOTSET:
        parent.setLevel(logging.INFO)
        if not logging.getLogger().hasHandlers():
            parent.addHandler(logging.StreamHandler())
            parent.propagate = False
    logging.getLogger("lightning.pytorch.utilities.rank_zero").info(message)
