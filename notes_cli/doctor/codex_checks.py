"""Static checks of Codex's config.toml (and the environment it reads its key from)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.clients.files import toml_header_line, toml_key_line
from notes_cli.clients.resolve import (
    BUILTIN_CODEX_PROVIDERS,
    OPENAI_DEFAULT_BASE_URL,
    RESERVED_PROVIDER_IDS,
)
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.secret_checks import CODEX_HOW, codex_secrets, is_variable_name
from notes_cli.doctor.url_checks import check_base_url, check_gateway_note, check_model
from notes_cli.secrets import looks_like_secret

PROVIDER_FIELDS = frozenset(
    {
        "name",
        "base_url",
        "wire_api",
        "env_key",
        "env_key_instructions",
        "experimental_bearer_token",
        "auth",
        "requires_openai_auth",
        "query_params",
        "http_headers",
        "env_http_headers",
        "request_max_retries",
        "stream_max_retries",
        "stream_idle_timeout_ms",
        "supports_websockets",
        "model_catalog_url",
        "gateway_oauth",
        "aws",
        "capabilities",
        "project_id",
        "location",
        "credential_file",
        "websocket_connect_timeout_ms",
        "supports_standalone_web_search",
    }
)
BEDROCK_FIELDS = frozenset({"base_url", "auth", "http_headers", "aws"})
"""On the built-in amazon-bedrock provider only these may be changed."""
ENUMS: dict[str, tuple[str, ...]] = {
    "sandbox_mode": ("read-only", "workspace-write", "danger-full-access"),
    "approval_policy": ("untrusted", "on-failure", "on-request", "granular", "never"),
    "model_reasoning_summary": ("auto", "concise", "detailed", "none"),
    "model_verbosity": ("low", "medium", "high"),
    "personality": ("none", "friendly", "pragmatic"),
}
REASONING_EFFORTS = ("low", "medium", "high", "xhigh", "max", "ultra")
CHAT_REMOVED_IN = (0, 80, 0)
MAX_RETRIES = 100


class _Ctx:
    """The file under check, so each finding can point at `file:line`."""

    def __init__(self, path: Path, text: str) -> None:
        self.file = str(path)
        self.text = text

    def at(self, table: str | None, key: str) -> dict[str, Any]:
        return {"file": self.file, "line": toml_key_line(self.text, table, key)}


def check_codex(
    path: Path,
    text: str,
    doc: Mapping[str, Any],
    env: Mapping[str, str],
    version: tuple[int, int, int] | None,
) -> list[Finding]:
    """Every static finding for one parsed config.toml."""
    ctx = _Ctx(path, text)
    found = _check_top_level(ctx, doc)
    providers = doc.get("model_providers")
    providers = providers if isinstance(providers, dict) else {}
    for provider_id, table in providers.items():
        if isinstance(table, dict):
            found += _check_provider(ctx, str(provider_id), table, env, version)
    found += _check_selected(ctx, doc, providers, env)
    found += _check_anthropic_keys(ctx, doc)
    found += codex_secrets(path, text, doc)
    return found


def _check_top_level(ctx: _Ctx, doc: Mapping[str, Any]) -> list[Finding]:
    found: list[Finding] = []
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
            found.append(
                make(
                    "profile-legacy",
                    "codex",
                    f"[profiles.{name}] is legacy: `codex -p {name}` fails on it",
                    severity="warning",
                    profile=name,
                    file=ctx.file,
                    line=toml_header_line(ctx.text, f"profiles.{name}"),
                )
            )
    for key, choices in ENUMS.items():
        value = doc.get(key)
        if value is None:
            continue
        if key == "approval_policy" and value == "untrusted":
            found.append(
                make(
                    "approval-untrusted",
                    "codex",
                    'approval_policy = "untrusted" is no longer supported by Codex',
                    **ctx.at(None, key),
                )
            )
        elif value not in choices:
            found.append(
                make(
                    "enum-value-invalid",
                    "codex",
                    f"{key} = {value!r} is not a value Codex knows",
                    choices=", ".join(choices),
                    **ctx.at(None, key),
                )
            )
    effort = doc.get("model_reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        found.append(
            make(
                "reasoning-effort-invalid",
                "codex",
                f"model_reasoning_effort = {effort!r} is not a catalogued effort; "
                "Codex sends it to the gateway unchecked",
                choices=", ".join(REASONING_EFFORTS),
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
) -> list[Finding]:
    section = f"model_providers.{provider_id}"
    found: list[Finding] = []
    header: dict[str, Any] = {"file": ctx.file, "line": toml_header_line(ctx.text, section)}
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
    allowed = BEDROCK_FIELDS if provider_id == "amazon-bedrock" else PROVIDER_FIELDS
    for key in table:
        if key not in allowed:
            found.append(
                make(
                    "unknown-key",
                    "codex",
                    f"{section}.{key} cannot be changed on the built-in amazon-bedrock provider"
                    if allowed is BEDROCK_FIELDS
                    else f"{section}.{key} is not a Codex provider field; Codex ignores it",
                    key=f"{section}.{key}",
                    **ctx.at(section, str(key)),
                )
            )
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
                f"[{section}] stores a literal bearer token in {ctx.file}",
                how=CODEX_HOW,
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
        if provider_id not in BUILTIN_CODEX_PROVIDERS:
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
        found += check_base_url("codex", base_url, **ctx.at(section, "base_url"))
        found += check_gateway_note("codex", base_url)
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


def _names_unset_variable(env_key: object, env: Mapping[str, str]) -> bool:
    return (
        isinstance(env_key, str)
        and bool(env_key)
        and not looks_like_secret(env_key)
        and not env.get(env_key)
    )


def _opt(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
