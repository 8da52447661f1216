"""``SLURM_JOB_NODELIST`` expansion: ``gpu-node[007-009,012],cpu[1-2]`` → host names."""

from __future__ import annotations

import itertools
import re

from fulmen import ConfigurationError

_GROUP = re.compile(r"\[([^\[\]]*)\]")


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _expand_range(spec: str, nodelist: str) -> list[str]:
    values: list[str] = []
    for piece in spec.split(","):
        if re.fullmatch(r"\d+", piece):
            values.append(piece)
            continue
        match = re.fullmatch(r"(\d+)-(\d+)", piece)
        if not match or int(match.group(1)) > int(match.group(2)):
            raise ConfigurationError(f"SLURM_JOB_NODELIST={nodelist!r}: cannot read the range "
                                     f"{piece!r} (expected like 007-012)")
        start, end = match.groups()
        width = len(start)
        values += [str(n).zfill(width) for n in range(int(start), int(end) + 1)]
    return values


def expand(nodelist: str) -> list[str]:
    """Every host in a SLURM node list, in order. Entries are separated by commas or spaces
    (``"alpha, host[5-9] gamma"``), as Lightning reads them."""
    text = re.sub(r"\s+", ",", re.sub(r"\s*,\s*", ",", nodelist.strip()))
    if not text or text.count("[") != text.count("]"):
        raise ConfigurationError(f"SLURM_JOB_NODELIST={nodelist!r} is not a node list (expected "
                                 "like node[01-04],gpu7)")
    hosts: list[str] = []
    for item in _split_top_level(text):
        if not item:
            raise ConfigurationError(f"SLURM_JOB_NODELIST={nodelist!r} has an empty entry")
        pieces = _GROUP.split(item)  # text, range, text, range, ..., text
        if "[" in "".join(pieces[0::2]) or "]" in "".join(pieces[0::2]):
            raise ConfigurationError(f"SLURM_JOB_NODELIST={nodelist!r}: nested or unbalanced "
                                     "brackets")
        choices = [[p] if i % 2 == 0 else _expand_range(p, nodelist)
                   for i, p in enumerate(pieces)]
        hosts += ["".join(combo) for combo in itertools.product(*choices)]
    return hosts
