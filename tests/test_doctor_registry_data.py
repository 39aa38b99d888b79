"""The registry's entries are data (templates/doctor/findings.toml) and the only way to a
finding: every entry and variant has a valid severity and a fix template the checks can fill,
the loader refuses a file that breaks that, every variant the checks name exists, and no code
builds a `Finding` itself (so no severity or fix is written outside the registry)."""

from __future__ import annotations

import ast
import re
import string
import tomllib
from pathlib import Path
from typing import get_args

import pytest

from notes_cli.clients import registry
from notes_cli.doctor.findings import Severity
from notes_cli.doctor.registry import REGISTRY, load_entries, make

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "templates" / "doctor" / "findings.toml"
CLIENTS = {*registry.names(), "env", "any"}


def _raw_entries() -> list[dict]:
    """The shared entries and each client folder's own."""
    files = [DATA, *sorted((ROOT / "notes_cli" / "clients").glob("*/findings.toml"))]
    return [
        e for f in files for e in tomllib.loads(f.read_text(encoding="utf-8")).get("finding", [])
    ]


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


@pytest.mark.parametrize("raw", _raw_entries(), ids=lambda raw: raw["id"])
def test_every_data_entry_has_a_valid_severity_client_and_fix_template(raw: dict) -> None:
    assert raw["severity"] in get_args(Severity)
    assert raw["client"] in CLIENTS
    assert raw["when"] and raw["example"] and raw["fix"]
    fixes = [(None, raw["fix"])] + [(n, v["fix"]) for n, v in raw.get("variants", {}).items()]
    for variant, template in fixes:
        for _, name, spec, conversion in string.Formatter().parse(template):
            assert name is None or (name.isidentifier() and not spec and not conversion), template
        severity = raw.get("variants", {}).get(variant, {}).get("severity", raw["severity"])
        assert severity in get_args(Severity)
        values = {name: f"<{name}>" for name in _fields(template) - {"file", "line"}}
        finding = make(raw["id"], "codex", "m", variant=variant, file="f", line=1, **values)
        assert "{" not in finding.fix and finding.severity == severity


BAD = {
    "an unknown severity": 'severity = "fatal"\nclient = "any"\nfix = "x"',
    # (that the name is a registered client is checked on the shipped data by
    # tests/test_architecture.py: the registry of clients sits beside doctor/, not below it)
    "a client that is not a name": 'severity = "error"\nclient = "Cursor CLI"\nfix = "x"',
    "a field that is not a plain name": 'severity = "error"\nclient = "any"\nfix = "{0.x}"',
    "a conversion in a field": 'severity = "error"\nclient = "any"\nfix = "{key!r}"',
    "an unclosed field": 'severity = "error"\nclient = "any"\nfix = "use {suggested"',
    "a misspelt key": 'severity = "error"\nclient = "any"\nfixes = "x"',
    "a variant's bad severity": (
        'severity = "error"\nclient = "any"\nfix = "x"\n[finding.variants.live]\n'
        'severity = "loud"\nfix = "y"'
    ),
}


@pytest.mark.parametrize("body", BAD.values(), ids=list(BAD))
def test_the_loader_refuses_an_entry_the_checks_could_not_use(body: str) -> None:
    text = f'[[finding]]\nid = "some-id"\nwhen = "w"\nexample = "e"\n{body}\n'
    with pytest.raises(ValueError, match="some-id"):
        load_entries(text)
    assert load_entries(text.split(body)[0] + 'severity = "info"\nclient = "env"\nfix = "{x}"\n')


def test_every_fix_variant_the_checks_name_is_registered_and_every_one_is_used() -> None:
    from notes_cli.clients import registry

    checks = [
        *(ROOT / "notes_cli" / "doctor").glob("*.py"),
        *(ROOT / "notes_cli" / "clients").glob("*/*.py"),
    ]
    source = "\n".join(p.read_text() for p in checks)
    named = set(re.findall(r'variant(?:=|"\s*:\s*)"(\w+)"', source))
    named |= {c.output_cap_variant for c in registry.CLIENTS if c.output_cap_variant}
    registered = {name for entry in REGISTRY.values() for name in entry.variants}
    assert named == registered


def _finding_constructions(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            first = node.args[0] if node.args else None
            copied = isinstance(first, ast.Name) and "finding" in first.id.lower()
            if name == "Finding" or (name == "replace" and copied):  # dataclasses.replace too
                lines.append(node.lineno)
    return lines


def test_no_code_builds_a_finding_outside_the_registry() -> None:
    built = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "notes_cli").rglob("*.py"))
        if (lines := _finding_constructions(path))
    }
    assert built == {"notes_cli/doctor/registry.py": built.get("notes_cli/doctor/registry.py")}
    assert built["notes_cli/doctor/registry.py"], "make builds the findings"
