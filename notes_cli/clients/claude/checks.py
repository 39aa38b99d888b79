"""Static checks of Claude Code's settings files and the merged view Claude Code will use.

A file Claude Code drops (bad JSON, a non-object `env`, a wrong type on a known key) is reported
and then left out of the merged view, exactly as Claude Code leaves it out."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notes_cli import fileio
from notes_cli.clients import files
from notes_cli.clients.claude.env import check_claude_env, check_claude_window
from notes_cli.clients.claude.home import claude_home as home_folder
from notes_cli.clients.claude.secrets import HOW, secrets_in
from notes_cli.clients.claude.setup import (
    ANTHROPIC_DEFAULT_BASE_URL,
    claude_auth,
    claude_model,
    claude_settings_files,
    merge_claude_layers,
)
from notes_cli.clients.git import tracked_by_git
from notes_cli.clients.presets import placeholder_tokens
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_base_url, check_gateway_note, check_model
from notes_cli.errors import ConfigParseError, InputError

RESPONSES_CLIENT_KEYS = (
    "model_provider",
    "model_providers",
    "base_url",
    "env_key",
    "wire_api",
    "approval_policy",
    "sandbox_mode",
)
ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_")
ENV_NAMES = ("API_TIMEOUT_MS", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING")
SECRET_VARIABLES = ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY")
_FALSE_VALUES = ("0", "false", "no", "off")


@dataclass(frozen=True)
class ClaudeFile:
    """One settings file that exists, read once: its text and object, or the finding that says
    why Claude Code ignores it (it does not parse, or cannot be read)."""

    scope: str
    path: Path
    text: str | None = None
    data: dict[str, Any] | None = None
    problem: Finding | None = None


def read_claude_files(
    claude_home: Path | None, project_dir: Path | None, settings_file: Path | None = None
) -> tuple[ClaudeFile, ...]:
    """The settings files Claude Code reads that exist, lowest precedence first."""
    read: list[ClaudeFile] = []
    for scope, path in claude_settings_files(claude_home, project_dir, settings_file):
        try:
            text, data = files.load_json(path)
        except ConfigParseError as exc:
            message = f"{exc.message}; Claude Code ignores this whole file"
            problem = make(
                "json-syntax", "claude", message, file=str(path), line=exc.line, column=exc.column
            )
            read.append(ClaudeFile(scope, path, problem=problem))
            continue
        except InputError as exc:
            detail = exc.fix or fileio.aside_fix(path, "fix or remove the file")
            problem = make("file-unreadable", "claude", exc.message, file=str(path), detail=detail)
            read.append(ClaudeFile(scope, path, problem=problem))
            continue
        if text is not None and data is not None:
            read.append(ClaudeFile(scope, path, text, data))
    return tuple(read)


def check_claude(
    read: Sequence[ClaudeFile],
    claude_home: Path | None,
    env: Mapping[str, str],
    *,
    run_helpers: bool = False,
) -> list[Finding]:
    """All static Claude findings for the settings files as read (`read_claude_files`)."""
    found: list[Finding] = []
    valid: list[tuple[Path, dict[str, Any]]] = []
    scopes = {str(f.path): f.scope for f in read}
    texts = {str(f.path): f.text for f in read if f.text is not None}
    for settings in read:
        if settings.problem is not None:
            found.append(settings.problem)
            continue
        path, data, scope = settings.path, settings.data or {}, settings.scope
        file_findings = check_settings_file(path, settings.text or "", data, scope)
        dropped = any(f.id == "claude-settings-ignored" for f in file_findings)
        if dropped and scope == "managed":
            # Claude Code keeps a managed file and drops only its bad keys (its settings docs,
            # managed settings).
            file_findings = [_managed_key_dropped(f) for f in file_findings]
            valid.append((path, _without_bad_keys(data)))
        elif not dropped:
            valid.append((path, data))
        found += file_findings
    found += _check_state_file(claude_home)
    if not read and not any(k.startswith("ANTHROPIC_") for k in env):
        return found
    found += _check_merged(valid, env, texts)
    found += _check_credentials(valid, env, scopes, run_helpers, texts)
    return found


def _check_credentials(
    valid: list[tuple[Path, dict[str, Any]]],
    env: Mapping[str, str],
    scopes: Mapping[str, str],
    run_helpers: bool,
    texts: Mapping[str, str],
) -> list[Finding]:
    """The key Claude Code will really send (`credentials`)."""
    from notes_cli.clients.claude.credentials import HelperSource, helper_findings, side_by_side

    layers = merge_claude_layers(valid, env)
    command, source = layers.top.get("apiKeyHelper", (None, ""))
    helper = (
        HelperSource(
            command, source, scopes.get(source, "user"), _line_in(texts, source, "apiKeyHelper")
        )
        if isinstance(command, str) and command
        else None
    )
    found = helper_findings(helper, env, run_helpers=run_helpers) if helper else []
    found += side_by_side(
        helper,
        layers.env.get("ANTHROPIC_AUTH_TOKEN", ("", "")),
        layers.env.get("ANTHROPIC_API_KEY", ("", "")),
    )
    return found


def _check_state_file(claude_home: Path | None) -> list[Finding]:
    """An `env` block in Claude Code's state file (~/.claude.json, or .claude.json in
    $CLAUDE_CONFIG_DIR): an undocumented layer that outlives edits to settings.json."""
    found: list[Finding] = []
    candidates = {home_folder(claude_home) / ".claude.json", Path.home() / ".claude.json"}
    for path in sorted(candidates):
        try:
            _, data = files.load_json(path)
        except InputError:
            continue  # the state file is Claude Code's own; only its env block concerns us
        env = data.get("env") if data else None
        if isinstance(env, dict) and any(str(k).startswith(ENV_PREFIXES) for k in env):
            found.append(
                make(
                    "claude-json-env",
                    "claude",
                    f"{path} has an env block ({', '.join(sorted(env))}) that Claude Code "
                    "still applies",
                    file=str(path),
                )
            )
    return found


def check_settings_file(path: Path, text: str, data: dict[str, Any], scope: str) -> list[Finding]:
    """Findings within one parsed settings file."""
    file = str(path)
    found = _ignored(file, text, data)
    for key in data:
        line = files.line_of(text, f'"{key}"')
        if key.startswith(ENV_PREFIXES) or key in ENV_NAMES:
            found.append(
                make(
                    "env-outside-block",
                    "claude",
                    f'"{key}" is at the top level of {path.name}; Claude Code only '
                    'reads variables inside "env"',
                    key=key,
                    file=file,
                    line=line,
                )
            )
        elif key in RESPONSES_CLIENT_KEYS:
            found.append(
                make(
                    "codex-in-claude",
                    "claude",
                    f'"{key}" is a Codex setting; Claude Code ignores it',
                    key=key,
                    file=file,
                    line=line,
                )
            )
    env = data.get("env")
    if isinstance(env, dict):
        found += _check_env_block(path, text, env, scope)
    found += secrets_in(path, text, data)
    return found


def _ignored(file: str, text: str, data: dict[str, Any]) -> list[Finding]:
    """Wrong types on known keys: Claude Code then drops the whole file."""
    problems: list[tuple[str, str]] = []
    if "env" in data and not isinstance(data["env"], dict):
        problems.append(
            ("env", f'"env" is a JSON {files.json_type_name(data["env"])}, not an object')
        )
    for key in ("model", "apiKeyHelper"):
        if key in data and not isinstance(data[key], str):
            problems.append(
                (key, f'"{key}" must be a string, not {files.json_type_name(data[key])}')
            )
    permissions = data.get("permissions")
    if "permissions" in data and not isinstance(permissions, dict):
        problems.append(("permissions", '"permissions" must be an object'))
    elif isinstance(permissions, dict):
        for key in ("allow", "deny", "ask"):
            if key in permissions and not isinstance(permissions[key], list):
                problems.append((key, f'"permissions.{key}" must be an array'))
    return [
        make(
            "claude-settings-ignored",
            "claude",
            f"{reason}; Claude Code ignores this whole file (its env included)",
            file=file,
            line=files.line_of(text, f'"{key}"'),
            detail=f"fix it: {reason}",
        )
        for key, reason in problems
    ]


def _managed_key_dropped(finding: Finding) -> Finding:
    if finding.id != "claude-settings-ignored":
        return finding
    message = finding.message.replace(
        "Claude Code ignores this whole file (its env included)",
        "Claude Code drops this key of the managed file (and keeps the rest)",
    )
    # the same finding, a warning: its fix (`{detail}` in the registry) is kept as it was
    return make(
        finding.id,
        finding.client,
        message,
        severity="warning",
        file=finding.file,
        line=finding.line,
        detail=finding.fix,
    )


def _without_bad_keys(data: dict[str, Any]) -> dict[str, Any]:
    """A managed file as Claude Code keeps it: the keys `_ignored` objects to left out."""
    kept = dict(data)
    if "env" in kept and not isinstance(kept["env"], dict):
        del kept["env"]
    for key in ("model", "apiKeyHelper"):
        if key in kept and not isinstance(kept[key], str):
            del kept[key]
    permissions = kept.get("permissions")
    if "permissions" in kept and not isinstance(permissions, dict):
        del kept["permissions"]
    elif isinstance(permissions, dict):
        kept["permissions"] = {
            k: v
            for k, v in permissions.items()
            if k not in ("allow", "deny", "ask") or isinstance(v, list)
        }
    return kept


def _check_env_block(path: Path, text: str, env: dict[str, Any], scope: str) -> list[Finding]:
    file = str(path)
    found: list[Finding] = []
    for key, value in env.items():
        line = files.line_of(text, f'"{key}"')
        if key == "apiKeyHelper":
            found.append(
                make(
                    "api-key-helper-in-env",
                    "claude",
                    'apiKeyHelper is inside "env", where Claude Code treats it as an '
                    "unused variable",
                    file=file,
                    line=line,
                )
            )
        elif key.startswith("OPENAI_"):
            found.append(
                make(
                    "codex-in-claude",
                    "claude",
                    f"{key} is an OpenAI/Codex variable; Claude Code ignores it",
                    key=f"env.{key}",
                    file=file,
                    line=line,
                )
            )
        elif "DISABLE" in key and str(value).strip().lower() in _FALSE_VALUES:
            found.append(
                make(
                    "disable-flag-false-value",
                    "claude",
                    f'{key} = "{value}" still disables: any non-empty value does',
                    key=key,
                    file=file,
                    line=line,
                )
            )
        elif key in SECRET_VARIABLES and value and str(value) not in placeholder_tokens():
            tracked = tracked_by_git(path)
            where = "a file git tracks" if tracked else path.name
            found.append(
                make(
                    "key-in-file",
                    "claude",
                    f"{key} holds a literal token in {where}",
                    severity="error" if tracked else None,
                    file=file,
                    line=line,
                    how=HOW,
                )
            )
    return found


def _check_merged(
    valid: list[tuple[Path, dict[str, Any]]], env: Mapping[str, str], texts: Mapping[str, str]
) -> list[Finding]:
    """Checks of what Claude Code will actually use after merging the layers."""
    layers = merge_claude_layers(valid, env)
    base_url, source = layers.env.get("ANTHROPIC_BASE_URL", (ANTHROPIC_DEFAULT_BASE_URL, ""))
    file = source if source and source != "environment" else None
    line = _line_in(texts, file, "ANTHROPIC_BASE_URL")
    url = base_url or ANTHROPIC_DEFAULT_BASE_URL
    found = check_base_url("claude", url, file=file, line=line, messages=True)
    found += check_gateway_note("claude", base_url or ANTHROPIC_DEFAULT_BASE_URL)
    model, model_source = claude_model(layers)
    settings_model, settings_model_file = layers.top.get("model", (None, ""))
    if model_source == "environment" and isinstance(settings_model, str):
        found.append(
            make(
                "model-env-override",
                "claude",
                f"ANTHROPIC_MODEL={model} from the shell overrides "
                f'"model": "{settings_model}" in {settings_model_file}',
                file=settings_model_file,
                line=_line_in(texts, settings_model_file, "model"),
            )
        )
    model_file = model_source if model_source not in ("", "environment") else None
    found += check_model(
        "claude",
        model,
        base_url,
        file=model_file,
        line=_line_in(texts, model_file, "ANTHROPIC_MODEL") or _line_in(texts, model_file, "model"),
    )
    located = functools.partial(_where, texts)
    found += check_claude_env(layers, located, base_url or ANTHROPIC_DEFAULT_BASE_URL)
    found += check_claude_window(layers, model, model_source, located)
    style, _key, _var, _values = claude_auth(layers, env)
    if style == "none":
        found.append(
            make(
                "claude-credential-missing",
                "claude",
                "no ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY or apiKeyHelper is set: "
                'Claude Code will say "Not logged in"',
            )
        )
    token_src = layers.env.get("ANTHROPIC_AUTH_TOKEN", ("", ""))
    key_src = layers.env.get("ANTHROPIC_API_KEY", ("", ""))
    if token_src[0] and key_src[0]:
        conflict_file = key_src[1] if key_src[1] != "environment" else token_src[1]
        found.append(
            make(
                "anthropic-auth-conflict",
                "claude",
                f"both ANTHROPIC_AUTH_TOKEN (from {token_src[1]}) and "
                f"ANTHROPIC_API_KEY (from {key_src[1]}) are set; both headers go out",
                file=conflict_file if conflict_file != "environment" else None,
            )
        )
    return found


def _where(texts: Mapping[str, str], name: str, source: str) -> tuple[str | None, int | None]:
    file = source if source and source != "environment" else None
    return file, _line_in(texts, file, name)


def _line_in(texts: Mapping[str, str], file: str | None, needle: str) -> int | None:
    """The line of `"needle"` in a settings file, from the text read with it."""
    text = texts.get(file) if file else None
    return files.line_of(text, f'"{needle}"') if text else None
