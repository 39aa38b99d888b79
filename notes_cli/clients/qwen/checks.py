"""Static checks of Qwen Code's setup: its settings layers (JSON with comments), the `.env` files
it loads and the environment, resolved the way Qwen Code resolves them
(`clients.qwen.config.resolve`). Each finding names the layer that decides the value."""

from __future__ import annotations

from notes_cli.clients import presets, urls
from notes_cli.clients.files import line_of
from notes_cli.clients.git import tracked_by_git
from notes_cli.clients.qwen.config import (
    MODEL_ENV,
    QwenFile,
    QwenResolved,
)
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_base_url, check_model
from notes_cli.secrets import looks_like_env_name

OPENAI_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", *MODEL_ENV)


def file_problems(layers: list[QwenFile]) -> list[Finding]:
    """A settings file Qwen Code cannot read stops it ("Error in <file>")."""
    found = []
    for layer in layers:
        if layer.problem is None:
            continue
        line = getattr(layer.problem, "line", None)
        column = getattr(layer.problem, "column", None)
        found.append(
            make(
                "qwen-settings-syntax",
                "qwen",
                f"{layer.problem.message}; Qwen Code will not start",
                file=str(layer.path),
                line=line,
                column=column if column is not None else 1,
            )
        )
    return found


def check_qwen(layers: list[QwenFile], resolved: QwenResolved) -> list[Finding]:
    found: list[Finding] = []
    found += _auth_type(resolved)
    if resolved.auth_type != "openai":
        return found + _literal_keys(layers)
    found += _model(resolved)
    found += _base_url(resolved, layers)
    found += _key(resolved)
    found += _dotenv_overrides(resolved)
    found += _literal_keys(layers)
    return found


def _auth_type(resolved: QwenResolved) -> list[Finding]:
    if resolved.auth_type == "openai":
        return []
    set_vars = [name for name in OPENAI_VARIABLES if resolved.env.get(name)]
    providers = resolved.merged.get("modelProviders")
    has_openai_entries = isinstance(providers, dict) and bool(providers.get("openai"))
    if not set_vars and not has_openai_entries:
        return []
    why = (
        f"{', '.join(set_vars)} {'is' if len(set_vars) == 1 else 'are'} set"
        if set_vars
        else "modelProviders.openai lists models"
    )
    current = (
        f"security.auth.selectedType is {resolved.auth_type!r} ({resolved.auth_source})"
        if resolved.auth_type
        else "security.auth.selectedType is not set"
    )
    return [
        make(
            "qwen-auth-type",
            "qwen",
            f"{current} while {why}: Qwen Code does not use the OpenAI-compatible endpoint "
            "(it asks for a login, or fails under -p)",
            file=resolved.auth_source if resolved.auth_type else None,
        )
    ]


def _model(resolved: QwenResolved) -> list[Finding]:
    if not resolved.model:
        return [
            make(
                "qwen-model-missing",
                "qwen",
                "no model.name in the settings and no OPENAI_MODEL / QWEN_MODEL: Qwen Code "
                "sends its built-in default model id, which a gateway rarely serves",
            )
        ]
    found = check_model(
        "qwen", resolved.model, resolved.base_url, file=_file(resolved.model_source), line=None
    )
    providers = resolved.merged.get("modelProviders")
    items = providers.get("openai") if isinstance(providers, dict) else None
    if resolved.provider is None and isinstance(items, list) and items:
        ids = [str(i.get("id")) for i in items if isinstance(i, dict) and i.get("id")]
        found.append(
            make(
                "qwen-provider-missing",
                "qwen",
                f"model {resolved.model!r} ({resolved.model_source}) has no entry in "
                f"modelProviders.openai (ids: {', '.join(ids) or 'none'}): the entries' baseUrl "
                "and envKey do not apply",
                file=resolved.origin.get("modelProviders.openai"),
                model=resolved.model,
            )
        )
    return found


def _file(source: str) -> str | None:
    """The file part of a source label (`/path/settings.json modelProviders…`)."""
    if not source or source.startswith(("$", "environment", "default")):
        return None
    return source.split(" ", 1)[0]


def _base_url(resolved: QwenResolved, layers: list[QwenFile]) -> list[Finding]:
    url = resolved.base_url
    file = _file(resolved.base_url_source)
    line = _line(layers, file, url)
    found = check_base_url("qwen", url, file=file, line=line)
    if not urls.has_scheme(url):
        return found
    path = urls.path_of(url).rstrip("/")
    if "/v1/v1" in path + "/":
        fixed = url.replace("/v1/v1", "/v1", 1)
        found.append(
            make(
                "qwen-v1-doubled",
                "qwen",
                f"base URL {url} ({resolved.base_url_source}) has /v1 twice: Qwen Code calls "
                f"{url.rstrip('/')}/chat/completions, a 404",
                file=file,
                line=line,
                suggested=fixed,
                where=resolved.base_url_source,
            )
        )
        return found
    preset = presets.preset_for_host(urls.host_of(url))
    if preset and preset.v1_suffix == "required" and not urls.has_v1_suffix(url):
        found.append(
            make(
                "qwen-v1-missing",
                "qwen",
                f"base URL {url} ({resolved.base_url_source}) has no /v1, and {preset.name} "
                f"serves its OpenAI API under /v1: Qwen Code calls {url.rstrip('/')}"
                "/chat/completions, a 404",
                file=file,
                line=line,
                suggested=url.rstrip("/") + "/v1",
                where=resolved.base_url_source,
            )
        )
    return found


def _line(layers: list[QwenFile], file: str | None, needle: str) -> int | None:
    for layer in layers:
        if file and str(layer.path) == file and layer.text:
            return line_of(layer.text, needle)
    return None


def _key(resolved: QwenResolved) -> list[Finding]:
    provider = resolved.provider or {}
    env_key = provider.get("envKey")
    if isinstance(env_key, str) and env_key and not looks_like_env_name(env_key):
        return [
            make(
                "qwen-key-env-unset",
                "qwen",
                f"envKey of modelProviders.openai[{resolved.model}] holds what looks like a key, "
                "not a variable name",
                variant="literal",
                file=_file(resolved.provider_source),
            )
        ]
    if isinstance(env_key, str) and env_key and not resolved.env.get(env_key):
        if resolved.key:
            return [
                make(
                    "qwen-key-env-unset",
                    "qwen",
                    f"${env_key} (envKey of modelProviders.openai[{resolved.model}]) is unset "
                    f"or not exported: Qwen Code sends the key from {resolved.key_source} "
                    "instead",
                    severity="warning",
                    variable=env_key,
                )
            ]
        return [
            make(
                "qwen-key-env-unset",
                "qwen",
                f"${env_key} (envKey of modelProviders.openai[{resolved.model}]) is unset or "
                "not exported, and there is no OPENAI_API_KEY or security.auth.apiKey: Qwen "
                'Code 0.24 stops with "Missing API key for OpenAI-compatible auth. Set the '
                f"'{env_key}' environment variable.\"",
                variable=env_key,
            )
        ]
    if not resolved.key:
        return [
            make(
                "qwen-key-env-unset",
                "qwen",
                "no key: OPENAI_API_KEY is unset or not exported and the settings name no "
                'envKey or security.auth.apiKey: Qwen Code 0.24 stops with "Missing API key for '
                "OpenAI-compatible auth. Set settings.security.auth.apiKey, or set the "
                "'OPENAI_API_KEY' environment variable.\"",
                variable="OPENAI_API_KEY",
            )
        ]
    return []


def _dotenv_overrides(resolved: QwenResolved) -> list[Finding]:
    """A `.env` file whose value wins over a value the settings files hold (Qwen Code loads
    `.env` into its environment, and OPENAI_* variables outrank security.auth.*)."""
    security = resolved.merged.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    auth = auth if isinstance(auth, dict) else {}
    base_source = resolved.env.source("OPENAI_BASE_URL")
    key_source = resolved.env.source("OPENAI_API_KEY")
    won = (
        ("OPENAI_BASE_URL", base_source, "baseUrl", "base URL",
         resolved.base_url_source == base_source),
        ("OPENAI_API_KEY", key_source, "apiKey", "key", resolved.key_source == "$OPENAI_API_KEY"),
    )  # fmt: skip
    found = []
    for variable, source, setting, what, wins in won:
        if not (wins and _is_dotenv(source) and setting in auth):
            continue
        settings_file = resolved.origin.get(f"security.auth.{setting}", "the settings")
        found.append(
            make(
                "qwen-dotenv-override",
                "qwen",
                f"{variable} from {source} decides Qwen Code's {what}, over "
                f"security.auth.{setting} in {settings_file}",
                file=source,
                variable=variable,
            )
        )
    return found


def _is_dotenv(source: str) -> bool:
    return source.endswith(".env")


def _literal_keys(layers: list[QwenFile]) -> list[Finding]:
    """A literal `security.auth.apiKey` (not `$VAR`, not pdnotes' placeholder)."""
    found = []
    for layer in layers:
        data = layer.data or {}
        security = data.get("security")
        auth = security.get("auth") if isinstance(security, dict) else None
        key = auth.get("apiKey") if isinstance(auth, dict) else None
        if not isinstance(key, str) or not key or key.startswith("$"):
            continue
        if key in presets.placeholder_tokens():
            continue
        tracked = tracked_by_git(layer.path)
        found.append(
            make(
                "key-in-file",
                "qwen",
                "security.auth.apiKey holds a literal key in "
                + ("a file git tracks" if tracked else layer.path.name),
                severity="error" if tracked else None,
                file=str(layer.path),
                line=line_of(layer.text or "", '"apiKey"'),
                how="pdnotes config qwen --key-env NAME (a modelProviders envKey)",
            )
        )
    return found
