"""Lightning dotted paths in YAML configs: the value of every ``_target_`` (Hydra's
``instantiate``) and ``class_path`` (LightningCLI's and jsonargparse's) key that names a
Lightning object is replaced by the fulmen path ``fulmen migrate`` writes for the same name
(:func:`fulmen.dropin.migrate.resolve.target_path`): ``_target_: lightning.pytorch.Trainer``
becomes ``_target_: fulmen.Trainer``.

The file is parsed only to find those values (PyYAML's node tree, with their positions); the new
text is the old one with each value replaced where it stands, so comments, quoting, order and
layout stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import yaml

from fulmen.dropin.migrate.resolve import is_lightning_path, target_path
from fulmen.dropin.migrate.result import Result

#: The keys whose value is a dotted path to the object to build.
TARGET_KEYS = ("_target_", "class_path")


def _target_values(text: str) -> Iterator[yaml.ScalarNode]:
    """Every scalar value of a :data:`TARGET_KEYS` key, in every document of ``text``."""
    pending = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value in TARGET_KEYS and \
                        isinstance(value, yaml.ScalarNode):
                    yield value
                else:
                    pending.append(value)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)


def rewrite_targets(text: str) -> tuple[str, list[tuple[int, str]]]:
    """``text`` with each Lightning ``_target_``/``class_path`` value replaced by its fulmen
    path, and the notes ``(line, message)`` for those left as they were. Raises
    ``yaml.YAMLError`` when ``text`` is not YAML."""
    edits: list[tuple[int, int, str]] = []
    notes: list[tuple[int, str]] = []
    for node in _target_values(text):
        old, line = node.value, node.start_mark.line + 1
        if not is_lightning_path(old):
            continue
        new = target_path(old)
        if new is None:
            notes.append((line, f"{old} has no fulmen counterpart; left as it was"))
            continue
        start, end = node.start_mark.index, node.end_mark.index
        raw = text[start:end]
        if raw.count(old) != 1:  # folded over lines, or escapes in a quoted scalar
            notes.append((line, f"{old}: written in a form fulmen migrate does not rewrite; "
                                f"write {new} there"))
            continue
        edits.append((start, end, raw.replace(old, new)))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, sorted(notes)


def migrate_yaml(text: str, path: Path = Path("<string>")) -> Result:
    """Migrate one YAML file's text (see the module docstring)."""
    new, notes = rewrite_targets(text)
    return Result(path, text, new, notes)
