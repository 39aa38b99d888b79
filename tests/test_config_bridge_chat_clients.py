"""`pdnotes config qwen|opencode --bridge`: the client file points at the bridge's /v1 root (its
chat pass-through), the upstream, its key variable and the fallbacks go into the bridge record,
no key is written anywhere; dry-run writes neither; undo puts the client file back; and the
`bridge` preset points either client at a bridge that is already set up."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from notes_cli.clients import jsonc
from notes_cli.clients.opencode.config import DIALECT as OPENCODE
from notes_cli.clients.qwen.config import DIALECT as QWEN

KEY = "sk-upstream-SENTINEL-0123456789abcdef"
UPSTREAM = ["--base-url", "http://gpu-box:23333/v1/chat/completions", "--key-env", "GPU_KEY"]
FALLBACK = ["--bridge-fallback", "http://spare:8000/v1", "--bridge-fallback-key-env", "SPARE_KEY"]


def qwen_settings(home: Path) -> dict[str, Any]:
    return json.loads((home / ".qwen" / "settings.json").read_text())


def opencode_config(home: Path) -> dict[str, Any]:
    path = home / ".config" / "opencode" / "opencode.json"
    return jsonc.parse(path.read_text(), path, OPENCODE)


def record(home: Path) -> dict[str, Any]:
    return json.loads((home / ".pdnotes" / "bridge.json").read_text())


def assert_recorded(home: Path, model: str) -> None:
    saved = record(home)
    assert saved["upstream"] == "http://gpu-box:23333/v1"  # the pasted suffix is dropped
    assert saved["upstream_key_env"] == "GPU_KEY"
    assert saved["fallbacks"] == [
        {"upstream": "http://spare:8000/v1", "upstream_key_env": "SPARE_KEY"}
    ]
    assert saved["port"] == 9011 and saved["model"] == model


def test_config_qwen_bridge_points_qwen_at_the_bridge(
    cli: Callable[..., Any], isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPU_KEY", KEY)
    result = cli(
        "config", "qwen", "--bridge", *UPSTREAM, "--model", "qwen3-32b",
        "--bridge-port", "9011", *FALLBACK,
    )  # fmt: skip

    assert result.exit_code == 0, result.stderr
    settings = qwen_settings(isolated_home)
    (entry,) = settings["modelProviders"]["openai"]
    assert entry == {"id": "qwen3-32b", "baseUrl": "http://127.0.0.1:9011/v1"}
    assert settings["model"]["name"] == "qwen3-32b"
    # Qwen Code insists on a key: the bridge, which has none of its own here, gets a placeholder
    assert settings["security"]["auth"]["apiKey"] == "pdnotes-bridge-no-key"
    assert_recorded(isolated_home, "qwen3-32b")
    assert "POST http://127.0.0.1:9011/v1/chat/completions" in result.stdout
    assert "http://spare:8000/v1 (fallback 1)" in result.stdout + result.stderr
    everything = result.stdout + result.stderr
    for path in isolated_home.rglob("*.json"):
        everything += path.read_text()
    assert KEY not in everything


def test_config_opencode_bridge_points_opencode_at_the_bridge(
    cli: Callable[..., Any], isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPU_KEY", KEY)
    result = cli(
        "config", "opencode", "--bridge", *UPSTREAM, "--model", "glm-4.6",
        "--bridge-port", "9011", *FALLBACK,
    )  # fmt: skip

    assert result.exit_code == 0, result.stderr
    config = opencode_config(isolated_home)
    provider = config["provider"]["pdnotes-bridge"]
    assert provider["options"] == {"baseURL": "http://127.0.0.1:9011/v1"}  # no key: none needed
    assert config["model"] == "pdnotes-bridge/glm-4.6"
    assert_recorded(isolated_home, "glm-4.6")
    assert "POST http://127.0.0.1:9011/v1/chat/completions" in result.stdout
    assert KEY not in result.stdout + result.stderr + json.dumps(config)


@pytest.mark.parametrize(
    ("client", "read_key"),
    [
        ("qwen", lambda home: qwen_settings(home)["modelProviders"]["openai"][0]["envKey"]),
        (
            "opencode",
            lambda home: opencode_config(home)["provider"]["pdnotes-bridge"]["options"]["apiKey"],
        ),
    ],
)
def test_the_bridges_own_key_is_what_the_client_sends(
    cli: Callable[..., Any], isolated_home: Path, client: str, read_key: Callable[[Path], str]
) -> None:
    result = cli(
        "config", client, "--bridge", *UPSTREAM, "--model", "m", "--bridge-key-env", "BRIDGE_KEY"
    )
    assert result.exit_code == 0, result.stderr
    assert read_key(isolated_home) in ("BRIDGE_KEY", "{env:BRIDGE_KEY}")  # never GPU_KEY
    assert record(isolated_home)["api_key_env"] == "BRIDGE_KEY"
    if client == "qwen":
        assert "apiKey" not in qwen_settings(isolated_home)["security"]["auth"]


@pytest.mark.parametrize("client", ["qwen", "opencode"])
def test_dry_run_writes_neither_the_client_file_nor_the_record(
    cli: Callable[..., Any], isolated_home: Path, client: str
) -> None:
    result = cli("config", client, "--bridge", *UPSTREAM, "--model", "m", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "127.0.0.1:8787/v1" in result.stdout  # the diff shows the bridge URL
    assert not (isolated_home / ".pdnotes" / "bridge.json").exists()
    assert not (isolated_home / ".qwen" / "settings.json").exists()
    assert not (isolated_home / ".config" / "opencode" / "opencode.json").exists()


@pytest.mark.parametrize(
    ("client", "relative"),
    [("qwen", ".qwen/settings.json"), ("opencode", ".config/opencode/opencode.json")],
)
def test_undo_puts_the_client_file_back(
    cli: Callable[..., Any], isolated_home: Path, client: str, relative: str
) -> None:
    path = isolated_home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    before = '{\n  // mine\n  "theme": "dark"\n}\n'
    path.write_text(before)

    wrote = cli("config", client, "--bridge", *UPSTREAM, "--model", "m")
    assert wrote.exit_code == 0, wrote.stderr
    assert "// mine" in path.read_text() and "127.0.0.1:8787/v1" in path.read_text()
    undone = cli("config", "undo", "--client", client)

    assert undone.exit_code == 0, undone.stderr
    assert path.read_text() == before


def test_opencode_bridge_reads_the_window_from_the_upstream(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    """`--context-window gateway` asks the upstream's /models (the bridge need not be running
    while the config is written)."""
    result = cli(
        "config", "opencode", "--bridge", "--base-url", engine_server.base_url,
        "--model", "pd-mock-1", "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    limit = opencode_config(isolated_home)["provider"]["pdnotes-bridge"]["models"]["pd-mock-1"]
    assert limit["limit"]["context"] == 32768


@pytest.mark.parametrize("client", ["qwen", "opencode"])
def test_bridge_needs_the_upstream(
    cli: Callable[..., Any], isolated_home: Path, client: str
) -> None:
    result = cli("config", client, "--bridge", "--model", "m")
    assert result.exit_code == 2
    assert "--bridge needs the upstream" in result.stderr
    assert not (isolated_home / ".pdnotes" / "bridge.json").exists()


def test_the_bridge_preset_points_both_clients_at_a_running_bridge(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    assert cli("config", "qwen", "--preset", "bridge", "--model", "m").exit_code == 0
    assert cli("config", "opencode", "--preset", "bridge", "--model", "m").exit_code == 0

    (entry,) = qwen_settings(isolated_home)["modelProviders"]["openai"]
    assert entry["baseUrl"] == "http://127.0.0.1:8787/v1"
    provider = opencode_config(isolated_home)["provider"]["pdnotes-bridge"]
    assert provider["options"]["baseURL"] == "http://127.0.0.1:8787/v1"
    assert not (isolated_home / ".pdnotes" / "bridge.json").exists()  # nothing to record


@pytest.mark.parametrize("client", ["qwen", "opencode"])
def test_doctor_says_the_bridge_is_not_running(
    cli: Callable[..., Any], isolated_home: Path, client: str
) -> None:
    from bridge_support import free_port

    port = str(free_port())
    wrote = cli("config", client, "--bridge", *UPSTREAM, "--model", "m", "--bridge-port", port)
    assert wrote.exit_code == 0, wrote.stderr

    report = cli("doctor", "--client", client, "--json")

    assert report.exit_code == 1, report.stdout
    (finding,) = [f for f in report.json()["findings"] if f["id"] == "bridge-not-running"]
    assert f"127.0.0.1:{port}" in finding["message"]


def test_qwen_moved_to_the_bridge_drops_the_upstreams_key_variable(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    """Qwen Code stops when the variable `envKey` names is unset: moved onto a bridge without
    a key of its own, the entry must not keep the upstream's variable (the bridge holds it)."""
    path = isolated_home / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{\n  // mine\n  "ui": {"theme": "dark"}\n}\n')
    direct = cli("config", "qwen", "--base-url", "http://gpu-box:23333/v1", "--key-env", "GPU_KEY",
                 "--model", "qwen3-32b")  # fmt: skip
    assert direct.exit_code == 0, direct.stderr
    assert qwen_settings_jsonc(path)["modelProviders"]["openai"][0]["envKey"] == "GPU_KEY"

    bridged = cli("config", "qwen", "--bridge", *UPSTREAM, "--model", "qwen3-32b")

    assert bridged.exit_code == 0, bridged.stderr
    settings = qwen_settings_jsonc(path)
    assert settings["modelProviders"]["openai"] == [
        {"id": "qwen3-32b", "baseUrl": "http://127.0.0.1:8787/v1"}
    ]
    assert settings["ui"] == {"theme": "dark"} and "// mine" in path.read_text()
    assert record(isolated_home)["upstream_key_env"] == "GPU_KEY"


def qwen_settings_jsonc(path: Path) -> dict[str, Any]:
    from notes_cli.clients import jsonc

    return jsonc.parse(path.read_text(), path, QWEN)
