"""GitHub Copilot CLI's custom model provider (BYOK): the env file `pdnotes config copilot`
writes, and what Copilot will call once it is loaded.

Copilot CLI (npm `@github/copilot`) takes a custom provider from environment variables
(`copilot help providers`): COPILOT_PROVIDER_BASE_URL turns BYOK on, COPILOT_PROVIDER_TYPE
(openai | azure | anthropic) and COPILOT_PROVIDER_WIRE_API (completions | responses) pick the
API, COPILOT_MODEL the model, COPILOT_PROVIDER_MAX_PROMPT_TOKENS / _MAX_OUTPUT_TOKENS its
window, and the key is COPILOT_PROVIDER_BEARER_TOKEN, else the output of
COPILOT_PROVIDER_API_KEY_COMMAND, else COPILOT_PROVIDER_API_KEY. COPILOT_OFFLINE=true keeps it
off GitHub (no login, telemetry or update check).

The one file Copilot reads providers from, $COPILOT_HOME/providers.json (named in its changelog,
in no `help` topic), holds a key only as a literal `apiKey`: no variable or command reaches it
(checked on 1.0.102). So pdnotes writes no provider there. It writes `$COPILOT_HOME/pdnotes.env`,
a file of `NAME=value` lines that it owns, which the user loads in the shell that runs copilot:

    set -a; . ~/.copilot/pdnotes.env; set +a

The key is never in it: `--key-env NAME` becomes COPILOT_PROVIDER_API_KEY_COMMAND='printenv
NAME' (Copilot runs it for each request), or nothing when NAME is COPILOT_PROVIDER_API_KEY
itself. Lines pdnotes does not set (comments, other variables) are kept as they were; a line
that is not a plain `NAME=value` (a `$(…)`, an `if`) makes the file one pdnotes does not edit.

Reading it back (config show, doctor, smoke): the variables of the shell pdnotes runs in win
over the file's, as for every client's environment variables: they are what a copilot started
from this shell gets (doctor says when the file is not loaded, or the shell differs from it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from notes_cli import fileio
from notes_cli.clients import presets, urls
from notes_cli.clients.endpoint import AuthStyle, Endpoint, Protocol, join_url
from notes_cli.clients.model_limits import LimitsFetcher
from notes_cli.clients.plan import WritePlan, export_line
from notes_cli.errors import ConfigParseError, UsageError
from notes_cli.secrets import looks_like_env_name, mask, mask_command, mask_url

FILE_NAME = "pdnotes.env"
BASE_URL = "COPILOT_PROVIDER_BASE_URL"
TYPE = "COPILOT_PROVIDER_TYPE"
WIRE_API = "COPILOT_PROVIDER_WIRE_API"
MODEL = "COPILOT_MODEL"
MODEL_ID = "COPILOT_PROVIDER_MODEL_ID"
WIRE_MODEL = "COPILOT_PROVIDER_WIRE_MODEL"
API_KEY = "COPILOT_PROVIDER_API_KEY"
KEY_COMMAND = "COPILOT_PROVIDER_API_KEY_COMMAND"
BEARER = "COPILOT_PROVIDER_BEARER_TOKEN"
MAX_PROMPT = "COPILOT_PROVIDER_MAX_PROMPT_TOKENS"
MAX_OUTPUT = "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS"
OFFLINE = "COPILOT_OFFLINE"
NAMES = (BASE_URL, TYPE, WIRE_API, MODEL, MODEL_ID, WIRE_MODEL, API_KEY, KEY_COMMAND, BEARER,
         MAX_PROMPT, MAX_OUTPUT, OFFLINE)  # fmt: skip
"""The variables pdnotes reads (Copilot's BYOK settings and its offline switch)."""
SECRET_NAMES = (API_KEY, BEARER)
OUTPUT_TOKEN_MAX = 32000
"""pdnotes' default output limit stays under this (an eighth of the window otherwise)."""
KEY_CREDENTIAL_FIX = (
    "keep the key out of the URL: export it (export GW_API_KEY=…) and pass --key-env GW_API_KEY "
    "(Copilot then runs `printenv GW_API_KEY` for each request)"
)
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_BARE = r"[A-Za-z0-9_./:@%+,=-]*"
_LINE = re.compile(
    rf"^[ \t]*(?P<export>export[ \t]+)?(?P<name>{_NAME})="
    rf"(?P<value>'[^']*'|\"[^\"$`\\]*\"|{_BARE})(?:[ \t]+#.*|[ \t]*)$"
)
_PRINTENV = re.compile(
    rf"^\s*(?:printenv\s+[\"']?({_NAME})[\"']?|echo\s+\"?\$\{{?({_NAME})\}}?\"?)\s*$"
)
"""A key command pdnotes can read without running it: `printenv NAME` or `echo $NAME`."""
HEADER = """\
# GitHub Copilot CLI's custom model provider (BYOK), written by `pdnotes config copilot`.
# Copilot reads these from the environment only: load the file in the shell that runs copilot,
#   set -a; . {path}; set +a
# No key is kept here (COPILOT_PROVIDER_API_KEY_COMMAND reads it from its variable).
"""


def copilot_home(override: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Copilot's folder: --copilot-home, else $COPILOT_HOME, else ~/.copilot."""
    if override is not None:
        return override.expanduser()
    value = (os.environ if env is None else env).get("COPILOT_HOME")
    return Path(value).expanduser() if value else Path.home() / ".copilot"


def env_file(home: Path | None = None) -> Path:
    """The file `config copilot` writes: $COPILOT_HOME/pdnotes.env."""
    return copilot_home(home) / FILE_NAME


def load_line(line: str, number: int, path: Path) -> tuple[str, str] | None:
    """(name, value) of a `NAME=value` line, None for a blank or comment line;
    `ConfigParseError` for anything else (a shell would run it; pdnotes cannot read it)."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    match = _LINE.match(line)
    if match is None:
        raise ConfigParseError(
            f"{path} line {number} is not a plain NAME=value line pdnotes can read",
            path=str(path),
            line=number,
            fix=f"keep {path} to NAME=value lines (quote a value with '…'), or move that line "
            "to your shell profile",
        )
    raw = match["value"]
    return match["name"], raw[1:-1] if raw[:1] in ("'", '"') else raw


@dataclass(frozen=True)
class EnvFile:
    """The env file as read: its text and the variables it sets (the last line for a name
    wins, as in the shell), with the line of each."""

    path: Path
    text: str
    values: dict[str, str]
    lines: dict[str, int]


def read_env_file(path: Path) -> EnvFile | None:
    """The file, or None when it does not exist (`ConfigParseError` when it holds a line
    pdnotes cannot read; `InputError` when it cannot be read at all)."""
    text = fileio.read_text(path)
    if text is None:
        return None
    return parse_env(text, path)


def parse_env(text: str, path: Path) -> EnvFile:
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    if "\r" in text:  # a shell keeps a CR in the value; pdnotes would read it without
        number = text[: text.index("\r")].count("\n") + 1
        raise ConfigParseError(
            f"{path} line {number} ends in a carriage return (a file saved on Windows): the "
            "shell keeps it in the value",
            path=str(path),
            line=number,
            fix=f"save {path} with plain LF line ends (dos2unix {path})",
        )
    for number, line in enumerate(text.split("\n"), 1):
        found = load_line(line, number, path)
        if found is not None:
            values[found[0]] = found[1]
            lines[found[0]] = number
    return EnvFile(path, text, values, lines)


def shell_value(value: str) -> str:
    """`value` as the file writes it: bare when the shell and pdnotes read it back unchanged,
    else in single quotes."""
    if re.fullmatch(_BARE, value):
        return value
    if "'" in value or "\n" in value or "\r" in value:
        raise UsageError(
            f"{value[:40]!r} holds a quote or a line break, which pdnotes does not write into "
            "the env file",
            fix="pass a value without ' or line breaks",
        )
    return f"'{value}'"


def set_values(text: str, values: Mapping[str, str | None]) -> str:
    """`text` with each name set to its value (None: removed). The first line setting a name
    is rewritten in place (its `export ` kept), later ones dropped; a new name is appended.
    Every other line stays as it was."""
    newline = "\n"
    out: list[str] = []
    placed: set[str] = set()
    for line in re.findall(r"[^\n]*\n|[^\n]+$", text):
        match = _LINE.match(line.rstrip("\r\n"))
        if match is None or match["name"] not in values:
            out.append(line)
            continue
        name = match["name"]
        value = values[name]
        if value is None or name in placed:
            continue
        ending = line[len(line.rstrip("\r\n")) :]
        out.append(f"{match['export'] or ''}{name}={shell_value(value)}{ending}")
        placed.add(name)
    for name, value in values.items():
        if value is None or name in placed:
            continue
        if out and not out[-1].endswith("\n"):
            out[-1] += newline
        out.append(f"{name}={shell_value(value)}{newline}")
    return "".join(out)


# --------------------------------------------------------------------------- what it calls


@dataclass(frozen=True)
class Setting:
    """One variable as Copilot started from this shell would see it: its value and where it
    comes from (the shell, or the env file and its line)."""

    value: str
    source: str
    line: int | None = None
    from_shell: bool = False


def effective(file: EnvFile | None, env: Mapping[str, str]) -> dict[str, Setting]:
    """Copilot's variables: the shell's (a set, non-empty one) over the file's."""
    found: dict[str, Setting] = {}
    for name in NAMES:
        if env.get(name):
            found[name] = Setting(env[name], f"${name} (shell)", from_shell=True)
        elif file is not None and name in file.values:
            found[name] = Setting(file.values[name], str(file.path), file.lines[name])
    return found


def key_variable(command: str) -> str | None:
    """The variable a key command prints (`printenv NAME`, `echo $NAME`), None for another."""
    match = _PRINTENV.match(command)
    return (match[1] or match[2]) if match else None


def protocol_of(settings: Mapping[str, Setting]) -> Protocol | None:
    """The API Copilot speaks to the provider (None: azure, or a value Copilot refuses)."""
    kind = settings.get(TYPE, Setting("openai", "default")).value.strip().lower()
    wire = settings.get(WIRE_API, Setting("completions", "default")).value.strip().lower()
    if kind == "anthropic":
        return "anthropic"
    if kind == "openai" and wire in ("completions", "responses"):
        return "chat" if wire == "completions" else "responses"
    return None


@dataclass(frozen=True)
class Resolved:
    """Copilot's endpoint, or why there is none, and the values shown (name, shown, source)."""

    endpoint: Endpoint | None
    values: tuple[tuple[str, str, str], ...]
    problem: str | None = None


def resolve(settings: Mapping[str, Setting], env: Mapping[str, str]) -> Resolved:
    values: list[tuple[str, str, str]] = []
    for name in NAMES:
        if name in settings:
            shown = settings[name].value
            if name in SECRET_NAMES:
                shown = mask(shown)
            elif name == BASE_URL:
                shown = mask_url(shown)
            elif name == KEY_COMMAND:
                shown = mask_command(shown)
            values.append((name, shown, settings[name].source))
    base = settings.get(BASE_URL)
    if base is None:
        return Resolved(None, tuple(values), f"{BASE_URL} is not set: Copilot uses GitHub's models")
    model = settings.get(MODEL) or settings.get(MODEL_ID)
    if model is None:
        problem = f"no {MODEL}: Copilot refuses a custom provider without a model"
        return Resolved(None, tuple(values), problem)
    protocol = protocol_of(settings)
    if protocol is None:
        problem = "Copilot's provider type / wire API is one pdnotes does not call (azure?)"
        return Resolved(None, tuple(values), problem)
    key, key_env = _key(settings, env)
    style: AuthStyle = "bearer"
    if protocol == "anthropic" and BEARER not in settings:
        style = "x-api-key"
    wire_model = settings.get(WIRE_MODEL) or settings.get(MODEL) or model
    endpoint = Endpoint(
        client="copilot",
        base_url=base.value.strip(),
        protocol=protocol,
        model=wire_model.value,
        auth_style=style if key else "none",
        key_env=key_env,
        key=key,
        source=base.source if not base.from_shell else "environment",
    )
    return Resolved(endpoint, tuple(values))


def _key(settings: Mapping[str, Setting], env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(key, its variable): the bearer token, else what the key command prints (read, not
    run, for `printenv NAME`), else COPILOT_PROVIDER_API_KEY."""
    if BEARER in settings:
        return settings[BEARER].value, BEARER if settings[BEARER].from_shell else None
    if KEY_COMMAND in settings:
        name = key_variable(settings[KEY_COMMAND].value)
        return (env.get(name) or None, name) if name else (None, None)
    if API_KEY in settings:
        return settings[API_KEY].value, API_KEY if settings[API_KEY].from_shell else None
    return None, None


def window_of(settings: Mapping[str, Setting]) -> tuple[int, str] | None:
    """The window Copilot is told the model has (prompt + output tokens) and the setting."""
    numbers = []
    for name in (MAX_PROMPT, MAX_OUTPUT):
        value = settings[name].value.strip() if name in settings else ""
        if not value.isdigit():
            return None
        numbers.append(int(value))
    prompt = settings[MAX_PROMPT]
    where = "this shell" if prompt.from_shell else prompt.source
    return sum(numbers), f"{MAX_PROMPT} + {MAX_OUTPUT} (in {where})"


# --------------------------------------------------------------------------- the write


@dataclass(frozen=True)
class CopilotOptions:
    preset: str | None = None
    base_url: str | None = None
    model: str | None = None
    key_env: str | None = None
    context_window: int | None = None
    output_limit: int | None = None
    offline: bool = True
    fetch_limits: LimitsFetcher | None = None


def plan_copilot(options: CopilotOptions, *, home: Path | None = None) -> WritePlan:
    """The edit of the env file for `options` (nothing is written)."""
    path = env_file(home)
    old_text = fileio.read_text(path)
    current = parse_env(old_text, path) if old_text is not None else None
    now = current.values if current else {}
    preset = presets.load_preset(options.preset) if options.preset else None
    openai = preset.openai if preset else None
    raw_url = options.base_url or (openai.base_url if openai else None) or now.get(BASE_URL)
    if not raw_url:
        raise UsageError(
            "no base URL to write",
            fix="pass --base-url https://…/v1 (the root /chat/completions hangs off) or a --preset",
        )
    known = preset or (
        presets.preset_for_host(urls.host_of(raw_url)) if urls.has_scheme(raw_url) else None
    )
    cleaned = urls.clean_base_url(
        raw_url,
        suffixes=urls.OPENAI_ENDPOINT_SUFFIXES,
        strip_v1=bool(known and known.v1_suffix == "forbidden" and known.openai),
        credential_fix=KEY_CREDENTIAL_FIX,
    )
    if cleaned.query_params:
        raise UsageError(
            f"the base URL carries query parameters ({', '.join(cleaned.query_params)}); "
            "Copilot has no setting that sends them",
            fix="use a base URL without a query string",
        )
    model = options.model or (preset.model if preset else None) or now.get(MODEL)
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as your gateway's /models lists it",
        )
    edits: dict[str, str | None] = {
        BASE_URL: cleaned.base_url,
        TYPE: "openai",
        WIRE_API: "completions",
        MODEL: model,
        OFFLINE: "true" if options.offline else None,
    }
    notes = list(cleaned.notes)
    warnings: list[str] = []
    key_env = options.key_env or (openai.env_key if openai else None)
    if key_env:
        if not looks_like_env_name(key_env):
            raise UsageError(  # never echo the value: it is probably the key itself
                "--key-env takes the NAME of an environment variable, not the key itself",
                fix="export the key (export GW_API_KEY=…) and pass --key-env GW_API_KEY",
            )
        command = None if key_env == API_KEY else f"printenv {key_env}"
        edits.update({KEY_COMMAND: command, BEARER: None})
    elif openai is not None and preset is not None:  # a preset naming no key: its server takes none
        edits[KEY_COMMAND] = None
        if KEY_COMMAND in now:
            notes.append(f"{preset.name} needs no key: removed {KEY_COMMAND}")
    for name in (API_KEY, BEARER):
        if name in now and edits.get(name, "") is not None:
            warnings.append(
                f"{path} sets {name} to a literal key; prefer --key-env NAME (written as "
                f"{KEY_COMMAND}='printenv NAME')"
            )
    window, output, limit_notes = _limits(options, preset, model, cleaned.base_url, key_env)
    notes += limit_notes
    if window is not None and output is not None:
        edits.update({MAX_PROMPT: str(window - output), MAX_OUTPUT: str(output)})
    base_text = old_text if old_text is not None else HEADER.format(path=_shown_path(path))
    new_text = set_values(base_text, edits)
    parse_env(new_text, path)  # what pdnotes writes it can read back
    notes.append(f"load it where copilot runs: set -a; . {_shown_path(path)}; set +a")
    return WritePlan(
        client="copilot",
        path=path,
        old_text=old_text,
        new_text=new_text,
        request_url=join_url(cleaned.base_url, "/chat/completions"),
        export_line=export_line(key_env) if key_env else None,
        notes=tuple(notes),
        warnings=tuple(warnings),
        redact=tuple(now[n] for n in SECRET_NAMES if now.get(n)),
    )


def _limits(
    options: CopilotOptions,
    preset: presets.Preset | None,
    model: str,
    base_url: str,
    key_env: str | None,
) -> tuple[int | None, int | None, list[str]]:
    """(window, output tokens, notes): the window from --context-window, the gateway's /models
    or the preset; the output from --output-limit, the gateway, else an eighth of the window
    (at most OUTPUT_TOKEN_MAX). Copilot gets the window as prompt + output tokens."""
    window, output, notes = options.context_window, options.output_limit, []
    if options.fetch_limits is not None:
        limits = options.fetch_limits(base_url, key_env, model)
        window = limits.context_window
        output = output or limits.max_output_tokens
        said = f"context window {window} ({limits.field})"
        notes.append(f"the gateway's /models says {model}: {said}")
    if window is None and preset and preset.openai and model == preset.model:
        window = preset.openai.context_window
    if window is None:
        if output is not None:
            raise UsageError(
                "--output-limit needs a context window too (Copilot is told prompt + output)",
                fix="add --context-window TOKENS, or --context-window gateway",
            )
        return None, None, notes
    output = min(output or min(max(window // 8, 1), OUTPUT_TOKEN_MAX), window - 1)
    if output < 1:
        raise UsageError(
            f"a context window of {window} leaves no room for a prompt",
            fix="pass the model's real window with --context-window",
        )
    return window, output, notes


def _shown_path(path: Path) -> str:
    """The path as the user would type it (~ for the home folder)."""
    import shlex

    try:
        return "~/" + shlex.quote(str(path.relative_to(Path.home())))
    except ValueError:
        return shlex.quote(str(path))
