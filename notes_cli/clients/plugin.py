"""What a client of Connect is (issue 38): the one Protocol each client folder under clients/
meets, and the plain data it declares. The rest of the house (the `config` commands, doctor,
smoke, the bridge's client setup, render) asks a `Client` from `clients.registry` and never
names one.

A client declares its `config <name>` options as data (`Option`; the options clients spell
the same, `--base-url`, `--model`, `--key-env`, `--context-window` and `--output-limit`, as
`Shared`, declared once in `SHARED`): cli/config.py turns them into Typer options and adds the
ones all clients share (`--preset`, the `--bridge-*` options, `--dry-run`, `--json`) once.
Everything else it answers through the methods below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.clients.endpoint import Protocol as Wire
    from notes_cli.clients.model_limits import LimitsFetcher
    from notes_cli.clients.plan import WritePlan
    from notes_cli.clients.resolve import ClientSetup
    from notes_cli.doctor.findings import Finding
    from notes_cli.doctor.resolved import Resolved

Version = tuple[int, int, int]
BridgeUrl = Literal["v1", "anthropic", "root"]
"""Which of the bridge's URLs a client file names: its OpenAI root (…/v1, for the Responses
API and chat completions), its Anthropic root, or its bare root (the Gemini route)."""


@dataclass(frozen=True)
class Option:
    """One option of `pdnotes config <client>`, as data. `flag` may be a switch pair
    ("--x/--no-x"); `kind` is str, int, bool or Path."""

    name: str
    flag: str
    help: str
    kind: type = str
    default: Any = None
    metavar: str | None = None
    min: int | None = None
    max: int | None = None


SharedName = Literal["base_url", "model", "key_env", "context_window", "output_limit"]

# The options clients spell the same, each declared once; a client's `Shared` may word its help.
SHARED: dict[SharedName, Option] = {
    "base_url": Option("base_url", "--base-url", "The gateway's API root (cleaned if pasted)."),
    "model": Option("model", "--model", "Model id exactly as the gateway names it."),
    "key_env": Option(
        "key_env", "--key-env", "NAME of the variable holding the key (never the key)."
    ),
    "context_window": Option(
        "context_window",
        "--context-window",
        "Write the model's context window: tokens, or 'gateway' to read the gateway's /models.",
        metavar="TOKENS|gateway",
    ),
    "output_limit": Option(
        "output_limit",
        "--output-limit",
        "The model's output cap (default: an eighth of the window, at most 32000).",
        kind=int,
        min=1,
        max=(1 << 31) - 1,
    ),
}


@dataclass(frozen=True)
class Shared:
    """An option spelt the same for every client that takes it (`SHARED`); `help` where the
    client words it its own way."""

    name: SharedName
    help: str | None = None

    def option(self) -> Option:
        declared = SHARED[self.name]
        return replace(declared, help=self.help) if self.help else declared


@dataclass(frozen=True)
class SessionLogs:
    """How `pdnotes trace import` reads a client's own session logs: its folder option
    (`--codex-dir`), the folder it reads by default, and the model calls of a folder
    (`trace.agent_logs.Call`s)."""

    option: Option
    default_folder: Callable[[], Path]
    calls: Callable[[Path], Iterator[Any]]


@dataclass(frozen=True)
class Where:
    """The folders a command was pointed at: each client's own folder option, by client name,
    and `--project-dir`; `flags`: the options that pick how a client is run (doctor's and
    `config show`'s `--profile`, `-c`, `--settings`, and each client's `doctor_options`), by
    name."""

    homes: Mapping[str, Path | None] = field(default_factory=dict)
    project_dir: Path | None = None
    flags: Mapping[str, Any] = field(default_factory=dict)

    def home(self, client: str) -> Path | None:
        return self.homes.get(client)


@dataclass(frozen=True)
class ConfigRequest:
    """What `pdnotes config <client>` was asked: `values` holds `preset`, `model` and the
    client's own options by name; `--context-window` arrives parsed (tokens, or the gateway's
    /models to ask)."""

    values: Mapping[str, Any]
    where: Where = Where()
    context_window: int | None = None
    fetch_limits: LimitsFetcher | None = None

    def __getitem__(self, name: str) -> Any:
        return self.values.get(name)

    def but(self, **values: Any) -> ConfigRequest:
        return replace(self, values={**self.values, **values})


@dataclass(frozen=True)
class BridgeTarget:
    """Where a client file points when it goes through `pdnotes bridge serve`: the bridge's
    URL of the client's kind, the model, the bridge's own key variable (None: none), the
    preset naming the bridge, and the upstream's window."""

    base_url: str
    model: str
    key_env: str | None
    preset: str
    context_window: int | None
    fetch_limits: LimitsFetcher | None


def key_flag(client: Client) -> str:
    """The `config <name>` option naming the key's variable (`Client.key_option`)."""
    declared = (o.option() if isinstance(o, Shared) else o for o in client.options)
    return next(o.flag for o in declared if o.name == client.key_option)


def usable_endpoint(client: Client, setup: ClientSetup, unset_key: str) -> Endpoint:
    """The endpoint smoke calls as `client` would, or the UsageError of a client that would
    send nothing (no endpoint) or an empty key: `unset_key` says what the client does with a
    key variable that is unset (`{name}` is the variable's name)."""
    from notes_cli.errors import UsageError

    if setup.endpoint is None:
        raise UsageError(
            f"{client.title} has no endpoint pdnotes can call: {setup.problem}",
            fix=f"run `pdnotes config {client.name} --preset NAME` (or `pdnotes doctor --client "
            f"{client.name}` to see why), or pass --base-url URL --model ID",
        )
    endpoint = setup.endpoint
    if endpoint.key_env and not endpoint.key:
        raise UsageError(
            unset_key.format(name=endpoint.key_env),
            fix=f"export {endpoint.key_env}=<your key>, then re-run",
        )
    return endpoint


def speaker(clients: tuple[Client, ...], protocol: str) -> Client:
    """The first of `clients` that speaks `protocol` (Codex the Responses API, Claude Code the
    Messages API)."""
    return next(c for c in clients if c.protocol == protocol)


class Client(Protocol):
    """One client pdnotes configures, checks and speaks for (a folder under clients/)."""

    name: str
    """Its command name (`config <name>`, `--client <name>`), backups folder and findings'
    client."""
    title: str
    protocol: Wire
    """The wire protocol it calls its endpoint with (smoke and the live probe send it)."""
    summary: str
    """The help of `config <name>`."""
    options: tuple[Option | Shared, ...]
    """Its `config <name>` options between `--preset` and the `--bridge-*` options."""
    home: Option
    """Its folder option (`--<name>-home`), last but `--project-dir` in `config <name>`."""
    home_help: str
    """The folder option's shorter help in `doctor`."""
    doctor_options: tuple[Option, ...]
    """Its own `doctor` options (after `--project-dir`); their values reach `doctor` in
    `Where.flags`."""
    project_files: str
    """What `--project-dir` reads for it ("" when nothing)."""
    key_option: str
    """The option naming the key's variable (with `--bridge`: the upstream's)."""
    bridge_url: BridgeUrl
    listed_unset: bool
    """Whether `--client all` lists it (and misses it) when it is not set up."""
    output_cap_variant: str | None
    """The `model-did-not-stop` fix variant naming its own output cap."""
    smoke_key_env: str | None
    """The variable smoke reads the key from with --base-url and no --key-env."""
    file_lines: tuple[str, str] | None
    """How a fix names its base URL and model lines in the file the endpoint's source names
    (`base_url = "{}"`, `model = "{}"`); None where the fix names a variable."""
    env_names: tuple[str, str] | None
    """The variables naming its base URL and model when it reads them from its settings' env
    block or the shell (a fix writes `"NAME": "value" (inside "env")`, or `export NAME=value`
    where the environment set it); None where it reads neither."""
    session_logs: SessionLogs | None
    """How `trace import` reads its session logs (None: pdnotes reads none of it)."""

    def target(self, request: ConfigRequest) -> Path:
        """The file `config <name>` writes (checks `--scope`)."""
        ...

    def plan(self, request: ConfigRequest) -> WritePlan:
        """The merge-safe write of `request` (its undo is the backup `clients.plan` makes)."""
        ...

    def needs_bridge(self, preset: str | None) -> bool:
        """Whether the preset's endpoint needs the bridge for this client without --bridge."""
        ...

    def via_bridge(self, request: ConfigRequest, target: BridgeTarget) -> ConfigRequest:
        """`request` with the client file pointed at the bridge."""
        ...

    def setup(self, where: Where, env: Mapping[str, str], *, named: bool) -> ClientSetup | None:
        """Its effective setup (`config show`, smoke); None to leave it out of `--client all`
        (`named`: asked for by name)."""
        ...

    def doctor(self, where: Where, env: Mapping[str, str]) -> tuple[Resolved[Any], list[Finding]]:
        """Its files read once for doctor, and the static findings on them."""
        ...

    def missing_file(self, where: Where) -> Path:
        """The file `config-missing` names when it is not set up."""
        ...

    def installed_version(self) -> Version | None:
        """The installed client's version (picks its recorded request shape)."""
        ...

    def shapes_dir(self) -> Path:
        """Its recorded request shapes (`<version>.json`, scripts/client_shapes.py)."""
        ...

    def smoke_endpoint(self, setup: ClientSetup) -> Endpoint:
        """The endpoint smoke calls from its configuration; `UsageError` when the client
        would not call one (no endpoint, an unset key variable)."""
        ...

    def smoke_budget(self, setup: ClientSetup) -> int | None:
        """The output budget its configuration asks each turn for, when it states one."""
        ...
