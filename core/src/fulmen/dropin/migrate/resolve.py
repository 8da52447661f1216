"""Which fulmen name ``fulmen migrate`` writes for a Lightning name: the object that serves it
under ``fulmen run`` (:mod:`fulmen.dropin.names`), spelled by its shortest public path
(``fulmen.Trainer``, ``fulmen.callbacks.ModelCheckpoint``) where ``import fulmen`` reaches it."""

from __future__ import annotations

import importlib

from fulmen.dropin import names

_REACHABLE_SUBMODULES = ("callbacks", "loggers", "utilities")


def _fulmen_exports() -> dict[str, str]:
    import fulmen

    return dict(fulmen._EXPORTS)


def resolve(lightning_module: str, name: str) -> tuple[str, str] | None:
    """The fulmen ``(module, attribute)`` serving ``lightning_module.name``, or None."""
    module_map = names.lookup(lightning_module)
    if module_map is None:
        return None
    target = module_map.names.get(name)
    if target is not None:
        module, _, attr = target.partition(":")
        return module, attr
    for source in module_map.sources:
        if name in names.exports(importlib.import_module(source)):
            return source, name
    if name in module_map.shared:
        module, _, attr = names.SHARED[name].partition(":")
        return module, attr
    return None


def public_path(module: str, attr: str) -> str | None:
    """``attr``'s path from ``fulmen`` (``"Module"``, ``"callbacks.ModelCheckpoint"``) when it
    is reachable by attribute access from ``import fulmen``; else None."""
    exports = _fulmen_exports()
    if attr in exports and (exports[attr] == module or module == "fulmen"):
        return attr
    if attr == "Lite" and module == "fulmen.lite":
        return "Lite"
    for sub in _REACHABLE_SUBMODULES:
        package = f"fulmen.{sub}"
        if attr in getattr(importlib.import_module(package), "__all__", ()) and (
                module == package or module.startswith(package + ".")):
            return f"{sub}.{attr}"
    return None


def module_counterpart(lightning_module: str) -> str | None:
    """The fulmen module to bind where a script binds ``lightning_module`` itself."""
    canonical = names.canonical(lightning_module)
    if canonical in ("lightning", "lightning.pytorch", "lightning.fabric"):
        return "fulmen"
    module_map = names.MODULES.get(canonical or "")
    if module_map is not None and len(module_map.sources) == 1 and not module_map.names:
        return module_map.sources[0]
    return None


def is_lightning_path(dotted: str) -> bool:
    """``dotted`` is a dotted name under one of Lightning's roots (``pytorch_lightning.X``)."""
    return names.canonical(dotted) is not None and all(
        part.isidentifier() for part in dotted.split("."))


def target_path(dotted: str) -> str | None:
    """The fulmen dotted path of the object a Lightning dotted path names (a Hydra
    ``_target_``, a ``class_path``): ``"pytorch_lightning.Trainer"`` -> ``"fulmen.Trainer"``,
    ``"lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint"`` ->
    ``"fulmen.callbacks.ModelCheckpoint"``, ``"lightning.pytorch.Trainer.from_argparse_args"``
    -> ``"fulmen.Trainer.from_argparse_args"`` (when fulmen's class has that attribute too). None
    when it names no object fulmen serves (a module alone, or a name without a fulmen
    counterpart)."""
    if not is_lightning_path(dotted):
        return None
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):  # the longest module first
        module, name, rest = ".".join(parts[:split]), parts[split], parts[split + 1:]
        if names.canonical(f"{module}.{name}") in names.MODULES:
            return None  # a module, not an object
        found = resolve(module, name)
        if found is None:
            continue
        fmodule, attr = found
        obj = getattr(importlib.import_module(fmodule), attr)
        for part in rest:  # Trainer.from_argparse_args: the fulmen class must have it too
            obj = getattr(obj, part, _MISSING)
            if obj is _MISSING:
                return None
        path = public_path(fmodule, attr)
        return ".".join([f"fulmen.{path}" if path is not None else f"{fmodule}.{attr}", *rest])
    return None


_MISSING = object()
