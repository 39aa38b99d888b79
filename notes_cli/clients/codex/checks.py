"""Static checks of Codex's config.toml (and the environment it reads its key from)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli import fileio
from notes_cli.clients.codex import catalog as codex_catalog
from notes_cli.clients.codex import schema as codex_schema
from notes_cli.clients.codex.config import RESERVED_PROVIDER_IDS
from notes_cli.clients.codex.credentials import provider_credentials
from notes_cli.clients.codex.layers import CodexLayer, MergedCodex, merge_into
from notes_cli.clients.codex.secrets import HOW, secrets_in
from notes_cli.clients.codex.setup import BUILTIN_PROVIDERS
from notes_cli.clients.files import line_of_regex, toml_header_line
from notes_cli.clients.resolve import OPENAI_DEFAULT_BASE_URL
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.secret_checks import is_variable_name
from notes_cli.doctor.url_checks import (
    check_base_url,
    check_gateway_note,
    check_model,
    is_placeholder_model,
)
from notes_cli.secrets import looks_like_secret

BEDROCK_FIELDS = frozenset({"base_url", "auth", "http_headers", "aws"})
"""On the built-in amazon-bedrock provider only these may be changed."""
CHAT_REMOVED_IN = (0, 80, 0)
MAX_RETRIES = 100


class _Ctx:
    """Where each value came from, so each finding can point at the `file:line` that won."""

    def __init__(self, merged: MergedCodex, profile: str | None = None) -> None:
        self.merged = merged
        self.profile = profile
        user = next((lay for lay in merged.layers if lay.kind == "user"), None)
        self.file = user.where if user else (merged.layers[0].where if merged.layers else "")

    def at(self, table: str | None, key: str) -> dict[str, Any]:
        """`key = …` in [table] of the winning layer; for a key that is itself a table, its
        `[table.key]` or `[[table.key]]` header."""
        where = self.merged.at(table, key)
        layer = self.merged.layer_of(*(table.split(".") if table else ()), key)
        if where["line"] is None and layer is not None and layer.path is not None:
            dotted = f"{table}.{key}" if table else key
            where["line"] = line_of_regex(
                layer.text, r"^\s*\[\[\s*" + re.escape(dotted) + r"\s*\]\]"
            )
        return where

    def header(self, table: str) -> dict[str, Any]:
        layer = self.merged.layer_of(*table.split("."))
        if layer is None or layer.path is None:
            return {"file": layer.where if layer else self.file, "line": None}
        return {"file": layer.where, "line": toml_header_line(layer.text, table)}


def check_codex(
    path: Path,
    text: str,
    doc: Mapping[str, Any],
    env: Mapping[str, str],
    version: tuple[int, int, int] | None,
) -> list[Finding]:
    """Every static finding for one parsed config.toml on its own."""
    merged = merge_into(MergedCodex([CodexLayer("user", path, text, doc)]))
    return check_codex_layers(merged, env, version)


def check_codex_layers(
    merged: MergedCodex,
    env: Mapping[str, str],
    version: tuple[int, int, int] | None,
    profile: str | None = None,
) -> list[Finding]:
    """Every static finding for Codex's merged configuration; each names the winning layer."""
    ctx = _Ctx(merged, profile)
    doc = merged.doc
    schema = codex_schema.schema_for(version)
    found = _check_layers(ctx)
    found += _check_top_level(ctx, doc, schema)
    found += codex_schema.check_providers_shape(doc, ctx.at)
    providers = doc.get("model_providers")
    providers = providers if isinstance(providers, dict) else {}
    for provider_id, table in providers.items():
        if isinstance(table, dict):
            found += _check_provider(ctx, str(provider_id), table, env, version, schema)
    found += _check_selected(ctx, doc, providers, env)
    found += _check_model_metadata(ctx, doc, providers, schema)
    found += _check_anthropic_keys(ctx, doc)
    for layer in merged.layers:  # a literal secret is a problem in every file that holds one
        if layer.path is not None:
            found += secrets_in(layer.path, layer.text, layer.doc)
    return found


def _check_layers(ctx: _Ctx) -> list[Finding]:
    """Files Codex skips although they look like they apply."""
    found: list[Finding] = []
    for path in ctx.merged.ignored_project_files:
        found.append(
            make(
                "project-config-untrusted",
                "codex",
                f"{path} is ignored: Codex loads a project's .codex/config.toml only when the "
                "project is trusted",
                project=str(path.parent.parent),
                codex_file=ctx.file,
                file=str(path),
            )
        )
    if ctx.merged.missing_profile is not None and ctx.profile:
        found.append(
            make(
                "profile-file-missing",
                "codex",
                f"`codex -p {ctx.profile}` reads {ctx.merged.missing_profile}, which does not "
                "exist; Codex silently runs without the profile",
                profile=ctx.profile,
                file=str(ctx.merged.missing_profile),
            )
        )
    return found


def _check_top_level(
    ctx: _Ctx, doc: Mapping[str, Any], schema: codex_schema.CodexSchema
) -> list[Finding]:
    found = codex_schema.check_top_level(doc, schema, ctx.at)
    found += codex_schema.check_tables(doc, schema, ctx.at)
    if "profile" in doc:
        profile = str(doc["profile"])
        found.append(
            make(
                "profile-legacy",
                "codex",
                f'legacy top-level profile = "{profile}" makes Codex refuse to start',
                profile=profile,
                **ctx.at(None, "profile"),
            )
        )
    profiles = doc.get("profiles")
    if isinstance(profiles, dict):
        for name in profiles:
            selected = name == ctx.profile
            found.append(
                make(
                    "profile-legacy",
                    "codex",
                    f"[profiles.{name}] is legacy: `codex -p {name}` refuses to start on it"
                    if selected
                    else f"[profiles.{name}] is legacy: `codex -p {name}` fails on it",
                    severity=None if selected else "warning",
                    profile=name,
                    **ctx.header(f"profiles.{name}"),
                )
            )
    effort = doc.get("model_reasoning_effort")
    if isinstance(effort, str) and effort not in schema.efforts:
        found.append(
            make(
                "reasoning-effort-invalid",
                "codex",
                f"model_reasoning_effort = {effort!r} is not a catalogued effort; "
                "Codex sends it to the gateway unchecked",
                choices=", ".join(schema.efforts),
                **ctx.at(None, "model_reasoning_effort"),
            )
        )
    return found


def _check_provider(
    ctx: _Ctx,
    provider_id: str,
    table: dict[str, Any],
    env: Mapping[str, str],
    version: tuple[int, int, int] | None,
    schema: codex_schema.CodexSchema,
) -> list[Finding]:
    section = f"model_providers.{provider_id}"
    found: list[Finding] = []
    header = ctx.header(section)
    if provider_id in RESERVED_PROVIDER_IDS:
        found.append(
            make(
                "provider-reserved-id",
                "codex",
                f"[{section}] redefines the built-in provider {provider_id!r}; Codex "
                "refuses to load the config",
                provider=provider_id,
                **header,
            )
        )
    if provider_id != "amazon-bedrock" and not str(table.get("name") or "").strip():
        found.append(
            make(
                "provider-name-empty",
                "codex",
                f"[{section}] has no name; Codex refuses to load the config",
                provider=provider_id,
                **header,
            )
        )
    if provider_id == "amazon-bedrock":
        for key in table:
            if key not in BEDROCK_FIELDS:
                found.append(
                    make(
                        "unknown-key",
                        "codex",
                        f"{section}.{key} cannot be changed on the built-in amazon-bedrock "
                        "provider",
                        key=f"{section}.{key}",
                        hint="",
                        **ctx.at(section, str(key)),
                    )
                )
    else:
        found += codex_schema.check_provider_table(provider_id, table, schema, ctx.at)
    found += _check_wire_api(ctx, provider_id, table.get("wire_api"), version)
    found += _check_credentials(ctx, provider_id, table, env)
    for key in ("request_max_retries", "stream_max_retries"):
        value = table.get(key)
        if isinstance(value, int) and value > MAX_RETRIES:
            found.append(
                make(
                    "retries-too-high",
                    "codex",
                    f"{section}.{key} = {value} exceeds Codex's maximum of 100",
                    key=key,
                    **ctx.at(section, key),
                )
            )
    return found


def _check_wire_api(
    ctx: _Ctx, provider_id: str, wire_api: object, version: tuple[int, int, int] | None
) -> list[Finding]:
    section = f"model_providers.{provider_id}"
    if wire_api is None or wire_api == "responses":
        return []
    where = ctx.at(section, "wire_api")
    if wire_api == "chat":
        if version is not None and version < CHAT_REMOVED_IN:
            shown = ".".join(map(str, version))
            return [
                make(
                    "wire-api-chat-removed",
                    "codex",
                    f'wire_api = "chat" still works on the installed Codex {shown}, but '
                    "Codex 0.80+ refuses it",
                    severity="warning",
                    provider=provider_id,
                    **where,
                )
            ]
        installed = ".".join(map(str, version)) if version else "current Codex"
        return [
            make(
                "wire-api-chat-removed",
                "codex",
                f'wire_api = "chat" in [{section}] is no longer supported by {installed} '
                "(it only speaks the Responses API)",
                provider=provider_id,
                **where,
            )
        ]
    return [
        make(
            "wire-api-invalid",
            "codex",
            f"wire_api = {wire_api!r} in [{section}] is not a value Codex knows",
            provider=provider_id,
            **where,
        )
    ]


def _check_credentials(
    ctx: _Ctx, provider_id: str, table: dict[str, Any], env: Mapping[str, str]
) -> list[Finding]:
    section = f"model_providers.{provider_id}"
    found: list[Finding] = []
    env_key = table.get("env_key")
    if isinstance(env_key, str) and looks_like_secret(env_key):
        found.append(
            make(
                "env-key-looks-like-secret",
                "codex",
                f"env_key in [{section}] holds what looks like a key, not a variable name",
                **ctx.at(section, "env_key"),
            )
        )
    token = table.get("experimental_bearer_token")
    if isinstance(token, str) and token:
        found.append(
            make(
                "key-in-file",
                "codex",
                f"[{section}] stores a literal bearer token in "
                f"{ctx.at(section, 'experimental_bearer_token')['file']}",
                how=HOW,
                **ctx.at(section, "experimental_bearer_token"),
            )
        )
    other_sources = [
        k for k in ("env_key", "experimental_bearer_token", "requires_openai_auth") if table.get(k)
    ]
    if table.get("auth") and other_sources:
        found.append(
            make(
                "auth-mixed",
                "codex",
                f"[{section}] combines auth with {', '.join(other_sources)}",
                provider=provider_id,
                **ctx.at(section, "auth"),
            )
        )
    headers = table.get("env_http_headers")
    if isinstance(headers, dict):
        for header, variable in headers.items():
            # A token where the name belongs is key-in-file (secret_checks), never quoted here.
            if is_variable_name(str(variable)) and not env.get(str(variable)):
                found.append(
                    make(
                        "env-http-header-unset",
                        "codex",
                        f"header {header} comes from ${variable}, which is unset, so "
                        "Codex silently omits it",
                        variable=variable,
                        **ctx.at(section, "env_http_headers"),
                    )
                )
    return found


def _check_selected(
    ctx: _Ctx, doc: Mapping[str, Any], providers: dict[str, Any], env: Mapping[str, str]
) -> list[Finding]:
    """Checks of what Codex will actually call: the selected provider, its key and model."""
    provider_id = str(doc.get("model_provider") or "openai")
    model = doc.get("model")
    model_line = ctx.at(None, "model")
    found: list[Finding] = []
    table = providers.get(provider_id)
    if not isinstance(table, dict):
        if provider_id not in BUILTIN_PROVIDERS:
            return [
                make(
                    "provider-missing",
                    "codex",
                    f"model_provider = {provider_id!r} but there is no "
                    f"[model_providers.{provider_id}] table",
                    provider=provider_id,
                    **ctx.at(None, "model_provider"),
                )
            ]
        found = check_model("codex", _opt(model), OPENAI_DEFAULT_BASE_URL, **model_line)
        if provider_id == "openai" and env.get("OPENAI_API_KEY"):
            found.append(
                make(
                    "openai-api-key-ignored",
                    "codex",
                    "Codex selects its built-in openai provider, which ignores the exported "
                    "OPENAI_API_KEY",
                    file=ctx.file,
                )
            )
        return found
    section = f"model_providers.{provider_id}"
    base_url = table.get("base_url")
    if isinstance(base_url, str):
        found += check_base_url("codex", base_url, query_table=True, **ctx.at(section, "base_url"))
        found += check_gateway_note("codex", base_url)
    found += provider_credentials(provider_id, table, env, _codex_home(ctx), ctx.header(section))
    env_key = table.get("env_key")
    if _names_unset_variable(env_key, env):
        state = "empty" if env_key in env else "not set"
        found.append(
            make(
                "env-key-unset",
                "codex",
                f"env_key = {env_key!r} but ${env_key} is {state} in this "
                "environment, so Codex stops with 'Missing environment variable'",
                variable=env_key,
                **ctx.at(section, "env_key"),
            )
        )
    if not model:
        found.append(
            make(
                "model-missing",
                "codex",
                f"no top-level model: Codex sends its own default id to {provider_id}",
                file=ctx.file,
            )
        )
    else:
        found += check_model("codex", _opt(model), str(base_url or ""), **model_line)
    return found


def _check_model_metadata(
    ctx: _Ctx, doc: Mapping[str, Any], providers: dict[str, Any], schema: codex_schema.CodexSchema
) -> list[Finding]:
    """A gateway's model that Codex's catalog does not know: Codex warns "Model metadata for X
    not found", assumes its fallback window and leaves the model out of its picker, unless a
    model catalog (model_catalog_json) names it; a catalog Codex cannot read stops Codex."""
    model, provider_id = doc.get("model"), str(doc.get("model_provider") or "openai")
    if not isinstance(model, str) or not model or not isinstance(providers.get(provider_id), dict):
        return []  # no model, or a built-in provider: other findings say what is wrong
    configured = doc.get("model_catalog_json")
    if isinstance(configured, str) and configured:
        return _check_catalog(ctx, model, configured)
    if model in schema.models or schema.fallback_window is None:
        return []
    if is_placeholder_model(model):
        return []  # model-placeholder says to set the real id first
    window = doc.get("model_context_window")
    fallback = schema.fallback_window
    fix: dict[str, Any] = {"model": model, "fallback": fallback}
    if not isinstance(window, int) or isinstance(window, bool):
        message = (
            f"Codex {schema.version}'s catalog does not know {model!r}: it warns \"Model metadata "
            f'for {model} not found", assumes a {fallback}-token context window and leaves the '
            "model out of its picker"
        )
        return [make("codex-model-unknown", "codex", message, **ctx.at(None, "model"), **fix)]
    at = ctx.at(None, "model_context_window")
    if window > fallback:
        message = (
            f"model_context_window = {window}, but Codex caps it at its metadata's window: "
            f"{fallback} for {model!r}, which its catalog does not know"
        )
        return [make("codex-model-unknown", "codex", message, variant="capped", **at, **fix)]
    message = (
        f"model_context_window gives {model!r} its window, but Codex {schema.version}'s catalog "
        f'still does not know it: Codex warns "Model metadata for {model} not found" and '
        "leaves it out of its picker"
    )
    return [make("codex-model-unknown", "codex", message, variant="uncatalogued", **at, **fix)]


def _check_catalog(ctx: _Ctx, model: str, configured: str) -> list[Finding]:
    """The model catalog config.toml names: Codex refuses to start on one it cannot read, and
    warns about a model it does not list."""
    path = codex_catalog.catalog_path(configured, _codex_home(ctx))
    slugs, problem = codex_catalog.read_slugs(path)
    at = ctx.at(None, "model_catalog_json")
    fix: dict[str, Any] = {"model": model, "catalog": str(path)}
    if slugs is None:
        message = f"Codex cannot read the model catalog {path} (model_catalog_json): {problem}"
        fix["catalog_action"] = fileio.aside_fix(
            path, f"fix or remove {path}", setting="model_catalog_json"
        )
        return [
            make("codex-model-unknown", "codex", message, variant="catalog_broken", **at, **fix)
        ]
    if model in slugs:
        return []
    message = (
        f"the model catalog {path} does not list {model!r}: Codex, which reads only the "
        f'catalog, warns "Model metadata for {model} not found" and leaves it out of its picker'
    )
    return [make("codex-model-unknown", "codex", message, variant="not_in_catalog", **at, **fix)]


def _check_anthropic_keys(ctx: _Ctx, doc: Mapping[str, Any]) -> list[Finding]:
    found: list[Finding] = []

    def walk(table: Mapping[str, Any], prefix: str | None) -> None:
        for key, value in table.items():
            dotted = f"{prefix}.{key}" if prefix else str(key)
            if str(key).upper().startswith("ANTHROPIC_"):
                found.append(
                    make(
                        "anthropic-in-codex",
                        "codex",
                        f"{dotted} is a Claude Code setting; Codex ignores it",
                        key=dotted,
                        **ctx.at(prefix, str(key)),
                    )
                )
            elif isinstance(value, dict):
                walk(value, dotted)

    walk(doc, None)
    return found


def _codex_home(ctx: _Ctx) -> Path:
    """The folder of the user config.toml: where Codex keeps auth.json."""
    user = next((lay for lay in ctx.merged.layers if lay.kind == "user"), None)
    return user.path.parent if user and user.path else Path(ctx.file).parent


def _names_unset_variable(env_key: object, env: Mapping[str, str]) -> bool:
    return (
        isinstance(env_key, str)
        and bool(env_key)
        and not looks_like_secret(env_key)
        and not env.get(env_key)
    )


def _opt(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
