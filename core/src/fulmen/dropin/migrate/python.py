"""The Python codemod of ``fulmen migrate``, on libcst's concrete syntax tree (comments and
layout are kept): Lightning imports and the uses of the modules they bind, and the mechanical
parts of Lightning's 1.x -> 2.x upgrade (:mod:`fulmen.dropin.migrate.upgrade`'s tables).

- ``from lightning.pytorch import LightningModule`` becomes ``from fulmen import Module as
  LightningModule``; ``import lightning.pytorch as pl`` becomes ``import fulmen as pl`` and
  ``pl.LightningModule`` becomes ``pl.Module`` (names from :mod:`fulmen.dropin.migrate.resolve`);
- ``Trainer(gpus=2)`` -> ``Trainer(accelerator="gpu", devices=2)`` (and ``tpu_cores``,
  ``num_processes``, renamed and re-valued flags), ``training_epoch_end(self, outputs)`` and its
  validation/test forms -> ``on_*_epoch_end(self)`` with the step outputs kept by the module
  (``on_*_batch_end`` appends them to ``self.<stage>_step_outputs``),
  ``on_pretrain_routine_start/end`` -> ``on_fit_start``, ``Trainer.add_argparse_args(parser)`` /
  ``Trainer.from_argparse_args(args)`` -> :mod:`fulmen.utilities.argparse`'s functions;
- Lightning dotted paths in string literals (Hydra ``_target_``, ``class_path``):
  :mod:`fulmen.dropin.migrate.python_targets`, run first (it keeps every line where it was, so
  the notes of both passes give the original line numbers).

What it cannot rewrite is listed as ``(line, message)`` and left as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.helpers import get_full_name_for_node
from libcst.metadata import PositionProvider

from fulmen.dropin import names
from fulmen.dropin.migrate.python_targets import TargetStrings
from fulmen.dropin.migrate.resolve import module_counterpart, public_path, resolve
from fulmen.dropin.migrate.result import Result
from fulmen.dropin.migrate.upgrade import (
    DEVICE_FLAGS,
    EPOCH_END,
    PRECISIONS,
    REMOVED_FLAGS,
    REMOVED_HOOKS,
    RENAMED_FLAGS,
    RENAMED_HOOKS,
    STRATEGY_ACCELERATORS,
)


def migrate_source(source: str, path: Path = Path("<string>")) -> Result:
    """Migrate one Python file's text; the result holds the new text and the notes."""
    targets = TargetStrings()
    module = cst.MetadataWrapper(cst.parse_module(source)).visit(targets)
    context = CodemodContext()
    migrator = _Migrator(context)
    new_module = cst.MetadataWrapper(module).visit(migrator)
    new_module = AddImportsVisitor(context).transform_module(new_module)
    return Result(path, source, new_module.code, sorted(targets.notes + migrator.notes))


def _dotted(text: str) -> cst.Attribute | cst.Name:
    """``a.b.c`` as a node (a dotted name)."""
    node = cst.parse_expression(text)
    assert isinstance(node, (cst.Attribute, cst.Name))
    return node


# ---------------------------------------------------------------------------- the transformer

class _Migrator(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, context: CodemodContext) -> None:
        super().__init__()
        self.context = context
        self.notes: list[tuple[int, str]] = []
        # a name the script binds -> (Lightning module it was bound to, name bound after rewrite)
        self.bindings: dict[str, tuple[str, str]] = {}
        self.needs_argparse: set[str] = set()

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def note(self, node: cst.CSTNode, message: str) -> None:
        self.notes.append((self._line(node), message))

    # ---------------------------------------------------------------- imports
    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine
                                  ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if len(updated.body) != 1:
            return updated
        statement = updated.body[0]
        new: list[cst.BaseSmallStatement] | None = None
        if isinstance(statement, cst.ImportFrom):
            new = self._import_from(original, statement)
        elif isinstance(statement, cst.Import):
            new = self._import(original, statement)
        if new is None:
            return updated
        lines = [cst.SimpleStatementLine(body=[s]) for s in new]
        lines[0] = lines[0].with_changes(leading_lines=updated.leading_lines)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=updated.trailing_whitespace)
        return cst.FlattenSentinel(lines)

    def _import_from(self, node: cst.CSTNode, statement: cst.ImportFrom
                     ) -> list[cst.BaseSmallStatement] | None:
        if statement.relative or statement.module is None:
            return None
        module = get_full_name_for_node(statement.module)
        if module is None or names.canonical(module) is None:
            return None
        if names.lookup(module) is None:
            self.note(node, f"{module} has no fulmen counterpart; left as it was")
            return None
        if isinstance(statement.names, cst.ImportStar):
            counterpart = module_counterpart(module)
            if counterpart is None:
                self.note(node, f"from {module} import * has no single fulmen counterpart; "
                                "import the names one by one")
                return None
            return [statement.with_changes(module=_dotted(counterpart))]
        groups: dict[str, list[cst.ImportAlias]] = {}
        kept: list[cst.ImportAlias] = []
        for alias in statement.names:
            name = get_full_name_for_node(alias.name) or ""
            bound = alias.asname.name.value if alias.asname is not None and isinstance(
                alias.asname.name, cst.Name) else name
            submodule = f"{module}.{name}"
            if names.canonical(submodule) in names.MODULES:  # from lightning import pytorch
                counterpart = module_counterpart(submodule)
                if counterpart is None:
                    self.note(node, f"{submodule} maps to several fulmen modules; import the "
                                    "names from it one by one")
                    kept.append(alias)
                    continue
                package, _, last = counterpart.rpartition(".")
                groups.setdefault(package or counterpart, []).append(
                    cst.ImportAlias(name=cst.Name(last), asname=_as(bound, last))
                    if package else cst.ImportAlias(name=cst.Name(counterpart)))
                self.bindings[bound] = (submodule, bound)
                continue
            target = resolve(module, name)
            if target is None:
                self.note(node, f"{module}.{name} has no fulmen counterpart; left as it was")
                kept.append(alias)
                continue
            fmodule, attr = target
            path = public_path(fmodule, attr)
            if path is not None:
                package, _, attr = f"fulmen.{path}".rpartition(".")
                fmodule = package
            groups.setdefault(fmodule, []).append(
                cst.ImportAlias(name=cst.Name(attr), asname=_as(bound, attr)))
        out: list[cst.BaseSmallStatement] = [
            cst.ImportFrom(module=_dotted(m), names=_commas(aliases))
            for m, aliases in groups.items()]
        if kept:
            out.append(statement.with_changes(names=_commas(kept)))
        return out

    def _import(self, node: cst.CSTNode, statement: cst.Import
                ) -> list[cst.BaseSmallStatement] | None:
        aliases = list(statement.names)
        if not any(names.canonical(get_full_name_for_node(a.name) or "") for a in aliases):
            return None
        new_aliases: list[cst.ImportAlias] = []
        for alias in aliases:
            module = get_full_name_for_node(alias.name) or ""
            if names.canonical(module) is None:
                new_aliases.append(alias)
                continue
            counterpart = module_counterpart(module)
            if counterpart is None or names.lookup(module) is None:
                self.note(node, f"import {module}: no single fulmen module serves it; left as "
                                "it was")
                new_aliases.append(alias)
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound = alias.asname.name.value
                self.bindings[bound] = (module, bound)
                new_aliases.append(alias.with_changes(name=_dotted(counterpart)))
            else:  # `import lightning.pytorch`: the root name is bound; uses spell the path
                root = module.partition(".")[0]
                self.bindings[root] = (root, "fulmen")
                new_aliases.append(cst.ImportAlias(name=_dotted("fulmen")))
        return [statement.with_changes(names=_commas(_unique(new_aliases)))]

    # ---------------------------------------------------------------- uses of bound modules
    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute
                        ) -> cst.BaseExpression:
        dotted = get_full_name_for_node(original)
        if dotted is None:
            return updated
        head, _, rest = dotted.partition(".")
        if head not in self.bindings:
            return updated
        module, bound = self.bindings[head]
        full = f"{module}.{rest}"
        if names.canonical(full) in names.MODULES:
            return updated  # a module: the attribute after it decides
        lightning_module, _, attr = full.rpartition(".")
        if names.lookup(lightning_module) is None:
            return updated  # under a module that was noted already
        target = resolve(lightning_module, attr)
        if target is None:
            if names.lookup(full) is None or attr[:1].isupper():
                self.note(original, f"{names.canonical(full)} has no fulmen counterpart; left "
                                    "as it was")
            return updated
        fmodule, fattr = target
        path = public_path(fmodule, fattr)
        base_counterpart = module_counterpart(module) if module != head else "fulmen"
        if path is not None and base_counterpart == "fulmen":
            return _dotted(f"{bound}.{path}")
        if path is not None and base_counterpart is not None and \
                f"fulmen.{path}".startswith(base_counterpart + "."):
            return _dotted(f"{bound}.{fattr}")
        AddImportsVisitor.add_needed_import(self.context, fmodule)
        return _dotted(f"{fmodule}.{fattr}")

    # ---------------------------------------------------------------- Trainer(...) flags
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = get_full_name_for_node(updated.func) or ""
        last = func.rpartition(".")[2]
        if last in ("add_argparse_args", "from_argparse_args") and \
                func.rpartition(".")[0].rpartition(".")[2] == "Trainer":
            owner = cst.Arg(value=cast_expr(updated.func).value)  # the Trainer class itself
            AddImportsVisitor.add_needed_import(self.context, "fulmen.utilities.argparse", last)
            return updated.with_changes(func=cst.Name(last), args=[owner, *updated.args])
        if last not in ("Trainer", "Fabric", "LightningLite", "Lite"):
            return updated
        args = list(updated.args)
        given = {a.keyword.value for a in args if a.keyword is not None and not (
            a.keyword.value == "accelerator" and _literal(a.value) in STRATEGY_ACCELERATORS)}
        out: list[cst.Arg] = []
        for original_arg, arg in zip(original.args, args):
            key = arg.keyword.value if arg.keyword is not None else None
            if key in DEVICE_FLAGS:
                if _is_none_or_zero(arg.value):
                    continue  # gpus=0 / None: the CPU, which "auto" picks without GPUs
                if "accelerator" not in given:
                    out.append(_kw("accelerator", cst.SimpleString(f'"{DEVICE_FLAGS[key]}"'),
                                   arg))
                if "devices" not in given:
                    out.append(arg.with_changes(keyword=cst.Name("devices")))
                continue
            if key in RENAMED_FLAGS:
                out.append(arg.with_changes(keyword=cst.Name(RENAMED_FLAGS[key])))
                continue
            if key == "reload_dataloaders_every_epoch":
                out.append(arg.with_changes(keyword=cst.Name("reload_dataloaders_every_n_epochs"),
                                            value=cst.parse_expression(
                                                f"int({cst.Module([]).code_for_node(arg.value)})")))
                continue
            if key == "accelerator" and _literal(arg.value) in STRATEGY_ACCELERATORS:
                if "strategy" in given:
                    self.note(original, f"{last}(accelerator={_literal(arg.value)!r}) names a "
                                        "strategy and strategy= is given too; dropped it")
                else:
                    out.append(arg.with_changes(keyword=cst.Name("strategy")))
                continue
            precision = _literal(arg.value) if key == "precision" else None
            if precision is not None and precision in PRECISIONS:
                out.append(arg.with_changes(value=cst.SimpleString(
                    f'"{PRECISIONS[precision]}"')))
                continue
            if key == "max_steps" and isinstance(arg.value, cst.Name) and \
                    arg.value.value == "None":
                out.append(arg.with_changes(value=cst.parse_expression("-1")))
                continue
            if key in REMOVED_FLAGS:
                self.note(original_arg, f"{last}({key}=...) was removed in Lightning 2.0: "
                                    f"{REMOVED_FLAGS[key]}")
            out.append(arg)
        if out != args:
            if out and len(out) < len(args):  # a dropped last argument: keep the old ending
                out[-1] = out[-1].with_changes(comma=args[-1].comma)
            return updated.with_changes(args=out)
        return updated

    # ---------------------------------------------------------------- 1.x hooks
    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        body = list(updated.body.body)
        methods = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
        new_body: list[cst.BaseStatement] = []
        for statement in body:
            if not isinstance(statement, cst.FunctionDef):
                new_body.append(statement)  # type: ignore[arg-type]
                continue
            name = statement.name.value
            original_def = next(s for s in original.body.body if isinstance(s, cst.FunctionDef)
                                and s.name.value == name)
            if name in EPOCH_END:
                new_body.extend(self._epoch_end(original_def, statement, EPOCH_END[name], methods))
            elif name in RENAMED_HOOKS and RENAMED_HOOKS[name] not in methods:
                new_body.append(statement.with_changes(name=cst.Name(RENAMED_HOOKS[name])))
            else:
                if name in REMOVED_HOOKS:
                    self.note(original_def, f"{name}: {REMOVED_HOOKS[name]}")
                if name == "training_step" and len(statement.params.params) >= 4 and \
                        statement.params.params[3].name.value == "optimizer_idx":
                    self.note(original_def, "training_step(..., optimizer_idx): several "
                                            "optimizers need manual optimization in Lightning 2 "
                                            "(self.automatic_optimization = False)")
                new_body.append(statement)
        return updated.with_changes(body=updated.body.with_changes(body=new_body))

    def _epoch_end(self, original: cst.FunctionDef, method: cst.FunctionDef, stage: str,
                   methods: dict[str, cst.FunctionDef]) -> list[cst.BaseStatement]:
        hook, batch_hook = f"on_{stage}_epoch_end", f"on_{stage}_batch_end"
        params = method.params.params
        if hook in methods or batch_hook in methods or len(params) != 2:
            self.note(original, f"{method.name.value}: Lightning 2 calls {hook}(self) without "
                                f"outputs; merge it by hand (the class already has {hook} or "
                                f"{batch_hook}, or the signature is not (self, outputs))")
            return [method]
        outputs = params[1].name.value
        store = f"{'training' if stage == 'train' else stage}_step_outputs"
        extra = "" if stage == "train" else ", dataloader_idx=0"
        collector = cst.parse_statement(
            f"def {batch_hook}(self, outputs, batch, batch_idx{extra}):\n"
            f"    # kept for {hook} (fulmen migrate: Lightning 2 passes no outputs there)\n"
            f"    self.{store} = getattr(self, \"{store}\", [])\n"
            f"    self.{store}.append(outputs)\n")
        take = cst.parse_statement(f"{outputs} = getattr(self, \"{store}\", [])")
        reset = cst.parse_statement(f"self.{store} = []")
        body = method.body
        assert isinstance(body, cst.IndentedBlock)
        statements = list(body.body)
        docstring = statements[:1] if statements and _is_docstring(statements[0]) else []
        new_method = method.with_changes(
            name=cst.Name(hook), params=method.params.with_changes(
                params=[params[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)]),
            body=body.with_changes(body=[*docstring, take, reset,
                                         *statements[len(docstring):]]))
        return [collector.with_changes(leading_lines=method.leading_lines), new_method]


def cast_expr(node: cst.BaseExpression) -> cst.Attribute:
    assert isinstance(node, cst.Attribute)
    return node


def _as(bound: str, attr: str) -> cst.AsName | None:
    return None if bound == attr else cst.AsName(name=cst.Name(bound))


def _commas(aliases: Sequence[cst.ImportAlias]) -> list[cst.ImportAlias]:
    aliases = list(aliases)
    return [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in aliases]


def _unique(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    seen, out = set(), []
    for alias in aliases:
        key = cst.Module([]).code_for_node(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        if key not in seen:
            seen.add(key)
            out.append(alias)
    return out


def _kw(name: str, value: cst.BaseExpression, like: cst.Arg) -> cst.Arg:
    """``name=value``, laid out like ``like`` and followed by a comma."""
    comma = like.comma if isinstance(like.comma, cst.Comma) else cst.Comma(
        whitespace_after=cst.SimpleWhitespace(" "))
    return cst.Arg(keyword=cst.Name(name), value=value, equal=like.equal, comma=comma,
                   whitespace_after_arg=like.whitespace_after_arg)


def _literal(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Integer):
        return node.value
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _is_none_or_zero(node: cst.BaseExpression) -> bool:
    return (isinstance(node, cst.Name) and node.value == "None") or _literal(node) == "0"


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], cst.Expr) and isinstance(statement.body[0].value,
                                                    (cst.SimpleString, cst.ConcatenatedString))
