"""Gemini CLI's configuration as Gemini CLI 0.61 assembles it, read once for `config show`,
`doctor`, `smoke` and `notes generate`.

Settings files, lowest precedence first (its `loadSettings`): system defaults
(`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`, default /etc/gemini-cli/system-defaults.json), user
(~/.gemini/settings.json, ~ being $GEMINI_CLI_HOME when set), project (<cwd>/.gemini/
settings.json, trusted folders only), system overrides (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`,
default /etc/gemini-cli/settings.json); objects merge key by key. Environment: the process
environment, plus the ONE .env file `config.env_file_read` finds, whose variables never
replace one already set (in an untrusted folder only the key variables are taken from it, and
the .gemini/.env files are skipped: `hidden_by_trust` names the one a trusted folder would use).
The folder is trusted when GEMINI_CLI_TRUST_WORKSPACE=true, when folder trust is off
(`security.folderTrust.enabled: false`), or by the longest matching rule of
~/.gemini/trustedFolders.json.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli import fileio
from notes_cli.clients import dotenv, jsonc
from notes_cli.clients.gemini.config import (
    BASE_URL_VAR,
    DEFAULT_BASE_URL,
    DIALECT,
    KEY_VAR,
    env_file_read,
    gemini_dir,
    settings_file,
)
from notes_cli.errors import ConfigParseError, InputError

if TYPE_CHECKING:
    from notes_cli.clients.resolve import ClientSetup

SYSTEM_SETTINGS = Path("/etc/gemini-cli/settings.json")
SYSTEM_DEFAULTS = Path("/etc/gemini-cli/system-defaults.json")
UNTRUSTED_ENV_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT",
                      "GOOGLE_CLOUD_LOCATION")  # fmt: skip
"""What Gemini CLI still takes from a .env in an untrusted folder (its AUTH_ENV_VAR_WHITELIST);
GOOGLE_GEMINI_BASE_URL is not among them."""


@dataclass(frozen=True)
class GeminiFile:
    """One settings layer: parsed, or the reason it could not be (`problem`)."""

    scope: str
    path: Path
    text: str | None = None
    data: dict[str, Any] | None = None
    problem: ConfigParseError | InputError | None = None


@dataclass(frozen=True)
class GeminiLayers:
    files: tuple[GeminiFile, ...]
    merged: dict[str, Any]
    trusted: bool | None
    """True / False as Gemini CLI decides; None: not decided (`gemini` asks, `gemini -p`
    refuses to run)."""
    trust_source: str
    env_file: Path | None
    env_file_text: str | None
    env_file_values: dict[str, str]
    env: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The variables Gemini CLI ends up with, for the names that matter: name → (value, where
    from: "environment" or the .env path)."""
    cwd: Path = Path()
    trusted_env_file: Path | None = None
    """The .env file Gemini CLI would load here were the folder trusted (`~/.gemini/.env`, which
    `pdnotes config gemini` writes, is read only in a trusted folder)."""
    trusted_env_values: dict[str, str] = field(default_factory=dict)

    def hidden_by_trust(self, name: str) -> Path | None:
        """The .env file that sets `name` but that Gemini CLI skips here because the folder is
        not trusted (None when the variable is set, or no such file sets it)."""
        if self.trusted or name in self.env or self.trusted_env_file == self.env_file:
            return None
        return self.trusted_env_file if self.trusted_env_values.get(name) else None

    @property
    def configured(self) -> bool:
        return any(f.text is not None for f in self.files) or self.env_file is not None

    @property
    def problems(self) -> tuple[GeminiFile, ...]:
        return tuple(f for f in self.files if f.problem is not None)

    def value(self, *dotted: str) -> Any:
        node: Any = self.merged
        for key in dotted:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    def source_of(self, *dotted: str) -> str | None:
        """The file whose value of `dotted` wins (the last layer that sets it)."""
        found = None
        for layer in self.files:
            node: Any = layer.data
            for key in dotted:
                node = node.get(key) if isinstance(node, dict) else None
            if node is not None:
                found = str(layer.path)
        return found


def settings_files(
    gemini_home: Path | None, cwd: Path, env: Mapping[str, str]
) -> list[tuple[str, Path]]:
    """(scope, path) of each settings layer, lowest precedence first."""
    defaults = env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
    system = env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    return [
        ("system-defaults", Path(defaults) if defaults else SYSTEM_DEFAULTS),
        ("user", settings_file("user", gemini_home=gemini_home)),
        ("project", settings_file("project", project_dir=cwd)),
        ("system", Path(system) if system else SYSTEM_SETTINGS),
    ]


def gemini_layers(
    gemini_home: Path | None = None,
    project_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> GeminiLayers:
    env = dict(os.environ) if env is None else dict(env)
    cwd = (project_dir or Path.cwd()).expanduser()
    layer_paths = settings_files(gemini_home, cwd, env)
    user = layer_paths[1][1].resolve()
    # Started in the home folder, the project file is the user file: read once, as user.
    layer_paths = [(s, p) for s, p in layer_paths if s != "project" or p.resolve() != user]
    read = [_read(scope, path) for scope, path in layer_paths]
    home_dir = gemini_dir(gemini_home).parent
    # The project layer counts only in a trusted folder; trust itself is read from the other
    # layers' folderTrust setting (as Gemini CLI does).
    without_project = _merge([f.data for f in read if f.scope != "project" and f.data])
    trusted, source = folder_trust(cwd, without_project, env, home_dir)
    files = tuple(f for f in read if f.scope != "project" or trusted)
    merged = _merge([f.data for f in files if f.data])
    env_file = env_file_read(cwd, trusted=bool(trusted), home=home_dir)
    env_text = _read_env(env_file)
    if_trusted = env_file if trusted else env_file_read(cwd, trusted=True, home=home_dir)
    values = dotenv.parse(env_text or "")
    if not trusted:
        values = {k: v for k, v in values.items() if k in UNTRUSTED_ENV_VARS}
    effective: dict[str, tuple[str, str]] = {}
    for name in (BASE_URL_VAR, KEY_VAR, "GEMINI_MODEL", "GOOGLE_GENAI_API_VERSION",
                 "GEMINI_API_KEY_AUTH_MECHANISM", "GOOGLE_GENAI_USE_VERTEXAI",
                 "GOOGLE_GENAI_USE_GCA", "GEMINI_CLI_CUSTOM_HEADERS"):  # fmt: skip
        if name in env:
            effective[name] = (env[name], "environment")
        elif name in values and env_file is not None:
            effective[name] = (values[name], str(env_file))
    return GeminiLayers(
        files=files,
        merged=merged,
        trusted=trusted,
        trust_source=source,
        env_file=env_file,
        env_file_text=env_text,
        env_file_values=dotenv.parse(env_text or ""),
        env=effective,
        cwd=cwd,
        trusted_env_file=if_trusted,
        trusted_env_values=dotenv.parse(_read_env(if_trusted) or ""),
    )


def folder_trust(
    cwd: Path, merged: Mapping[str, Any], env: Mapping[str, str], home_dir: Path
) -> tuple[bool | None, str]:
    """Gemini CLI's `checkPathTrust`: (trusted, why)."""
    if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get("GEMINI_CLI_TRUST_WORKSPACE") == (
        "false"
    ):
        return False, "GEMINI_CLI_TRUST_WORKSPACE=false"
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True, "GEMINI_CLI_TRUST_WORKSPACE=true"
    folder_trust_setting = merged.get("security", {})
    enabled = (
        folder_trust_setting.get("folderTrust", {}).get("enabled", True)
        if isinstance(folder_trust_setting, dict)
        and isinstance(folder_trust_setting.get("folderTrust", {}), dict)
        else True
    )
    if enabled is False:
        return True, "security.folderTrust.enabled is false"
    rules_path = Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or home_dir / ".gemini" /
                      "trustedFolders.json")  # fmt: skip
    try:
        text = fileio.read_text(rules_path)
        rules = json.loads(jsonc.blank_comments(text, DIALECT)) if text else {}
    except (InputError, ValueError):
        return None, f"{rules_path} cannot be read"
    if not isinstance(rules, dict):
        return None, f"{rules_path} is not an object"
    here = cwd.resolve()
    best, level = -1, None
    for rule, trust in rules.items():
        folder = Path(rule).expanduser()
        folder = folder.parent if trust == "TRUST_PARENT" else folder
        try:
            here.relative_to(folder.resolve())
        except (ValueError, OSError):
            continue
        if len(rule) > best:
            best, level = len(rule), trust
    if level == "DO_NOT_TRUST":
        return False, f"{rules_path} says DO_NOT_TRUST"
    if level in ("TRUST_FOLDER", "TRUST_PARENT"):
        return True, f"{rules_path}"
    return None, f"not listed in {rules_path}"


def _read(scope: str, path: Path) -> GeminiFile:
    try:
        text = fileio.read_text(path)
    except InputError as exc:
        return GeminiFile(scope, path, problem=exc)
    if text is None:
        return GeminiFile(scope, path)
    try:
        return GeminiFile(scope, path, text, jsonc.parse(text, path, DIALECT))
    except ConfigParseError as exc:
        return GeminiFile(scope, path, text, problem=exc)


def _read_env(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return fileio.read_text(path)
    except InputError:
        return None


def _merge(layers: list[dict[str, Any]]) -> dict[str, Any]:
    """Objects merged key by key, later layers winning (Gemini CLI's customDeepMerge; arrays
    are replaced, which is what matters for the keys pdnotes reads)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _merge_two(merged, layer)
    return merged


def _merge_two(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_two(out[key], value)
        else:
            out[key] = value
    return out


def setup_of(layers: GeminiLayers) -> ClientSetup:
    """Gemini CLI's effective setup: base URL and key from the environment or its .env, auth
    type and model from the settings layers (GEMINI_MODEL winning over `model.name`)."""
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.clients.resolve import ClientSetup, Value
    from notes_cli.secrets import mask, mask_url

    files = tuple(f.path for f in layers.files if f.text is not None)
    if layers.env_file is not None:
        files += (layers.env_file,)
    if not layers.configured and not any(name in layers.env for name in (BASE_URL_VAR, KEY_VAR)):
        return ClientSetup("gemini", (), (), None, problem="no Gemini CLI settings file")
    if layers.problems:
        bad = layers.problems[0]
        return ClientSetup("gemini", files, (), None, problem=str(bad.problem))
    values: list[Value] = []
    base_url, base_source = layers.env.get(BASE_URL_VAR, (DEFAULT_BASE_URL, "default"))
    values.append(Value(BASE_URL_VAR, mask_url(base_url), base_source))
    auth = layers.value("security", "auth", "selectedType")
    values.append(
        Value("security.auth.selectedType", str(auth or "(unset)"),
              layers.source_of("security", "auth", "selectedType") or "default")
    )  # fmt: skip
    model, model_source = layers.env.get("GEMINI_MODEL", ("", ""))
    if not model:
        name = layers.value("model", "name")
        model = name if isinstance(name, str) else ""
        model_source = layers.source_of("model", "name") or ""
    if model:
        values.append(Value("model", model, model_source))
    trust = {True: "trusted", False: "not trusted", None: "undecided (gemini -p refuses)"}
    values.append(Value("folder trust", trust[layers.trusted], layers.trust_source))
    key, key_source = layers.env.get(KEY_VAR, ("", ""))
    values.append(Value(KEY_VAR, mask(key) if key else "(unset)", key_source or "environment"))
    bearer = layers.env.get("GEMINI_API_KEY_AUTH_MECHANISM", ("", ""))[0] == "bearer"
    endpoint = Endpoint(
        client="gemini",
        base_url=base_url,
        protocol="gemini",
        model=model or None,
        auth_style=("bearer" if bearer else "x-goog-api-key") if key else "none",
        key_env=KEY_VAR if key else None,
        key=key or None,
        source=base_source,
    )
    return ClientSetup("gemini", files, tuple(values), endpoint)
