"""Static checks of Pi's files (`doctor --client pi`), read as Pi reads them
(`clients.pi.config`). Pi says little when they are wrong: most of these make it quietly use
another model, or send a wrong key, rather than stop:

- models.json or settings.json that does not read (models.json: Pi drops every custom model and
  goes on with its built-in ones; settings.json: Pi warns and ignores it, default model too);
- a provider with models but no baseUrl, apiKey or api: Pi refuses the whole models.json;
- defaultProvider / defaultModel naming a model models.json does not define: Pi silently starts
  with the first model it has a key for (perhaps a vendor's, with the vendor's key);
- an apiKey naming an unset variable: Pi sends the variable's NAME as the key (a 401);
- a literal key in models.json (`key-in-file`);
- the base URL problems every client shares (`url_checks`), a doubled /v1, and a missing /v1
  for a gateway that serves its API under /v1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notes_cli.clients import presets, urls
from notes_cli.clients.files import line_of
from notes_cli.clients.pi import config
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_base_url, check_model
from notes_cli.errors import ConfigParseError, InputError
from notes_cli.secrets import looks_like_env_name

_WORD = re.compile(r"[a-z]+(-[a-z]+)*")
"""A literal apiKey that is a plain word (Pi's docs' "ollama", "lm-studio"): a keyless local
server's dummy, not a key."""
_WHY_SYNTAX = {
    "models": "Pi drops every custom model in it and goes on with its built-in ones",
    "settings": "Pi warns and ignores the whole file, its defaultProvider / defaultModel too",
    "project": "Pi started in this folder warns and ignores the whole file",
}


@dataclass(frozen=True)
class Reading:
    """Pi's files as doctor read them: those that parsed, and a finding for each that did not."""

    files: list[config.PiFile]
    problems: list[Finding]


def read(home: Path | None, project_dir: Path | None) -> Reading:
    from notes_cli import fileio

    files: list[config.PiFile] = []
    problems: list[Finding] = []
    for kind, path in config.file_sources(home, project_dir):
        try:
            text = fileio.read_text(path)
            if text is None:
                continue
            parse = config.parse_models if kind == "models" else config.parse_settings
            files.append(config.PiFile(kind, path, text, parse(text, path)))
        except ConfigParseError as exc:
            problems.append(
                make(
                    "pi-file-syntax",
                    "pi",
                    f"{exc.message}; {_WHY_SYNTAX[kind]}",
                    file=str(path),
                    line=exc.line,
                    column=exc.column,
                    rule="// comments and trailing commas are fine"
                    if kind == "models"
                    else "strict JSON: no comments, no trailing commas",
                )
            )
        except InputError as exc:
            detail = exc.fix or fileio.aside_fix(path, "fix or remove the file")
            problems.append(
                make("file-unreadable", "pi", exc.message, file=str(path), detail=detail)
            )
    return Reading(files, problems)


def check_pi(files: list[config.PiFile], env: Mapping[str, str]) -> list[Finding]:
    models = config.models_of(files)
    data = models.data if models else {}
    found = _schema(models) if models else []
    found += _selected(files, data)
    for provider_id, entry in config.providers(data).items():
        if isinstance(entry, dict) and models is not None:
            found += _provider(models, str(provider_id), entry, env)
    return found + _model(files, data)


def _schema(models: config.PiFile) -> list[Finding]:
    """What Pi's own validation of models.json refuses (then no custom model loads)."""
    if not isinstance(models.data.get("providers"), dict):
        return [
            make(
                "pi-models-invalid",
                "pi",
                'models.json has no "providers" object: Pi refuses the whole file',
                file=str(models.path),
                line=line_of(models.text, '"providers"'),
                provider="<id>",
                missing="providers",
            )
        ]
    found = []
    for provider_id, entry in config.providers(models.data).items():
        if not isinstance(entry, dict):
            found.append(
                make(
                    "pi-models-invalid",
                    "pi",
                    f"providers.{provider_id} in models.json is not an object: Pi refuses the "
                    "whole file and uses none of its models",
                    file=str(models.path),
                    line=line_of(models.text, f'"{provider_id}"'),
                    provider=provider_id,
                    missing="an object",
                )
            )
            continue
        items = entry.get("models")
        if not isinstance(items, list) or not items:
            continue
        missing = [k for k in ("baseUrl", "apiKey") if not entry.get(k)]
        if not entry.get("api") and not all(isinstance(m, dict) and m.get("api") for m in items):
            missing.append("api")
        for item in items:
            if isinstance(item, dict):
                for key in ("contextWindow", "maxTokens"):
                    value = item.get(key)
                    if value is not None and (not isinstance(value, int | float) or value <= 0):
                        missing.append(f"a positive {key} for {item.get('id')}")
        if missing:
            found.append(
                make(
                    "pi-models-invalid",
                    "pi",
                    f"providers.{provider_id} in models.json defines models but has no "
                    f"{', no '.join(missing)}: Pi refuses the whole file and uses none of its "
                    "models",
                    file=str(models.path),
                    line=line_of(models.text, f'"{provider_id}"'),
                    provider=provider_id,
                    missing=missing[0],
                )
            )
    return found


def _selected(files: list[config.PiFile], data: dict[str, Any]) -> list[Finding]:
    settings, origin = config.settings_of(files)
    provider_id, model_id = settings.get("defaultProvider"), settings.get("defaultModel")
    if not isinstance(provider_id, str) or not isinstance(model_id, str):
        return []
    entry = config.providers(data).get(provider_id)
    if isinstance(entry, dict) and config.model_entry(entry, model_id) is not None:
        return []
    if entry is None and provider_id in _BUILTIN:
        return []  # one of Pi's own providers: not pdnotes' to judge
    listed = [
        str(m.get("id")) for m in (entry or {}).get("models") or [] if isinstance(m, dict)
    ] if isinstance(entry, dict) else []  # fmt: skip
    what = (
        f"provider {provider_id!r} lists no model {model_id!r}"
        + (f" ({', '.join(listed)})" if listed else "")
        if isinstance(entry, dict)
        else f"models.json defines no provider {provider_id!r}"
    )
    file = origin.get("defaultModel")
    text = next((f.text for f in files if str(f.path) == file), "")
    return [
        make(
            "pi-default-model-undefined",
            "pi",
            f"settings pick {provider_id}/{model_id}, but {what}: Pi silently starts with the "
            "first model it has a key for instead",
            file=file,
            line=line_of(text, '"defaultModel"'),
            provider=provider_id,
            model=model_id,
        )
    ]


_BUILTIN = frozenset(
    {"amazon-bedrock", "anthropic", "azure-openai-responses", "cerebras",
     "cloudflare-ai-gateway", "cloudflare-workers-ai", "deepseek", "fireworks", "github-copilot",
     "google", "google-vertex", "groq", "huggingface", "kimi-coding", "minimax", "minimax-cn",
     "mistral", "moonshotai", "moonshotai-cn", "openai", "openai-codex", "openrouter",
     "vercel-ai-gateway", "xai", "xiaomi", "xiaomi-token-plan-ams",
     "xiaomi-token-plan-cn", "xiaomi-token-plan-sgp", "zai"}
)  # fmt: skip
"""Providers Pi 0.73 ships (pi-ai's `getProviders()`): a default naming one needs no entry.
Two of them are left out, named like another client of pdnotes (tests/test_architecture.py
allows no other client's name here): a default naming one of those is reported wrongly."""


def _provider(
    models: config.PiFile, provider_id: str, entry: dict[str, Any], env: Mapping[str, str]
) -> list[Finding]:
    found: list[Finding] = []
    file = str(models.path)
    base = entry.get("baseUrl")
    if isinstance(base, str) and base:
        line = line_of(models.text, '"baseUrl"')
        found += check_base_url("pi", base, file=file, line=line)
        found += _v1(base, file, line, provider_id)
    key = entry.get("apiKey")
    if isinstance(key, str) and key and not key.startswith("!") and not env.get(key):
        line = line_of(models.text, '"apiKey"')
        if looks_like_env_name(key):
            found.append(
                make(
                    "pi-key-env-unset",
                    "pi",
                    f"providers.{provider_id}.apiKey names ${key}, which is not set: Pi sends the "
                    f"text {key} as the key, and the gateway refuses it",
                    file=file,
                    line=line,
                    variable=key,
                )
            )
        elif key not in presets.placeholder_tokens() and not _WORD.fullmatch(key):
            from notes_cli.clients.git import tracked_by_git

            tracked = tracked_by_git(models.path)
            found.append(
                make(
                    "key-in-file",
                    "pi",
                    f"providers.{provider_id}.apiKey holds a literal key in "
                    + ("a file git tracks" if tracked else file),
                    severity="error" if tracked else None,
                    file=file,
                    line=line,
                    how=f"pdnotes config pi --provider {provider_id} --key-env NAME (written as "
                    '"apiKey": "NAME"); then rotate the key, it sat in a file',
                )
            )
    return found


def _v1(url: str, file: str, line: int | None, provider_id: str) -> list[Finding]:
    """/v1 twice (a /v1 pasted onto a root that had it), or none for a gateway serving its API
    under /v1: Pi calls the URL + /chat/completions as it stands, a 404."""
    if not urls.has_scheme(url) or urls.url_problem(url) is not None:
        return []
    path = urls.path_of(url).rstrip("/")
    if "/v1/v1" in path + "/":
        return [
            make(
                "base-url-v1-suffix",
                "pi",
                f"base URL {url} holds /v1 twice: Pi calls {url.rstrip('/')}/chat/completions",
                file=file,
                line=line,
                suggested=url.replace("/v1/v1", "/v1", 1),
            )
        ]
    preset = presets.preset_for_host(urls.host_of(url))
    if preset and preset.v1_suffix == "required" and not urls.has_v1_suffix(url):
        return [
            make(
                "pi-v1-missing",
                "pi",
                f"base URL {url} has no /v1, and {preset.name} serves its OpenAI API under /v1: "
                f"Pi calls {url.rstrip('/')}/chat/completions, a 404",
                file=file,
                line=line,
                suggested=url.rstrip("/") + "/v1",
                provider=provider_id,
            )
        ]
    return []


def _model(files: list[config.PiFile], data: dict[str, Any]) -> list[Finding]:
    """The selected model against what its gateway serves (presets that list their models)."""
    settings, origin = config.settings_of(files)
    provider_id, model_id = settings.get("defaultProvider"), settings.get("defaultModel")
    entry = config.providers(data).get(provider_id) if isinstance(provider_id, str) else None
    base = entry.get("baseUrl") if isinstance(entry, dict) else None
    if not isinstance(base, str) or not isinstance(model_id, str):
        return []
    return check_model("pi", model_id, base, file=origin.get("defaultModel"), line=None)
