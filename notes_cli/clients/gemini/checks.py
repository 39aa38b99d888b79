"""Static findings for Gemini CLI: the mistakes that send it to Google instead of the gateway,
or stop it before the first request (rules from Gemini CLI 0.61's source; see
`clients.gemini.layers` for how it assembles settings, .env and folder trust)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from notes_cli import fileio
from notes_cli.clients import dotenv, presets, urls
from notes_cli.clients.gemini.config import (
    AUTH_TYPE,
    BASE_URL_VAR,
    KEY_VAR,
    clean_base_url,
    gemini_dir,
    settings_file,
)
from notes_cli.clients.gemini.layers import GeminiLayers
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.errors import ConfigParseError, UsageError
from notes_cli.secrets import mask_url

_V1BETA = re.compile(r"/v1(beta|alpha)(/|$)")


def check_gemini(layers: GeminiLayers, env: Mapping[str, str]) -> list[Finding]:
    findings = _file_problems(layers)
    if findings:
        return findings  # a file Gemini CLI ignores: what it would do otherwise is moot
    base = layers.env.get(BASE_URL_VAR)
    findings += _trust(layers, base)
    findings += _shadowed(layers, env)
    findings += _overridden(layers, env)
    if base is None:
        return findings + _key(layers)
    url, source = base
    where = _where(layers, source, BASE_URL_VAR)
    findings += _base_url(url, where)
    findings += _auth_type(layers)
    findings += _model(layers)
    findings += _key(layers)
    findings += _usage_statistics(layers)
    return findings


def _file_problems(layers: GeminiLayers) -> list[Finding]:
    found: list[Finding] = []
    for layer in layers.problems:
        problem = layer.problem
        if isinstance(problem, ConfigParseError):
            found.append(
                make(
                    "gemini-settings-syntax",
                    "gemini",
                    problem.message,
                    file=str(layer.path),
                    line=problem.line,
                    column=problem.column,
                )
            )
        elif problem is not None:
            found.append(
                make(
                    "file-unreadable",
                    "gemini",
                    problem.message,
                    file=str(layer.path),
                    detail=problem.fix or fileio.aside_fix(layer.path, "fix or remove the file"),
                )
            )
    return found


def _where(layers: GeminiLayers, source: str, name: str) -> dict[str, object]:
    if source == "environment" or layers.env_file is None:
        return {}
    return {"file": source, "line": dotenv.line_of(layers.env_file_text or "", name)}


def _base_url(url: str, where: dict[str, object]) -> list[Finding]:
    why = urls.url_problem(url)
    if why is not None and why != urls.NO_SCHEME:
        # Gemini CLI stops with "Invalid custom base URL": say which part is wrong
        message = f"{BASE_URL_VAR} {urls.shown_url(url)!r} is not a usable URL: {why}"
        return [
            make(
                "base-url-malformed",
                "gemini",
                message,
                config_client="gemini",
                **where,  # type: ignore[arg-type]
            )
        ]
    if why is not None:
        return []  # Gemini CLI stops with "Invalid custom base URL" itself
    found: list[Finding] = []
    if _V1BETA.search(urls.path_of(url)):
        try:
            suggested = clean_base_url(url).base_url
        except UsageError:
            suggested = "<the root before /v1beta>"
        found.append(
            make(
                "gemini-base-url-v1beta",
                "gemini",
                f"{BASE_URL_VAR}={mask_url(url)} already holds the API version: Gemini CLI "
                f"calls {mask_url(url.rstrip('/'))}/v1beta/models/…, a 404",
                suggested=mask_url(suggested),
                **where,  # type: ignore[arg-type]
            )
        )
    elif urls.has_v1_suffix(url):
        found.append(
            make(
                "gemini-base-url-v1",
                "gemini",
                f"{BASE_URL_VAR}={mask_url(url)} ends in /v1, an OpenAI-compatible root's "
                "shape; Gemini CLI will call …/v1/v1beta/models/…",
                url=mask_url(url),
                **where,  # type: ignore[arg-type]
            )
        )
    preset = presets.preset_for_host(urls.host_of(url))
    if preset is not None and preset.gemini is None and preset.openai is not None:
        command = (
            f"pdnotes config gemini --bridge --preset {preset.key}"
            if preset.model
            else f"pdnotes config gemini --bridge --preset {preset.key} --model <id>"
        )
        found.append(
            make(
                "gemini-chat-only-endpoint",
                "gemini",
                f"{mask_url(url)} is {preset.name}, which speaks chat completions, not Gemini's "
                "generateContent",
                command=command,
                **where,  # type: ignore[arg-type]
            )
        )
    return found


def _auth_type(layers: GeminiLayers) -> list[Finding]:
    selected = layers.value("security", "auth", "selectedType")
    if selected == AUTH_TYPE:
        return []
    file = layers.source_of("security", "auth", "selectedType") or str(settings_file("user"))
    if not selected:
        why = (
            "security.auth.selectedType is unset, so Gemini CLI picks its gateway auth, which "
            "`gemini -p` rejects (Invalid auth method selected)"
        )
    else:
        why = (
            f'security.auth.selectedType is "{selected}": Gemini CLI then ignores '
            f"{BASE_URL_VAR} and signs in to Google"
        )
    return [make("gemini-auth-type", "gemini", why, file=file)]


def _model(layers: GeminiLayers) -> list[Finding]:
    if layers.env.get("GEMINI_MODEL", ("", ""))[0] or layers.value("model", "name"):
        return []
    file = str(settings_file("user"))
    return [
        make(
            "gemini-model-missing",
            "gemini",
            "no model.name in any settings file and no GEMINI_MODEL: Gemini CLI asks the "
            "gateway for its own default model",
            file=file,
        )
    ]


def _usage_statistics(layers: GeminiLayers) -> list[Finding]:
    if layers.value("privacy", "usageStatisticsEnabled") is False:
        return []
    file = str(settings_file("user"))
    return [
        make(
            "gemini-usage-statistics",
            "gemini",
            "Gemini CLI sends usage statistics to play.googleapis.com (on by default), while its "
            "model calls go to the gateway",
            file=file,
        )
    ]


def _key(layers: GeminiLayers) -> list[Finding]:
    if layers.value("security", "auth", "selectedType") not in (AUTH_TYPE, None):
        return []
    if layers.env.get(KEY_VAR, ("", ""))[0]:
        return []
    hidden = layers.hidden_by_trust(KEY_VAR)
    if hidden is not None:  # the real cause: the untrusted folder (as right after `config`)
        return [
            make(
                "gemini-key-missing",
                "gemini",
                f"{KEY_VAR} is unset here: {hidden} sets it, but {layers.cwd} is not trusted by "
                f"Gemini CLI ({layers.trust_source}), which then skips that file",
                variant="untrusted",
                env_file=hidden,
            )
        ]
    hint = ""
    if layers.env_file is not None and KEY_VAR in layers.env_file_values:
        hint = f"; {layers.env_file} sets it, but an untrusted folder hides it"
    elif _set_without_export():
        hint = "; a shell file sets it without export"
    return [
        make(
            "gemini-key-missing",
            "gemini",
            f"{KEY_VAR} is unset: Gemini CLI refuses to start with gemini-api-key auth",
            hint=hint,
        )
    ]


def _set_without_export() -> bool:
    """Whether a common shell start file assigns GEMINI_API_KEY without exporting it."""
    assign = re.compile(rf"^\s*{KEY_VAR}=", re.MULTILINE)
    exported = re.compile(rf"^\s*export\s+{KEY_VAR}\b", re.MULTILINE)
    home = Path.home()
    for name in (".bashrc", ".zshrc", ".profile", ".bash_profile"):
        path = home / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
        except OSError:
            continue
        if assign.search(text) and not exported.search(text):
            return True
    return False


def _trust(layers: GeminiLayers, base: tuple[str, str] | None) -> list[Finding]:
    if layers.trusted:
        return []
    hidden = dotenv.parse(layers.env_file_text or "") if layers.env_file else {}
    user_env = gemini_dir() / ".env"
    wrote = dotenv.parse(_read(user_env)) if user_env.is_file() else {}
    only_in_env_file = base is None and (BASE_URL_VAR in hidden or BASE_URL_VAR in wrote)
    state = "not trusted" if layers.trusted is False else "not trusted yet"
    message = (
        f"{layers.cwd} is {state} by Gemini CLI ({layers.trust_source}): `gemini -p` refuses "
        "to run here, and .gemini/.env is ignored"
    )
    if only_in_env_file:
        message += f", so {BASE_URL_VAR} from it is not used"
    return [
        make(
            "gemini-folder-untrusted",
            "gemini",
            message,
            severity="error" if only_in_env_file else None,
        )
    ]


def _shadowed(layers: GeminiLayers, env: Mapping[str, str]) -> list[Finding]:
    """A .env that Gemini CLI does load but that lacks the base URL, while the user's
    .gemini/.env (which it skipped) has it."""
    if BASE_URL_VAR in env or not layers.trusted or layers.env_file is None:
        return []
    if BASE_URL_VAR in layers.env_file_values:
        return []
    user_env = gemini_dir() / ".env"
    if not user_env.is_file() or user_env.resolve() == layers.env_file.resolve():
        return []
    value = dotenv.parse(_read(user_env)).get(BASE_URL_VAR)
    if value is None:
        return []
    return [
        make(
            "gemini-env-file-shadowed",
            "gemini",
            f"started in {layers.cwd}, Gemini CLI loads {layers.env_file}, not {user_env}, so "
            f"{BASE_URL_VAR} is unset and it calls Google",
            file=str(layers.env_file),
            variable=BASE_URL_VAR,
            value=shlex.quote(mask_url(value)),
        )
    ]


def _overridden(layers: GeminiLayers, env: Mapping[str, str]) -> list[Finding]:
    found: list[Finding] = []
    if layers.env_file is None or not layers.trusted:
        return found
    for name in (BASE_URL_VAR, "GEMINI_MODEL"):
        in_file = layers.env_file_values.get(name)
        if in_file is not None and name in env and env[name] != in_file:
            found.append(
                make(
                    "gemini-env-overridden",
                    "gemini",
                    f"{name} in the environment ({mask_url(env[name])}) wins over "
                    f"{layers.env_file} ({mask_url(in_file)})",
                    file=str(layers.env_file),
                    line=dotenv.line_of(layers.env_file_text or "", name),
                    variable=name,
                )
            )
    return found


def _read(path: Path) -> str:
    from notes_cli import fileio
    from notes_cli.errors import InputError

    try:
        return fileio.read_text(path) or ""
    except InputError:
        return ""
