"""Factory Droid's configuration: where it lives, what it will call, and the merge of a gateway
into its settings.json (`pdnotes config droid`).

Droid (npm `droid`, 0.215) reads `~/.factory/settings.json` and `settings.local.json` (JSON
with comments, read by `jsonc-parser`: `//` and `/* */` comments, no trailing commas; a file
it cannot read is ignored whole, and Droid falls back to its own models, which need a Factory
login), and the legacy `~/.factory/config.json` (`custom_models`, snake_case, no `${VAR}`
expansion). HOME moves the folder. A gateway is a `customModels` entry:

    {"model": "<id>", "displayName": "pdnotes", "baseUrl": "<root>", "apiKey": "${NAME}",
     "provider": "generic-chat-completion-api", "maxOutputTokens": N, "maxContextLimit": N}

`provider` picks the wire protocol: `generic-chat-completion-api` appends /chat/completions,
`openai` /responses, `anthropic` /v1/messages (to the Anthropic root). Droid drops, without a
word, an entry that lacks a string model, provider or baseUrl. Each kept entry gets the id
`custom:<displayName, blanks as ->-<n>`, n counting the kept entries before it with the same
displayName; the top-level `model` names the id Droid starts with ("Custom model configuration
is unavailable" when no entry has it).

Owned by pdnotes: the entry whose displayName is pdnotes' (`--display-name`, default
"pdnotes"): its model, baseUrl, apiKey (always `${NAME}`: no key is written), provider,
maxOutputTokens and maxContextLimit; and the top-level `model`. Every other byte stays
(`clients.jsonc`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from notes_cli import fileio
from notes_cli.clients import jsonc, presets, urls
from notes_cli.clients.endpoint import Endpoint, Protocol, join_url
from notes_cli.clients.model_limits import LimitsFetcher
from notes_cli.clients.plan import WritePlan, export_line, secret_values, too_large
from notes_cli.errors import ConfigParseError, InputError, UsageError
from notes_cli.secrets import looks_like_env_name, mask, mask_url

DIALECT = jsonc.Dialect("Factory Droid", closed_comments=True, cr_ends_line_comment=True)
"""Droid reads its settings with `jsonc-parser` and refuses any parse error it reports: comments
(closed), no trailing commas; a repeated key is read (the last wins)."""
DISPLAY_NAME = "pdnotes"
Api = Literal["chat", "responses", "messages"]
PROVIDERS: dict[str, Protocol] = {
    "generic-chat-completion-api": "chat",
    "openai": "responses",
    "anthropic": "anthropic",
}
"""Droid's `provider` values pdnotes writes, and the wire protocol each speaks."""
PROVIDER_OF: dict[str, str] = {
    "chat": "generic-chat-completion-api",
    "responses": "openai",
    "messages": "anthropic",
}
OUTPUT_TOKEN_MAX = 32000
"""pdnotes' default maxOutputTokens stays under this (an eighth of the window otherwise)."""
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PLACEHOLDER_KEYS = frozenset({"YOUR_OPENAI_API_KEY", "YOUR_API_KEY"})
"""apiKey values Droid treats as "not filled in": it drops the entry."""
CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --key-env GW_API_KEY "
    '(Droid reads it through "apiKey": "${GW_API_KEY}")'
)


def factory_dir(override: Path | None = None) -> Path:
    """Droid's folder: --factory-dir, else ~/.factory (Droid takes it from HOME only)."""
    return override.expanduser() if override is not None else Path.home() / ".factory"


def settings_file(home: Path | None = None) -> Path:
    return factory_dir(home) / "settings.json"


@dataclass(frozen=True)
class DroidOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    key_env: str | None = None
    api: str | None = None
    display_name: str | None = None
    context_window: int | None = None
    output_limit: int | None = None
    fetch_limits: LimitsFetcher | None = None


# --------------------------------------------------------------------------- layers


@dataclass(frozen=True)
class Layer:
    """One of Droid's files that exists: `kind` settings, local or legacy; `problem` when
    Droid cannot use it (it then ignores the file)."""

    kind: str
    path: Path
    text: str | None = None
    data: dict[str, Any] | None = None
    problem: ConfigParseError | InputError | None = None

    @property
    def where(self) -> str:
        return str(self.path)


LAYER_FILES = (("settings", "settings.json"), ("local", "settings.local.json"))
LEGACY_FILE = "config.json"


def parse(text: str, path: Path) -> dict[str, Any]:
    return jsonc.parse(text, path, DIALECT)


def read_layers(home: Path | None = None) -> list[Layer]:
    """settings.json, settings.local.json and the legacy config.json, those that exist."""
    folder = factory_dir(home)
    layers: list[Layer] = []
    for kind, name in (*LAYER_FILES, ("legacy", LEGACY_FILE)):
        path = folder / name
        try:
            text = fileio.read_text(path)
        except InputError as exc:
            layers.append(Layer(kind, path, problem=exc))
            continue
        if text is None:
            continue
        try:
            layers.append(Layer(kind, path, text, parse(text, path)))
        except ConfigParseError as exc:
            layers.append(Layer(kind, path, text, problem=exc))
    return layers


@dataclass(frozen=True)
class CustomModel:
    """One `customModels` entry Droid keeps, with the id Droid gives it."""

    id: str
    model: str
    display_name: str
    base_url: str
    provider: str
    api_key: str | None
    max_output: int | None
    max_context: int | None
    layer: Layer


def slug(display_name: str) -> str:
    """Droid's id part of a displayName: trimmed, each run of blanks one `-`."""
    return re.sub(r"\s+", "-", display_name.strip())


def kept(entry: object, legacy: bool = False) -> bool:
    """Whether Droid keeps the entry (a string model, provider and base URL; a filled-in key)."""
    if not isinstance(entry, dict):
        return False
    base, key = ("base_url", "api_key") if legacy else ("baseUrl", "apiKey")
    strings = all(isinstance(entry.get(k), str) for k in ("model", "provider", base))
    return strings and entry.get(key) not in PLACEHOLDER_KEYS


def _int(value: object) -> int | None:
    """A whole number of tokens (a number kept as spelled for an edit too), else None."""
    from notes_cli.clients.files import JsonNumber

    if isinstance(value, JsonNumber):
        value = value.value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _models_of(layer: Layer) -> list[CustomModel]:
    legacy = layer.kind == "legacy"
    items = (layer.data or {}).get("custom_models" if legacy else "customModels")
    found: list[CustomModel] = []
    counts: dict[str, int] = {}
    for entry in items if isinstance(items, list) else ():
        if not kept(entry, legacy):
            continue
        if legacy:
            name = entry.get("model_display_name") or entry["model"]
            base, key = entry["base_url"], entry.get("api_key")
            output, context = entry.get("max_tokens"), entry.get("max_context_limit")
        else:
            name = entry.get("displayName")
            name = name if isinstance(name, str) else entry["model"]
            base, key = entry["baseUrl"], entry.get("apiKey")
            output, context = entry.get("maxOutputTokens"), entry.get("maxContextLimit")
        index = counts.get(slug(name), 0)
        counts[slug(name)] = index + 1
        explicit = entry.get("id") if not legacy else None
        found.append(
            CustomModel(
                explicit if isinstance(explicit, str) else f"custom:{slug(name)}-{index}",
                entry["model"],
                name,
                base,
                entry["provider"],
                key if isinstance(key, str) else None,
                _int(output),
                _int(context),
                layer,
            )
        )
    return found


def custom_models(layers: list[Layer]) -> list[CustomModel]:
    """The custom models Droid lists: settings.local.json's `customModels` where it sets them,
    else settings.json's; then the legacy config.json's."""
    usable = [layer for layer in layers if layer.data is not None]
    settings = [layer for layer in usable if layer.kind != "legacy"]
    chosen = next((la for la in reversed(settings) if "customModels" in (la.data or {})), None)
    found = _models_of(chosen) if chosen else []
    for layer in usable:
        if layer.kind == "legacy":
            found += _models_of(layer)
    return found


def selected(layers: list[Layer]) -> tuple[str | None, Layer | None]:
    """The top-level `model` (settings.local.json over settings.json) and the file setting it."""
    for layer in reversed([la for la in layers if la.kind != "legacy" and la.data is not None]):
        value = (layer.data or {}).get("model")
        if value is not None:
            return (value if isinstance(value, str) else None), layer
    return None, None


def find(models: list[CustomModel], model_id: str) -> CustomModel | None:
    """The entry Droid resolves `model_id` to: by id, else (`custom:<model>`) by model, else
    (`custom:<slug>-<n>` with no such n) the first entry of that slug: droid 0.215.0 answers
    with `custom:pdnotes-7` when only `custom:pdnotes-0` exists, and fails an unknown slug."""
    by_id = next((m for m in models if m.id == model_id), None)
    if by_id is not None or not model_id.startswith("custom:"):
        return by_id
    by_model = next((m for m in models if m.model == model_id[len("custom:") :]), None)
    numbered = re.fullmatch(r"custom:(.+)-\d+", model_id)
    if by_model is not None or numbered is None:
        return by_model
    return next((m for m in models if m.id.startswith(f"custom:{numbered[1]}-")), None)


def expand(value: str, env: Mapping[str, str]) -> str:
    """Droid's `${NAME}` in apiKey: the variable's value ("" when unset)."""
    return ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)


# --------------------------------------------------------------------------- what it calls


@dataclass(frozen=True)
class Resolved:
    endpoint: Endpoint | None
    values: tuple[tuple[str, str, str], ...]
    entry: CustomModel | None = None
    problem: str | None = None


def resolve(layers: list[Layer], env: Mapping[str, str]) -> Resolved:
    model_id, source = selected(layers)
    if model_id is None:
        return Resolved(None, (), problem="no top-level `model`: Droid uses its own (login needed)")
    values = [("model", model_id, source.where if source else "default")]
    entry = find(custom_models(layers), model_id)
    if entry is None:
        if not model_id.startswith("custom:"):
            problem = f"model {model_id!r} is one of Factory's own (login needed), not a gateway's"
        else:
            problem = f"no customModels entry has the id {model_id!r}"
        return Resolved(None, tuple(values), problem=problem)
    where = f"{entry.layer.where} customModels ({entry.display_name})"
    protocol = PROVIDERS.get(entry.provider)
    if protocol is None:
        problem = (
            f"provider {entry.provider!r} is not one pdnotes speaks for "
            "(generic-chat-completion-api, openai, anthropic)"
        )
        return Resolved(None, tuple(values), entry, problem)
    values.append(("baseUrl", mask_url(entry.base_url), where))
    values.append(("provider", entry.provider, where))
    names = ENV_REF.findall(entry.api_key or "")
    key = expand(entry.api_key, env) if entry.api_key else None
    if entry.api_key:
        shown = f"${names[0]} ({where} apiKey)" if names else f"{where} apiKey"
        values.append(("key", mask(key or None), shown))
    if entry.max_output:
        values.append(("maxOutputTokens", str(entry.max_output), where))
    if entry.max_context:
        values.append(("maxContextLimit", str(entry.max_context), where))
    endpoint = Endpoint(
        client="droid",
        base_url=entry.base_url,
        protocol=protocol,
        model=entry.model,
        auth_style=("x-api-key" if protocol == "anthropic" else "bearer") if key else "none",
        key_env=names[0] if names else None,
        key=key or None,
        source=where,
    )
    return Resolved(endpoint, tuple(values), entry)


# --------------------------------------------------------------------------- the write


def load_for_edit(path: Path) -> tuple[str | None, dict[str, Any]]:
    text = fileio.read_text(path)
    if text is None:
        return None, {}
    return text, jsonc.parse(text, path, DIALECT, keep_numbers=True)


def plan_droid(options: DroidOptions, *, home: Path | None = None) -> WritePlan:
    """Build the edit of settings.json for `options` (nothing is written)."""
    path = settings_file(home)
    old_text, data = load_for_edit(path)
    items = data.get("customModels")
    if items is not None and not isinstance(items, list):
        raise UsageError(
            f'"customModels" in {path} is not an array; Droid ignores it, and pdnotes will not '
            "replace it: the file was not changed",
            fix=f'make "customModels" an array in {path} (or remove it), then run this again',
        )
    name = options.display_name or DISPLAY_NAME
    if not name.strip():
        raise UsageError("--display-name is empty", fix="pass a name, e.g. --display-name gw")
    entry = next(
        (e for e in items or () if isinstance(e, dict) and e.get("displayName") == name), None
    )
    preset = presets.load_preset(options.preset) if options.preset else None
    api = _api(options, entry)
    cleaned = _base_url(options, preset, entry, api)
    model = options.model or (preset.model if preset else None) or _str((entry or {}).get("model"))
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as your gateway's /models lists it",
        )
    key_env, keyless = _key_env(options, preset, entry, api, cleaned.base_url)
    new_entry: dict[str, Any] = {
        "model": model,
        "displayName": name,
        "baseUrl": cleaned.base_url,
        "provider": PROVIDER_OF[api],
    }
    notes = list(cleaned.notes)
    warnings: list[str] = []
    current_key = (entry or {}).get("apiKey")
    if key_env:
        new_entry["apiKey"] = "${" + key_env + "}"
        if _is_literal(current_key):
            notes.append(f"replaced the literal apiKey with ${{{key_env}}}: no key in the file")
    elif _is_literal(current_key) and not keyless:
        warnings.append(
            f"{path} holds a literal apiKey in the {name} entry; prefer --key-env NAME "
            '(written as "apiKey": "${NAME}")'
        )
    elif not keyless and current_key is None:
        warnings.append(
            "no --key-env: Droid sends no key to this gateway; pass --key-env NAME (the "
            "variable holding it) unless it takes none"
        )
    window, output, limit_notes = _limits(options, preset, entry, model, cleaned.base_url, key_env)
    notes += limit_notes
    if output is not None:
        new_entry["maxOutputTokens"] = output
    if window is not None:
        new_entry["maxContextLimit"] = window
    editor = jsonc.Editor(old_text or "", DIALECT)
    editor.set_array_item(("customModels",), ("displayName", name), new_entry)
    where = ("customModels",)
    if (
        keyless
        and current_key is not None
        and editor.remove_from_array_item(where, ("displayName", name), "apiKey")
    ):
        notes.append(f"removed the {name} entry's apiKey: this endpoint takes no key")
    if entry is not None and entry.get("model") != model:
        for stale in ("maxContextLimit", "maxOutputTokens"):  # the old model's, not this one's
            if stale not in new_entry and editor.remove_from_array_item(
                where, ("displayName", name), stale
            ):
                notes.append(f"removed {stale} of {entry.get('model')}: {model} may differ")
    new_text = editor.text
    if len(new_text) > fileio.MAX_CONFIG_BYTES:
        raise too_large(path, None)
    new_data = jsonc.check_edit(new_text, path, DIALECT)
    layer = Layer("settings", path, new_text, new_data)
    wanted = (name, new_entry["baseUrl"])
    mine = next((m for m in _models_of(layer) if (m.display_name, m.base_url) == wanted), None)
    if mine is None:  # its apiKey is a placeholder Droid drops the entry for
        raise UsageError(
            f"the {name} entry in {path} keeps an apiKey Droid treats as not filled in, so "
            "Droid would drop the entry",
            fix="pass --key-env NAME (the variable holding the key)",
        )
    editor.set(("model",), mine.id)
    new_text = editor.text
    new_data = jsonc.check_edit(new_text, path, DIALECT)
    warnings += _overridden(path, home)
    return WritePlan(
        client="droid",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=request_url(cleaned.base_url, PROVIDER_OF[api]),
        export_line=export_line(key_env) if key_env else None,
        notes=(*notes, f"Droid starts with {mine.id} (droid exec -m {mine.id} picks it too)"),
        warnings=tuple(warnings),
        redact=tuple(
            s
            for s in secret_values(data, new_data, public=presets.placeholder_tokens())
            if not ENV_REF.fullmatch(s)
        ),
    )


def request_url(base_url: str, provider: str) -> str:
    """The URL Droid posts a turn to for an entry with this `provider`."""
    suffix = {"openai": "/responses", "anthropic": "/v1/messages"}.get(provider)
    return join_url(base_url, suffix or "/chat/completions")


def _api(options: DroidOptions, entry: dict[str, Any] | None) -> Api:
    if options.api is not None:
        if options.api not in PROVIDER_OF:
            raise UsageError(
                f"unknown --api {options.api!r}", fix="use --api chat, responses or messages"
            )
        return options.api  # type: ignore[return-value]
    current = PROVIDERS.get(str((entry or {}).get("provider")))
    return {"responses": "responses", "anthropic": "messages"}.get(current or "", "chat")  # type: ignore[return-value]


def _base_url(
    options: DroidOptions,
    preset: presets.Preset | None,
    entry: dict[str, Any] | None,
    api: Api,
) -> urls.CleanUrl:
    """Flag over preset over the entry's current value, cleaned for the SDK Droid calls it with
    (OpenAI's appends /chat/completions or /responses, Anthropic's /v1/messages)."""
    messages = api == "messages"
    raw = options.base_url
    if raw is None and preset is not None:
        table = preset.anthropic if messages else preset.openai
        raw = table.base_url if table else None
        if raw is None:
            raise UsageError(
                f"preset {preset.key} has no {'Anthropic' if messages else 'OpenAI'}-compatible "
                "root for Droid",
                fix="pass --api chat (or --base-url URL)",
            )
    raw = raw or _str((entry or {}).get("baseUrl"))
    if not raw:
        raise UsageError("no base URL to write", fix="pass --base-url https://… or a --preset")
    known = preset or (presets.preset_for_host(urls.host_of(raw)) if urls.has_scheme(raw) else None)
    return urls.appended_root(
        raw,
        policy=known.v1_suffix if known else "any",
        client="Droid",
        after="the path it appends",
        credential_fix=CREDENTIAL_FIX,
        messages=messages,
    )


def _key_env(
    options: DroidOptions,
    preset: presets.Preset | None,
    entry: dict[str, Any] | None,
    api: Api,
    base_url: str,
) -> tuple[str | None, bool]:
    """(the key's variable, whether the endpoint takes no key: a keyless preset, or a server on
    this machine with no variable named). Droid needs no apiKey for such an endpoint."""
    name = options.key_env
    if name is None and preset is not None:
        name = preset.anthropic.token_env if api == "messages" and preset.anthropic else None
        name = name or (preset.openai.env_key if preset.openai else None)
    if name is None and preset is None:
        current = ENV_REF.findall(_str((entry or {}).get("apiKey")) or "")
        name = current[0] if current else None
    if name and not looks_like_env_name(name):
        raise UsageError(  # never echo the value: it is probably the key itself
            "--key-env takes the NAME of an environment variable, not the key itself",
            fix="export the key (export GW_API_KEY=…) and pass --key-env GW_API_KEY",
        )
    keyless = name is None and (preset is not None or urls.is_loopback(base_url))
    return name, keyless


def _limits(
    options: DroidOptions,
    preset: presets.Preset | None,
    entry: dict[str, Any] | None,
    model: str,
    base_url: str,
    key_env: str | None,
) -> tuple[int | None, int | None, list[str]]:
    """(maxContextLimit, maxOutputTokens, notes): the window from --context-window, the
    gateway's /models or the preset; the output from --output-limit, the gateway, the entry,
    else an eighth of the window (at most OUTPUT_TOKEN_MAX)."""
    window, output, notes = options.context_window, options.output_limit, []
    if options.fetch_limits is not None:
        limits = options.fetch_limits(base_url, key_env, model)
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
    current = entry or {}
    same_model = current.get("model") == model
    if window is None and same_model:
        window = _int(current.get("maxContextLimit"))
    if output is None and same_model:
        output = _int(current.get("maxOutputTokens"))
    if output is None and window is not None:
        output = min(max(window // 8, 1), OUTPUT_TOKEN_MAX)
    if window is not None and output is not None and output >= window:
        raise UsageError(
            f"--output-limit {output} is not below the context window {window}",
            fix="pass a smaller --output-limit (an answer must leave room for the prompt)",
        )
    return window, output, notes


def _overridden(path: Path, home: Path | None) -> list[str]:
    """Say so when settings.local.json sets `model` or `customModels`: it wins over
    settings.json, so what is written here would not be what Droid uses."""
    local = factory_dir(home) / "settings.local.json"
    try:
        text = fileio.read_text(local)
        data = parse(text, local) if text is not None else {}
    except (InputError, ConfigParseError):
        return []  # doctor reports a file Droid cannot read
    return [
        f"{local} sets {key} too, and Droid reads it after {path}: it wins"
        for key in ("model", "customModels")
        if key in data
    ]


def _is_literal(value: object) -> bool:
    return isinstance(value, str) and bool(value) and not ENV_REF.search(value)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
