"""Qwen Code's settings.json (JSON with comments): merge a gateway in, and read every layer back
the way Qwen Code resolves its OpenAI-compatible endpoint.

What pdnotes writes (the key stays in the environment: `envKey` names the variable Qwen Code
reads the key from, and the file never holds one):

    "security": {"auth": {"selectedType": "openai"}},
    "model": {"name": "<model>"},
    "modelProviders": {"openai": [{"id": "<model>", "baseUrl": "<url>", "envKey": "<NAME>"}]}

The `modelProviders` entry whose `id` is the selected model wins over OPENAI_BASE_URL (shell or
`.env`) and over `security.auth.baseUrl`, so a stray variable cannot redirect Qwen Code. Every
other key, comment and number spelling is kept (`clients.jsonc`); an existing entry for the model
keeps its other members (`generationConfig`, …). A new file gets `"$version": 4`, the settings
format Qwen Code would otherwise rewrite the file to (dropping comments).

How Qwen Code resolves (its `resolveCliGenerationConfig` / `resolveModelConfig`, 0.15–0.24):
layers system-defaults < user ($QWEN_HOME/settings.json) < project (.qwen/settings.json) <
system; then the environment: the shell, then `.env` files (only variables the shell leaves
unset or empty), then the merged settings' `env` block (same rule). Model: `model.name` over
OPENAI_MODEL / QWEN_MODEL. Base URL: the provider entry's `baseUrl`, OPENAI_BASE_URL,
`security.auth.baseUrl`, https://api.openai.com/v1. Key: $<envKey>, OPENAI_API_KEY,
`security.auth.apiKey`. The request goes to `<base URL>/chat/completions` (the OpenAI SDK).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from notes_cli import fileio
from notes_cli.clients import dotenv, jsonc, presets, urls
from notes_cli.clients.endpoint import Endpoint, join_url
from notes_cli.clients.model_limits import LimitsFetcher
from notes_cli.clients.plan import WritePlan, export_line, secret_values, too_large
from notes_cli.errors import ConfigParseError, InputError, UsageError
from notes_cli.secrets import looks_like_env_name, mask, mask_url

Scope = Literal["user", "project"]
DIALECT = jsonc.Dialect("Qwen Code")
"""Qwen Code reads its settings with strip-json-comments, then JSON.parse (`clients.jsonc`)."""


def user_dir(override: Path | None = None) -> Path:
    """Qwen Code's user folder: --qwen-home, else $QWEN_HOME, else ~/.qwen (as Qwen resolves it)."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("QWEN_HOME")
    return Path(env).expanduser() if env else Path.home() / ".qwen"


def settings_file(
    scope: str = "user", *, qwen_home_dir: Path | None = None, project_dir: Path | None = None
) -> Path:
    """Qwen Code settings for a scope: user ($QWEN_HOME/settings.json) or project
    (<project>/.qwen/settings.json)."""
    if scope == "user":
        return user_dir(qwen_home_dir) / "settings.json"
    return (project_dir or Path.cwd()).expanduser() / ".qwen" / "settings.json"


def system_paths() -> tuple[Path, Path]:
    """(system defaults, system settings): the lowest and the highest of Qwen Code's layers,
    each with the variable Qwen Code itself reads to move it."""
    import sys

    if sys.platform == "darwin":
        folder = Path("/Library/Application Support/QwenCode")
    elif sys.platform.startswith("win"):
        folder = Path("C:/ProgramData/qwen-code")
    else:
        folder = Path("/etc/qwen-code")
    defaults = os.environ.get("QWEN_CODE_SYSTEM_DEFAULTS_PATH")
    system = os.environ.get("QWEN_CODE_SYSTEM_SETTINGS_PATH")
    return (
        Path(defaults) if defaults else folder / "system-defaults.json",
        Path(system) if system else folder / "settings.json",
    )


SETTINGS_VERSION = 4
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
MODEL_ENV = ("OPENAI_MODEL", "QWEN_MODEL")
QWEN_CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --key-env "
    "GW_API_KEY (Qwen Code reads it through the provider's envKey and sends it as Bearer)"
)


@dataclass(frozen=True)
class QwenOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    key_env: str | None = None
    scope: Scope = "user"
    context_window: int | None = None  # tokens; the entry's generationConfig.contextWindowSize
    # Reads the window from the gateway's GET /models (the CLI hands in gateway.model_limits'
    # fetch_limits: clients/ does no HTTP).
    fetch_limits: LimitsFetcher | None = None


def settings_path(
    scope: str, *, qwen_home: Path | None = None, project_dir: Path | None = None
) -> Path:
    if scope not in ("user", "project"):
        raise UsageError(f"unknown --scope {scope!r}", fix="use --scope user or project")
    return settings_file(scope, qwen_home_dir=qwen_home, project_dir=project_dir)


def load_for_edit(path: Path) -> tuple[str | None, dict[str, Any]]:
    text = fileio.read_text(path)
    if text is None:
        return None, {}
    return text, jsonc.parse(text, path, DIALECT, keep_numbers=True)


def plan_qwen(
    options: QwenOptions, *, qwen_home: Path | None = None, project_dir: Path | None = None
) -> WritePlan:
    """Build the edit of the chosen settings file for `options` (nothing is written)."""
    path = settings_path(options.scope, qwen_home=qwen_home, project_dir=project_dir)
    old_text, data = load_for_edit(path)
    _check_shapes(data, path)
    preset = presets.load_preset(options.preset) if options.preset else None
    model = options.model or (preset.model if preset else None) or _current_model(data)
    if not model:
        raise UsageError(
            "no model to write: Qwen Code picks its provider entry by the model id",
            fix="pass --model ID (exactly as the gateway names it) or a --preset",
        )
    entry = _provider_entry(data, model)
    cleaned = _base_url(options, preset, entry, data)
    key_env, placeholder = _key(options, preset, entry, cleaned.base_url)
    editor = jsonc.Editor(old_text or "", DIALECT)
    if old_text is None or not old_text.strip():
        editor.set(("$version",), SETTINGS_VERSION)
    editor.set(("security", "auth", "selectedType"), "openai")
    editor.set(("model", "name"), model)
    model_block = data.get("model")
    if isinstance(model_block, dict) and "baseUrl" in model_block:
        editor.set(("model", "baseUrl"), cleaned.base_url)  # 0.24 picks the entry by it too
    new_entry: dict[str, Any] = {"id": model, "baseUrl": cleaned.base_url}
    if key_env:
        new_entry["envKey"] = key_env
    window, window_notes = _window(options, model, cleaned.base_url, key_env)
    if window is not None:
        new_entry["generationConfig"] = _generation_config(entry, window, path)
    editor.set_array_item(("modelProviders", "openai"), ("id", model), new_entry)
    notes = list(cleaned.notes) + window_notes
    if placeholder:
        stale = _str(entry.get("envKey")) if entry else None
        where = ("modelProviders", "openai")
        if stale and editor.remove_from_array_item(where, ("id", model), "envKey"):
            # Qwen Code stops when the variable envKey names is unset, and would send it here
            notes.append(
                f"removed envKey {stale} from the {model} entry: this endpoint takes no key"
            )
        editor.set(("security", "auth", "apiKey"), placeholder)
        notes.append(
            f"{preset.name} needs no key: Qwen Code gets a non-secret placeholder"
            if preset
            else f"a server on this machine needs no key: Qwen Code, which refuses to start "
            f"without one, gets the non-secret placeholder {placeholder} (a server started "
            "with a key: --key-env NAME)"
        )
    new_text = editor.text
    if len(new_text) > fileio.MAX_CONFIG_BYTES:
        raise too_large(path, None)  # before parsing it back
    new_data = jsonc.check_edit(new_text, path, DIALECT)
    return WritePlan(
        client="qwen",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=join_url(cleaned.base_url, "/chat/completions"),
        export_line=export_line(key_env) if key_env else None,
        notes=tuple(notes),
        redact=secret_values(data, new_data, public=presets.placeholder_tokens()),
    )


def _window(
    options: QwenOptions, model: str, base_url: str, key_env: str | None
) -> tuple[int | None, list[str]]:
    """The model's context window: --context-window, or the gateway's /models."""
    if options.fetch_limits is None:
        return options.context_window, []
    limits = options.fetch_limits(base_url, key_env, model)
    if limits.context_window is None:
        return None, [f"the gateway's /models states no context window for {model}: none written"]
    said = f"context window {limits.context_window} ({limits.field})"
    return limits.context_window, [f"the gateway's /models says {model}: {said}"]


def _generation_config(entry: dict[str, Any] | None, window: int, path: Path) -> dict[str, Any]:
    """The entry's generationConfig with `contextWindowSize` (Qwen Code's override of the
    model's window); its other settings kept."""
    current = entry.get("generationConfig") if entry else None
    if current is not None and not isinstance(current, dict):
        raise UsageError(
            f"the generationConfig of the {entry and entry.get('id')} entry in {path} is "
            f"{_type(current)}, not an object: Qwen Code would reject the file",
            fix="make it an object (or remove it), then run the command again",
        )
    return {**(current or {}), "contextWindowSize": window}


def _check_shapes(data: dict[str, Any], path: Path) -> None:
    """Refuse to edit through a value of the wrong JSON type (Qwen Code would reject the file,
    and an edit would have to drop the user's value)."""
    wanted = (
        (("security",), dict),
        (("security", "auth"), dict),
        (("model",), dict),
        (("modelProviders",), dict),
        (("modelProviders", "openai"), list),
    )
    for where, kind in wanted:
        value: Any = data
        for key in where:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and not isinstance(value, kind):
            name = "object" if kind is dict else "array"
            dotted = ".".join(where)
            raise UsageError(
                f'"{dotted}" in {path} is a JSON {_type(value)}, not an {name}; the file was '
                "not changed",
                fix=f'make "{dotted}" an {name} in {path} (see docs/connect.md, Qwen Code)',
            )


def _type(value: object) -> str:
    from notes_cli.clients.files import json_type_name

    return json_type_name(value)


def _current_model(data: dict[str, Any]) -> str | None:
    model = data.get("model")
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name else None


def _provider_entry(data: dict[str, Any], model: str) -> dict[str, Any] | None:
    providers = data.get("modelProviders")
    items = providers.get("openai") if isinstance(providers, dict) else None
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("id") == model:
            return item
    return None


def _base_url(
    options: QwenOptions,
    preset: presets.Preset | None,
    entry: dict[str, Any] | None,
    data: dict[str, Any],
) -> urls.CleanUrl:
    """Flag over preset over the file's current value, cleaned for the OpenAI SDK (which
    appends /chat/completions and cannot carry query parameters)."""
    raw = options.base_url or (preset.openai.base_url if preset and preset.openai else None)
    if not raw and entry is not None:
        raw = _str(entry.get("baseUrl"))
    if not raw:
        security = data.get("security")
        auth = security.get("auth") if isinstance(security, dict) else None
        raw = _str(auth.get("baseUrl")) if isinstance(auth, dict) else None
    if not raw:
        raise UsageError("no base URL to write", fix="pass --base-url https://… or a --preset")
    host_preset = presets.preset_for_host(urls.host_of(raw)) if urls.has_scheme(raw) else None
    known = preset or host_preset
    return urls.appended_root(
        raw,
        policy=known.v1_suffix if known else "any",
        client="Qwen Code",
        after="its /chat/completions path",
        credential_fix=QWEN_CREDENTIAL_FIX,
    )


def _key(
    options: QwenOptions,
    preset: presets.Preset | None,
    entry: dict[str, Any] | None,
    base_url: str,
) -> tuple[str | None, str | None]:
    """(envKey to write, placeholder key for a keyless preset or local server)."""
    if options.key_env:
        if not looks_like_env_name(options.key_env):
            raise UsageError(
                "--key-env takes the NAME of an environment variable, not the key itself",
                fix="export the key first and pass its name: --key-env TAOTOKEN_API_KEY",
            )
        return options.key_env, None
    openai = preset.openai if preset else None
    if openai and openai.env_key:
        return openai.env_key, None
    if preset and preset.anthropic and preset.anthropic.placeholder_token:
        return None, preset.anthropic.placeholder_token  # keyless (the mock engine)
    current = _str(entry.get("envKey")) if entry else None
    if current is None and preset is None and urls.is_loopback(base_url):
        # a server on this machine (llama-server) takes no key unless started with one; Qwen
        # Code refuses to start without one, so it gets a documented non-secret placeholder
        return None, presets.LOCAL_PLACEHOLDER
    return current or DEFAULT_KEY_ENV, None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


# ------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class QwenFile:
    """One settings layer that exists: its text and object, or why Qwen Code cannot use it."""

    kind: str  # system-defaults, user, project, system
    path: Path
    text: str | None = None
    data: dict[str, Any] | None = None
    problem: ConfigParseError | InputError | None = None


def settings_files(
    qwen_home: Path | None = None, project_dir: Path | None = None
) -> list[tuple[str, Path]]:
    """(kind, path) of Qwen Code's settings layers, lowest precedence first."""
    defaults, system = system_paths()
    user = settings_file("user", qwen_home_dir=qwen_home)
    project = settings_file("project", project_dir=project_dir)
    layers = [("system-defaults", defaults), ("user", user)]
    if project.resolve() != user.resolve():  # run from $HOME: one file, read once
        layers.append(("project", project))
    return [*layers, ("system", system)]


def read_files(qwen_home: Path | None = None, project_dir: Path | None = None) -> list[QwenFile]:
    """The layers that exist, each read once; a file that does not parse carries its error."""
    found: list[QwenFile] = []
    for kind, path in settings_files(qwen_home, project_dir):
        try:
            text = fileio.read_text(path)
            if text is None:
                continue
            found.append(QwenFile(kind, path, text, jsonc.parse(text, path, DIALECT)))
        except (ConfigParseError, InputError) as exc:
            found.append(QwenFile(kind, path, problem=exc))
    return found


def merge(layers: list[QwenFile]) -> tuple[dict[str, Any], dict[str, str]]:
    """(merged settings, dotted key → the file it came from): objects merge key by key, any
    other value (arrays too) is replaced by the higher layer."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for layer in layers:
        if layer.data is not None:
            _merge_into(merged, layer.data, "", str(layer.path), origin)
    return merged, origin


def _merge_into(
    target: dict[str, Any], source: dict[str, Any], prefix: str, where: str, origin: dict[str, str]
) -> None:
    for key, value in source.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value, dotted + ".", where, origin)
        else:
            target[key] = _copy(value)
            origin[dotted] = where
            if isinstance(value, dict):
                for inner in _dotted_keys(value, dotted + "."):
                    origin[inner] = where


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return list(value) if isinstance(value, list) else value


def _dotted_keys(value: dict[str, Any], prefix: str) -> list[str]:
    keys = []
    for key, inner in value.items():
        keys.append(prefix + key)
        if isinstance(inner, dict):
            keys += _dotted_keys(inner, prefix + key + ".")
    return keys


_DOTENV_LINE = re.compile(
    r"^\s*(?:export\s+)?([\w.-]+)\s*[=:]\s*(\"(?:\\.|[^\"])*\"|'[^']*'|`[^`]*`|[^#\n]*)"
)


def parse_dotenv(text: str) -> dict[str, str]:
    """KEY=VALUE lines as Node's dotenv reads them (quotes, `export`, # comments)."""
    found: dict[str, str] = {}
    for line in dotenv.lines(text):  # LF, CRLF, CR only (not `splitlines`' \v, U+2028…)
        match = _DOTENV_LINE.match(line)
        if not match:
            continue
        value = match.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n").replace("\\r", "\r")
        found[match.group(1)] = value
    return found


def dotenv_files(start: Path, qwen_home: Path | None = None) -> list[Path]:
    """The `.env` files Qwen Code loads from `start` (the folder it runs in), first wins per
    variable: `<dir>/.qwen/.env` and `<dir>/.env` from `start` up to the home folder, then
    $QWEN_HOME/.env, ~/.qwen/.env (when QWEN_HOME moves the folder) and ~/.env."""
    home = Path.home().resolve()
    global_dir = user_dir(qwen_home).resolve()
    legacy = home / ".qwen"
    found: list[Path] = []

    def add(path: Path) -> None:
        if path not in found and path.is_file():
            found.append(path)

    current = start.resolve()
    for _ in range(256):  # bounded: a path has far fewer parts
        if current == home:
            break
        add(current / ".qwen" / ".env")
        add(current / ".env")
        if current.parent == current:
            break
        current = current.parent
    for candidate in (global_dir / ".env", legacy / ".env", home / ".env"):
        add(candidate)  # the legacy folder's .env only counts when QWEN_HOME moved the folder
    return found


@dataclass(frozen=True)
class QwenEnv:
    """The environment Qwen Code ends up with: value and where it came from, per variable."""

    values: dict[str, tuple[str, str]] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        value = self.values.get(name)
        return value[0] if value and value[0] else None

    def source(self, name: str) -> str:
        value = self.values.get(name)
        return value[1] if value else ""


def effective_env(
    env: Mapping[str, str], dotenvs: list[Path], settings_env: object, settings_source: str
) -> QwenEnv:
    """The shell, then each `.env` and the settings' `env` block filling what is still unset
    or empty (Qwen Code never overrides a non-empty shell variable)."""
    values = {name: (value, "environment") for name, value in env.items()}
    for path in dotenvs:
        try:
            text = fileio.read_text(path)
        except InputError:
            continue
        for name, value in parse_dotenv(text or "").items():
            if not values.get(name, ("", ""))[0]:
                values[name] = (value, str(path))
    if isinstance(settings_env, dict):
        for name, value in settings_env.items():
            if isinstance(value, str) and not values.get(str(name), ("", ""))[0]:
                values[str(name)] = (value, f"{settings_source} env")
    return QwenEnv(values)


@dataclass(frozen=True)
class QwenResolved:
    """Qwen Code's endpoint and the provenance of each part (`source` per value)."""

    auth_type: str | None
    auth_source: str
    model: str | None
    model_source: str
    provider: dict[str, Any] | None
    provider_source: str
    base_url: str
    base_url_source: str
    key_env: str | None
    key: str | None
    key_source: str
    env: QwenEnv
    merged: dict[str, Any]
    origin: dict[str, str]

    def endpoint(self) -> Endpoint:
        return Endpoint(
            client="qwen",
            base_url=self.base_url,
            protocol="chat",
            model=self.model,
            auth_style="bearer" if self.key else "none",
            key_env=self.key_env,
            key=self.key,
            source=self.base_url_source,
        )


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def _expand(value: object, env: Mapping[str, str]) -> str | None:
    """A settings string with `$VAR` / `${VAR}` replaced from the shell, as Qwen Code does
    when it loads the file (an unset variable is left as written)."""
    if not isinstance(value, str) or not value:
        return None
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), value)


def resolve(
    layers: list[QwenFile], env: Mapping[str, str], *, cwd: Path, qwen_home: Path | None = None
) -> QwenResolved:
    merged, origin = merge(layers)
    settings_env_source = origin.get("env", "settings")
    qenv = effective_env(env, dotenv_files(cwd, qwen_home), merged.get("env"), settings_env_source)
    security = merged.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    auth = auth if isinstance(auth, dict) else {}
    auth_type = _str(auth.get("selectedType"))
    auth_source = origin.get("security.auth.selectedType", "")
    if auth_type is None and all(
        (qenv.get("OPENAI_API_KEY"), qenv.get("OPENAI_BASE_URL"), _env_model(qenv)[0])
    ):
        auth_type, auth_source = "openai", "OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL"
    model_block = merged.get("model")
    model = _expand(model_block.get("name"), env) if isinstance(model_block, dict) else None
    model_source = origin.get("model.name", "")
    if not model:
        model, model_source = _env_model(qenv)
    provider = None
    providers = merged.get("modelProviders")
    items = providers.get("openai") if isinstance(providers, dict) else None
    if model and isinstance(items, list):
        provider = next((p for p in items if isinstance(p, dict) and p.get("id") == model), None)
    provider_source = origin.get("modelProviders.openai", origin.get("modelProviders", ""))
    where = f"{provider_source} modelProviders.openai[{model}]"
    base_url, base_source = DEFAULT_BASE_URL, "default"
    for value, source in (
        (_expand(provider.get("baseUrl"), env) if provider else None, where),
        (qenv.get("OPENAI_BASE_URL"), qenv.source("OPENAI_BASE_URL")),
        (_expand(auth.get("baseUrl"), env), origin.get("security.auth.baseUrl", "")),
    ):
        if value:
            base_url, base_source = value, source
            break
    key_env = _str(provider.get("envKey")) if provider else None
    key, key_source = None, ""
    for value, source in (
        (qenv.get(key_env) if key_env else None, f"${key_env}"),
        (qenv.get("OPENAI_API_KEY"), "$OPENAI_API_KEY"),
        (_expand(auth.get("apiKey"), env), origin.get("security.auth.apiKey", "")),
    ):
        if value:
            key, key_source = value, source
            break
    if key_source == "$OPENAI_API_KEY":
        key_env = "OPENAI_API_KEY"  # the entry's envKey is unset: Qwen Code falls back to it
    return QwenResolved(
        auth_type=auth_type,
        auth_source=auth_source,
        model=model,
        model_source=model_source,
        provider=provider,
        provider_source=where if provider else "",
        base_url=base_url,
        base_url_source=base_source,
        key_env=key_env,
        key=key,
        key_source=key_source,
        env=qenv,
        merged=merged,
        origin=origin,
    )


def _env_model(qenv: QwenEnv) -> tuple[str | None, str]:
    for name in MODEL_ENV:
        value = qenv.get(name)
        if value:
            return value, f"${name} ({qenv.source(name)})"
    return None, ""


def shown_values(resolved: QwenResolved) -> list[tuple[str, str, str]]:
    """(name, value masked, source) for `pdnotes config show`."""
    rows = [
        ("selectedType", resolved.auth_type or "(not set)", resolved.auth_source or "default"),
    ]
    if resolved.model:
        rows.append(("model", resolved.model, resolved.model_source))
    rows.append(("baseUrl", mask_url(resolved.base_url), resolved.base_url_source))
    env_key = _str(resolved.provider.get("envKey")) if resolved.provider else None
    if env_key:
        rows.append(("envKey", env_key, resolved.provider_source))
    placeholder = resolved.key in presets.placeholder_tokens()
    shown = f"{resolved.key} (placeholder)" if placeholder else mask(resolved.key)
    rows.append(("key", shown, resolved.key_source or "none"))
    return rows
