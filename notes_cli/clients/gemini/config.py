"""Point Gemini CLI at a gateway: its settings.json (JSON with comments) and its .env file.

How Gemini CLI (0.61) finds its endpoint, from its source: the base URL comes only from the
environment variable GOOGLE_GEMINI_BASE_URL, which it also loads from ONE .env file: walking up
from the working folder it takes the first `.gemini/.env` (trusted folders only) or `.env`,
then `~/.gemini/.env` (trusted only), then `~/.env`; a variable already in the environment
wins. The key is GEMINI_API_KEY (sent as `x-goog-api-key`). `security.auth.selectedType` must
be "gemini-api-key": with a base URL and no selected type, Gemini CLI picks its "gateway" auth,
which `gemini -p` rejects ("Invalid auth method selected"). The model is `model.name`.

So `pdnotes config gemini` writes two files as one step (one `WritePlan`: settings.json, with
the .env as its `also`; one backup, all or nothing, one `config undo` restores both):
settings.json gets `security.auth.selectedType` and `model.name` (spliced in place, every
comment and unknown key kept: `clients.jsonc`); `.gemini/.env` beside it gets
GOOGLE_GEMINI_BASE_URL, and GEMINI_API_KEY only for the keyless local presets (a placeholder)
or when explicitly asked (`--write-key-from-env`, mode 0600).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from notes_cli import fileio
from notes_cli.clients import dotenv, files, jsonc, presets, urls
from notes_cli.clients.endpoint import join_url
from notes_cli.clients.git import tracked_by_git
from notes_cli.clients.plan import FileEdit, WritePlan, export_line, secret_values, too_large
from notes_cli.errors import UsageError
from notes_cli.secrets import looks_like_env_name, mask

Scope = Literal["user", "project"]
AUTH_TYPE = "gemini-api-key"
BASE_URL_VAR = "GOOGLE_GEMINI_BASE_URL"
KEY_VAR = "GEMINI_API_KEY"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
DIALECT = jsonc.Dialect("Gemini CLI")  # strip-json-comments, then JSON.parse
_PASTED_PATH = re.compile(r"/(v1beta|v1alpha|v1)(/models(/[^/]*)?)?/?$")

TRUST_NOTE = (
    "Gemini CLI reads .gemini/.env only in a trusted folder, and `gemini -p` refuses an "
    "untrusted one: trust it once in `gemini`, or set GEMINI_CLI_TRUST_WORKSPACE=true for scripts"
)
QUIET_SETTINGS: dict[tuple[str, ...], Any] = {
    ("privacy", "usageStatisticsEnabled"): False,
    ("telemetry", "enabled"): False,
    ("general", "enableAutoUpdate"): False,
    ("general", "enableAutoUpdateNotification"): False,
}
"""`--no-phone-home`: Gemini CLI 0.61 otherwise sends usage statistics to play.googleapis.com
and checks npm for updates, whatever base URL its model calls use."""

CREDENTIAL_FIX = (
    "keep the key out of the URL: export it as GEMINI_API_KEY (Gemini CLI sends it as "
    "x-goog-api-key), or pass --key-env NAME for a key held in another variable"
)


@dataclass(frozen=True)
class GeminiOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    key_env: str | None = None
    write_key_from_env: str | None = None
    scope: Scope = "user"
    no_phone_home: bool = False


def settings_path(
    scope: str, *, gemini_home: Path | None = None, project_dir: Path | None = None
) -> Path:
    if scope not in ("user", "project"):
        raise UsageError(f"unknown --scope {scope!r}", fix="use --scope user or project")
    return settings_file(scope, gemini_home=gemini_home, project_dir=project_dir)


def gemini_dir(override: Path | None = None) -> Path:
    """Gemini CLI's user folder: --gemini-home, else $GEMINI_CLI_HOME/.gemini, else ~/.gemini
    (Gemini CLI puts `.gemini` inside GEMINI_CLI_HOME, as it does inside the home folder)."""
    if override is not None:
        return override.expanduser()
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env).expanduser() if env else Path.home()) / ".gemini"


def settings_file(
    scope: str = "user", *, gemini_home: Path | None = None, project_dir: Path | None = None
) -> Path:
    """Gemini CLI settings for a scope: user (~/.gemini/settings.json) or project
    (<project>/.gemini/settings.json)."""
    if scope == "user":
        return gemini_dir(gemini_home) / "settings.json"
    return (project_dir or Path.cwd()).expanduser() / ".gemini" / "settings.json"


def request_url(base_url: str, model: str | None) -> str:
    """Where Gemini CLI sends a turn: the SDK joins root, API version, model and method."""
    return join_url(
        base_url,
        f"/{API_VERSION}/models/{model or '<model>'}:streamGenerateContent",
        {"alt": "sse"},
    )


def clean_base_url(raw: str) -> urls.CleanUrl:
    """A pasted Gemini root, cleaned: the SDK appends /v1beta/models/… itself, so a pasted
    /v1beta (or a whole method URL) would double it; query parameters cannot be sent."""
    cleaned = urls.clean_base_url(raw, suffixes=(), credential_fix=CREDENTIAL_FIX)
    if cleaned.query_params:
        raise UsageError(
            f"Gemini CLI cannot send query parameters ({', '.join(cleaned.query_params)}) "
            "after its /v1beta/models/… path",
            fix="use a base URL without a query string",
        )
    base, notes = cleaned.base_url, cleaned.notes
    scheme_host, _, path = base.partition("://")
    host, slash, rest = path.partition("/")
    path = slash + rest
    match = _PASTED_PATH.search(re.sub(r":\w+$", "", path))
    if match and match.group(1) != "v1":
        path = path[: match.start()]
        notes += (
            urls.cleaned(
                f"removed the pasted {match.group(0)} (Gemini CLI appends /v1beta/… itself)"
            ),
        )
    return replace(cleaned, base_url=f"{scheme_host}://{host}{path}", notes=notes)


def plan_gemini(
    options: GeminiOptions, *, gemini_home: Path | None = None, project_dir: Path | None = None
) -> WritePlan:
    """Build the step for `options` (nothing is written): settings.json, with the .env beside
    it as the plan's further file (mode 0600 when it will hold a key)."""
    path = settings_path(options.scope, gemini_home=gemini_home, project_dir=project_dir)
    env_path = path.parent / ".env"
    old_text = fileio.read_text(path)
    data = jsonc.parse(old_text, path, DIALECT, keep_numbers=True) if old_text is not None else {}
    preset = presets.load_preset(options.preset) if options.preset else None
    gemini_preset = preset.gemini if preset else None
    if preset and gemini_preset is None:
        raise UsageError(
            f"preset {preset.key!r} has no Gemini-API (generateContent) endpoint for Gemini CLI",
            fix="pass --bridge to reach it through `pdnotes bridge serve`, or pass --base-url",
        )
    old_env = fileio.read_text(env_path)
    env_values = dotenv.parse(old_env or "")
    raw_url = options.base_url or (gemini_preset.base_url if gemini_preset else None)
    raw_url = raw_url or env_values.get(BASE_URL_VAR)
    if not raw_url:
        raise UsageError("no base URL to write", fix="pass --base-url https://… or a --preset")
    cleaned = clean_base_url(raw_url)
    model = options.model or (preset.model if preset else None) or _current_model(data)
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as the gateway serves it",
        )
    _check_objects(data, path)
    updates: dict[tuple[str, ...], Any] = {
        ("security", "auth", "selectedType"): AUTH_TYPE,
        ("model", "name"): model,
    }
    if options.no_phone_home:
        updates.update(QUIET_SETTINGS)
    new_text = _settings_text(old_text, data, updates, path)
    env_text, export_line, notes, mode = _env_edit(
        options, gemini_preset, old_env or "", env_path, cleaned.base_url
    )
    notes = cleaned.notes + notes
    env_text = dotenv.set_value(env_text, BASE_URL_VAR, cleaned.base_url)
    warnings = (TRUST_NOTE, *_warnings(options, env_path, cleaned.base_url))
    redact = secret_values(data, dotenv.parse(old_env or ""), dotenv.parse(env_text))
    redact = tuple(s for s in redact if s not in presets.placeholder_tokens())
    url = request_url(cleaned.base_url, model)
    return WritePlan(
        client="gemini",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=url,
        export_line=export_line,
        notes=notes,
        warnings=warnings,
        redact=redact,
        also=(FileEdit(env_path, old_env, env_text, mode),),
    )


def _settings_text(
    old_text: str | None, data: dict[str, Any], updates: dict[tuple[str, ...], Any], path: Path
) -> str:
    if old_text is not None and all(_get(data, key) == value for key, value in updates.items()):
        return old_text  # already set up: not rewritten at all
    try:
        new_text = jsonc.set_values(old_text or "", updates, DIALECT, path)
    except RecursionError:
        raise too_large(path, None) from None
    return new_text


def _check_objects(data: dict[str, Any], path: Path) -> None:
    """Every object on pdnotes' paths must be an object (a string `model` is the pre-2025
    settings layout, which Gemini CLI migrates itself)."""
    for dotted in (("security",), ("security", "auth"), ("model",), ("privacy",),
                   ("telemetry",), ("general",)):  # fmt: skip
        value = _get(data, dotted)
        if value is not None and not isinstance(value, dict):
            name = ".".join(dotted)
            raise UsageError(
                f'"{name}" in {path} is a JSON {files.json_type_name(value)}, not an object; '
                "pdnotes will not replace it",
                fix=f'make "{name}" an object in {path} (start Gemini CLI once: it migrates old '
                "settings), or edit the file by hand",
            )


def _get(data: dict[str, Any], dotted: tuple[str, ...]) -> Any:
    value: Any = data
    for key in dotted:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value.value if isinstance(value, files.JsonNumber) else value


def _current_model(data: dict[str, Any]) -> str | None:
    value = _get(data, ("model", "name"))
    return value if isinstance(value, str) and value else None


def _env_edit(
    options: GeminiOptions,
    gemini_preset: presets.GeminiPreset | None,
    old_env: str,
    env_path: Path,
    base_url: str,
) -> tuple[str, str | None, tuple[str, ...], int | None]:
    """The .env text with the credential pdnotes was asked to write (or none), the line the
    user still needs, notes, and the mode to force."""
    if options.key_env and options.write_key_from_env:
        raise UsageError("--key-env and --write-key-from-env exclude each other")
    current = dotenv.parse(old_env).get(KEY_VAR)
    placeholder = current in presets.placeholder_tokens()
    if options.write_key_from_env:
        name = _env_name(options.write_key_from_env, "--write-key-from-env")
        value = os.environ.get(name)
        if not value:
            raise UsageError(
                f"{name} is not set in this environment, so there is no key to write",
                fix=f"export {name}=… first (pdnotes never takes a key on the command line)",
            )
        note = f"key {mask(value)} from ${name} written to {env_path} (mode 0600)"
        return dotenv.set_value(old_env, KEY_VAR, value), note, (), 0o600
    if gemini_preset and gemini_preset.placeholder_key and not options.key_env:
        return dotenv.set_value(old_env, KEY_VAR, gemini_preset.placeholder_key), None, (), None
    notes: tuple[str, ...] = ()
    text = old_env
    if placeholder:  # ours, and wrong for any gateway but the local ones
        text = dotenv.set_value(old_env, KEY_VAR, None)
        notes = (f"removed the local placeholder {KEY_VAR} from {env_path}: this gateway needs "
                 "a real key",)  # fmt: skip
    elif current:
        return text, None, (f"{KEY_VAR} is already set in {env_path}; kept",), None
    if not options.key_env and not os.environ.get(KEY_VAR) and urls.is_loopback(base_url):
        # a server on this machine takes no key unless started with one; Gemini CLI refuses to
        # start without GEMINI_API_KEY, so it gets a documented non-secret placeholder
        local = presets.LOCAL_PLACEHOLDER
        notes = (f"a server on this machine needs no key: Gemini CLI, which refuses to start "
                 f"without one, gets the non-secret placeholder {local} in {env_path} (a server "
                 "started with a key: --key-env NAME)",)  # fmt: skip
        return dotenv.set_value(old_env, KEY_VAR, local), None, notes, None
    name = _env_name(options.key_env, "--key-env") if options.key_env else KEY_VAR
    return text, _export_line(name), notes, None


def _export_line(name: str) -> str:
    """Gemini CLI reads only GEMINI_API_KEY (dotenv does not expand `$OTHER`), so a key held in
    another variable is copied into it in the shell."""
    if name != KEY_VAR:
        return f'export {KEY_VAR}="${name}"   # Gemini CLI reads only {KEY_VAR}'
    return export_line(KEY_VAR)


def _env_name(value: str | None, flag: str) -> str:
    if not value or not looks_like_env_name(value):
        raise UsageError(
            f"{flag} takes the NAME of an environment variable, not the key itself",
            fix=f"export the key first and pass its name: {flag} GEMINI_API_KEY",
        )
    return value


def _warnings(options: GeminiOptions, env_path: Path, base_url: str) -> list[str]:
    warnings: list[str] = []
    if urls.has_v1_suffix(base_url):
        warnings.append(
            f"{base_url} ends in /v1, the shape of an OpenAI-compatible root; Gemini CLI will "
            "call …/v1/v1beta/models/…: if the gateway speaks chat completions only, use "
            "--bridge instead"
        )
    read = env_file_read(Path.cwd(), trusted=True)
    if read is not None and read.resolve() != env_path.resolve():
        warnings.append(
            f"Gemini CLI started here loads {read}, not {env_path} (it reads one .env file, "
            f"the nearest): put {BASE_URL_VAR} there too, or run this with --scope project"
        )
    if options.write_key_from_env and tracked_by_git(env_path):
        warnings.append(f"git tracks {env_path}: committing it would publish the key")
    return warnings


def env_file_read(cwd: Path, *, trusted: bool, home: Path | None = None) -> Path | None:
    """The one .env file Gemini CLI loads when started in `cwd` (its `findEnvFile`): walking up
    from `cwd`, `.gemini/.env` (trusted folders only) then `.env`; at the top, `~/.gemini/.env`
    (trusted only), then `~/.env`."""
    home = home or gemini_dir().parent  # GEMINI_CLI_HOME stands in for ~ throughout
    folder = cwd.resolve()
    for _ in range(256):  # bounded: a path has far fewer parts
        if trusted and (folder / ".gemini" / ".env").is_file():
            return folder / ".gemini" / ".env"
        if (folder / ".env").is_file():
            return folder / ".env"
        if folder.parent == folder:
            break
        folder = folder.parent
    if trusted and (home / ".gemini" / ".env").is_file():
        return home / ".gemini" / ".env"
    if (home / ".env").is_file():
        return home / ".env"
    return None
