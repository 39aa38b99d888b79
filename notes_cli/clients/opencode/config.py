"""OpenCode's configuration: where it lives, how its layers merge, what it will call, and the
merge of a gateway into one of its files (`pdnotes config opencode`).

OpenCode (npm `opencode-ai`) reads JSONC and deep-merges, lowest precedence first: the global
folder ($XDG_CONFIG_HOME/opencode: config.json, opencode.json, opencode.jsonc), the file
$OPENCODE_CONFIG names, the project's opencode.json / opencode.jsonc from the git root down to
the working folder, the .opencode/ folders on that path, $OPENCODE_CONFIG_DIR, and last the
JSON in $OPENCODE_CONFIG_CONTENT. `{env:NAME}` in any string is replaced by the variable's
value before parsing, and by an EMPTY string when it is unset. A gateway is a `provider` entry
using the `@ai-sdk/openai-compatible` adapter, which POSTs to `options.baseURL` +
`/chat/completions`; `model` picks it as "provider/model".

Owned by pdnotes: `provider.<id>.npm`, `.options.baseURL`, `.options.apiKey` (always as
`{env:NAME}`: no key is ever written), `.models.<model>` (name, limit) and the top-level
`model`. Every other byte of the file stays as it was (`clients.jsonc`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from notes_cli import fileio
from notes_cli.clients import jsonc, presets, urls
from notes_cli.clients.endpoint import Endpoint, Protocol, join_url
from notes_cli.clients.model_limits import LimitsFetcher
from notes_cli.clients.plan import WritePlan, export_line, secret_values
from notes_cli.errors import UsageError
from notes_cli.secrets import looks_like_env_name, mask, mask_url

ADAPTER = "@ai-sdk/openai-compatible"
"""The AI SDK adapter for an OpenAI-compatible chat-completions gateway."""
ADAPTER_PROTOCOL: dict[str, Protocol] = {
    ADAPTER: "chat",
    "@ai-sdk/openai": "responses",
    "@ai-sdk/anthropic": "anthropic",
}
SCHEMA_URL = "https://opencode.ai/config.json"
DEFAULT_PROVIDER = "gateway"
OUTPUT_TOKEN_MAX = 32000
"""OpenCode's own cap on a turn's max_tokens; pdnotes' default output limit stays under it."""
ENV_REF = re.compile(r"\{env:([^}]+)\}")
CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --key-env GW_API_KEY "
    '(OpenCode reads it through "apiKey": "{env:GW_API_KEY}")'
)
Scope = Literal["global", "project"]
DIALECT = jsonc.Dialect(
    "OpenCode",
    trailing_commas=True,
    closed_comments=True,
    unique_keys_on_read=True,
    cr_ends_line_comment=True,
)
"""OpenCode reads its files with `jsonc-parser` (`clients.jsonc`): trailing commas allowed,
comments must close, a repeated key refused, a lone CR ends a line comment."""


def global_dir(override: Path | None = None) -> Path:
    """OpenCode's global config folder: --opencode-dir, else $XDG_CONFIG_HOME/opencode, else
    ~/.config/opencode (OpenCode uses the XDG folders on every platform)."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("XDG_CONFIG_HOME")
    return (Path(env).expanduser() if env else Path.home() / ".config") / "opencode"


def data_dir() -> Path:
    """OpenCode's data folder (auth.json, sessions): $XDG_DATA_HOME/opencode or
    ~/.local/share/opencode."""
    env = os.environ.get("XDG_DATA_HOME")
    return (Path(env).expanduser() if env else Path.home() / ".local" / "share") / "opencode"


@dataclass(frozen=True)
class OpenCodeOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    provider: str | None = None
    key_env: str | None = None
    scope: Scope = "global"
    context_window: int | None = None
    output_limit: int | None = None
    fetch_limits: LimitsFetcher | None = None


# --------------------------------------------------------------------------- where and layers


def config_path(
    scope: str, *, config_dir: Path | None = None, project_dir: Path | None = None
) -> Path:
    """The file `config opencode` writes: the .jsonc when it exists (it wins over the .json in
    the same folder), else opencode.json."""
    if scope == "global":
        folder = global_dir(config_dir)
    elif scope == "project":
        folder = (project_dir or Path.cwd()).expanduser()
    else:
        raise UsageError(f"unknown --scope {scope!r}", fix="use --scope global or project")
    jsonc_file = folder / "opencode.jsonc"
    return jsonc_file if jsonc_file.exists() else folder / "opencode.json"


@dataclass(frozen=True)
class Layer:
    """One configuration source that exists: `where` names it (a path, or the variable)."""

    where: str
    path: Path | None
    text: str
    data: dict[str, Any]


def layer_sources(
    config_dir: Path | None, project_dir: Path | None, env: Mapping[str, str]
) -> list[tuple[str, Path | None]]:
    """(label, path) of every place OpenCode reads, lowest precedence first; the inline
    $OPENCODE_CONFIG_CONTENT has no path."""
    folder = global_dir(config_dir)
    found: list[tuple[str, Path | None]] = [
        ("global", folder / name) for name in ("config.json", "opencode.json", "opencode.jsonc")
    ]
    if env.get("OPENCODE_CONFIG"):
        found.append(("$OPENCODE_CONFIG", Path(env["OPENCODE_CONFIG"]).expanduser()))
    chain = _project_chain((project_dir or Path.cwd()).expanduser().absolute())
    if not env.get("OPENCODE_DISABLE_PROJECT_CONFIG"):
        for directory in chain:
            found += [("project", directory / n) for n in ("opencode.json", "opencode.jsonc")]
        for directory in chain:
            dot = directory / ".opencode"
            found += [("project", dot / n) for n in ("opencode.json", "opencode.jsonc")]
    if env.get("OPENCODE_CONFIG_DIR"):
        extra = Path(env["OPENCODE_CONFIG_DIR"]).expanduser()
        found += [("$OPENCODE_CONFIG_DIR", extra / n) for n in ("opencode.json", "opencode.jsonc")]
    if env.get("OPENCODE_CONFIG_CONTENT"):
        found.append(("$OPENCODE_CONFIG_CONTENT", None))
    return found


def _project_chain(start: Path) -> list[Path]:
    """The folders from the git root (or the filesystem root) down to `start`, root first."""
    chain = [start, *start.parents]
    for index, directory in enumerate(chain):
        if (directory / ".git").exists():
            chain = chain[: index + 1]
            break
    return list(reversed(chain))


def parse(text: str, path: Path) -> dict[str, Any]:
    """One OpenCode config layer's data, read as OpenCode reads it (`clients.jsonc`)."""
    return jsonc.parse(text, path, DIALECT)


def read_layers(
    config_dir: Path | None, project_dir: Path | None, env: Mapping[str, str]
) -> list[Layer]:
    """The sources that exist, parsed as OpenCode parses them (`ConfigParseError` names the
    file that does not), lowest precedence first."""
    layers: list[Layer] = []
    seen: set[Path] = set()
    for label, path in layer_sources(config_dir, project_dir, env):
        if path is None:
            text = env["OPENCODE_CONFIG_CONTENT"]
            layers.append(Layer(label, None, text, parse(text, Path(label))))
            continue
        if path.absolute() in seen:
            continue
        seen.add(path.absolute())
        text_or_none = fileio.read_text(path)
        if text_or_none is not None:
            layers.append(Layer(str(path), path, text_or_none, parse(text_or_none, path)))
    return layers


def merge(layers: list[Layer]) -> dict[str, Any]:
    """OpenCode's deep merge: objects merge key by key, anything else is replaced."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _deep_merge(merged, layer.data)
    return merged


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def source_of(layers: list[Layer], *keys: str) -> str:
    """The layer the value at `keys` comes from (the last that sets it)."""
    for layer in reversed(layers):
        value: Any = layer.data
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return layer.where
    return "default"


def split_model(model: str) -> tuple[str, str] | None:
    """("provider", "model id") of OpenCode's "provider/model" (the id may hold more /)."""
    provider, sep, model_id = model.partition("/")
    return (provider, model_id) if sep and provider and model_id else None


def substitute(value: str, env: Mapping[str, str]) -> str:
    """What OpenCode makes of `{env:NAME}`: the variable's value, or "" when it is unset."""
    return ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)


def auth_keys() -> dict[str, str]:
    """API keys `opencode auth login` stored in auth.json, by provider id (an unreadable or
    malformed file counts as none: OpenCode itself then has none either)."""
    import json

    from notes_cli.errors import InputError

    path = data_dir() / "auth.json"
    try:
        text = fileio.read_text(path)
        data = json.loads(text) if text else {}
    except (InputError, ValueError):
        return {}
    keys: dict[str, str] = {}
    if isinstance(data, dict):
        for provider, entry in data.items():
            key = entry.get("key") if isinstance(entry, dict) else None
            if isinstance(entry, dict) and entry.get("type") == "api" and isinstance(key, str):
                keys[str(provider)] = key
    return keys


# --------------------------------------------------------------------------- what it calls


@dataclass(frozen=True)
class Resolved:
    """OpenCode's endpoint from merged layers, or the reason there is none."""

    endpoint: Endpoint | None
    values: tuple[tuple[str, str, str], ...]  # (name, shown value, source)
    problem: str | None = None


def resolve(layers: list[Layer], env: Mapping[str, str], auth: Mapping[str, str]) -> Resolved:
    merged = merge(layers)
    values: list[tuple[str, str, str]] = []
    model = merged.get("model")
    if not isinstance(model, str) or not model:
        return Resolved(None, (), problem="no `model` is set (OpenCode picks one itself)")
    values.append(("model", model, source_of(layers, "model")))
    parts = split_model(model)
    if parts is None:
        return Resolved(None, tuple(values), problem=f"model {model!r} is not provider/model")
    provider_id, model_id = parts
    providers = merged.get("provider")
    entry = providers.get(provider_id) if isinstance(providers, dict) else None
    if not isinstance(entry, dict):
        return Resolved(
            None, tuple(values), problem=f"no provider {provider_id!r} in the `provider` block"
        )
    where = f"{source_of(layers, 'provider', provider_id)} provider.{provider_id}"
    npm = entry.get("npm") if isinstance(entry.get("npm"), str) else ADAPTER
    protocol = ADAPTER_PROTOCOL.get(str(npm), "chat")
    options = _obj(entry.get("options"))
    base = options.get("baseURL")
    if not isinstance(base, str) or not base:
        return Resolved(None, tuple(values), problem=f"provider.{provider_id} has no baseURL")
    base_url = substitute(base, env)
    values.append(("baseURL", mask_url(base_url), where))
    if protocol == "anthropic" and base_url.rstrip("/").endswith("/v1"):
        base_url = base_url.rstrip("/")[: -len("/v1")]  # the Anthropic SDK's root ends in /v1
    key, key_env = _key(provider_id, options, entry, env, auth, where, values)
    limit = _obj(_obj(_obj(entry.get("models")).get(model_id)).get("limit"))
    context, output = limit.get("context"), limit.get("output")
    if isinstance(context, int) and not isinstance(context, bool) and context > 0:
        # the window OpenCode compacts by; doctor's live probe checks it against /models
        values.append(("limit.context", str(context), where))
    if isinstance(output, int) and not isinstance(output, bool) and output > 0:
        # OpenCode asks each turn for this many tokens (at most OUTPUT_TOKEN_MAX); smoke too
        values.append(("limit.output", str(min(output, OUTPUT_TOKEN_MAX)), where))
    endpoint = Endpoint(
        client="opencode",
        base_url=base_url,
        protocol=protocol,
        model=model_id,
        auth_style="bearer" if key else "none",
        key_env=key_env,
        key=key,
        source=where,
        query_params=_str_map(options.get("queryParams")),
        headers={k: substitute(v, env) for k, v in _str_map(options.get("headers")).items()},
    )
    return Resolved(endpoint, tuple(values))


def _key(
    provider_id: str,
    options: Mapping[str, Any],
    entry: Mapping[str, Any],
    env: Mapping[str, str],
    auth: Mapping[str, str],
    where: str,
    values: list[tuple[str, str, str]],
) -> tuple[str | None, str | None]:
    raw = options.get("apiKey")
    if isinstance(raw, str) and raw:
        names = ENV_REF.findall(raw)
        key = substitute(raw, env) or None
        source = f"${names[0]} ({where} options.apiKey)" if names else f"{where} options.apiKey"
        values.append(("key", mask(key), source))
        return key, names[0] if names else None
    for name in entry.get("env") or []:
        if isinstance(name, str) and env.get(name):
            values.append(("key", mask(env[name]), f"${name}"))
            return env[name], name
    if provider_id in auth:
        values.append(("key", mask(auth[provider_id]), "auth.json (opencode auth login)"))
        return auth[provider_id], None
    return None, None


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- the write


def plan_opencode(
    options: OpenCodeOptions, *, config_dir: Path | None = None, project_dir: Path | None = None
) -> WritePlan:
    """Build the edit of the chosen OpenCode file for `options` (nothing is written)."""
    path = config_path(options.scope, config_dir=config_dir, project_dir=project_dir)
    old_text = fileio.read_text(path)
    data = parse(old_text, path) if old_text is not None else {}
    preset = presets.load_preset(options.preset) if options.preset else None
    openai = preset.openai if preset else None
    provider_id = _provider_id(options, preset, data)
    current = _current_provider(data, provider_id, path)
    current_options = _obj(current.get("options"))
    raw_url = options.base_url or (openai.base_url if openai else None)
    raw_url = raw_url or _str(current_options.get("baseURL"))
    if not raw_url:
        raise UsageError(
            f"no base URL for provider {provider_id!r}",
            fix="pass --base-url https://…/v1 (the root /chat/completions hangs off) or a --preset",
        )
    cleaned = urls.clean_base_url(
        raw_url,
        suffixes=urls.OPENAI_ENDPOINT_SUFFIXES,
        strip_v1=_v1_forbidden(raw_url, preset),
        credential_fix=CREDENTIAL_FIX,
    )
    model = options.model or (preset.model if preset else None) or _current_model(data, provider_id)
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as your gateway's /models lists it",
        )
    key_env = _key_env(options, openai, current_options)
    edits: list[tuple[tuple[str, ...], Any]] = [
        (("provider", provider_id, "npm"), ADAPTER),
        (("provider", provider_id, "options", "baseURL"), cleaned.base_url),
    ]
    notes = list(cleaned.notes)
    warnings: list[str] = []
    if "name" not in current:
        name = preset.name if preset else provider_id
        edits.insert(1, (("provider", provider_id, "name"), name))
    if key_env:
        edits.append((("provider", provider_id, "options", "apiKey"), f"{{env:{key_env}}}"))
        if _is_literal_key(current_options.get("apiKey")):
            notes.append(f"replaced the literal apiKey with {{env:{key_env}}}: no key in the file")
    elif _is_literal_key(current_options.get("apiKey")):
        warnings.append(
            f"{path} holds a literal apiKey for provider {provider_id}; prefer --key-env NAME "
            '(written as "apiKey": "{env:NAME}")'
        )
    if cleaned.query_params:
        edits.append((("provider", provider_id, "options", "queryParams"), cleaned.query_params))
    models = _obj(current.get("models"))
    if not isinstance(models.get(model), dict):
        edits.append((("provider", provider_id, "models", model), {"name": model}))
    limit, limit_notes = _limit(options, preset, model, cleaned.base_url, key_env)
    notes += limit_notes
    if limit is not None:
        edits.append((("provider", provider_id, "models", model, "limit"), limit))
    edits.append((("model",), f"{provider_id}/{model}"))
    new_text = _apply(old_text, data, edits, path)
    warnings += _overridden(path, provider_id, config_dir, project_dir)
    return WritePlan(
        client="opencode",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=join_url(cleaned.base_url, "/chat/completions", cleaned.query_params),
        export_line=export_line(key_env) if key_env else None,
        notes=tuple(notes),
        warnings=tuple(warnings),
        redact=tuple(  # an `{env:NAME}` reference names the key; it is not one
            s for s in secret_values(data, parse(new_text, path)) if not ENV_REF.fullmatch(s)
        ),
    )


def _overridden(
    path: Path, provider_id: str, config_dir: Path | None, project_dir: Path | None
) -> list[str]:
    """Say so when a layer OpenCode reads after `path` sets `model` or this provider's
    baseURL: the value written here would not be the one OpenCode uses."""
    from notes_cli.errors import InputError

    sources = layer_sources(config_dir, project_dir, os.environ)
    target = path.absolute()
    index = next((i for i, (_, p) in enumerate(sources) if p and p.absolute() == target), None)
    if index is None:
        return []
    found = []
    for label, later in sources[index + 1 :]:
        try:
            text = (
                os.environ["OPENCODE_CONFIG_CONTENT"] if later is None else fileio.read_text(later)
            )
            data = parse(text, later or Path(label)) if text is not None else {}
        except (InputError, KeyError):
            continue  # doctor reports a layer that cannot be read
        where = str(later) if later is not None else label
        if "model" in data:
            found.append(f"{where} sets model too, and OpenCode reads it after {path}: it wins")
        if _get(data, ("provider", provider_id, "options", "baseURL")) is not None:
            found.append(f"{where} sets provider.{provider_id}.options.baseURL too, and wins")
    return found


def _apply(
    old_text: str | None, data: dict[str, Any], edits: list[tuple[tuple[str, ...], Any]], path: Path
) -> str:
    """The edits made one by one as text; an edit that changes nothing is skipped, so a file
    that already has the setup is returned byte for byte."""
    text = old_text if old_text is not None else f'{{\n  "$schema": "{SCHEMA_URL}"\n}}\n'
    current = data if old_text is not None else parse(text, path)
    for keys, value in edits:
        if _get(current, keys) == value:
            continue
        text = jsonc.set_values(text, {keys: value}, DIALECT, path)
        current = parse(text, path)
    return text


def _get(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _provider_id(
    options: OpenCodeOptions, preset: presets.Preset | None, data: dict[str, Any]
) -> str:
    provider = options.provider or (preset.openai.provider_id if preset and preset.openai else None)
    if provider is None and isinstance(data.get("model"), str):
        parts = split_model(data["model"])
        providers = data.get("provider")
        if parts and isinstance(providers, dict) and isinstance(providers.get(parts[0]), dict):
            provider = parts[0]  # the provider this file already selects
    provider = provider or DEFAULT_PROVIDER
    if "/" in provider or not provider.strip():
        raise UsageError(
            f"provider id {provider!r} cannot hold a '/' (OpenCode splits provider/model at it)",
            fix="pass --provider with a plain id, e.g. --provider my-gateway",
        )
    return provider


def _current_provider(data: dict[str, Any], provider_id: str, path: Path) -> dict[str, Any]:
    providers = data.get("provider", {})
    entry = providers.get(provider_id, {}) if isinstance(providers, dict) else {}
    if not isinstance(providers, dict) or not isinstance(entry, dict):
        raise UsageError(
            f'"provider" or "provider.{provider_id}" in {path} is not an object; OpenCode '
            "refuses the file because of it",
            fix=f"make it an object in {path}, or pass --provider with another id",
        )
    return entry


def _current_model(data: dict[str, Any], provider_id: str) -> str | None:
    parts = split_model(data["model"]) if isinstance(data.get("model"), str) else None
    return parts[1] if parts and parts[0] == provider_id else None


def _key_env(
    options: OpenCodeOptions, openai: presets.OpenAIPreset | None, current: dict[str, Any]
) -> str | None:
    key_env = options.key_env or (openai.env_key if openai else None)
    if key_env is None and isinstance(current.get("apiKey"), str):
        names = ENV_REF.findall(current["apiKey"])
        key_env = names[0] if names else None
    if key_env and not looks_like_env_name(key_env):
        raise UsageError(  # never echo the value: it is probably the key itself
            "--key-env takes the NAME of an environment variable, not the key itself",
            fix="export the key (export GW_API_KEY=…) and pass --key-env GW_API_KEY",
        )
    return key_env


def _is_literal_key(value: object) -> bool:
    return isinstance(value, str) and bool(value) and not ENV_REF.search(value)


def _limit(
    options: OpenCodeOptions,
    preset: presets.Preset | None,
    model: str,
    base_url: str,
    key_env: str | None,
) -> tuple[dict[str, int] | None, list[str]]:
    """`limit` for the model: OpenCode needs both `context` and `output` when it has one (it
    refuses the file otherwise). The window comes from --context-window, the gateway's /models
    or the preset; the output from --output-limit, the gateway, else an eighth of the window
    (capped at OpenCode's 32000)."""
    window, output, notes = options.context_window, options.output_limit, []
    if options.fetch_limits is not None:
        limits = options.fetch_limits(base_url, key_env, model)
        window = limits.context_window
        output = output or limits.max_output_tokens
        said = f"context window {window} ({limits.field})"
        if limits.max_output_tokens:
            said += f", output limit {limits.max_output_tokens}"
        notes.append(f"the gateway's /models says {model}: {said}")
    if window is None and preset and preset.openai and model == preset.model:
        window = preset.openai.context_window
    if window is None:
        if output is not None:
            raise UsageError(
                "--output-limit needs a context window too (OpenCode wants both)",
                fix="add --context-window TOKENS, or --context-window gateway",
            )
        return None, notes
    output = output or min(max(window // 8, 1), OUTPUT_TOKEN_MAX)
    return {"context": window, "output": min(output, window)}, notes


def _v1_forbidden(url: str, preset: presets.Preset | None) -> bool:
    if not urls.has_scheme(url):
        return False
    known = preset or presets.preset_for_host(urls.host_of(url))
    if known is None:
        return False
    hosts = set(known.hosts) | {h.split(":", 1)[0] for h in known.hosts if ":" not in h}
    return known.v1_suffix == "forbidden" and urls.host_of(url) in hosts


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
