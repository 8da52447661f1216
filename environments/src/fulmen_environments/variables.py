"""Reading scheduler variables: integers with errors that name the variable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fulmen import ConfigurationError


def missing(environ: Mapping[str, str], names: Iterable[str]) -> list[str]:
    return [n for n in names if n not in environ]


def require(owner: str, environ: Mapping[str, str], names: Iterable[str]) -> None:
    """A half-set environment (some variables, not all) is an error naming the missing ones."""
    absent = missing(environ, names)
    if absent:
        present = sorted(set(names) - set(absent))
        raise ConfigurationError(f"the {owner} environment is only partly set: {present} are set "
                                 f"but {absent} are missing")


def integer(environ: Mapping[str, str], name: str, minimum: int = 0) -> int:
    raw = environ.get(name)
    if raw is None:
        raise ConfigurationError(f"{name} is not set")
    text = raw.strip()
    if not text.lstrip("-").isdigit() or int(text) < minimum:
        raise ConfigurationError(f"{name}={raw!r} must be an integer >= {minimum}")
    return int(text)


def port(value: int | str, origin: str) -> int:
    number = int(value) if str(value).strip().isdigit() else -1
    if not 1 <= number <= 65535:
        raise ConfigurationError(f"{origin}={value!r} is not a port: use a number from 1 to 65535")
    return number


def check_ranks(owner: str, world_size: int, global_rank: int) -> None:
    if world_size < 1:
        raise ConfigurationError(f"the {owner} environment reports a world size of {world_size};"
                                 " it must be at least 1")
    if not 0 <= global_rank < world_size:
        raise ConfigurationError(f"the {owner} environment reports rank {global_rank} in a world "
                                 f"of {world_size}; ranks go from 0 to {world_size - 1}")
