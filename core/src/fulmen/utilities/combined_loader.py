"""Lightning's ``CombinedLoader``: iterate several loaders (a dict, list or nested collection
of them) together. Each step yields ``(batch, batch_idx, dataloader_idx)``; ``batch`` has the
collection's shape with one batch per loader, except in ``"sequential"`` mode, which runs the
loaders one after the other and yields each loader's batch alone.

Modes: ``"min_size"`` stops with the shortest loader; ``"max_size_cycle"`` with the longest,
restarting the others; ``"max_size"`` with the longest, giving None for finished ones;
``"sequential"`` one loader after the other. Use it in your own loops (a Lite/Fabric loop); the
fulmen Trainer takes one training loader (see docs/migrating.md)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fulmen.utilities.data import sized_len

__all__ = ["CombinedLoader"]

_Step = tuple[Any, int, int]


def _lengths(iterables: list[Any]) -> list[int | float]:
    return [float("inf") if (n := sized_len(it)) is None else n for it in iterables]


class _Mode(Iterator[_Step]):
    def __init__(self, iterables: list[Any], limits: list[int | float] | None = None) -> None:
        if limits is not None and len(limits) != len(iterables):
            raise ValueError(f"Mismatch in number of limits ({len(limits)}) and number of "
                             f"iterables ({len(iterables)})")
        self.iterables, self.limits = iterables, limits
        self.iterators: list[Iterator[Any]] = []
        self.index = 0

    def __iter__(self) -> _Mode:
        self.iterators = [iter(it) for it in self.iterables]
        self.index = 0
        return self

    def __next__(self) -> _Step:
        raise NotImplementedError

    def _limited(self, pick: Callable[[Iterable[int | float]], int | float]) -> int:
        lengths = _lengths(self.iterables)
        if self.limits is not None:
            lengths = [min(n, limit) for n, limit in zip(lengths, self.limits, strict=True)]
        return int(pick(lengths))

    def __len__(self) -> int:
        raise NotImplementedError

    def reset(self) -> None:
        self.iterators, self.index = [], 0

    def _emit(self, out: Any, dataloader_idx: int = 0) -> _Step:
        index, self.index = self.index, self.index + 1
        return out, index, dataloader_idx


class _MaxSizeCycle(_Mode):
    def __iter__(self) -> _MaxSizeCycle:
        super().__iter__()
        self.consumed = [False] * len(self.iterables)
        return self

    def __next__(self) -> _Step:
        out: list[Any] = []
        for i, iterator in enumerate(self.iterators):
            try:
                out.append(next(iterator))
            except StopIteration:
                self.consumed[i] = True
                if all(self.consumed):
                    raise
                self.iterators[i] = iter(self.iterables[i])
                out.append(next(self.iterators[i]))
        return self._emit(out)

    def __len__(self) -> int:
        return self._limited(max)


class _MinSize(_Mode):
    def __next__(self) -> _Step:
        return self._emit([next(it) for it in self.iterators])

    def __len__(self) -> int:
        return self._limited(min)


class _MaxSize(_Mode):
    def __next__(self) -> _Step:
        out: list[Any] = [None] * len(self.iterators)
        exhausted = True
        for i, iterator in enumerate(self.iterators):
            with contextlib.suppress(StopIteration):
                out[i] = next(iterator)
                exhausted = False
        if exhausted:
            raise StopIteration
        return self._emit(out)

    def __len__(self) -> int:
        return self._limited(max)


class _Sequential(_Mode):
    def __iter__(self) -> _Sequential:
        self.current, self.index = 0, 0
        self._load()
        return self

    def _load(self) -> None:  # one loader at a time: one set of workers
        self.iterators = [iter(self.iterables[self.current])] \
            if self.current < len(self.iterables) else []

    def _advance(self) -> None:
        self.current, self.index = self.current + 1, 0
        self._load()

    def __next__(self) -> _Step:
        n = len(self.iterables)
        while True:
            if self.current >= n:
                raise StopIteration
            if self.limits is not None and self.limits[self.current] <= self.index:
                self._advance()
                continue
            try:
                out = next(self.iterators[0])
            except StopIteration:
                self._advance()
                continue
            return self._emit(out, self.current)

    def __len__(self) -> int:
        return self._limited(sum)

    def reset(self) -> None:
        super().reset()
        self.current = 0


_MODES: dict[str, tuple[Callable[[list[int]], int], type[_Mode]]] = {
    "min_size": (min, _MinSize), "max_size_cycle": (max, _MaxSizeCycle),
    "max_size": (max, _MaxSize), "sequential": (sum, _Sequential)}


class CombinedLoader(Iterable[_Step]):
    """Iterate a collection of loaders in one of Lightning's modes (see the module docstring).

    >>> from torch.utils.data import DataLoader
    >>> loaders = {'a': DataLoader(range(6), batch_size=4),
    ...            'b': DataLoader(range(15), batch_size=5)}
    >>> combined = CombinedLoader(loaders, 'max_size_cycle')
    >>> _ = iter(combined)
    >>> len(combined)
    3
    """

    def __init__(self, iterables: Any, mode: str = "min_size") -> None:
        from torch.utils._pytree import tree_flatten

        if mode not in _MODES:
            raise ValueError(f"Unsupported mode {mode!r}, please select one of: {list(_MODES)}.")
        self._iterables = iterables
        self._flattened, self._spec = tree_flatten(iterables)
        self._mode = mode
        self._iterator: _Mode | None = None
        self._limits: list[int | float] | None = None

    @property
    def iterables(self) -> Any:
        """The collection of loaders given."""
        return self._iterables

    @property
    def flattened(self) -> list[Any]:
        """The loaders in a flat list."""
        return self._flattened

    @flattened.setter
    def flattened(self, flattened: list[Any]) -> None:
        from torch.utils._pytree import tree_unflatten

        if len(flattened) != len(self._flattened):
            raise ValueError(f"Mismatch in flattened length ({len(flattened)}) and existing length "
                             f"({len(self._flattened)})")
        self._iterables = tree_unflatten(flattened, self._spec)
        self._flattened = flattened

    def _map(self, read: Callable[[Any], Any]) -> Any:
        from torch.utils._pytree import tree_unflatten

        return tree_unflatten([read(x) for x in self._flattened], self._spec)

    @property
    def sampler(self) -> Any:
        return self._map(lambda x: getattr(x, "sampler", None))

    @property
    def batch_sampler(self) -> Any:
        return self._map(lambda x: getattr(x, "batch_sampler", None))

    @property
    def limits(self) -> list[int | float] | None:
        """The most batches to take from each loader (None: all)."""
        return self._limits

    @limits.setter
    def limits(self, limits: int | float | list[int | float] | None) -> None:
        if isinstance(limits, int | float):
            limits = [limits] * len(self._flattened)
        elif isinstance(limits, list) and len(limits) != len(self._flattened):
            raise ValueError(f"Mismatch in number of limits ({len(limits)}) and number of "
                             f"iterables ({len(self._flattened)})")
        self._limits = limits

    def __iter__(self) -> CombinedLoader:
        iterator = _MODES[self._mode][1](self._flattened, self._limits)
        iter(iterator)
        self._iterator = iterator
        return self

    def __next__(self) -> _Step:
        from torch.utils._pytree import tree_unflatten

        assert self._iterator is not None
        out, batch_idx, dataloader_idx = next(self._iterator)
        if isinstance(self._iterator, _Sequential):
            return out, batch_idx, dataloader_idx
        return tree_unflatten(out, self._spec), batch_idx, dataloader_idx

    def __len__(self) -> int:
        if self._iterator is None:
            raise RuntimeError("Please call `iter(combined_loader)` first.")
        return len(self._iterator)

    def reset(self) -> None:
        """Forget the running iteration."""
        if self._iterator is not None:
            self._iterator.reset()
            self._iterator = None
