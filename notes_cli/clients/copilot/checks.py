"""Static checks of Copilot CLI's custom provider (`doctor --client copilot`): the shell's
COPILOT_* variables over $COPILOT_HOME/pdnotes.env (`clients.copilot.config`), and what makes a
copilot started from this shell miss the gateway:

- the env file holds a line pdnotes cannot read (a command, an expansion);
- the file is not loaded in this shell, or the shell holds other values than the file;
- no model (Copilot stops: "BYOK providers require an explicit model"), a provider type or wire
  API Copilot refuses;
- the key command prints an unset variable (an empty key), a literal key in the file;
- no token limits for a model Copilot does not know (it falls back to its defaults);
- the base URL problems every client shares (`url_checks`), a doubled /v1, a missing /v1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from notes_cli import fileio
from notes_cli.clients import presets, urls
from notes_cli.clients.copilot import config as cc
from notes_cli.clients.files import line_of
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_base_url, check_model
from notes_cli.errors import ConfigParseError, InputError
from notes_cli.secrets import mask

_TYPES = ("openai", "azure", "anthropic")
_WIRE_APIS = ("completions", "responses")


def read(path: Path) -> tuple[cc.EnvFile | None, list[Finding]]:
    """The env file, or the finding that says why pdnotes cannot read it."""
    try:
        return cc.read_env_file(path), []
    except ConfigParseError as exc:
        finding = make(
            "copilot-env-file-syntax", "copilot", exc.message, file=str(path), line=exc.line
        )
        return None, [finding]
    except InputError as exc:
        detail = exc.fix or fileio.aside_fix(path, "fix or remove the file")
        finding = make("file-unreadable", "copilot", exc.message, file=str(path), detail=detail)
        return None, [finding]


def check_copilot(
    file: cc.EnvFile | None,
    settings: Mapping[str, cc.Setting],
    env: Mapping[str, str],
    home: Path,
) -> list[Finding]:
    found = _loaded(file, env)
    found += _literal_keys(file)
    found += _providers_json_keys(home, env)
    base = settings.get(cc.BASE_URL)
    if base is None:
        return found
    where, line = _file(base, file), base.line
    found += _type(settings, file)
    kind = settings.get(cc.TYPE, cc.Setting("openai", "default")).value.strip().lower()
    url = base.value.strip()
    found += check_base_url("copilot", url, messages=kind == "anthropic", file=where, line=line)
    if kind != "anthropic":
        found += _v1(url, file=where, line=line)
    model = settings.get(cc.MODEL) or settings.get(cc.MODEL_ID)
    if model is None:
        found.append(
            make(
                "copilot-model-missing",
                "copilot",
                f'{cc.BASE_URL} is set but no {cc.MODEL}: Copilot stops with "BYOK providers '
                'require an explicit model"',
                file=_file(base, file),
                where=_file(base, file) or "your shell",
            )
        )
    else:
        found += check_model("copilot", model.value, url, file=_file(model, file), line=model.line)
        found += _limits(settings, file)
    found += _key(settings, env, file)
    return found


def _file(setting: cc.Setting, file: cc.EnvFile | None) -> str | None:
    """The file a setting comes from (None: the shell)."""
    return None if setting.from_shell or file is None else str(file.path)


def _loaded(file: cc.EnvFile | None, env: Mapping[str, str]) -> list[Finding]:
    """The file's provider is not in this shell, or the shell holds other values."""
    if file is None or cc.BASE_URL not in file.values:
        return []
    path = str(file.path)
    if not env.get(cc.BASE_URL):
        return [
            make(
                "copilot-env-not-loaded",
                "copilot",
                f"{path} sets Copilot's provider but this shell has no {cc.BASE_URL}: copilot "
                "started here does not call the gateway",
                file=path,
            )
        ]
    found = []
    for name, value in file.values.items():
        if name in cc.NAMES and env.get(name) and env[name] != value:
            shown = mask(env[name]) if name in cc.SECRET_NAMES else env[name]
            found.append(
                make(
                    "copilot-env-overridden",
                    "copilot",
                    f"${name} is {shown!r} in this shell but {path} says otherwise: copilot "
                    "started here uses the shell's",
                    file=path,
                    line=file.lines[name],
                    variable=name,
                )
            )
    return found


def _literal_keys(file: cc.EnvFile | None) -> list[Finding]:
    from notes_cli.clients.git import tracked_by_git

    if file is None:
        return []
    found = []
    for name in cc.SECRET_NAMES:
        if not file.values.get(name):
            continue
        tracked = tracked_by_git(file.path)
        found.append(
            make(
                "key-in-file",
                "copilot",
                f"{name} holds a literal key in "
                + ("a file git tracks" if tracked else str(file.path)),
                severity="error" if tracked else None,
                file=str(file.path),
                line=file.lines[name],
                how=f"pdnotes config copilot --key-env NAME writes {cc.KEY_COMMAND}='printenv "
                f"NAME'; remove the {name} line, then rotate the key, it sat in a file",
            )
        )
    return found


def _providers_json_keys(home: Path, env: Mapping[str, str]) -> list[Finding]:
    """A literal `apiKey` / `bearerToken` in providers.json, the file Copilot reads providers
    from (it takes a key in no other form there); a file that does not parse is Copilot's to
    report."""
    import json

    path = Path(env.get("COPILOT_PROVIDERS_CONFIG") or home / "providers.json")
    try:
        text = fileio.read_text(path)
        data = json.loads(text) if text else {}
    except (InputError, ValueError):
        return []
    providers = data.get("providers") if isinstance(data, dict) else None
    found = []
    for entry in providers if isinstance(providers, list) else []:
        if not isinstance(entry, dict):
            continue
        for field in ("apiKey", "bearerToken"):
            if isinstance(entry.get(field), str) and entry[field]:
                found.append(
                    make(
                        "key-in-file",
                        "copilot",
                        f"provider {entry.get('name')!r} in {path} holds a literal {field}",
                        file=str(path),
                        line=line_of(text or "", f'"{field}"'),
                        how="Copilot reads no variable there: move the provider to pdnotes.env "
                        "(pdnotes config copilot --key-env NAME) and remove it from "
                        f"{path.name}; then rotate the key, it sat in a file",
                    )
                )
    return found


def _type(settings: Mapping[str, cc.Setting], file: cc.EnvFile | None) -> list[Finding]:
    found = []
    for name, allowed in ((cc.TYPE, _TYPES), (cc.WIRE_API, _WIRE_APIS)):
        setting = settings.get(name)
        if setting is None or setting.value.strip().lower() in allowed:
            continue
        found.append(
            make(
                "copilot-provider-type-invalid",
                "copilot",
                f"{name}={setting.value!r} is not one of {', '.join(allowed)}: Copilot refuses "
                "the provider",
                file=_file(setting, file),
                line=setting.line,
                variable=name,
                allowed=" or ".join(allowed),
                where=_file(setting, file) or "your shell",
            )
        )
    return found


def _v1(url: str, *, file: str | None, line: int | None) -> list[Finding]:
    """/v1 twice, or none where the API lives under /v1 (a bare host, or a gateway whose
    preset says its root has /v1)."""
    if not urls.has_scheme(url) or urls.url_problem(url) is not None:
        return []
    path = urls.path_of(url).rstrip("/")
    if "/v1/v1" in path + "/":
        fixed = url.replace("/v1/v1", "/v1", 1)
        return [
            make(
                "base-url-v1-suffix",
                "copilot",
                f"base URL {url} holds /v1 twice: Copilot calls {url.rstrip('/')}/chat/completions",
                suggested=fixed,
                file=file,
                line=line,
            )
        ]
    preset = presets.preset_for_host(urls.host_of(url))
    forbidden = preset is not None and preset.v1_suffix == "forbidden"
    required = preset is not None and preset.v1_suffix == "required"
    if urls.has_v1_suffix(url) or forbidden or (path and not required):
        return []
    suggested = url.rstrip("/") + "/v1"
    return [
        make(
            "copilot-v1-missing",
            "copilot",
            f"base URL {url} has no /v1: Copilot calls {url.rstrip('/')}/chat/completions, "
            "which an OpenAI-compatible server serves under /v1",
            suggested=suggested,
            file=file,
            line=line,
            where=file or "your shell",
        )
    ]


def _limits(settings: Mapping[str, cc.Setting], file: cc.EnvFile | None) -> list[Finding]:
    missing = [n for n in (cc.MAX_PROMPT, cc.MAX_OUTPUT) if n not in settings]
    bad = [n for n in (cc.MAX_PROMPT, cc.MAX_OUTPUT) if n in settings]
    bad = [n for n in bad if not settings[n].value.strip().isdigit()]
    if not missing and not bad:
        return []
    names = " and ".join(missing + bad)
    return [
        make(
            "copilot-token-limits-missing",
            "copilot",
            f"{names} {'is' if len(missing + bad) == 1 else 'are'} not set to a number: Copilot "
            "uses its defaults for a model it does not know, which may not fit the window",
            file=str(file.path) if file else None,
        )
    ]


def _key(
    settings: Mapping[str, cc.Setting], env: Mapping[str, str], file: cc.EnvFile | None
) -> list[Finding]:
    if cc.BEARER in settings or cc.KEY_COMMAND not in settings:
        return []
    command = settings[cc.KEY_COMMAND]
    name = cc.key_variable(command.value)
    if name is None or env.get(name):
        return []
    return [
        make(
            "copilot-key-env-unset",
            "copilot",
            f"{cc.KEY_COMMAND} prints ${name}, which is not set in this shell: Copilot sends an "
            "empty key",
            file=_file(command, file),
            line=command.line,
            variable=name,
        )
    ]
