"""Merge a provider into Codex's `config.toml`, changing only what pdnotes owns.

Owned: the top-level `model` and `model_provider`, and inside `[model_providers.<id>]` the keys
set here (`name`, `base_url`, `env_key`, `wire_api`, `query_params`). Everything else — comments,
order, blank lines, other providers, MCP servers, trust entries, profiles, unknown keys — keeps
its bytes, because the document is edited in place with tomlkit and a key is only assigned when
its value really changes.

tomlkit renders a document in its own order, so an edit can land where TOML reads it as part of
another table (a `[model_providers.x]` header placed above `model = …`). The new text is
therefore parsed again and must mean exactly the old file plus pdnotes' keys; otherwise the
write is refused (`ConfigWriteError`) and nothing is written.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

from notes_cli import fileio
from notes_cli.clients import files, presets, toml_bounds, urls
from notes_cli.clients.codex import catalog as codex_catalog
from notes_cli.clients.codex.home import codex_config_path
from notes_cli.clients.endpoint import join_url
from notes_cli.clients.model_limits import LimitsFetcher, ModelLimits
from notes_cli.clients.plan import WritePlan, export_line, secret_values
from notes_cli.errors import ConfigWriteError, InputError, UsageError
from notes_cli.secrets import looks_like_env_name

RESERVED_PROVIDER_IDS = ("openai", "ollama", "lmstudio")
"""Custom providers may not use these ids (Codex refuses to load the config)."""


CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --env-key GW_API_KEY "
    "(Codex sends it as Authorization: Bearer); a gateway that wants another header takes "
    'env_http_headers = { "x-api-key" = "GW_API_KEY" } in [model_providers.<id>]'
)


@dataclass(frozen=True)
class CodexOptions:
    """`pdnotes config codex` flags; None means "from the preset, else keep the file's"."""

    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    provider: str | None = None
    env_key: str | None = None
    wire_api: str = "responses"
    context_window: int | None = None  # tokens; written as model_context_window
    # Reads the window from the gateway's GET /models (the CLI hands in gateway.model_limits'
    # fetch_limits: clients/ does no HTTP); None: the window is `context_window` or none.
    fetch_limits: LimitsFetcher | None = None
    # Also write a model catalog entry (codex_catalog) and point model_catalog_json at it;
    # None: as the preset says for its own model.
    model_catalog: bool | None = None
    # The installed Codex's version (the catalog entry is that release's fallback metadata),
    # asked only when a catalog is written; None: the newest release pdnotes has data for.
    installed_version: Callable[[], tuple[int, int, int] | None] | None = None
    # Write the profile file $CODEX_HOME/<profile>.config.toml instead of config.toml.
    profile: str | None = None


CODEX_FALLBACK_WINDOW = 272_000
"""The window of Codex's fallback metadata for a model its catalog does not know; Codex applies
`model_context_window` as min(it, the metadata's window), so a larger value is capped here
(openai/codex #35758)."""


PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A profile name pdnotes writes a file for: a plain file-name stem (no path, no dots)."""


def config_file(codex_home: Path | None = None, profile: str | None = None) -> Path:
    """The file `config codex` writes: `$CODEX_HOME/config.toml`, or with `--profile NAME` the
    profile file `$CODEX_HOME/NAME.config.toml` (what `codex --profile NAME` layers over
    config.toml, `clients.layers`)."""
    path = codex_config_path(codex_home)
    if profile is None:
        return path
    if not PROFILE_NAME.fullmatch(profile):
        raise UsageError(
            f"--profile {profile[:40]!r} is not a profile name pdnotes writes a file for",
            fix="use letters, digits, '-' and '_' (it becomes $CODEX_HOME/NAME.config.toml)",
        )
    return path.parent / f"{profile}.config.toml"


def plan_codex(options: CodexOptions, *, codex_home: Path | None = None) -> WritePlan:
    """Build the edit of `$CODEX_HOME/config.toml` (or of the profile's file) for `options`
    (nothing is written)."""
    path = config_file(codex_home, options.profile)
    old_text, doc = files.load_toml(path)
    doc = doc if doc is not None else tomlkit.document()
    target = _resolve(options, doc, path.parent)
    try:
        _set_top_level(doc, "model", target.model)
        _set_top_level(doc, "model_provider", target.provider_id)
        for key, value in target.top.items():
            _set_top_level(doc, key, value)
        _merge_provider(doc, target.provider_id, target.owned)
        new_text = files.dump_toml(doc, old_text)
    except (ValueError, TypeError, KeyError, TOMLKitError) as exc:
        # tomlkit refuses some shapes (e.g. a table inside an inline table); never guess.
        raise ConfigWriteError(
            f"cannot merge the provider into {path} as it is laid out ({exc}); nothing was written",
            fix=f"edit [model_providers.{target.provider_id}] by hand, or "
            + fileio.aside_fix(path, "move the file aside and run the command again"),
        ) from exc
    _check_meaning(path, old_text, new_text, target)
    _check_readable(path, new_text)
    also = (codex_catalog.plan_catalog(*target.catalog),) if target.catalog else ()
    return WritePlan(
        client="codex",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=join_url(target.base_url, "/responses", target.query_params),
        export_line=export_line(target.env_key) if target.env_key else None,
        notes=target.notes,
        redact=secret_values(doc.unwrap()),
        also=also,
    )


@dataclass(frozen=True)
class _Target:
    """What the write will set: flags over preset over the file's current values."""

    provider_id: str
    model: str
    base_url: str
    env_key: str | None
    query_params: dict[str, str]
    owned: dict[str, Any]
    notes: tuple[str, ...]
    top: dict[str, Any]  # further top-level keys pdnotes sets (model_context_window, …)
    catalog: tuple[Path, dict[str, Any]] | None = None  # the catalog file and the model's entry


def _resolve(options: CodexOptions, doc: TOMLDocument, codex_home: Path) -> _Target:
    preset = presets.load_preset(options.preset) if options.preset else None
    openai_preset = preset.openai if preset else None
    _check_wire_api(options.wire_api)
    provider_id = _provider_id(options, preset, doc)
    current = _existing_provider(doc, provider_id)
    raw_url = options.base_url or (openai_preset.base_url if openai_preset else None)
    raw_url = raw_url or _str(current.get("base_url"))
    if not raw_url:
        raise UsageError(
            f"no base URL for provider {provider_id!r}",
            fix="pass --base-url https://…/api or a --preset",
        )
    cleaned = urls.clean_base_url(
        raw_url,
        suffixes=urls.OPENAI_ENDPOINT_SUFFIXES,
        strip_v1=_v1_forbidden(raw_url, preset),
        credential_fix=CREDENTIAL_FIX,
    )
    model = options.model or (preset.model if preset else None) or _str(doc.get("model"))
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as your gateway's console shows it",
        )
    env_key = _env_key(options, preset, current)
    name = _str(current.get("name")) or (preset.name if preset else None) or provider_id
    owned: dict[str, Any] = {"name": name, "base_url": cleaned.base_url}
    if env_key:
        owned["env_key"] = env_key
    owned["wire_api"] = "responses"
    query_params = {**_query_params(current), **cleaned.query_params}
    if cleaned.query_params:
        owned["query_params"] = query_params
    if openai_preset and model == (preset and preset.model):
        if options.context_window is None and options.fetch_limits is None:
            options = replace(options, context_window=openai_preset.context_window)
        if options.model_catalog is None:
            options = replace(options, model_catalog=openai_preset.model_catalog)
    top, notes, limits = _model_metadata(options, cleaned.base_url, env_key, model)
    catalog = None
    if options.model_catalog:
        window = top.get("model_context_window")
        catalog, said = _catalog(options, doc, model, window, limits, codex_home)
        configured = doc.get("model_catalog_json")  # a catalog the file names keeps its spelling
        named = str(configured) if isinstance(configured, str) and configured else str(catalog[0])
        top["model_catalog_json"] = named
        notes += said
    return _Target(
        provider_id, model, cleaned.base_url, env_key, query_params, owned,
        cleaned.notes + tuple(notes), top, catalog,
    )  # fmt: skip


def _catalog(
    options: CodexOptions,
    doc: TOMLDocument,
    model: str,
    window: int | None,
    limits: ModelLimits | None,
    codex_home: Path,
) -> tuple[tuple[Path, dict[str, Any]], tuple[str, ...]]:
    """The catalog file and `model`'s entry in it, and what to say of them."""
    version = options.installed_version() if options.installed_version else None
    data = codex_catalog.catalog_data(version)
    path = codex_catalog.catalog_path(doc.get("model_catalog_json"), codex_home)
    reasoning = limits.reasoning if limits else None
    entry = codex_catalog.model_entry(data, model, window, reasoning)
    said = [
        f"model catalog {path}: {model} as Codex {data.version}'s own fallback metadata"
        + (f" with a {window}-token window" if window else " (its 272000-token window)")
        + ("" if reasoning is None else (", reasoning levels" if reasoning else ", no reasoning"))
        + "; Codex then lists only the catalog's models in its picker"
    ]
    if limits and limits.max_output_tokens:
        said.append(
            f"Codex {data.version} has no place for a model's output limit "
            f"({limits.max_output_tokens}); it is not written"
        )
    return (path, entry), tuple(said)


def _model_metadata(
    options: CodexOptions, base_url: str, env_key: str | None, model: str
) -> tuple[dict[str, Any], list[str], ModelLimits | None]:
    """`model_context_window` from the flag or the gateway's /models, what to say of it, and
    the limits the gateway stated."""
    window, notes, limits = options.context_window, [], None
    if options.fetch_limits is not None:
        limits = options.fetch_limits(base_url, env_key, model)
        window = limits.context_window
        said = [f"context window {window} ({limits.field})"]
        if limits.max_output_tokens:
            said.append(f"output limit {limits.max_output_tokens}")
        if limits.reasoning is not None:
            said.append("reasons" if limits.reasoning else "does not reason")
        notes.append(f"the gateway's /models says {model}: " + ", ".join(said))
        if not options.model_catalog and (limits.max_output_tokens or limits.reasoning is not None):
            notes.append(
                "Codex has no config key for a model's reasoning support (only a model "
                "catalog carries it: --model-catalog); it is not written"
            )
    if window is None:
        return {}, notes, limits
    if window > CODEX_FALLBACK_WINDOW and not options.model_catalog:
        notes.append(
            f"Codex caps model_context_window at its own metadata's window: for a model its "
            f"catalog does not know that is {CODEX_FALLBACK_WINDOW} tokens, so {window} acts as "
            f"{CODEX_FALLBACK_WINDOW} until a model catalog names {model}"
        )
    return {"model_context_window": window}, notes, limits


def _check_wire_api(wire_api: str) -> None:
    if wire_api == "responses":
        return
    if wire_api == "chat":
        raise UsageError(
            'wire_api = "chat" is no longer supported by Codex (removed in Feb 2026); '
            "Codex only speaks the Responses API",
            fix="leave --wire-api out (responses is the only value)",
        )
    raise UsageError(f"unknown --wire-api {wire_api!r}", fix="use --wire-api responses")


def _provider_id(options: CodexOptions, preset: presets.Preset | None, doc: TOMLDocument) -> str:
    provider = options.provider or (preset.openai.provider_id if preset and preset.openai else None)
    if provider is None:
        existing = _str(doc.get("model_provider"))
        if existing and existing not in RESERVED_PROVIDER_IDS:
            provider = existing
    if not provider:
        raise UsageError(
            "which provider? none given and config.toml selects none",
            fix="pass --preset (" + ", ".join(presets.preset_names()) + ") or --provider ID",
        )
    if provider in RESERVED_PROVIDER_IDS:
        raise UsageError(
            f"{provider!r} is a reserved built-in Codex provider id and cannot be redefined",
            fix=f"use another id, e.g. --provider {provider}-custom",
        )
    return provider


def _env_key(
    options: CodexOptions, preset: presets.Preset | None, current: dict[str, Any]
) -> str | None:
    env_key = options.env_key or (preset.openai.env_key if preset and preset.openai else None)
    env_key = env_key or _str(current.get("env_key"))
    if env_key and not looks_like_env_name(env_key):
        # Never echo the value: it is probably the key itself.
        raise UsageError(
            "--env-key takes the NAME of an environment variable, not the key itself",
            fix="export the key (export TAOTOKEN_API_KEY=…) and pass --env-key TAOTOKEN_API_KEY",
        )
    return env_key


def _v1_forbidden(url: str, preset: presets.Preset | None) -> bool:
    """Strip a pasted /v1 only for a host whose preset says its API root has none."""
    if not urls.has_scheme(url):
        return False
    known = preset or presets.preset_for_host(urls.host_of(url))
    return bool(known and known.v1_suffix == "forbidden" and urls.host_of(url) in _hosts(known))


def _hosts(preset: presets.Preset) -> set[str]:
    return set(preset.hosts) | {h.split(":", 1)[0] for h in preset.hosts if ":" not in h}


def _existing_provider(doc: TOMLDocument, provider_id: str) -> dict[str, Any]:
    providers = doc.get("model_providers")
    table = providers.get(provider_id) if isinstance(providers, dict) else None
    return dict(table) if isinstance(table, dict) else {}


def _query_params(current: dict[str, Any]) -> dict[str, str]:
    value = current.get("query_params")
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    return str(value) if isinstance(value, str) and value else None


def _set_top_level(doc: TOMLDocument, key: str, value: str | int) -> None:
    """Set a top-level key in place. A new key goes after the last top-level key, before the
    first table (tomlkit's public `doc[key] = value` does exactly that), never into a table,
    where TOML would read it as that table's key. (It once went beside its sibling `model`
    through tomlkit's private `_insert_after`, which tomlkit 0.15 removed: issue 35.)"""
    if key not in doc or doc[key] != value:
        doc[key] = value


def _dotted_piece(doc: TOMLDocument, key: str) -> Table | None:
    """The top-level `key.…` dotted-key table (`model_providers.other.name = …`), if any."""
    for item_key, item in doc.body:
        if item_key is not None and item_key.key == key and item_key.is_dotted():
            return item if isinstance(item, Table) else None
    return None


def _merge_provider(doc: TOMLDocument, provider_id: str, owned: dict[str, Any]) -> None:
    providers = doc.get("model_providers")
    if providers is None:
        providers = tomlkit.table(is_super_table=True)
        doc["model_providers"] = providers
    if not isinstance(providers, dict):
        raise UsageError(
            "model_providers in config.toml is not a table",
            fix="make it [model_providers.<id>] tables",
        )
    table = providers.get(provider_id)
    dotted = _dotted_piece(doc, "model_providers")
    if table is None and dotted is not None:
        # The file defines providers with top-level dotted keys: a [model_providers.<id>]
        # table added there would render above the top-level keys and swallow them, so the
        # new provider is dotted keys too (`model_providers.<id>.name = …`).
        for key, value in owned.items():
            dotted.append(tomlkit.key([provider_id, key]), _toml_value(value))
        return
    if table is None:
        # Match the file's style: an inline `model_providers = {…}` gets an inline entry.
        inline = isinstance(providers, tomlkit.items.InlineTable)
        table = tomlkit.inline_table() if inline else tomlkit.table()
        for key, value in owned.items():
            table[key] = _toml_value(value)
        providers[provider_id] = table
        return
    if not isinstance(table, dict):
        raise UsageError(
            f"model_providers.{provider_id} in config.toml is not a table",
            fix=f"make it a [model_providers.{provider_id}] table, or choose another --provider",
        )
    for key, value in owned.items():
        if table.get(key) != value:
            table[key] = _toml_value(value)


def _toml_value(value: Any) -> Any:
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    return value


def _check_meaning(path: Path, old_text: str | None, new_text: str, target: _Target) -> None:
    """Refuse the edit unless `new_text`, read as TOML, is the old file with the top-level
    `model` / `model_provider` and the provider's owned keys set, and nothing else changed."""
    expected = tomllib.loads(old_text) if old_text else {}  # parse_toml read it already
    expected["model"] = target.model
    expected["model_provider"] = target.provider_id
    expected.update(target.top)
    providers = expected.setdefault("model_providers", {})
    provider = providers.setdefault(target.provider_id, {}) if isinstance(providers, dict) else None
    if isinstance(provider, dict):
        provider.update(target.owned)
    try:
        after = tomllib.loads(new_text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        what = "the new text would not be valid TOML"
    else:
        if files.same_toml_value(after, expected):
            return
        written = after.get("model_providers")
        if not (
            files.same_toml_value(after.get("model"), target.model)
            and files.same_toml_value(after.get("model_provider"), target.provider_id)
        ):
            what = "TOML would not read the top-level model / model_provider pdnotes set"
        elif not isinstance(written, dict) or not files.same_toml_value(
            written.get(target.provider_id), provider
        ):
            what = f"TOML would not read [model_providers.{target.provider_id}] as pdnotes set it"
        else:
            what = "other settings in the file would change meaning"
    raise ConfigWriteError(
        f"cannot merge the provider into {path} as it is laid out: {what}; nothing was written",
        fix=f"set model, model_provider and [model_providers.{target.provider_id}] by hand, or "
        + fileio.aside_fix(path, "move the file aside and run the command again"),
    )


def _check_readable(path: Path, new_text: str) -> None:
    """Refuse an edit pdnotes could not read back: a file just under a `toml_bounds` limit
    that the provider's few lines push past it."""
    try:
        toml_bounds.check(new_text, path)
    except InputError as exc:
        raise ConfigWriteError(
            f"the rewritten {path} would be past the limits pdnotes reads config.toml within, "
            "so pdnotes could not read it back; nothing was written",
            fix=f'make {path} smaller (old [projects."…"] trust entries, say) and run the '
            "command again",
        ) from exc
