"""Codex's config schema, per Codex release, and the checks it drives.

The data lives in `templates/clients/codex/config/<version>.json` (derived from the JSON schema
Codex keeps in its repository and checked against the released binary; each file says how). A
user is judged by the rules of the release they run: the newest file not newer than that
release, the oldest file when the release predates them all, the newest when it is unknown.

Codex ignores keys it does not know (so a typo silently falls back to a default) and refuses to
start on a known key of the wrong type or an enum value it does not know; the findings follow.
"""

from __future__ import annotations

import datetime
import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from notes_cli.doctor.findings import Finding, Severity
from notes_cli.doctor.registry import make
from notes_cli.doctor.version import parse_version
from notes_cli.resources import template_path

Version = tuple[int, int, int]
At = Callable[[str | None, str], dict[str, Any]]
"""(table, key) -> {"file": ..., "line": ...} for the finding that points at it."""

ENDPOINT_KEYS = frozenset({"model", "model_provider", "model_providers"})
"""A typo of one of these sends Codex to another endpoint or model: an error, not a warning."""
BEDROCK_IDS = frozenset({"amazon-bedrock", "amazon-bedrock-runtime"})
GATEWAY_OAUTH_SOURCES = ("credential_export",)
GATEWAY_OAUTH_FLOW = ("authorization_url", "token_url", "client_id")


@dataclass(frozen=True)
class CodexSchema:
    version: str
    top_level: Mapping[str, str]
    model_provider: Mapping[str, str]
    enums: Mapping[str, tuple[str, ...]]
    efforts: tuple[str, ...]
    tables: Mapping[str, Mapping[str, Any]]
    retired: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """key -> values the release refuses at load although its parser still knows them."""
    models: frozenset[str] = frozenset()  # the slugs in the release's bundled model catalog
    fallback_window: int | None = None  # the context window Codex assumes for any other model
    """`name` or `name.*` -> {"unknown": "warn"|"ignore", "fields": {key: type}}."""


def available_versions() -> list[Version]:
    folder = template_path("clients", "codex", "config")
    found = (parse_version(p.stem) for p in folder.glob("*.json"))
    return sorted(v for v in found if v is not None)


def schema_for(version: Version | None) -> CodexSchema:
    """The rules of Codex `version` (see the module docstring for the choice)."""
    known = available_versions()
    if not known:
        raise FileNotFoundError("templates/clients/codex/config has no schema file")
    if version is None:
        chosen = known[-1]
    else:
        older = [v for v in known if v <= version]
        chosen = older[-1] if older else known[0]
    return _load(".".join(map(str, chosen)))


@lru_cache(maxsize=8)
def _load(version: str) -> CodexSchema:
    data = json.loads(
        template_path("clients", "codex", "config", f"{version}.json").read_text("utf-8")
    )
    return CodexSchema(
        version=data["version"],
        top_level=data["top_level"],
        model_provider=data["model_provider"],
        enums={k: tuple(v) for k, v in data["enums"].items()},
        efforts=tuple(data["catalogued_reasoning_efforts"]),
        tables=data.get("tables", {}),
        retired={k: tuple(v) for k, v in data.get("retired_values", {}).items()},
        models=frozenset(data.get("catalogued_models", ())),
        fallback_window=data.get("fallback_context_window"),
    )


def suggest(key: str, known: Mapping[str, str] | set[str] | frozenset[str]) -> str | None:
    """The known key `key` is most likely a typo of (`model_provder` -> `model_provider`)."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    return close[0] if close else None


def check_top_level(doc: Mapping[str, Any], schema: CodexSchema, at: At) -> list[Finding]:
    """Every top-level key against the schema: unknown keys, wrong types, unknown enum values."""
    found: list[Finding] = []
    for key, value in doc.items():
        kind = schema.top_level.get(str(key))
        if kind is None:
            found.append(_unknown(str(key), None, schema.top_level, doc, at, schema.version))
            continue
        if key == "approval_policy":
            found += _check_approval(value, schema, at)
            continue
        found += _check_value(None, str(key), value, kind, schema, at)
    return found


def check_tables(doc: Mapping[str, Any], schema: CodexSchema, at: At) -> list[Finding]:
    """The fields of the nested tables the schema types ([tui], [history], [mcp_servers.X],
    [projects."<path>"], ...): wrong types are errors, unknown keys warnings."""
    found: list[Finding] = []
    for name, spec in schema.tables.items():
        parent, _, each = name.partition(".")
        value = doc.get(parent)
        if not isinstance(value, dict):
            continue  # absent, or already a type error at the top level
        if each == "*":
            tables = [(f"{parent}.{key}", t) for key, t in value.items() if isinstance(t, dict)]
        else:
            tables = [(parent, value)]
        for section, table in tables:
            found += _check_table(section, table, spec, schema, at)
    return found


def _check_table(
    section: str, table: Mapping[str, Any], spec: Mapping[str, Any], schema: CodexSchema, at: At
) -> list[Finding]:
    fields: Mapping[str, str] = spec["fields"]
    found: list[Finding] = []
    for key, value in table.items():
        kind = fields.get(str(key))
        if kind is None:
            if spec.get("unknown") == "warn":
                found.append(_unknown(str(key), section, fields, table, at, schema.version))
            continue
        found += _check_value(section, str(key), value, kind, schema, at)
    return found


def check_provider_table(
    provider_id: str, table: Mapping[str, Any], schema: CodexSchema, at: At
) -> list[Finding]:
    """One [model_providers.X] table: unknown fields, wrong types, and the shapes Codex refuses."""
    section = f"model_providers.{provider_id}"
    found: list[Finding] = []
    for key, value in table.items():
        kind = schema.model_provider.get(str(key))
        if kind is None:
            known = schema.model_provider
            found.append(_unknown(str(key), section, known, table, at, schema.version))
            continue
        found += _check_value(section, str(key), value, kind, schema, at)
    found += _provider_shapes(provider_id, table, at)
    return found


def check_providers_shape(doc: Mapping[str, Any], at: At) -> list[Finding]:
    """`model_providers = "x"` or `[[model_providers]]`: Codex refuses the whole file."""
    providers = doc.get("model_providers")
    if providers is None:
        return []
    if isinstance(providers, dict):
        return [
            make(
                "config-type-invalid",
                "codex",
                f"model_providers.{k} is a {_type_name(v)}, not a table; Codex refuses "
                "to load the config",
                key=f"model_providers.{k}",
                expected="a table ([model_providers.<id>])",
                **at("model_providers", str(k)),
            )
            for k, v in providers.items()
            if not isinstance(v, dict)
        ]
    shown = "an array of tables ([[model_providers]])" if isinstance(providers, list) else None
    return [
        make(
            "config-type-invalid",
            "codex",
            f"model_providers is {shown or 'a ' + _type_name(providers)}, not a table of "
            "providers; Codex refuses to load the config",
            key="model_providers",
            expected="one [model_providers.<id>] table per provider",
            **at(None, "model_providers"),
        )
    ]


def _unknown(
    key: str,
    section: str | None,
    known: Mapping[str, str],
    present: Mapping[str, Any],
    at: At,
    version: str,
) -> Finding:
    dotted = f"{section}.{key}" if section else key
    guess = suggest(key, set(known))
    hint = f" (did you mean `{guess}`?)" if guess else ""
    where = f"[{section}]" if section else "the top level"
    # A typo of a key that picks the endpoint silently sends Codex elsewhere: an error.
    misroutes = section is None and guess in ENDPOINT_KEYS and guess not in present
    severity: Severity | None = "error" if misroutes else None
    consequence = (
        f"so Codex ignores it and uses its default {guess}" if severity else "so Codex ignores it"
    )
    return make(
        "unknown-key",
        "codex",
        f"{dotted} is not a key Codex {version} knows at {where}{hint}, {consequence}",
        severity=severity,
        key=dotted,
        hint=hint,
        **at(section, key),
    )


def _check_approval(value: object, schema: CodexSchema, at: At) -> list[Finding]:
    choices = schema.enums["ApprovalPolicy"]
    where = at(None, "approval_policy")
    if isinstance(value, str) and value in schema.retired.get("approval_policy", ()):
        return [
            make(
                "approval-untrusted",
                "codex",
                f'approval_policy = "{value}" is no longer supported by Codex {schema.version}',
                **where,
            )
        ]
    if isinstance(value, str):
        if value in choices:
            return []
        if value == "granular":
            return [
                make(
                    "config-type-invalid",
                    "codex",
                    'approval_policy = "granular" as a plain string: Codex refuses to load the '
                    "config (granular takes a table of per-flow settings)",
                    key="approval_policy",
                    expected="approval_policy = { granular = { sandbox_approval = true, rules = "
                    'true, mcp_elicitations = true } } or one of "' + '", "'.join(choices) + '"',
                    **where,
                )
            ]
        return [_enum_invalid("approval_policy", value, choices, where)]
    if (
        isinstance(value, dict)
        and set(value) == {"granular"}
        and isinstance(value["granular"], dict)
    ):
        return []
    return [
        make(
            "config-type-invalid",
            "codex",
            f"approval_policy is a {_type_name(value)} Codex cannot read; it refuses to load "
            "the config",
            key="approval_policy",
            expected='one of "' + '", "'.join(choices) + '" or { granular = { ... } }',
            **where,
        )
    ]


def _check_value(
    section: str | None, key: str, value: object, kind: str, schema: CodexSchema, at: At
) -> list[Finding]:
    dotted = f"{section}.{key}" if section else key
    if kind.startswith("enum:"):
        choices = schema.enums[kind.removeprefix("enum:")]
        if not isinstance(value, str):
            return [_wrong_type(dotted, value, "a string", at(section, key))]
        if value in choices or (key == "wire_api" and value == "chat"):
            return []  # wire_api = "chat" has its own, version-aware finding
        if key == "wire_api":
            return []  # wire-api-invalid reports it, naming the provider
        return [_enum_invalid(dotted, value, choices, at(section, key))]
    expected = _EXPECTED.get(kind)
    if expected is None or _TYPE_OK[kind](value):
        return []
    return [_wrong_type(dotted, value, expected, at(section, key))]


def _provider_shapes(provider_id: str, table: Mapping[str, Any], at: At) -> list[Finding]:
    """Field values of the right type that Codex still refuses (checked on the 0.171.0 binary)."""
    section = f"model_providers.{provider_id}"
    found: list[Finding] = []

    def refuse(key: str, why: str, fix: str) -> None:
        found.append(
            make(
                "provider-field-invalid",
                "codex",
                f"{section}.{key}: {why}; Codex refuses to load the config",
                key=f"{section}.{key}",
                detail=fix,
                **at(section, key),
            )
        )

    if "aws" in table and provider_id not in BEDROCK_IDS:
        refuse(
            "aws",
            "aws (SigV4) auth is only supported for the amazon-bedrock providers",
            f"remove `aws` from [{section}]; a gateway takes env_key (its API key variable)",
        )
    oauth = table.get("gateway_oauth")
    if isinstance(oauth, dict):
        has_export = any(oauth.get(k) for k in GATEWAY_OAUTH_SOURCES)
        has_flow = all(oauth.get(k) for k in GATEWAY_OAUTH_FLOW)
        if has_export == has_flow:  # none, or both: Codex wants exactly one source
            refuse(
                "gateway_oauth",
                "it needs exactly one credential source: credential_export, or "
                "authorization_url + token_url + client_id",
                f"remove `gateway_oauth` from [{section}] or give it exactly one source",
            )
    auth = table.get("auth")
    if isinstance(auth, dict) and not isinstance(auth.get("command"), str):
        refuse(
            "auth",
            "the command-backed token config has no `command`",
            f'set auth = {{ command = "..." }} in [{section}] or remove `auth`',
        )
    return found


def _wrong_type(dotted: str, value: object, expected: str, where: dict[str, Any]) -> Finding:
    return make(
        "config-type-invalid",
        "codex",
        f"{dotted} is a {_type_name(value)}, Codex expects {expected}; it refuses to load the "
        "config",
        key=dotted,
        expected=expected,
        **where,
    )


def _enum_invalid(
    dotted: str, value: str, choices: tuple[str, ...], where: dict[str, Any]
) -> Finding:
    return make(
        "enum-value-invalid",
        "codex",
        f"{dotted} = {value!r} is not a value Codex knows; it refuses to load the config",
        choices=", ".join(choices),
        **where,
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_TYPE_OK: dict[str, Callable[[object], bool]] = {
    # 0.171.0 reads a TOML date-time as its text where it wants a string (checked on the binary)
    "string": lambda v: isinstance(v, str | datetime.date | datetime.time),
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_int,
    "unsigned": lambda v: _is_int(v) and v >= 0,  # type: ignore[operator]
    "array": lambda v: isinstance(v, list),
    "table": lambda v: isinstance(v, dict),
    "string|array": lambda v: isinstance(v, str | list),
    "boolean|table": lambda v: isinstance(v, bool | dict),
    "boolean|array": lambda v: isinstance(v, bool | list),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_EXPECTED = {
    "string": "a string",
    "boolean": "true or false",
    "integer": "an integer",
    "unsigned": "a whole number >= 0",
    "array": "an array",
    "table": "a table",
    "string|array": "a string or an array of strings",
    "boolean|table": "true, false or a table",
    "boolean|array": "true, false or an array",
    "number": "a number",
}


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "negative integer" if value < 0 else "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "table"
    return type(value).__name__  # TOML dates and times
