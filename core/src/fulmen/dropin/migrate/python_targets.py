"""Lightning dotted paths in Python string literals, rewritten to the fulmen path ``fulmen
migrate`` writes for the same name (:func:`fulmen.dropin.migrate.resolve.target_path`):

- a string that is a whole dotted path to a Lightning object, wherever it stands:
  ``{"_target_": "pytorch_lightning.Trainer"}``, ``dict(_target_="...")``,
  ``{"class_path": "..."}``, ``hydra.utils.get_class("...")``; a module path alone
  (``"pytorch_lightning.trainer"``) is left alone;
- a YAML config held in a string (``OmegaConf.create('''_target_: ...''')``): its
  ``_target_``/``class_path`` values, as in a YAML file (:mod:`.yaml_targets`).

A ``_target_``/``class_path`` value naming a Lightning object without a fulmen counterpart is
noted. Only the text inside the quotes changes, so every line stays where it was.
"""

from __future__ import annotations

import libcst as cst
import yaml
from libcst.metadata import PositionProvider

from fulmen.dropin.migrate.resolve import is_lightning_path, target_path
from fulmen.dropin.migrate.yaml_targets import TARGET_KEYS, rewrite_targets


def _body(node: cst.SimpleString) -> str | None:
    """The text between the quotes, when it reads as the string's value (no escapes)."""
    value = node.evaluated_value
    if not isinstance(value, str):
        return None
    body = node.value[len(node.prefix) + len(node.quote):-len(node.quote)]
    return body if body == value else None


def _with_body(node: cst.SimpleString, body: str) -> cst.SimpleString:
    start = len(node.prefix) + len(node.quote)
    return node.with_changes(value=node.value[:start] + body + node.quote)


class TargetStrings(cst.CSTTransformer):
    """The pass over a module's string literals; :attr:`notes` holds ``(line, message)``."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[tuple[int, str]] = []
        self._target_values: set[int] = set()  # ids of the values of _target_/class_path keys

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if isinstance(node.key, cst.SimpleString) and node.key.evaluated_value in TARGET_KEYS:
            self._target_values.add(id(node.value))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value in TARGET_KEYS:
            self._target_values.add(id(node.value))

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString
                           ) -> cst.SimpleString:
        body = _body(updated)
        if body is None:
            return updated
        if is_lightning_path(body):
            new = target_path(body)
            if new is None:
                if id(original) in self._target_values:
                    self.notes.append((self._line(original), f"{body} has no fulmen "
                                                             "counterpart; left as it was"))
                return updated
            return _with_body(updated, new)
        if "\n" in body and any(f"{key}:" in body for key in TARGET_KEYS):
            try:
                new_body, notes = rewrite_targets(body)
            except yaml.YAMLError:
                return updated  # not YAML after all
            first = self._line(original)
            self.notes.extend((first + line - 1, message) for line, message in notes)
            if new_body != body:
                return _with_body(updated, new_body)
        return updated
