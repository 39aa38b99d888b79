"""Merge a gateway into a Claude Code settings file (user, project or local scope).

Owned: `env.ANTHROPIC_BASE_URL`, the model variables, the window (`WINDOW_VARIABLE`, when asked
or known from the preset), and the credential pdnotes was asked to set (a placeholder for the
mock engine, a top-level `apiKeyHelper`, or — only with an explicit flag — a literal token).
Every other key keeps its value and order, and the file keeps its indentation; an unchanged
file is not rewritten at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from notes_cli.clients import files, presets, urls
from notes_cli.clients.claude.home import claude_settings_path
from notes_cli.clients.endpoint import join_url
from notes_cli.clients.git import tracked_by_git
from notes_cli.clients.model_limits import LimitsFetcher
from notes_cli.clients.plan import WritePlan, export_line, secret_values, too_large
from notes_cli.errors import UsageError
from notes_cli.secrets import looks_like_env_name, mask

Scope = Literal["user", "project", "local"]
MODEL_VARIABLES = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
)
"""All aliases point at the gateway's model: Claude Code uses opus by default and haiku for
background work, ids a gateway usually does not serve."""

DEFAULT_BASE_URL = "https://api.anthropic.com"

CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --token-env "
    "GW_API_KEY (an apiKeyHelper reads it; Claude Code sends it as the API key)"
)

WINDOW_VARIABLE = "CLAUDE_CODE_MAX_CONTEXT_TOKENS"
"""The context window Claude Code assumes for a model whose id is not a Claude one (checked in
the bundles of 2.1.197 and 2.1.332: read only when the model's canonical id does not start with
`claude-`; the auto-compact window, CLAUDE_CODE_AUTO_COMPACT_WINDOW, is capped at it). Claude
Code reports it as `modelUsage.<model>.contextWindow` in `claude -p --output-format json`."""


@dataclass(frozen=True)
class ClaudeOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    token_env: str | None = None
    write_token_from_env: str | None = None
    scope: Scope = "user"
    context_window: int | None = None  # tokens; written as WINDOW_VARIABLE
    # Reads the window from the gateway's GET /v1/models (the CLI hands in
    # gateway.model_limits' fetch_limits: clients/ does no HTTP).
    fetch_limits: LimitsFetcher | None = None


def settings_path(
    scope: str, *, claude_home: Path | None = None, project_dir: Path | None = None
) -> Path:
    if scope not in ("user", "project", "local"):
        raise UsageError(f"unknown --scope {scope!r}", fix="use --scope user, project or local")
    return claude_settings_path(scope, claude_home_dir=claude_home, project_dir=project_dir)


def plan_claude(
    options: ClaudeOptions, *, claude_home: Path | None = None, project_dir: Path | None = None
) -> WritePlan:
    """Build the edit of the chosen settings file for `options` (nothing is written)."""
    path = settings_path(options.scope, claude_home=claude_home, project_dir=project_dir)
    old_text, data = files.load_json_for_edit(path)
    data = dict(data) if data is not None else {}
    preset = presets.load_preset(options.preset) if options.preset else None
    claude_preset = preset.anthropic if preset else None
    if preset and claude_preset is None:
        raise UsageError(
            f"preset {preset.key!r} has no Anthropic-compatible endpoint for Claude Code",
            fix="pass --base-url for Claude Code, or choose another preset",
        )
    env = _env_block(data, path)
    cleaned = _base_url(options, claude_preset, env)
    model = options.model or (preset.model if preset else None)
    updates: dict[str, str] = {"ANTHROPIC_BASE_URL": cleaned.base_url}
    if model:
        updates.update({name: model for name in MODEL_VARIABLES})
    window, window_notes = _window(options, model, cleaned.base_url)
    if window is None and preset and preset.openai and model == preset.model:
        window = preset.openai.context_window
    if window:
        # A model Claude Code does not know gets the window it is served with, not the one
        # Claude Code assumes (doctor's claude-context-window-unknown).
        updates[WINDOW_VARIABLE] = str(window)
        asked = options.context_window is not None or options.fetch_limits is not None
        if asked and model and model.lower().startswith("claude-"):
            window_notes += (
                f"Claude Code reads {WINDOW_VARIABLE} only for a model id not starting with "
                f"claude-: for {model} it keeps the window it knows",
            )
    top_level: dict[str, str] = {}
    credential_note = _credential(options, claude_preset, data, updates, top_level)
    local = _local_placeholder(options, claude_preset, data, env, cleaned.base_url)
    if local is not None and credential_note is not None:
        updates["ANTHROPIC_AUTH_TOKEN"] = local
        credential_note = None
    warnings: list[str] = []
    mode: int | None = None
    if options.write_token_from_env:
        mode = 0o600
        warnings.extend(_token_warnings(path, options.scope))
    new_env = {**env, **updates}
    notes = cleaned.notes + window_notes
    if (
        local is not None
        and credential_note is None
        and updates.get("ANTHROPIC_AUTH_TOKEN") == local
    ):
        notes += (
            f"a server on this machine needs no key: Claude Code, which refuses to start "
            f"without one, gets the non-secret placeholder {local} (a server started with a "
            "key: --token-env NAME)",
        )
    if "ANTHROPIC_AUTH_TOKEN" not in updates and _is_placeholder(env.get("ANTHROPIC_AUTH_TOKEN")):
        del new_env["ANTHROPIC_AUTH_TOKEN"]  # ours, and wrong for any gateway but the mock
        notes += ("removed the mock engine's placeholder token: this gateway needs a real key",)
    new_data = {**data, **top_level}
    notes += _drop_replaced_credential(options, new_data, new_env)
    new_data["env"] = new_env
    unchanged = new_data == data and old_text is not None
    try:
        new_text = old_text if unchanged and old_text else files.dump_json(new_data, old_text)
    except files.OutputTooLarge:
        raise too_large(path, None) from None
    return WritePlan(
        client="claude",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=join_url(cleaned.base_url, "/v1/messages"),
        export_line=credential_note,
        notes=notes,
        warnings=tuple(warnings),
        mode=mode,
        redact=_secrets_in(data, new_data),
    )


def _window(
    options: ClaudeOptions, model: str | None, base_url: str
) -> tuple[int | None, tuple[str, ...]]:
    """The model's context window: --context-window, or the gateway's /v1/models (which says
    why when it cannot: `gateway.model_limits.fetch_limits`)."""
    if options.fetch_limits is None:
        return options.context_window, ()
    if not model:
        raise UsageError(
            "--context-window gateway needs the model whose window to read",
            fix="pass --model with the id exactly as the gateway serves it",
        )
    limits = options.fetch_limits(base_url, options.token_env, model)
    if limits.context_window is None:  # a fetcher that does not refuse: say so, write none
        return None, (f"the gateway's /models states no context window for {model}",)
    said = f"context window {limits.context_window} ({limits.field})"
    return limits.context_window, (f"the gateway's /models says {model}: {said}",)


def _base_url(
    options: ClaudeOptions, claude_preset: presets.AnthropicPreset | None, env: dict[str, Any]
) -> urls.CleanUrl:
    """Flag over preset over the file's current value, cleaned for Claude Code (which appends
    /v1/messages itself and cannot carry query parameters)."""
    raw_url = options.base_url or (claude_preset.base_url if claude_preset else None)
    raw_url = raw_url or _str(env.get("ANTHROPIC_BASE_URL"))
    if not raw_url:
        raise UsageError("no base URL to write", fix="pass --base-url https://… or a --preset")
    cleaned = urls.clean_base_url(
        raw_url,
        suffixes=urls.MESSAGES_ENDPOINT_SUFFIXES,
        strip_v1=True,
        credential_fix=CREDENTIAL_FIX,
    )
    if cleaned.query_params:
        raise UsageError(
            f"Claude Code cannot send query parameters ({', '.join(cleaned.query_params)}) "
            "after its /v1/messages path",
            fix="use a base URL without a query string",
        )
    return cleaned


def _secrets_in(*documents: dict[str, Any]) -> tuple[str, ...]:
    """Credential values in the old and new settings (tokens of any shape in the token
    variables, plus anything shaped like a key), for masking in diffs."""
    return secret_values(*documents, public=presets.placeholder_tokens())


def _env_block(data: dict[str, Any], path: Path) -> dict[str, Any]:
    env = data.get("env", {})
    if not isinstance(env, dict):
        raise UsageError(
            f'"env" in {path} is a JSON {files.json_type_name(env)}, not an object; Claude '
            "Code drops the whole file because of it",
            fix=f'make "env" an object in {path}: "env": {{"ANTHROPIC_BASE_URL": "…"}}',
        )
    return dict(env)


def _credential(
    options: ClaudeOptions,
    claude_preset: presets.AnthropicPreset | None,
    data: dict[str, Any],
    updates: dict[str, str],
    top_level: dict[str, str],
) -> str | None:
    """Put the requested credential into `updates` (the env block) or `top_level`; return the
    line the user still needs (masked), if any."""
    if options.token_env and options.write_token_from_env:
        raise UsageError("--token-env and --write-token-from-env exclude each other")
    if options.write_token_from_env:
        name = _env_name(options.write_token_from_env, "--write-token-from-env")
        value = os.environ.get(name)
        if not value:
            raise UsageError(
                f"{name} is not set in this environment, so there is no token to write",
                fix=f"export {name}=… first (pdnotes never takes a key on the command line)",
            )
        updates["ANTHROPIC_AUTH_TOKEN"] = value
        return f"token {mask(value)} from ${name} written to the file (mode 0600)"
    if options.token_env:
        name = _env_name(options.token_env, "--token-env")
        top_level["apiKeyHelper"] = f"printenv {name}"
        return export_line(name)
    if claude_preset and claude_preset.placeholder_token:
        updates["ANTHROPIC_AUTH_TOKEN"] = claude_preset.placeholder_token
        return None
    if data.get("apiKeyHelper"):
        return None
    return export_line("ANTHROPIC_AUTH_TOKEN")


def _local_placeholder(
    options: ClaudeOptions,
    claude_preset: presets.AnthropicPreset | None,
    data: dict[str, Any],
    env: dict[str, Any],
    base_url: str,
) -> str | None:
    """The placeholder token for a keyless server on this machine (llama-server), when no
    credential is named anywhere: not in a flag, the preset, the file or the shell (the
    settings' env block would override a token the shell exports)."""
    if options.token_env or options.write_token_from_env or claude_preset is not None:
        return None
    if not urls.is_loopback(base_url) or data.get("apiKeyHelper"):
        return None
    names = ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY")
    if any(os.environ.get(n) for n in names):
        return None
    if any(env.get(n) and not _is_placeholder(env.get(n)) for n in names):
        return None
    return presets.LOCAL_PLACEHOLDER


def _drop_replaced_credential(
    options: ClaudeOptions, new_data: dict[str, Any], new_env: dict[str, Any]
) -> tuple[str, ...]:
    """A switch of credential kind removes the old one, so the file never holds a helper and a
    literal token side by side (the helper would silently win)."""
    if options.write_token_from_env and "apiKeyHelper" in new_data:
        del new_data["apiKeyHelper"]
        return ("removed apiKeyHelper: the written token replaces it",)
    if options.token_env:
        dropped = [
            name
            for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY")
            if name in new_env and not _is_placeholder(new_env[name])
        ]
        for name in dropped:
            del new_env[name]
        if dropped:
            return (f"removed {', '.join(dropped)}: the apiKeyHelper replaces it",)
    return ()


def _is_placeholder(value: object) -> bool:
    return isinstance(value, str) and value in presets.placeholder_tokens()


def _env_name(value: str, flag: str) -> str:
    if not looks_like_env_name(value):
        raise UsageError(
            f"{flag} takes the NAME of an environment variable, not the key itself",
            fix=f"export the key first and pass its name: {flag} TAOTOKEN_API_KEY",
        )
    return value


def _token_warnings(path: Path, scope: str) -> list[str]:
    warnings = [f"{path} will hold a literal token; pdnotes makes it readable by you only (0600)"]
    if tracked_by_git(path):
        warnings.append(
            f"git tracks {path}: committing it would publish the token; prefer --token-env"
        )
    elif scope == "project":
        warnings.append(
            "project settings are usually committed; prefer --scope local or --token-env"
        )
    return warnings


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
