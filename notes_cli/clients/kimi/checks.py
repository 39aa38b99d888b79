"""Static checks of Kimi Code's config.toml (`doctor --client kimi`), read as Kimi Code reads it
(`clients.kimi.config`). What stops Kimi Code, each checked against the real `kimi -p` 2.1.0:

- a config.toml that is not TOML: Kimi Code ignores it whole ("No model configured");
- `default_model` unset or naming no `[models]` entry ("Model … is not configured");
- the selected model's provider not in `[providers]`, or the model without a model id or a
  positive `max_context_size` ("must define a positive max_context_size");
- `api_key_env` naming an unset variable ("… the environment variable is not set or is
  empty"), or both `api_key` and `api_key_env` ("mutually exclusive");

and what makes every turn fail at a real server: no `max_output_size` (Kimi Code then asks for
`max_tokens` = the whole window, which leaves the prompt no room), or one not below the window;
a literal key in the file (`key-in-file`); the base URL problems every client shares, a doubled
/v1 and a missing /v1 for a gateway that serves its API under /v1; the model id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notes_cli.clients import presets, urls
from notes_cli.clients.files import lines_of, toml_key_line
from notes_cli.clients.kimi import config
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_base_url, check_model
from notes_cli.errors import ConfigParseError, InputError
from notes_cli.secrets import looks_like_env_name

CLIENT = "kimi"


def read(home: Path | None) -> tuple[config.KimiFile | None, list[Finding]]:
    """config.toml as doctor reads it: the file, or a finding for a file that does not read."""
    from notes_cli import fileio

    path = config.config_path(home)
    try:
        return config.read_file(home), []
    except ConfigParseError as exc:
        finding = make(
            "kimi-config-syntax",
            CLIENT,
            f"{exc.message.removesuffix('; the file was not changed')}; Kimi Code ignores the "
            'whole file and stops with "No model configured"',
            file=str(path),
            line=exc.line,
            column=exc.column if exc.column is not None else 1,
        )
        return None, [finding]
    except InputError as exc:
        detail = exc.fix or fileio.aside_fix(path, "fix or remove the file")
        return None, [make("file-unreadable", CLIENT, exc.message, file=str(path), detail=detail)]


def check_kimi(file: config.KimiFile, env: Mapping[str, str]) -> list[Finding]:
    chosen = config.selected(file.data)
    found = _selected(file, chosen)
    for provider_id, provider in config.table(file.data, "providers").items():
        if isinstance(provider, dict):
            found += _key(file, str(provider_id), provider, env, provider_id == chosen.provider_id)
    if chosen.model is not None and chosen.provider is not None:
        found += _model(file, chosen)
    return found


def _line(file: config.KimiFile, kind: str, name: str, key: str | None = None) -> int | None:
    """The line of `key = …` in `[kind.name]` (the header's when `key` is None or not there);
    the name bare or quoted, as TOML allows (`[models."gw/qwen3"]`). Best effort."""
    quoted = "|".join(re.escape(form) for form in (name, f'"{name}"', f"'{name}'"))
    header = re.compile(rf"^\s*\[\s*{re.escape(kind)}\s*\.\s*(?:{quoted})\s*\]")
    lines = lines_of(file.text)
    start = next((n for n, text in enumerate(lines, start=1) if header.match(text)), None)
    if start is None or key is None:
        return start
    wanted = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for number, text in enumerate(lines[start:], start=start + 1):
        if text.lstrip().startswith("["):
            break
        if wanted.match(text):
            return number
    return start


def _selected(file: config.KimiFile, chosen: config.Selected) -> list[Finding]:
    """default_model unset or undefined, its provider missing, or the entry incomplete."""
    where = str(file.path)
    models = config.table(file.data, "models")
    listed = ", ".join(str(alias) for alias in models) or "none"
    if chosen.alias is None or chosen.model is None:
        what = (
            'config.toml sets no default_model: Kimi Code stops with "No model configured"'
            if chosen.alias is None
            else f'default_model "{chosen.alias}" names no [models] entry ({listed}): Kimi Code '
            'stops with "Model … is not configured in config.toml"'
        )
        suggested = next(iter(models), None)
        return [
            make(
                "kimi-default-model-undefined",
                CLIENT,
                what,
                file=where,
                line=toml_key_line(file.text, None, "default_model"),
                suggested=f'"{suggested}"' if suggested else '"<provider>/<model>"',
            )
        ]
    found: list[Finding] = []
    if chosen.provider is None:
        defined = ", ".join(str(p) for p in config.table(file.data, "providers")) or "none"
        found.append(
            make(
                "kimi-model-provider-missing",
                CLIENT,
                f'model "{chosen.alias}" names provider "{chosen.provider_id}", which config.toml '
                f'does not define ({defined}): Kimi Code stops with "Provider … is not '
                'configured"',
                file=where,
                line=_line(file, "models", chosen.alias, "provider"),
                alias=chosen.alias,
                provider=chosen.provider_id or "<id>",
            )
        )
    missing = [
        key
        for key, ok in (
            ("model id", config.text_of(chosen.model.get("model")) is not None),
            (
                "positive max_context_size",
                config.positive(chosen.model.get("max_context_size")) is not None,
            ),
        )
        if not ok
    ]
    if missing:
        found.append(
            make(
                "kimi-model-incomplete",
                CLIENT,
                f'model "{chosen.alias}" has no {" and no ".join(missing)}: Kimi Code stops '
                "before it calls the gateway",
                file=where,
                line=_line(file, "models", chosen.alias),
                alias=chosen.alias,
                missing=missing[0].split()[-1].replace("id", "model"),
            )
        )
    return found


def _key(
    file: config.KimiFile,
    provider_id: str,
    provider: dict[str, Any],
    env: Mapping[str, str],
    chosen: bool,
) -> list[Finding]:
    """api_key_env naming an unset variable, both ways of a key at once, a literal key."""
    from notes_cli.clients.git import tracked_by_git

    where = str(file.path)
    literal, name = provider.get("api_key"), provider.get("api_key_env")
    found: list[Finding] = []
    if config.text_of(literal) and config.text_of(name):
        found.append(
            make(
                "kimi-key-conflict",
                CLIENT,
                f"[providers.{provider_id}] sets both api_key and api_key_env: Kimi Code refuses "
                'the provider ("mutually exclusive")',
                severity="error" if chosen else "warning",
                file=where,
                line=_line(file, "providers", provider_id, "api_key"),
                provider=provider_id,
            )
        )
    if isinstance(name, str) and name.strip() and not env.get(name.strip()):
        shaped = looks_like_env_name(name.strip())
        found.append(
            make(
                "kimi-key-env-unset",
                CLIENT,
                f'[providers.{provider_id}] reads its key from api_key_env = "'
                + (name.strip() if shaped else "…")
                + '", which is not set: Kimi Code stops ("the environment variable is not set '
                'or is empty")'
                + ("" if shaped else "; and that value looks like a key, not a variable's name"),
                severity="error" if chosen else "warning",
                file=where,
                line=_line(file, "providers", provider_id, "api_key_env"),
                variable=name.strip() if shaped else "GW_API_KEY",
            )
        )
    if isinstance(literal, str) and literal.strip() and literal not in presets.placeholder_tokens():
        tracked = tracked_by_git(file.path)
        found.append(
            make(
                "key-in-file",
                CLIENT,
                f"[providers.{provider_id}] api_key holds a literal key in "
                + ("a file git tracks" if tracked else where),
                severity="error" if tracked else None,
                file=where,
                line=_line(file, "providers", provider_id, "api_key"),
                how=f"pdnotes config kimi --provider {provider_id} --key-env NAME (written as "
                'api_key_env = "NAME"); then rotate the key, it sat in a file',
            )
        )
    return found


def _model(file: config.KimiFile, chosen: config.Selected) -> list[Finding]:
    """The selected model's output size, base URL and id."""
    assert chosen.model is not None and chosen.provider is not None and chosen.alias is not None
    model, provider = chosen.model, chosen.provider
    where = str(file.path)
    found: list[Finding] = []
    window = config.positive(model.get("max_context_size"))
    output = config.positive(model.get("max_output_size"))
    if window is not None and (output is None or output >= window):
        suggested = min(max(window // 8, 1), config.OUTPUT_TOKEN_MAX)
        found.append(
            make(
                "kimi-output-size-missing",
                CLIENT,
                f'model "{chosen.alias}" '
                + (
                    f"has no max_output_size: Kimi Code asks each turn for max_tokens = "
                    f"{window}, the whole window"
                    if output is None
                    else f"has max_output_size {output}, not below its max_context_size {window}"
                )
                + ", which leaves the prompt no room: a server that checks prompt + max_tokens "
                "against its window refuses every turn",
                file=where,
                line=_line(file, "models", chosen.alias, "max_output_size"),
                alias=chosen.alias,
                suggested=suggested,
            )
        )
    base = config.base_url_of(model, provider)
    kind = config.protocol_of(model, provider)
    protocol = config.PROTOCOLS.get(str(kind))
    if base is None or protocol is None:
        return found
    line = _line(file, "providers", str(chosen.provider_id), "base_url")
    messages = protocol == "anthropic"
    found += check_base_url(CLIENT, base, file=where, line=line, messages=messages)
    found += _v1(base, protocol, where, line, str(chosen.provider_id))
    found += check_model(CLIENT, config.text_of(model.get("model")), base, file=where, line=None)
    return found


def _v1(url: str, protocol: Any, file: str, line: int | None, provider_id: str) -> list[Finding]:
    """/v1 twice (a /v1 pasted onto a root that had it), or none for a gateway serving its
    OpenAI API under /v1: Kimi Code calls the URL + its path as it stands, a 404."""
    if not urls.has_scheme(url) or urls.url_problem(url) is not None:
        return []
    calls = config.request_url(url, protocol)
    if "/v1/v1/" in urls.path_of(url).rstrip("/") + "/":
        return [
            make(
                "base-url-v1-suffix",
                CLIENT,
                f"base URL {url} holds /v1 twice: Kimi Code calls {calls}",
                file=file,
                line=line,
                suggested=url.replace("/v1/v1", "/v1", 1),
            )
        ]
    if protocol == "anthropic" or urls.has_v1_suffix(url):
        return []
    preset = presets.preset_for_host(urls.host_of(url))
    if preset is None or preset.v1_suffix != "required":
        return []
    suggested = url.rstrip("/") + "/v1"
    return [
        make(
            "kimi-v1-missing",
            CLIENT,
            f"base URL {url} has no /v1, and {preset.name} serves its OpenAI API under /v1: Kimi "
            f"Code calls {calls}, a 404",
            file=file,
            line=line,
            suggested=suggested,
            provider=provider_id,
        )
    ]
