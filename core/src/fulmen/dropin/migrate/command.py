"""The ``fulmen migrate PATH... [--diff] [--check]`` command: which files, and what is printed.

A directory stands for its ``.py``, ``.yaml`` and ``.yml`` files (outside ``.venv`` folders). A
Python file goes through :func:`fulmen.dropin.migrate.python.migrate_source`, a YAML file
through :func:`fulmen.dropin.migrate.yaml_targets.migrate_yaml` (a YAML file with neither a
``_target_`` nor a ``class_path`` key is not even parsed). What could not be migrated is printed
as ``file:line: not migrated: message``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from fulmen.dropin.migrate.result import Result
from fulmen.dropin.migrate.yaml_targets import TARGET_KEYS

PYTHON = (".py",)
YAML = (".yaml", ".yml")


def migrated_files(paths: Sequence[str]) -> Iterator[Path]:
    """The files ``paths`` stand for: a file as given, a directory's Python and YAML files."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in PYTHON + YAML
                              and p.is_file() and ".venv" not in p.parts)
        else:
            yield path


def migrate_file(path: Path) -> Result:
    """One file, by its suffix (YAML or Python). Raises the parser's error for a file that does
    not parse."""
    text = path.read_text()
    if path.suffix in YAML:
        from fulmen.dropin.migrate.yaml_targets import migrate_yaml

        if not any(key in text for key in TARGET_KEYS):
            return Result(path, text, text)
        return migrate_yaml(text, path)
    from fulmen.dropin.migrate.python import migrate_source

    return migrate_source(text, path)


def _parse_error(path: Path, exc: Exception) -> str | None:
    """What to print for a file that does not parse, or None for another error."""
    import yaml

    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"{path}: cannot parse YAML: {exc.problem} (line {exc.problem_mark.line + 1})"
    if isinstance(exc, yaml.YAMLError):
        return f"{path}: cannot parse YAML: {exc}"
    import libcst as cst

    if isinstance(exc, cst.ParserSyntaxError):
        return f"{path}: cannot parse: {exc.message} (line {exc.raw_line})"
    return None


def main(argv: Sequence[str]) -> int:
    """``fulmen migrate``: 0 when done (or nothing to change), 1 under ``--check`` when a file
    would change, 2 for a bad command line or a file that does not parse."""
    parser = argparse.ArgumentParser(
        prog="fulmen migrate", description="Rewrite Lightning scripts and configs to run on "
        "fulmen with plain python: imports, the mechanical parts of Lightning's 1.x -> 2.x "
        "upgrade, and Lightning dotted paths in Hydra _target_ and class_path values (in .yaml "
        "/.yml files and Python strings). What it cannot migrate is listed as file:line.")
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="files or directories (their .py, .yaml and .yml files)")
    parser.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a file would change")
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as stop:
        return int(stop.code or 0)
    if importlib.util.find_spec("libcst") is None:
        print("fulmen migrate: error: needs libcst: pip install 'fulmen[migrate]'",
              file=sys.stderr)
        return 2
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"fulmen migrate: error: no such file or directory: {', '.join(missing)}",
              file=sys.stderr)
        return 2
    changed, failed = [], False
    for path in migrated_files(args.paths):
        try:
            result = migrate_file(path)
        except Exception as exc:
            message = _parse_error(path, exc)
            if message is None:
                raise
            print(message, file=sys.stderr)
            failed = True
            continue
        for line, note in result.notes:
            print(f"{path}:{line}: not migrated: {note}", file=sys.stderr)
        if not result.changed:
            continue
        changed.append(path)
        if args.diff:
            sys.stdout.write(result.diff())
        elif args.check:
            print(f"would rewrite {path}")
        else:
            path.write_text(result.new)
            print(f"rewrote {path}")
    if args.check or args.diff:
        verb = "would rewrite" if args.check else "diff for"
        print(f"{verb} {len(changed)} file(s)", file=sys.stderr)
    if failed:
        return 2
    return 1 if args.check and changed else 0
