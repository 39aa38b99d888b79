"""Kimi Code's config.toml: where it lives, what Kimi Code will call from it, and the merge of a
gateway into it (`pdnotes config kimi`).

Kimi Code (npm `@moonshot-ai/kimi-code`, 2.1; command `kimi`, Node 22.19+) keeps its files in
`$KIMI_CODE_HOME`, else `~/.kimi-code`. `config.toml` (TOML, snake_case keys) names the model it
starts with and how to reach it:

    default_model = "<alias>"

    [providers.<id>]          type = "openai" (chat completions) | "openai_responses" |
                              "anthropic" (…/v1/messages) | kimi, google-genai, vertexai;
                              base_url; the key: api_key (literal) or api_key_env (a NAME)
    [models.<alias>]          provider = "<id>", model = "<the gateway's id>",
                              max_context_size (required), max_output_size, protocol, base_url

Read as Kimi Code reads it (checked on 2.1.0): a file that is not TOML is ignored whole ("No
model configured"); `default_model` naming no `[models]` entry, a model whose provider has no
`[providers]` entry or no positive `max_context_size`, a provider with both `api_key` and
`api_key_env`, or `api_key_env` naming an unset variable each stop the turn with a message; a
provider with no key at all too ("has no credential configured"). Without `max_output_size` Kimi
Code asks each turn for `max_tokens` = the whole window, which a server with that window refuses.

Owned by pdnotes: the top-level `default_model`, in `[providers.<id>]` `type`, `base_url` and the
key (`api_key_env` = a variable's NAME, or for a keyless server a documented non-secret
placeholder in `api_key`: never a key), and in `[models."<id>/<model>"]` (Kimi Code's own alias
form) `provider`, `model`, `max_context_size` and `max_output_size`. Everything else —
comments, order, other providers and models, unknown keys — keeps its bytes: the document is
edited in place with tomlkit, and the new text must read back (tomllib) as the old file with
exactly pdnotes' keys set, or nothing is written.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from notes_cli import fileio
from notes_cli.clients import files, presets, urls
from notes_cli.clients.endpoint import Endpoint, Protocol, join_url
from notes_cli.clients.model_limits import LimitsFetcher
from notes_cli.clients.plan import WritePlan, export_line, secret_values
from notes_cli.errors import ConfigWriteError, UsageError
from notes_cli.secrets import looks_like_env_name, mask, mask_url

HOME_ENV = "KIMI_CODE_HOME"
DEFAULT_PROVIDER = "pdnotes"
DEFAULT_WINDOW = 32768
"""The `max_context_size` pdnotes writes when no window is known (neither --context-window, the
gateway's /models nor the preset says one): Kimi Code requires one, and a window smaller than
the served one only makes it compact earlier, while a larger one makes the server refuse."""
OUTPUT_TOKEN_MAX = 32000
"""pdnotes' default `max_output_size` is an eighth of the window, at most this."""
Api = Literal["chat", "responses", "messages"]
TYPE_OF: dict[str, str] = {
    "chat": "openai",
    "responses": "openai_responses",
    "messages": "anthropic",
}
"""The provider `type` pdnotes writes for each `--api`."""
PROTOCOLS: dict[str, Protocol] = {
    "openai": "chat",
    "openai_responses": "responses",
    "anthropic": "anthropic",
}
"""The provider types (or a model's `protocol`) pdnotes calls as Kimi Code does."""
SUFFIX = {"chat": "/chat/completions", "responses": "/responses", "anthropic": "/v1/messages"}
PROVIDER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_ -]*")
"""Kimi Code's provider id: a letter or digit first, then letters, digits, -, _ and spaces."""
CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --key-env GW_API_KEY "
    '(written as api_key_env = "GW_API_KEY": Kimi Code reads the variable of that name)'
)


def kimi_home(override: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Kimi Code's folder: --kimi-home, else $KIMI_CODE_HOME, else ~/.kimi-code."""
    if override is not None:
        return override.expanduser()
    value = (os.environ if env is None else env).get(HOME_ENV)
    return Path(value).expanduser() if value else Path.home() / ".kimi-code"


def config_path(override: Path | None = None) -> Path:
    return kimi_home(override) / "config.toml"


def alias_of(provider_id: str, model: str) -> str:
    """The `[models]` key pdnotes writes: `<provider>/<model>`, as Kimi Code names the models it
    imports itself."""
    return f"{provider_id}/{model}"


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class KimiFile:
    path: Path
    text: str
    data: dict[str, Any]


def read_file(home: Path | None) -> KimiFile | None:
    """config.toml parsed (None when it does not exist; `ConfigParseError` when it is not
    TOML, `InputError` when it cannot be read)."""
    path = config_path(home)
    text, data = files.read_toml_data(path)
    if text is None or data is None:
        return None
    return KimiFile(path, text, data)


def table(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def positive(value: object) -> int | None:
    """A positive whole number (`max_context_size`, `max_output_size`), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def text_of(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class Selected:
    """The model Kimi Code starts with and its provider, as far as the file names them."""

    alias: str | None
    model: dict[str, Any] | None
    provider_id: str | None
    provider: dict[str, Any] | None


def selected(data: Mapping[str, Any]) -> Selected:
    alias = text_of(data.get("default_model"))
    model = table(data, "models").get(alias) if alias else None
    model = model if isinstance(model, dict) else None
    provider_id = text_of(model.get("provider")) if model else None
    provider = table(data, "providers").get(provider_id) if provider_id else None
    return Selected(alias, model, provider_id, provider if isinstance(provider, dict) else None)


def protocol_of(model: Mapping[str, Any], provider: Mapping[str, Any]) -> str | None:
    """The model's `protocol`, else its provider's `type` (Kimi Code's default type: openai)."""
    return text_of(model.get("protocol")) or text_of(provider.get("type")) or "openai"


def base_url_of(model: Mapping[str, Any], provider: Mapping[str, Any]) -> str | None:
    """The model's own `base_url`, else its provider's (as Kimi Code resolves it)."""
    return text_of(model.get("base_url")) or text_of(provider.get("base_url"))


def request_url(base_url: str, protocol: Protocol) -> str:
    return join_url(base_url, SUFFIX.get(protocol, "/chat/completions"))


@dataclass(frozen=True)
class Resolved:
    """What Kimi Code will call from its file, or why pdnotes cannot say."""

    endpoint: Endpoint | None
    values: tuple[tuple[str, str, str], ...]  # (name, shown value, source)
    problem: str | None = None
    window: int | None = None
    window_source: str = ""
    max_output: int | None = None


def resolve(file: KimiFile, env: Mapping[str, str]) -> Resolved:
    """default_model's entry in [models] and its provider."""
    path, data = file.path, file.data
    chosen = selected(data)
    if chosen.alias is None:
        return Resolved(None, (), problem="config.toml sets no default_model")
    values = [("default_model", chosen.alias, str(path))]
    if chosen.model is None:
        return Resolved(
            None, tuple(values), problem=f"config.toml has no [models] entry {chosen.alias!r}"
        )
    where_model = f"{path} [models.{chosen.alias}]"
    if chosen.provider is None or chosen.provider_id is None:
        return Resolved(
            None,
            tuple(values),
            problem=f"model {chosen.alias!r} names provider {chosen.provider_id!r}, which "
            "config.toml does not define",
        )
    model, provider = chosen.model, chosen.provider
    where = f"{path} [providers.{chosen.provider_id}]"
    model_id = text_of(model.get("model"))
    window, output = positive(model.get("max_context_size")), positive(model.get("max_output_size"))
    kind = protocol_of(model, provider)
    base = base_url_of(model, provider)
    values.append(("model", str(model_id), where_model))
    values.append(("type", str(kind), where))
    if base:
        values.append(("base_url", mask_url(base), where_model if model.get("base_url") else where))
    values.append(("max_context_size", str(window) if window else "(unset)", where_model))
    values.append(("max_output_size", str(output) if output else "(unset)", where_model))
    protocol = PROTOCOLS.get(str(kind))
    problem = None
    if not base:
        problem = f"provider {chosen.provider_id!r} has no base_url"
    elif protocol is None:
        problem = f"type {kind!r}: pdnotes cannot call it as Kimi Code does"
    elif model_id is None:
        problem = f"model {chosen.alias!r} names no model id"
    if problem is not None or base is None or protocol is None:
        return Resolved(None, tuple(values), problem=problem)
    key, key_env = _key(provider, env, where, values)
    endpoint = Endpoint(
        client="kimi",
        base_url=base,
        protocol=protocol,
        model=model_id,
        auth_style=("x-api-key" if protocol == "anthropic" else "bearer") if key else "none",
        key_env=key_env,
        key=key,
        source=where,
    )
    return Resolved(
        endpoint,
        tuple(values),
        window=window,
        window_source=f"max_context_size in {where_model}",
        max_output=output,
    )


def _key(
    provider: Mapping[str, Any],
    env: Mapping[str, str],
    where: str,
    values: list[tuple[str, str, str]],
) -> tuple[str | None, str | None]:
    """(the key Kimi Code sends, the variable it came from)."""
    literal, name = text_of(provider.get("api_key")), text_of(provider.get("api_key_env"))
    if name is not None:
        value = env.get(name) or None
        shown = mask(value) if value else f"${name} is unset: Kimi Code stops"
        values.append(("key", shown, f"${name} ({where} api_key_env)"))
        return value, name
    if literal is not None:
        values.append(("key", mask(literal), f"{where} api_key"))
        return literal, None
    values.append(("key", "(none: Kimi Code stops, no credential)", where))
    return None, None


# --------------------------------------------------------------------------- the write


@dataclass(frozen=True)
class KimiOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    provider: str | None = None
    key_env: str | None = None
    api: str | None = None
    context_window: int | None = None
    output_limit: int | None = None
    fetch_limits: LimitsFetcher | None = None


@dataclass(frozen=True)
class _Target:
    provider_id: str
    alias: str
    provider: dict[str, Any]  # owned keys of [providers.<id>]
    drop: tuple[str, ...]  # keys of [providers.<id>] removed (the other way of giving the key)
    model: dict[str, Any]  # owned keys of [models.<alias>]
    base_url: str
    api: Api
    key_env: str | None
    placeholder: bool
    notes: tuple[str, ...]
    warnings: tuple[str, ...]


def plan_kimi(options: KimiOptions, *, home: Path | None = None) -> WritePlan:
    """The edit of config.toml for `options` (nothing is written)."""
    from tomlkit.exceptions import TOMLKitError

    path = config_path(home)
    old_text, doc = files.load_toml(path)
    old = files.parse_toml_data(old_text, path) if old_text is not None else {}
    target = _target(options, old, path)
    try:
        new_text = _edit(doc, old_text, target)
    except (ValueError, TypeError, KeyError, TOMLKitError) as exc:
        raise ConfigWriteError(
            f"cannot merge the provider into {path} as it is laid out ({exc}); nothing was written",
            fix=f"edit [providers.{target.provider_id}] by hand, or "
            + fileio.aside_fix(path, "move the file aside and run the command again"),
        ) from exc
    _check_meaning(path, old, new_text, target)
    placeholder = target.placeholder
    return WritePlan(
        client="kimi",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=request_url(target.base_url, PROTOCOLS[TYPE_OF[target.api]]),
        export_line=None if placeholder or target.key_env is None else export_line(target.key_env),
        notes=target.notes,
        warnings=target.warnings,
        redact=secret_values(old, tomllib.loads(new_text), public=presets.placeholder_tokens()),
    )


def _target(options: KimiOptions, old: dict[str, Any], path: Path) -> _Target:
    preset = presets.load_preset(options.preset) if options.preset else None
    for key in ("providers", "models"):
        if key in old and not isinstance(old[key], dict):
            raise UsageError(
                f"{key} in {path} is not a table; Kimi Code cannot read it, and pdnotes did not "
                "change the file",
                fix=f"make it [{key}.<id>] tables in {path}",
            )
    provider_id = options.provider or DEFAULT_PROVIDER
    if not PROVIDER_ID.fullmatch(provider_id):
        raise UsageError(
            f"provider id {provider_id[:40]!r} is not one Kimi Code takes",
            fix="pass --provider with letters, digits, '-', '_' and spaces (a letter or digit "
            "first), e.g. --provider my-gateway",
        )
    current = table(table(old, "providers"), provider_id)
    if provider_id in table(old, "providers") and not isinstance(
        table(old, "providers")[provider_id], dict
    ):
        raise UsageError(
            f"providers.{provider_id} in {path} is not a table; the file was not changed",
            fix=f"make it a [providers.{provider_id}] table, or pass another --provider",
        )
    api = _api(options, current)
    cleaned = _base_url(options, preset, current, api)
    model = options.model or (preset.model if preset else None) or _current_model(old, provider_id)
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as your gateway's /models lists it",
        )
    alias = alias_of(provider_id, model)
    entry = table(table(old, "models"), alias)
    if alias in table(old, "models") and not isinstance(table(old, "models")[alias], dict):
        raise UsageError(
            f'models."{alias}" in {path} is not a table; the file was not changed',
            fix=f'make it a [models."{alias}"] table in {path}',
        )
    notes = list(cleaned.notes)
    warnings: list[str] = []
    owned: dict[str, Any] = {"type": TYPE_OF[api], "base_url": cleaned.base_url}
    key_env, placeholder = _key_choice(options, preset, current, api, cleaned.base_url)
    drop: list[str] = []
    if key_env is not None:
        owned["api_key_env"] = key_env
        drop.append("api_key")
        if text_of(current.get("api_key")) and not _is_placeholder(current.get("api_key")):
            notes.append(
                f'replaced the literal api_key with api_key_env = "{key_env}": no key in the file'
            )
    elif placeholder is not None:
        owned["api_key"] = placeholder
        drop.append("api_key_env")
        notes.append(
            f"{preset.name if preset else 'a server on this machine'} needs no key: Kimi Code, "
            f"which refuses a provider without one, gets the non-secret placeholder {placeholder}"
            + ("" if preset else " (a server started with a key: --key-env NAME)")
        )
    else:
        warnings.append(
            f"[providers.{provider_id}] in {path} keeps its literal api_key; prefer --key-env NAME "
            '(written as api_key_env = "NAME")'
        )
    window, output, said = _limits(options, preset, entry, model, cleaned.base_url, key_env)
    notes += said
    owned_model = {
        "provider": provider_id,
        "model": model,
        "max_context_size": window,
        "max_output_size": output,
    }
    notes.append(f'Kimi Code starts with "{alias}" (kimi -m "{alias}" picks it too)')
    return _Target(
        provider_id, alias, owned, tuple(drop), owned_model, cleaned.base_url, api, key_env,
        placeholder is not None, tuple(notes), tuple(warnings),
    )  # fmt: skip


def _api(options: KimiOptions, current: Mapping[str, Any]) -> Api:
    if options.api is not None:
        if options.api not in TYPE_OF:
            raise UsageError(
                f"unknown --api {options.api!r}", fix="use --api chat, responses or messages"
            )
        return options.api  # type: ignore[return-value]
    kind = PROTOCOLS.get(str(current.get("type")))
    return {"responses": "responses", "anthropic": "messages"}.get(kind or "", "chat")  # type: ignore[return-value]


def _base_url(
    options: KimiOptions, preset: presets.Preset | None, current: Mapping[str, Any], api: Api
) -> urls.CleanUrl:
    """Flag over preset over the provider's current value, cleaned for the SDK Kimi Code calls
    it with (OpenAI's appends /chat/completions or /responses, Anthropic's /v1/messages)."""
    messages = api == "messages"
    raw = options.base_url
    if raw is None and preset is not None:
        root = preset.anthropic if messages else preset.openai
        raw = root.base_url if root else None
        if raw is None:
            raise UsageError(
                f"preset {preset.key} has no {'Anthropic' if messages else 'OpenAI'}-compatible "
                "root for Kimi Code",
                fix="pass --api chat (or --base-url URL)",
            )
    raw = raw or text_of(current.get("base_url"))
    if not raw:
        raise UsageError("no base URL to write", fix="pass --base-url https://… or a --preset")
    known = preset or (presets.preset_for_host(urls.host_of(raw)) if urls.has_scheme(raw) else None)
    return urls.appended_root(
        raw,
        policy=known.v1_suffix if known else "any",
        client="Kimi Code",
        after="the path it appends",
        credential_fix=CREDENTIAL_FIX,
        messages=messages,
    )


def _current_model(old: Mapping[str, Any], provider_id: str) -> str | None:
    """The model of default_model's entry, when it is this provider's."""
    chosen = selected(old)
    if chosen.model is not None and chosen.provider_id == provider_id:
        return text_of(chosen.model.get("model"))
    return None


def _is_placeholder(value: object) -> bool:
    return isinstance(value, str) and value in presets.placeholder_tokens()


def _key_choice(
    options: KimiOptions,
    preset: presets.Preset | None,
    current: Mapping[str, Any],
    api: Api,
    base_url: str,
) -> tuple[str | None, str | None]:
    """(api_key_env to write, else the placeholder for api_key; both None: keep the provider's
    literal api_key). Kimi Code refuses a provider with no key, so a keyless server (a preset
    that takes none, a server on this machine) gets a documented non-secret placeholder."""
    name = options.key_env
    if name is None and preset is not None:
        name = preset.anthropic.token_env if api == "messages" and preset.anthropic else None
        name = name or (preset.openai.env_key if preset.openai else None)
    if name is not None:
        if not looks_like_env_name(name):
            raise UsageError(  # never echo the value: it is probably the key itself
                "--key-env takes the NAME of an environment variable, not the key itself",
                fix="export the key (export GW_API_KEY=…) and pass --key-env GW_API_KEY",
            )
        return name, None
    if preset is not None and preset.anthropic and preset.anthropic.placeholder_token:
        return None, preset.anthropic.placeholder_token
    existing = text_of(current.get("api_key_env"))
    if existing is not None and looks_like_env_name(existing):
        return existing, None
    literal = current.get("api_key")
    if urls.is_loopback(base_url) and _is_placeholder(literal):
        return None, str(literal)
    if urls.is_loopback(base_url) and not text_of(literal):
        return None, presets.LOCAL_PLACEHOLDER
    if text_of(literal) and not _is_placeholder(literal):
        return None, None  # the user's own literal key: kept, and warned of
    raise UsageError(
        "no key variable for the provider (Kimi Code refuses a provider without a key)",
        fix="export the key (export GW_API_KEY=…) and pass --key-env GW_API_KEY",
    )


def _limits(
    options: KimiOptions,
    preset: presets.Preset | None,
    entry: Mapping[str, Any],
    model: str,
    base_url: str,
    key_env: str | None,
) -> tuple[int, int, list[str]]:
    """(max_context_size, max_output_size, notes): the window from --context-window, the
    gateway's /models, the preset, the entry, else `DEFAULT_WINDOW`; the output from
    --output-limit, the gateway, the entry, else an eighth of the window (at most 32000)."""
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
    if window is None:
        window = positive(entry.get("max_context_size"))
    if output is None:
        output = positive(entry.get("max_output_size"))
    if window is None:
        window = DEFAULT_WINDOW
        notes.append(
            f"no context window known for {model}: wrote max_context_size = {window} (Kimi Code "
            "requires one; pass --context-window gateway to read the served one)"
        )
    if output is None:
        output = min(max(window // 8, 1), OUTPUT_TOKEN_MAX)
    if output >= window:
        raise UsageError(
            f"--output-limit {output} is not below the context window {window}",
            fix="pass a smaller --output-limit (an answer must leave room for the prompt)",
        )
    return window, output, notes


def _edit(doc: Any, old_text: str | None, target: _Target) -> str:
    """The new text: `default_model` at the top level, the provider's and the model's tables
    merged in place (a key assigned only when its value changes)."""
    import tomlkit

    doc = doc if doc is not None else tomlkit.document()
    if doc.get("default_model") != target.alias:
        doc["default_model"] = target.alias  # after the last top-level key, before any table
    _merge(doc, "providers", target.provider_id, target.provider, target.drop)
    _merge(doc, "models", target.alias, target.model, ())
    return files.dump_toml(doc, old_text)


def _merge(doc: Any, section: str, key: str, owned: dict[str, Any], drop: tuple[str, ...]) -> None:
    import tomlkit

    parent = doc.get(section)
    if parent is None:
        parent = tomlkit.table(is_super_table=True)
        doc[section] = parent
    entry = parent.get(key)
    if entry is None:
        inline = isinstance(parent, tomlkit.items.InlineTable)
        entry = tomlkit.inline_table() if inline else tomlkit.table()
        entry.update(owned)
        if not inline and list(doc.keys())[-1] != section:
            entry.add(tomlkit.nl())  # a blank line before the table that follows it
        parent[key] = entry
        return
    for name, value in owned.items():
        if entry.get(name) != value:
            entry[name] = value
    for name in drop:
        if name in entry:
            del entry[name]


def _check_meaning(path: Path, old: dict[str, Any], new_text: str, target: _Target) -> None:
    """Refuse the edit unless `new_text`, read as TOML, is the old file with pdnotes' keys set
    (and the other way of giving the key removed), and nothing else changed."""
    import copy

    expected = copy.deepcopy(old)
    expected["default_model"] = target.alias
    provider = expected.setdefault("providers", {}).setdefault(target.provider_id, {})
    provider.update(target.provider)
    for name in target.drop:
        provider.pop(name, None)
    expected.setdefault("models", {}).setdefault(target.alias, {}).update(target.model)
    try:
        after = tomllib.loads(new_text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        what = "the new text would not be valid TOML"
    else:
        if files.same_toml_value(after, expected):
            return
        what = "other settings in the file would change meaning"
    raise ConfigWriteError(
        f"cannot merge the provider into {path} as it is laid out: {what}; nothing was written",
        fix=f'set default_model, [providers.{target.provider_id}] and [models."{target.alias}"] '
        "by hand, or " + fileio.aside_fix(path, "move the file aside and run the command again"),
    )
