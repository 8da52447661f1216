"""Find the ``nn.Sequential`` a pipe splits, and check or derive its ``balance``."""

from __future__ import annotations

import torch

from fulmen import ConfigurationError

DEFAULT_ATTRIBUTE = "sequential_module"
_HOW = ("declare the layers to split as one nn.Sequential attribute, e.g. "
        "`self.sequential_module = torch.nn.Sequential(...)` (the name pipe looks for first), "
        "or name the attribute with PipeStrategy(module_name='...')")


def find_sequential(module: torch.nn.Module, module_name: str | None
                    ) -> tuple[str, torch.nn.Sequential]:
    """``(dotted name, the nn.Sequential)``: ``module_name`` if given, else
    ``sequential_module``, else ``module`` itself, else its only ``nn.Sequential`` child."""
    kind = type(module).__name__
    if module_name is not None:
        try:
            found = module.get_submodule(module_name)
        except AttributeError:
            found = None
        if not isinstance(found, torch.nn.Sequential):
            what = "does not exist" if found is None else f"is a {type(found).__name__}"
            raise ConfigurationError(
                f"strategy 'pipe' was given module_name={module_name!r}, but {kind}."
                f"{module_name} {what}, not an nn.Sequential. nn.Sequential submodules of "
                f"{kind}: {_sequentials(module) or 'none'}")
        return module_name, found
    found = getattr(module, DEFAULT_ATTRIBUTE, None)
    if isinstance(found, torch.nn.Sequential):
        return DEFAULT_ATTRIBUTE, found
    if isinstance(module, torch.nn.Sequential):
        return "", module
    children = [name for name, child in module.named_children()
                if isinstance(child, torch.nn.Sequential)]
    if len(children) == 1:
        return children[0], getattr(module, children[0])
    if not children:
        raise ConfigurationError(
            f"strategy 'pipe' splits an nn.Sequential across devices, but {kind} has no "
            f"nn.Sequential attribute (nested ones: {_sequentials(module) or 'none'}); {_HOW}")
    raise ConfigurationError(
        f"strategy 'pipe' found several nn.Sequential attributes on {kind}: {children}; say "
        f"which to split with PipeStrategy(module_name=...), or name it {DEFAULT_ATTRIBUTE!r}")


def _sequentials(module: torch.nn.Module) -> list[str]:
    return [name for name, child in module.named_modules()
            if name and isinstance(child, torch.nn.Sequential)]


def even_split(num_layers: int, parts: int) -> list[int]:
    base, extra = divmod(num_layers, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def resolve_balance(balance: list[int] | None, num_layers: int, num_devices: int, where: str
                    ) -> list[int]:
    """The layers per partition: ``balance`` checked against the model, or an even split."""
    if balance is None:
        if num_layers < num_devices:
            raise ConfigurationError(
                f"strategy 'pipe': {where} has {num_layers} layer(s), fewer than the "
                f"{num_devices} devices; use devices={max(num_layers, 1)} or more layers")
        return even_split(num_layers, num_devices)
    if sum(balance) != num_layers:
        example = even_split(num_layers, len(balance)) if num_layers >= len(balance) else None
        raise ConfigurationError(
            f"PipeStrategy(balance={list(balance)}) puts {sum(balance)} layers on the devices, "
            f"but {where} has {num_layers}; the balance must sum to the number of layers"
            + (f" (e.g. balance={example})" if example else "")
            + ", or leave balance=None for an even split")
    return list(balance)
