"""Static checks of Factory Droid's configuration (`doctor --client droid`): its files
(`clients.droid.config`), each read as Droid reads it, and the misconfigurations that break it:

- a file that is not Droid's JSONC (a trailing comma is enough): Droid ignores the whole file
  and starts with its own model, which fails with "Authentication failed. Please log in";
- the top-level `model` missing, or naming a `custom:` id no entry has ("Custom model
  configuration is unavailable", exit 1);
- a `customModels` entry Droid drops without a word (no string model, provider or baseUrl,
  a placeholder key), which also renumbers the ids after it;
- `${NAME}` in an apiKey naming an unset variable (Droid sends an empty key), a literal key;
- the base URL problems every client shares (`url_checks`), plus a doubled /v1; the model id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notes_cli.clients import urls
from notes_cli.clients.droid import config
from notes_cli.clients.files import line_of
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_base_url, check_model
from notes_cli.errors import ConfigParseError

CLIENT = "droid"


def file_problems(layers: list[config.Layer]) -> list[Finding]:
    """A file Droid cannot read: it ignores it whole."""
    found: list[Finding] = []
    for layer in layers:
        problem = layer.problem
        if problem is None:
            continue
        if isinstance(problem, ConfigParseError):
            found.append(
                make(
                    "droid-settings-syntax",
                    CLIENT,
                    f"{problem.message}; Droid ignores the whole file (and without its custom "
                    "model starts with its own, which needs a Factory login)",
                    file=layer.where,
                    line=problem.line,
                    column=problem.column if problem.column is not None else 1,
                )
            )
        else:
            detail = problem.fix or "fix or remove the file"
            found.append(
                make("file-unreadable", CLIENT, problem.message, file=layer.where, detail=detail)
            )
    return found


def check_droid(layers: list[config.Layer], env: Mapping[str, str]) -> list[Finding]:
    usable = [layer for layer in layers if layer.data is not None]
    if not usable:
        return []
    models = config.custom_models(usable)
    model_id, source = config.selected(usable)
    entry = config.find(models, model_id) if model_id else None
    found = _dropped(usable)
    found += _keys(usable, env, entry)
    found += _selected(model_id, source, entry, models, usable)
    if entry is not None:
        found += _entry(entry)
    return found


def _items(layer: config.Layer) -> list[Any]:
    key = "custom_models" if layer.kind == "legacy" else "customModels"
    items = (layer.data or {}).get(key)
    return items if isinstance(items, list) else []


def _dropped(layers: list[config.Layer]) -> list[Finding]:
    found: list[Finding] = []
    for layer in layers:
        legacy = layer.kind == "legacy"
        base = "base_url" if legacy else "baseUrl"
        for index, item in enumerate(_items(layer)):
            if config.kept(item, legacy):
                continue
            if isinstance(item, dict):
                wanted = ("model", "provider", base)
                missing = [k for k in wanted if not isinstance(item.get(k), str)]
                why = (
                    f"it has no string {' or '.join(missing)}"
                    if missing
                    else "its apiKey is a placeholder (YOUR_API_KEY)"
                )
                what = item.get("displayName") or item.get("model") or f"#{index}"
            else:
                why, what = "it is not an object", f"#{index}"
            found.append(
                make(
                    "droid-entry-dropped",
                    CLIENT,
                    f"customModels entry {what} is dropped by Droid without a word: {why} (the "
                    "entries after it may get other ids)",
                    file=layer.where,
                    line=line_of(layer.text or "", f'"{what}"') if what else None,
                    entry=str(what),
                )
            )
    return found


def _keys(
    layers: list[config.Layer], env: Mapping[str, str], selected: config.CustomModel | None
) -> list[Finding]:
    """apiKey `${NAME}` with NAME unset (Droid sends an empty key: an error in the entry Droid
    starts with, a warning in the others), or a literal key."""
    from notes_cli.clients.git import tracked_by_git

    found: list[Finding] = []
    for layer in layers:
        legacy = layer.kind == "legacy"
        field = "api_key" if legacy else "apiKey"
        for item in _items(layer):
            key = item.get(field) if isinstance(item, dict) else None
            if not isinstance(key, str) or not key or key in config.PLACEHOLDER_KEYS:
                continue
            names = config.ENV_REF.findall(key)
            what = item.get("displayName") or item.get("model")
            line = line_of(layer.text or "", key)
            chosen = selected is not None and selected.layer is layer and selected.api_key == key
            chosen = chosen and selected is not None and selected.model == item.get("model")
            if names and not legacy:
                for name in names:
                    if env.get(name):
                        continue
                    found.append(
                        make(
                            "droid-key-env-unset",
                            CLIENT,
                            f"the apiKey of customModels entry {what} is ${{{name}}}, and "
                            f"${name} is not set: Droid sends an empty key"
                            + (" (the model Droid starts with)" if chosen else ""),
                            severity="error" if chosen else "warning",
                            file=layer.where,
                            line=line,
                            name=name,
                        )
                    )
                continue
            tracked = tracked_by_git(layer.path)
            found.append(
                make(
                    "key-in-file",
                    CLIENT,
                    f"the {field} of custom model {what} holds a literal key in "
                    + ("a file git tracks" if tracked else layer.where),
                    severity="error" if tracked else None,
                    file=layer.where,
                    line=line,
                    how='export the key (export GW_API_KEY=…) and write "apiKey": '
                    '"${GW_API_KEY}" in settings.json (pdnotes config droid --key-env '
                    "GW_API_KEY does); then rotate the key, it sat in a file",
                )
            )
    return found


def _selected(
    model_id: str | None,
    source: config.Layer | None,
    entry: config.CustomModel | None,
    models: list[config.CustomModel],
    layers: list[config.Layer],
) -> list[Finding]:
    if entry is not None or (model_id is not None and not model_id.startswith("custom:")):
        return []  # a Factory model of its own is not pdnotes' to judge
    listed = ", ".join(m.id for m in models) or "none"
    file = source.where if source else layers[0].where
    if model_id is None:
        message = (
            "no top-level model: Droid starts with its own, which needs a Factory login "
            f"(custom models: {listed})"
        )
        line = None
    else:
        message = (
            f'model "{model_id}" is no customModels entry\'s id ({listed}): Droid stops with '
            '"Custom model configuration is unavailable"'
        )
        line = line_of(source.text or "", f'"{model_id}"') if source else None
    suggested = models[0].id if models else "custom:<displayName>-0"
    return [
        make(
            "droid-model-undefined",
            CLIENT,
            message,
            file=file,
            line=line,
            suggested=suggested,
        )
    ]


def _entry(entry: config.CustomModel) -> list[Finding]:
    """The selected entry's base URL and model."""
    layer = entry.layer
    line = line_of(layer.text or "", entry.base_url)
    messages = config.PROVIDERS.get(entry.provider) == "anthropic"
    found = check_base_url(CLIENT, entry.base_url, file=layer.where, line=line, messages=messages)
    path = urls.path_of(entry.base_url).rstrip("/") + "/"
    if "/v1/v1/" in path and urls.has_scheme(entry.base_url):
        fixed = entry.base_url.replace("/v1/v1", "/v1", 1)
        found.append(
            make(
                "base-url-v1-suffix",
                CLIENT,
                f"base URL {entry.base_url} holds /v1 twice: Droid calls "
                + config.request_url(entry.base_url, entry.provider),
                file=layer.where,
                line=line,
                suggested=fixed,
            )
        )
    found += _v1_missing(entry, messages, line)
    found += check_model(CLIENT, entry.model, entry.base_url, file=layer.where, line=None)
    return found


def _v1_missing(entry: config.CustomModel, messages: bool, line: int | None) -> list[Finding]:
    """A gateway pdnotes knows serves its OpenAI API under /v1, and the base URL lacks it."""
    from notes_cli.clients import presets

    url = entry.base_url
    if messages or not urls.has_scheme(url) or urls.has_v1_suffix(url):
        return []
    preset = presets.preset_for_host(urls.host_of(url))
    if preset is None or preset.v1_suffix != "required":
        return []
    suggested = url.rstrip("/") + "/v1"
    return [
        make(
            "droid-v1-missing",
            CLIENT,
            f"base URL {url} has no /v1, but {preset.name} serves its API under /v1: Droid "
            f"calls {config.request_url(url, entry.provider)} (a 404)",
            file=entry.layer.where,
            line=line,
            suggested=suggested,
        )
    ]
