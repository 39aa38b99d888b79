"""pdnotes reaches into no dependency's private API (issue 35: tomlkit 0.15 removed the
`TOMLDocument._insert_after` that `config codex` called, and every fresh install crashed).

Read from the source (ast): an attribute access `obj._name` (not a dunder) on anything but
`self` / `cls` is allowed only where `_name` is defined in the same module or in a notes_cli
module it imports (the receiver's class then comes from there). Anything else is a third
party's private name, which a minor release may remove.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "notes_cli"

# Public although underscored: the documented API of collections.namedtuple (and NamedTuple),
# and os._exit (the documented way for a forked child to end without cleanup).
DOCUMENTED_UNDERSCORED = {"_asdict", "_replace", "_fields", "_make", "_field_defaults", "_exit"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def defined_private_names(tree: ast.AST) -> set[str]:
    """The private names a module defines: defs, classes, assignments, attributes it sets,
    parameters and import aliases."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).rsplit(".", 1)[-1])
    return {name for name in names if _is_private(name)}


def imported_modules(tree: ast.AST, module: str) -> set[str]:
    """The notes_cli modules (and packages) `module` imports, relative imports resolved."""
    found: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("notes_cli")}


def foreign_private_accesses(tree: ast.AST, allowed: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each `obj._name` read, obj not self/cls, whose name is not allowed."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr not in allowed:
            found.append((node.lineno, node.attr))
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_reaches_into_a_dependencys_private_api() -> None:
    trees = {
        _module_name(path): (path, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    defined = {name: defined_private_names(tree) for name, (_, tree) in trees.items()}
    offenders = []
    for name, (path, tree) in trees.items():
        allowed = set(DOCUMENTED_UNDERSCORED) | defined[name]
        for imported in imported_modules(tree, name):
            allowed |= defined.get(imported, set())
            allowed.add(imported.rsplit(".", 1)[-1])  # a private module reached as pkg._mod
        offenders += [
            f"{path.relative_to(PACKAGE.parent)}:{line}: .{attr}"
            for line, attr in foreign_private_accesses(tree, allowed)
        ]
    assert offenders == [], "a dependency's private API is used:\n" + "\n".join(offenders)


def test_the_check_sees_a_private_call_on_a_dependency_object() -> None:
    source = "doc._insert_after('model', 'k', 1)\nself._ours = 1\nx.__len__()\nself._x()\n"
    assert foreign_private_accesses(ast.parse(source), {"_ours"}) == [(1, "_insert_after")]
