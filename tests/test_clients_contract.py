"""What every client pdnotes connects must do, tested by going over the registry (issue 38): a
client added with its folder and one registry line is held to all of it without a test file of
its own.

For each client, against the bundled engine running as a real server: `config <name> --preset
mock` writes a file `doctor` finds nothing wrong with and `smoke` gets answers through; a
dry run writes nothing; a second identical run changes nothing; `config undo` puts the file back
byte for byte; a file the client's parser cannot read is refused and left as it was;
`--context-window gateway` writes the engine's window where the client has a window setting, and
doctor finds a window larger than the engine's; smoke sends the client's recorded request
shape, says how to set the client up when it is not, and stops before sending where the client
would send no key (or sends as the client does)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from client_shapes import recording_server  # noqa: E402

from notes_cli.clients import registry  # noqa: E402
from notes_cli.clients.plugin import Client, Shared, key_flag  # noqa: E402

NAMES = registry.names()
BUDGET = {"max_tokens", "max_output_tokens", "max_completion_tokens"}


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    """One engine for the module (a window unlike the mock preset's 32768, so that a window read
    from the gateway shows in the file)."""
    from conftest import ENGINE_TEST_SPEED

    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    running = start_engine(EngineConfig(speed=ENGINE_TEST_SPEED, max_context_tokens=24576))
    yield running
    running.stop()


def client(name: str) -> Client:
    found = registry.get(name)
    assert found is not None, name
    return found


def url_for(name: str, engine: Any) -> str:
    """The engine's URL of the kind the client's file names (its wire protocol's root)."""
    protocol = client(name).protocol
    if protocol == "anthropic":
        return str(engine.anthropic_base_url)
    if protocol == "gemini":
        return str(engine.gemini_base_url)
    return str(engine.base_url)


def configure(cli: Callable[..., Any], name: str, base_url: str, *extra: str) -> dict[str, Any]:
    result = cli("config", name, "--preset", "mock", "--base-url", base_url, "--json", *extra)
    assert result.exit_code == 0, result.stdout + result.stderr
    written: dict[str, Any] = result.json()
    return written


def files_of(written: dict[str, Any]) -> list[Path]:
    return [Path(written["file"]), *(Path(also["file"]) for also in written["also"])]


def snapshot(home: Path) -> dict[str, bytes]:
    """Every file under `home` but pdnotes' own state, by path."""
    state = home / ".pdnotes"
    return {
        str(p): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and state not in p.parents
    }


@pytest.fixture
def client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What each client needs to be run from a script (Gemini CLI: a trusted folder)."""
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")


@pytest.mark.parametrize("name", NAMES)
def test_config_writes_a_setup_doctor_passes_and_smoke_gets_answers_through(
    name: str, cli: Callable[..., Any], engine: Any, client_env: None
) -> None:
    written = configure(cli, name, url_for(name, engine))
    assert written["written"] and all(path.is_file() for path in files_of(written))

    doctor = cli("doctor", "--client", name, "--json")
    report = doctor.json()
    assert doctor.exit_code == 0 and report["ok"], doctor.stdout
    assert [f["id"] for f in report["findings"] if f["severity"] == "error"] == []

    smoke = cli("smoke", "--client", name, "-n", "2", "--json")
    assert smoke.exit_code == 0, smoke.stdout + smoke.stderr


@pytest.mark.parametrize("name", NAMES)
def test_a_dry_run_writes_nothing_and_a_second_run_changes_nothing(
    name: str, cli: Callable[..., Any], isolated_home: Path, engine: Any
) -> None:
    before = snapshot(isolated_home)
    dry = configure(cli, name, url_for(name, engine), "--dry-run")
    assert dry["dry_run"] and not dry["written"] and dry["diff"]
    assert snapshot(isolated_home) == before

    configure(cli, name, url_for(name, engine))
    once = snapshot(isolated_home)
    again = configure(cli, name, url_for(name, engine))
    assert not again["changed"] and not again["written"]
    assert snapshot(isolated_home) == once


@pytest.mark.parametrize("name", NAMES)
def test_undo_puts_the_file_back_byte_for_byte(
    name: str, cli: Callable[..., Any], engine: Any
) -> None:
    first = configure(cli, name, url_for(name, engine))
    kept = {path: path.read_bytes() for path in files_of(first)}
    changed = configure(cli, name, url_for(name, engine), "--model", "another-model")
    assert changed["changed"]
    assert any(path.read_bytes() != data for path, data in kept.items())

    undo = cli("config", "undo", "--client", name)

    assert undo.exit_code == 0, undo.stdout + undo.stderr
    assert {path: path.read_bytes() for path in kept} == kept


@pytest.mark.parametrize("garbage", [b"{ not [ valid", b"\xff\xfe\x00binary\x00"])
@pytest.mark.parametrize("name", NAMES)
def test_a_file_the_client_cannot_parse_is_refused_and_kept(
    name: str, garbage: bytes, cli: Callable[..., Any], engine: Any
) -> None:
    target = Path(configure(cli, name, url_for(name, engine), "--dry-run")["file"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(garbage)

    result = cli("config", name, "--preset", "mock", "--base-url", url_for(name, engine))

    assert result.exit_code == 2, result.stdout + result.stderr
    assert str(target) in result.stderr
    assert target.read_bytes() == garbage


def takes_a_window(name: str) -> bool:
    return any(
        isinstance(option, Shared) and option.name == "context_window"
        for option in client(name).options
    )


WINDOWED = [name for name in NAMES if takes_a_window(name)]


@pytest.mark.parametrize("name", WINDOWED)
def test_the_window_read_from_the_gateway_is_the_one_written(
    name: str, cli: Callable[..., Any], engine: Any
) -> None:
    written = configure(cli, name, url_for(name, engine), "--context-window", "gateway")
    text = "".join(path.read_text("utf-8") for path in files_of(written))
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    assert "32768" not in text
    # the window as is, or split into prompt + output (Copilot CLI's two variables)
    assert 24576 in numbers or any(a + b == 24576 for a in numbers for b in numbers), text


@pytest.mark.parametrize("name", NAMES)
def test_the_key_is_written_by_reference_never_as_itself(
    name: str, cli: Callable[..., Any], engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-contract-" + "7" * 24
    monkeypatch.setenv("CONTRACT_KEY", secret)
    flag = key_flag(client(name))
    written = configure(cli, name, url_for(name, engine), flag, "CONTRACT_KEY")
    said = cli(
        "config",
        name,
        "--preset",
        "mock",
        "--base-url",
        url_for(name, engine),
        flag,
        "CONTRACT_KEY",
    )  # fmt: skip  (the human output: a client's export line)
    texts = [path.read_text("utf-8") for path in files_of(written)]
    assert all(secret not in text for text in [*texts, said.stdout, said.stderr, str(written)])
    # by reference: in the file, or in the export line the client reads it from
    assert any("CONTRACT_KEY" in text for text in [*texts, said.stdout])


@pytest.mark.parametrize("name", WINDOWED)
def test_doctor_finds_a_window_larger_than_the_gateway_serves(
    name: str, cli: Callable[..., Any], engine: Any, client_env: None
) -> None:
    configure(cli, name, url_for(name, engine), "--context-window", "131072")

    report = cli("doctor", "--client", name, "--json").json()

    (finding,) = [f for f in report["findings"] if f["id"] == "context-window-too-large"]
    assert "131072" in finding["message"] and "24576" in finding["message"]
    assert f"pdnotes config {name} --context-window gateway" in finding["fix"]


@pytest.mark.parametrize("name", NAMES)
def test_smoke_sends_the_clients_recorded_request(
    name: str, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, client_env: None
) -> None:
    """The request smoke sends is the client's newest recorded one: its path and its body's
    keys (`doctor` and smoke judge an endpoint by it)."""
    shapes = sorted(client(name).shapes_dir().glob("*.json"))
    assert shapes, f"{name} has no recorded request (scripts/client_shapes.py {name})"
    monkeypatch.setenv("PATH", "/nonexistent")  # no installed client: the newest shape
    with recording_server() as (url, requests):
        base = {"anthropic": f"{url}/anthropic", "gemini": url}.get(client(name).protocol, url)
        configure(cli, name, base)
        cli("smoke", "--client", name, "-n", "1", "--json")
    turns = [r for r in requests if isinstance(r["body"], dict)]
    assert turns, f"smoke sent {name} no request"
    newest = max(
        (json.loads(path.read_text("utf-8")) for path in shapes),
        key=lambda shape: tuple(int(part) for part in shape["version"].split(".")[:3]),
    )
    sent = turns[0]
    last = newest["path"].rsplit("/", 1)[-1].replace("<model>", "pd-mock-1")
    assert sent["path"].partition("?")[0].endswith(last)
    assert set(newest["body"]) <= set(sent["body"])
    assert set(sent["body"]) - set(newest["body"]) <= BUDGET  # smoke bounds each answer


@pytest.mark.parametrize("name", NAMES)
def test_smoke_without_a_setup_says_how_to_make_one(name: str, cli: Callable[..., Any]) -> None:
    result = cli("smoke", "--client", name, "-n", "1")

    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"pdnotes config {name}" in result.stderr


# What a client does when the key variable its file names is unset, where it is not "stop before
# sending and say so" (checked with the real clients):
SENDS_WITHOUT_A_KEY = {"claude"}  # 2.1.197: "apiKeyHelper failed: exited 1", then it sends
READS_ITS_OWN_VARIABLE = {"gemini": "GEMINI_API_KEY"}  # --key-env names where it is copied from


@pytest.mark.parametrize("name", NAMES)
def test_smoke_does_what_the_client_does_when_the_key_variable_is_unset(
    name: str, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, client_env: None
) -> None:
    """A client that would send no key stops before sending: so does smoke, and it says which
    variable to export. One that sends anyway is smoked the same way, with no key."""
    monkeypatch.delenv("CONTRACT_UNSET_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with recording_server() as (url, requests):
        base = {"anthropic": f"{url}/anthropic", "gemini": url}.get(client(name).protocol, url)
        configure(cli, name, base, key_flag(client(name)), "CONTRACT_UNSET_KEY")
        smoke = cli("smoke", "--client", name, "-n", "1")
    sent = [r for r in requests if isinstance(r["body"], dict)]

    if name in SENDS_WITHOUT_A_KEY:
        assert smoke.exit_code == 0 and len(sent) == 1, smoke.stdout + smoke.stderr
        keys = {"authorization", "x-api-key"} & {h.lower() for h in sent[0]["headers"]}
        assert keys == set(), sent[0]["headers"]
        return
    assert smoke.exit_code == 2, smoke.stdout + smoke.stderr
    assert sent == []
    variable = READS_ITS_OWN_VARIABLE.get(name, "CONTRACT_UNSET_KEY")
    assert f"export {variable}=" in smoke.stderr
