"""Pi's files: where they live, what Pi will call from them, and the merge of a gateway into them
(`pdnotes config pi`).

Pi (npm `@mariozechner/pi-coding-agent`, 0.73) keeps its global files in its agent folder,
$PI_CODING_AGENT_DIR or ~/.pi/agent:

- `models.json`: custom providers, `{"providers": {"<id>": {baseUrl, api, apiKey, headers,
  authHeader, compat, models: [{id, name, api, reasoning, contextWindow, maxTokens, …}]}}}`.
  Pi reads it with `JSON.parse` after dropping `//` line comments and trailing commas (a
  `/* */` comment is an error). A file that does not read, or breaks its schema (a provider
  with models but no baseUrl, apiKey or api), costs EVERY custom model, silently: Pi goes on
  with its built-in ones.
- `settings.json` (strict JSON) and the project's `.pi/settings.json` (it wins, objects merged):
  `defaultProvider` and `defaultModel` pick the model `pi` starts with. When they name a model
  models.json does not define, Pi silently takes the first model it has a key for.

`apiKey` is the name of an environment variable when one of that name is set, else the key
itself (`!command` runs a command): an unset variable makes Pi send its NAME as the key. Pi
sends the turn to `baseUrl` + `/chat/completions` (api `openai-completions`), `/responses`
(`openai-responses`) or `/v1/messages` (`anthropic-messages`), with `max_completion_tokens` =
the model's `maxTokens` (default 16384) and a window of `contextWindow` (default 128000).

Owned by pdnotes: `providers.<id>.baseUrl`, `.api`, `.apiKey` (a variable's NAME, or the
documented placeholder of a keyless server: never a key), `.compat`'s two flags when unset,
the model's entry in `.models` (`id`, `contextWindow`, `maxTokens`), and settings.json's
`defaultProvider` / `defaultModel`. Every other byte of both files stays as it was.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notes_cli import fileio
from notes_cli.clients import jsonc, presets, urls
from notes_cli.clients.endpoint import Endpoint, Protocol, join_url
from notes_cli.clients.files import match_newlines
from notes_cli.clients.model_limits import LimitsFetcher
from notes_cli.clients.plan import FileEdit, WritePlan, export_line, secret_values, too_large
from notes_cli.errors import ConfigParseError, UsageError
from notes_cli.secrets import looks_like_env_name, mask, mask_url

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
DEFAULT_PROVIDER = "gateway"
DEFAULT_WINDOW = 128000
"""Pi's `contextWindow` when a model states none."""
DEFAULT_MAX_TOKENS = 16384
"""Pi's `maxTokens` when a model states none (sent as max_completion_tokens every turn)."""
OUTPUT_TOKEN_MAX = 32000
"""pdnotes' default `maxTokens` is an eighth of the window, at most this."""
PROTOCOL_API: dict[Protocol, str] = {
    "chat": "openai-completions",
    "responses": "openai-responses",
    "anthropic": "anthropic-messages",
}
"""Pi's `api` for each wire protocol (the one written is the Client's `protocol`'s)."""
API_PROTOCOL: dict[str, Protocol] = {api: protocol for protocol, api in PROTOCOL_API.items()}
CHAT_COMPAT = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
"""What an OpenAI-compatible server (vLLM, SGLang, llama.cpp, the engine) needs from Pi: no
`developer` role and no `reasoning_effort` (pdnotes writes each only when it is unset)."""
CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --key-env GW_API_KEY "
    '(written as "apiKey": "GW_API_KEY": Pi reads the variable of that name)'
)
MODELS_DIALECT = jsonc.Dialect("Pi", trailing_commas=True)
"""models.json: `//` comments and trailing commas dropped, then JSON.parse."""
SETTINGS_DIALECT = jsonc.Dialect("Pi")
"""settings.json: JSON.parse (comments are refused before this dialect reads it)."""
_BLOCK_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*')


def agent_dir(override: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Pi's agent folder: --pi-dir, else $PI_CODING_AGENT_DIR (a leading ~ expanded), else
    ~/.pi/agent."""
    if override is not None:
        return override.expanduser()
    value = (os.environ if env is None else env).get(AGENT_DIR_ENV)
    return Path(value).expanduser() if value else Path.home() / ".pi" / "agent"


def models_path(override: Path | None = None) -> Path:
    return agent_dir(override) / "models.json"


def settings_path(override: Path | None = None) -> Path:
    return agent_dir(override) / "settings.json"


def project_settings_path(project_dir: Path | None) -> Path:
    """The project's settings (Pi reads `.pi/settings.json` in its working folder only)."""
    return (project_dir or Path.cwd()).expanduser() / ".pi" / "settings.json"


# --------------------------------------------------------------------------- reading


def parse_models(text: str, path: Path, *, keep_numbers: bool = False) -> dict[str, Any]:
    """models.json as Pi reads it (`ConfigParseError` with line and column when Pi cannot)."""
    for match in _BLOCK_COMMENT.finditer(text):
        if match.group() == "/*":
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
            raise ConfigParseError(
                f"{path}:{line}:{column}: a /* */ comment, which Pi does not read (only // "
                "comments); the file was not changed",
                path=str(path),
                line=line,
                column=column,
                fix=f"turn the comment at line {line} of {path} into // lines",
            )
    try:
        return jsonc.parse(text, path, MODELS_DIALECT, keep_numbers=keep_numbers)
    except ConfigParseError as exc:
        raise ConfigParseError(
            exc.message,
            path=exc.path,
            line=exc.line,
            column=exc.column,
            fix=f"fix line {exc.line}, column {exc.column} of {exc.path} (Pi allows // comments "
            "and trailing commas, not /* */ comments)",
        ) from exc


def parse_settings(text: str, path: Path, *, keep_numbers: bool = False) -> dict[str, Any]:
    """settings.json as Pi reads it: strict JSON."""
    blanked = jsonc.blank_comments(text, SETTINGS_DIALECT)
    if blanked != text:
        offset = next(i for i, (a, b) in enumerate(zip(text, blanked, strict=True)) if a != b)
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise ConfigParseError(
            f"{path}:{line}:{column}: a comment, which Pi's JSON.parse refuses; the file was not "
            "changed",
            path=str(path),
            line=line,
            column=column,
            fix=f"remove the comment at line {line} of {path}: settings.json is strict JSON",
        )
    try:
        return jsonc.parse(text, path, SETTINGS_DIALECT, keep_numbers=keep_numbers)
    except ConfigParseError as exc:
        raise ConfigParseError(
            exc.message.replace("invalid JSONC (", "invalid JSON ("),
            path=exc.path,
            line=exc.line,
            column=exc.column,
            fix=f"fix line {exc.line}, column {exc.column} of {exc.path}: settings.json is strict "
            "JSON (no comments, no trailing commas)",
        ) from exc


@dataclass(frozen=True)
class PiFile:
    """One of Pi's files that exists: `kind` models, settings or project."""

    kind: str
    path: Path
    text: str
    data: dict[str, Any]


def read_files(home: Path | None, project_dir: Path | None) -> list[PiFile]:
    """Pi's files that exist, parsed as Pi parses them (`ConfigParseError` names the one that
    does not; `InputError` one that cannot be read)."""
    found = []
    for kind, path in file_sources(home, project_dir):
        text = fileio.read_text(path)
        if text is not None:
            parse = parse_models if kind == "models" else parse_settings
            found.append(PiFile(kind, path, text, parse(text, path)))
    return found


def file_sources(home: Path | None, project_dir: Path | None) -> list[tuple[str, Path]]:
    project = project_settings_path(project_dir)
    sources = [("models", models_path(home)), ("settings", settings_path(home))]
    if project.absolute() != settings_path(home).absolute():
        sources.append(("project", project))
    return sources


def settings_of(files: list[PiFile]) -> tuple[dict[str, Any], dict[str, str]]:
    """The merged settings (the project's over the global ones) and where each top-level key
    came from."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for kind in ("settings", "project"):
        for file in files:
            if file.kind == kind:
                for key, value in file.data.items():
                    merged[key] = value
                    origin[key] = str(file.path)
    return merged, origin


def models_of(files: list[PiFile]) -> PiFile | None:
    return next((f for f in files if f.kind == "models"), None)


def providers(data: Mapping[str, Any]) -> dict[str, Any]:
    value = data.get("providers")
    return value if isinstance(value, dict) else {}


def model_entry(provider: Mapping[str, Any], model_id: str) -> dict[str, Any] | None:
    models = provider.get("models")
    for item in models if isinstance(models, list) else ():
        if isinstance(item, dict) and item.get("id") == model_id:
            return item
    return None


def number(value: object) -> int | None:
    """A positive whole number Pi takes (`contextWindow`, `maxTokens`), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


@dataclass(frozen=True)
class Resolved:
    """What Pi will call from its files, or why pdnotes cannot say."""

    endpoint: Endpoint | None
    values: tuple[tuple[str, str, str], ...]  # (name, shown value, source)
    problem: str | None = None
    window: int | None = None
    window_source: str = ""
    max_tokens: int | None = None


def resolve(files: list[PiFile], env: Mapping[str, str]) -> Resolved:
    """Pi's selected model (settings' defaultProvider / defaultModel) and its provider entry."""
    settings, origin = settings_of(files)
    provider_id, model_id = settings.get("defaultProvider"), settings.get("defaultModel")
    values: list[tuple[str, str, str]] = []
    if not isinstance(provider_id, str) or not isinstance(model_id, str):
        return Resolved(
            None, (), problem="settings.json names no defaultProvider and defaultModel (Pi picks "
            "the first model it has a key for)",
        )  # fmt: skip
    values.append(("defaultProvider", provider_id, origin["defaultProvider"]))
    values.append(("defaultModel", model_id, origin["defaultModel"]))
    models = models_of(files)
    entry = providers(models.data).get(provider_id) if models else None
    if models is None or not isinstance(entry, dict):
        return Resolved(
            None, tuple(values), problem=f"models.json defines no provider {provider_id!r}"
        )
    model = model_entry(entry, model_id)
    if model is None:
        return Resolved(
            None,
            tuple(values),
            problem=f"provider {provider_id!r} in models.json lists no model {model_id!r}",
        )
    where = f"{models.path} providers.{provider_id}"
    base = model.get("baseUrl") or entry.get("baseUrl")
    api = model.get("api") or entry.get("api")
    if not isinstance(base, str) or not base:
        return Resolved(None, tuple(values), problem=f"providers.{provider_id} has no baseUrl")
    values.append(("baseUrl", mask_url(base), where))
    values.append(("api", str(api), where))
    protocol = API_PROTOCOL.get(str(api))
    window = number(model.get("contextWindow"))
    max_tokens = number(model.get("maxTokens"))
    window_source = f"contextWindow of {model_id} in {where}" if window else "Pi's default"
    values.append(("contextWindow", str(window or DEFAULT_WINDOW), where if window else "default"))
    values.append(("maxTokens", str(max_tokens or DEFAULT_MAX_TOKENS), where))
    if protocol is None:
        return Resolved(
            None, tuple(values), problem=f"api {api!r}: pdnotes cannot call it as Pi does"
        )
    key, key_env = _key(entry.get("apiKey"), env, where, values)
    anthropic = protocol == "anthropic" and entry.get("authHeader") is not True
    endpoint = Endpoint(
        client="pi",
        base_url=base,
        protocol=protocol,
        model=model_id,
        auth_style=("x-api-key" if anthropic else "bearer") if key else "none",
        key_env=key_env,
        key=key,
        source=where,
        headers={str(k): _value(str(v), env) for k, v in _obj(entry.get("headers")).items()},
    )
    return Resolved(
        endpoint,
        tuple(values),
        window=window or DEFAULT_WINDOW,
        window_source=window_source,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
    )


def _key(
    raw: object, env: Mapping[str, str], where: str, values: list[tuple[str, str, str]]
) -> tuple[str | None, str | None]:
    """(the key Pi sends, the variable it came from) for an `apiKey` value."""
    if not isinstance(raw, str) or not raw:
        return None, None
    if raw.startswith("!"):
        values.append(("key", "(from a command: not run by pdnotes)", f"{where} apiKey"))
        return None, None
    if env.get(raw):
        values.append(("key", mask(env[raw]), f"${raw} ({where} apiKey)"))
        return env[raw], raw
    if looks_like_env_name(raw):
        values.append(("key", f"${raw} is unset: Pi sends the name itself", f"{where} apiKey"))
        return None, raw
    values.append(("key", mask(raw), f"{where} apiKey"))
    return raw, None


def _value(raw: str, env: Mapping[str, str]) -> str:
    """A header value as Pi resolves it (a variable's value when one of that name is set)."""
    return env.get(raw) or raw


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- the write


@dataclass(frozen=True)
class PiOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    provider: str | None = None
    key_env: str | None = None
    context_window: int | None = None
    max_tokens: int | None = None
    fetch_limits: LimitsFetcher | None = None
    api: str = PROTOCOL_API["chat"]


def plan_pi(options: PiOptions, *, home: Path | None = None) -> WritePlan:
    """The edit of models.json (and, in the same step, settings.json) for `options`."""
    path, settings_file = models_path(home), settings_path(home)
    old_text = fileio.read_text(path)
    data = parse_models(old_text, path, keep_numbers=True) if old_text is not None else {}
    old_settings = fileio.read_text(settings_file)
    settings = (
        parse_settings(old_settings, settings_file, keep_numbers=True)
        if old_settings is not None
        else {}
    )
    _check_shapes(data, path)
    preset = presets.load_preset(options.preset) if options.preset else None
    openai = preset.openai if preset else None
    provider_id = _provider_id(options, openai, data, settings)
    current = _obj(providers(data).get(provider_id))
    raw_url = options.base_url or (openai.base_url if openai else None) or current.get("baseUrl")
    if not isinstance(raw_url, str) or not raw_url:
        raise UsageError(
            f"no base URL for provider {provider_id!r}",
            fix="pass --base-url https://…/v1 (the root /chat/completions hangs off) or a --preset",
        )
    cleaned = _clean_url(raw_url, preset)
    model = options.model or (preset.model if preset else None) or _current_model(settings, data)
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as your gateway's /models lists it",
        )
    api_key, placeholder = _api_key(options, preset, current, cleaned.base_url)
    notes = list(cleaned.notes)
    editor = jsonc.Editor(old_text or "", MODELS_DIALECT)
    base = ("providers", provider_id)
    editor.set((*base, "baseUrl"), cleaned.base_url)
    editor.set((*base, "api"), options.api)
    if current.get("apiKey") != api_key:
        editor.set((*base, "apiKey"), api_key)
        if isinstance(current.get("apiKey"), str) and not _is_reference(current["apiKey"]):
            notes.append(f'replaced the literal apiKey with "{api_key}": no key in the file')
    if placeholder:
        notes.append(
            f"{preset.name} needs no key: Pi, which insists on an apiKey, gets the non-secret "
            f"placeholder {api_key}"
            if preset
            else f"a server on this machine needs no key: Pi, which insists on an apiKey, gets "
            f"the non-secret placeholder {api_key} (a server started with a key: --key-env NAME)"
        )
    compat = _obj(current.get("compat"))
    if options.api == PROTOCOL_API["chat"]:
        for flag, value in CHAT_COMPAT.items():
            if flag not in compat:
                editor.set((*base, "compat", flag), value)
    entry: dict[str, Any] = {"id": model}
    limits, limit_notes = _limits(options, preset, model, cleaned.base_url, api_key)
    notes += limit_notes
    entry.update(limits)
    editor.set_array_item((*base, "models"), ("id", model), entry)
    new_text = editor.text
    if len(new_text) > fileio.MAX_CONFIG_BYTES:
        raise too_large(path, None)
    new_data = jsonc.check_edit(new_text, path, MODELS_DIALECT)
    settings_edit = _settings_edit(settings_file, old_settings, settings, provider_id, model)
    return WritePlan(
        client="pi",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=join_url(cleaned.base_url, "/chat/completions"),
        export_line=None if placeholder else _export_line(api_key),
        notes=tuple(notes),
        warnings=tuple(_overridden(provider_id, model)),
        redact=secret_values(data, new_data, settings, public=presets.placeholder_tokens()),
        also=(settings_edit,) if settings_edit.changed else (),
    )


def _settings_edit(
    path: Path, old_text: str | None, data: dict[str, Any], provider_id: str, model: str
) -> FileEdit:
    """settings.json with defaultProvider and defaultModel (its other keys kept)."""
    editor = jsonc.Editor(old_text or "", SETTINGS_DIALECT)
    for key, value in (("defaultProvider", provider_id), ("defaultModel", model)):
        if data.get(key) != value:
            editor.set((key,), value)
    new_text = match_newlines(editor.text, old_text)
    if new_text != old_text:
        parse_settings(new_text, path)  # what Pi will read back
    return FileEdit(path, old_text, new_text)


def _overridden(provider_id: str, model: str) -> list[str]:
    """The project's `.pi/settings.json` in this folder picks another model: it wins there."""
    from notes_cli.errors import InputError

    path = project_settings_path(None)
    try:
        text = fileio.read_text(path)
        data = parse_settings(text, path) if text is not None else {}
    except InputError:
        return []  # doctor reports a file Pi cannot read
    found = []
    for key, value in (("defaultProvider", provider_id), ("defaultModel", model)):
        if key in data and data[key] != value:
            found.append(f"{path} sets {key} too, and Pi started in this folder reads it last")
    return found


def _check_shapes(data: dict[str, Any], path: Path) -> None:
    """Refuse to edit through a value of the wrong JSON type (Pi rejects the file then, and an
    edit would have to drop the user's value)."""
    if "providers" in data and not isinstance(data["providers"], dict):
        raise UsageError(
            f'"providers" in {path} is not an object; the file was not changed',
            fix=f'make "providers" an object in {path}',
        )
    for name, entry in providers(data).items():
        if not isinstance(entry, dict):
            raise UsageError(
                f'"providers.{name}" in {path} is not an object; Pi refuses the whole file '
                "because of it, and pdnotes did not change it",
                fix=f"make it an object in {path} (or remove it), then run the command again",
            )
        if entry.get("models") is not None and not isinstance(entry["models"], list):
            raise UsageError(
                f'"providers.{name}.models" in {path} is not an array; the file was not changed',
                fix=f"make it an array of model objects in {path}",
            )
        if entry.get("compat") is not None and not isinstance(entry["compat"], dict):
            raise UsageError(
                f'"providers.{name}.compat" in {path} is not an object; the file was not changed',
                fix=f"make it an object in {path}",
            )


def _provider_id(
    options: PiOptions,
    openai: presets.OpenAIPreset | None,
    data: dict[str, Any],
    settings: dict[str, Any],
) -> str:
    provider = options.provider or (openai.provider_id if openai else None)
    current = settings.get("defaultProvider")
    if provider is None and isinstance(current, str) and current in providers(data):
        provider = current  # the provider Pi already starts with
    provider = provider or DEFAULT_PROVIDER
    if not provider.strip() or "/" in provider:
        raise UsageError(
            f"provider id {provider!r} cannot be empty or hold a '/' (Pi's --model takes "
            "provider/model)",
            fix="pass --provider with a plain id, e.g. --provider my-gateway",
        )
    return provider


def _current_model(settings: dict[str, Any], data: dict[str, Any]) -> str | None:
    model = settings.get("defaultModel")
    provider = settings.get("defaultProvider")
    if isinstance(model, str) and model and provider in providers(data):
        return model
    return None


def _clean_url(raw: str, preset: presets.Preset | None) -> urls.CleanUrl:
    known = preset or (presets.preset_for_host(urls.host_of(raw)) if urls.has_scheme(raw) else None)
    return urls.appended_root(
        raw,
        policy=known.v1_suffix if known else "any",
        client="Pi",
        after="its /chat/completions path",
        credential_fix=CREDENTIAL_FIX,
    )


def _is_reference(value: str) -> bool:
    """An apiKey that names a variable or a command, or is pdnotes' placeholder: no key."""
    return (
        looks_like_env_name(value) or value.startswith("!") or value in presets.placeholder_tokens()
    )


def _api_key(
    options: PiOptions,
    preset: presets.Preset | None,
    current: dict[str, Any],
    base_url: str,
) -> tuple[str, bool]:
    """(apiKey to write, whether it is a keyless server's placeholder). Pi refuses a custom
    provider without an apiKey, so a keyless server gets a documented placeholder."""
    if options.key_env:
        if not looks_like_env_name(options.key_env):
            raise UsageError(  # never echo the value: it is probably the key itself
                "--key-env takes the NAME of an environment variable, not the key itself",
                fix="export the key (export GW_API_KEY=…) and pass --key-env GW_API_KEY",
            )
        return options.key_env, False
    openai = preset.openai if preset else None
    if openai and openai.env_key:
        return openai.env_key, False
    if preset and preset.anthropic and preset.anthropic.placeholder_token:
        return preset.anthropic.placeholder_token, True  # keyless (the mock engine)
    existing = current.get("apiKey")
    if isinstance(existing, str) and _is_reference(existing):
        return existing, existing in presets.placeholder_tokens()
    if preset is None and urls.is_loopback(base_url):
        return presets.LOCAL_PLACEHOLDER, True
    raise UsageError(
        "no key variable for Pi's apiKey (Pi refuses a custom provider without one)",
        fix="export the key (export GW_API_KEY=…) and pass --key-env GW_API_KEY",
    )


def _limits(
    options: PiOptions,
    preset: presets.Preset | None,
    model: str,
    base_url: str,
    key: str,
) -> tuple[dict[str, int], list[str]]:
    """The model's `contextWindow` and `maxTokens`: the window from --context-window, the
    gateway's /models or the preset; maxTokens from --max-tokens, the gateway, else an eighth of
    the window (at most 32000). Nothing when no window is known (Pi's defaults stay)."""
    window, output, notes = options.context_window, options.max_tokens, []
    if options.fetch_limits is not None:
        limits = options.fetch_limits(base_url, key if looks_like_env_name(key) else None, model)
        window = limits.context_window
        output = output or limits.max_output_tokens
        if window is None:
            notes.append(f"the gateway's /models states no context window for {model}")
        else:
            notes.append(
                f"the gateway's /models says {model}: context window {window} ({limits.field})"
            )
    if window is None and preset and preset.openai and model == preset.model:
        window = preset.openai.context_window
    found: dict[str, int] = {}
    if window is not None:
        found["contextWindow"] = window
        output = output or min(max(window // 8, 1), OUTPUT_TOKEN_MAX)
    if output is not None:
        found["maxTokens"] = min(output, window) if window else output
    return found, notes


def _export_line(name: str) -> str | None:
    if not looks_like_env_name(name):
        return None
    return export_line(name)
