"""Connect knows the bridge: `pdnotes config codex|claude --bridge` points the client at the
bridge and records the upstream; `pdnotes bridge serve` with no flags finds it; `pdnotes bridge
install|uninstall` writes / removes a user service without ever running the real systemctl."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from notes_cli.bridge import config as bridge_config
from notes_cli.bridge import service
from notes_cli.errors import UsageError


def _codex(home: Path) -> dict:
    return tomllib.loads((home / ".codex" / "config.toml").read_text())


def test_config_codex_bridge_points_codex_at_the_bridge_and_records_upstream(cli, isolated_home):
    result = cli(
        "config", "codex", "--bridge", "--base-url", "http://gpu-box:23333/v1/chat/completions",
        "--env-key", "GPU_KEY", "--model", "qwen3-32b",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    config = _codex(isolated_home)
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:8787/v1"
    assert "env_key" not in provider  # the bridge has no key of its own here
    assert config["model"] == "qwen3-32b"
    record = json.loads((isolated_home / ".pdnotes" / "bridge.json").read_text())
    assert record["upstream"] == "http://gpu-box:23333/v1"  # the pasted suffix is dropped
    assert record["upstream_key_env"] == "GPU_KEY"
    assert "pdnotes bridge serve" in result.stdout + result.stderr


def test_codex_through_the_bridge_reads_the_window_from_the_upstream(
    cli, isolated_home, engine_server
):
    """`--context-window gateway` with `--bridge` asks the upstream's /models, as without it
    (the bridge need not be running), rather than writing no window."""
    result = cli(
        "config", "codex", "--bridge", "--base-url", engine_server.base_url,
        "--model", "pd-mock-1", "--context-window", "gateway",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    config = _codex(isolated_home)
    assert config["model_context_window"] == 32768  # the engine's max_model_len
    assert config["model_providers"][config["model_provider"]]["base_url"].startswith(
        "http://127.0.0.1:8787"
    )


def test_a_preset_keeps_its_model_metadata_through_the_bridge(cli, isolated_home):
    """The upstream preset's window and model catalog are the model's, wherever Codex calls."""
    result = cli("config", "codex", "--bridge", "--preset", "mock")
    assert result.exit_code == 0, result.stderr
    config = _codex(isolated_home)
    assert config["model_context_window"] == 32768
    catalog = json.loads(Path(config["model_catalog_json"]).read_text())
    assert [m["slug"] for m in catalog["models"]] == ["pd-mock-1"]


def test_dry_run_records_nothing(cli, isolated_home):
    result = cli(
        "config", "codex", "--bridge", "--base-url", "http://gpu-box:23333/v1",
        "--model", "m", "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert not (isolated_home / ".pdnotes" / "bridge.json").exists()
    assert not (isolated_home / ".codex" / "config.toml").exists()


def test_config_claude_bridge_uses_a_placeholder_token_and_the_bridge_root(cli, isolated_home):
    result = cli(
        "config", "claude", "--bridge", "--base-url", "http://gpu-box:23333/v1",
        "--token-env", "GPU_KEY", "--model", "glm-4.6", "--bridge-port", "9011",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    settings = json.loads((isolated_home / ".claude" / "settings.json").read_text())
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9011"
    assert settings["env"]["ANTHROPIC_AUTH_TOKEN"] == "pdnotes-bridge-no-key"
    assert settings["env"]["ANTHROPIC_MODEL"] == "glm-4.6"
    assert "apiKeyHelper" not in settings  # the upstream's key stays with the bridge
    record = bridge_config.load_record()
    assert record is not None
    assert (record.upstream, record.upstream_key_env, record.port) == (
        "http://gpu-box:23333/v1",
        "GPU_KEY",
        9011,
    )


def test_a_chat_only_preset_goes_through_the_bridge_without_the_flag(cli, isolated_home):
    result = cli("config", "codex", "--preset", "lmdeploy-proxy", "--model", "internlm3")
    assert result.exit_code == 0, result.stderr
    provider = _codex(isolated_home)["model_providers"]["pdnotes-bridge"]
    assert provider["base_url"] == "http://127.0.0.1:8787/v1"
    record = bridge_config.load_record()
    assert record is not None and record.upstream == "http://127.0.0.1:8000/v1"


def test_lmdeploy_0_14_is_reached_directly_by_codex_and_claude(cli, isolated_home):
    """LMDeploy's api_server serves Responses (0.14+) and Messages (0.13+): no bridge."""
    result = cli("config", "codex", "--preset", "lmdeploy", "--model", "internlm3")
    assert result.exit_code == 0, result.stderr
    providers = _codex(isolated_home)["model_providers"]
    assert providers["lmdeploy"]["base_url"] == "http://127.0.0.1:23333/v1"
    assert providers["lmdeploy"].get("wire_api", "responses") == "responses"
    assert "pdnotes-bridge" not in providers
    result = cli("config", "claude", "--preset", "lmdeploy", "--model", "internlm3")
    assert result.exit_code == 0, result.stderr
    settings = json.loads((isolated_home / ".claude" / "settings.json").read_text())
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:23333"
    assert bridge_config.load_record() is None


def test_a_key_in_place_of_a_variable_name_is_refused(cli, isolated_home):
    result = cli(
        "config", "codex", "--bridge", "--base-url", "http://h/v1", "--model", "m",
        "--env-key", "sk-live-0123456789abcdef0123456789abcdef",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "0123456789abcdef0123" not in result.stdout + result.stderr


def test_serve_resolves_the_record_and_flags_override_it(monkeypatch):
    monkeypatch.setenv("GPU_KEY", "sk-test-1234567890")
    bridge_config.save_record(
        bridge_config.BridgeConfig(
            upstream="http://gpu-box:23333/v1", upstream_key_env="GPU_KEY", port=9000
        )
    )
    resolved = bridge_config.resolve(
        upstream=None, upstream_key_env=None, host=None, port=None,
        model_map=["gpt-5.5=qwen3"], api_key_env=None,
    )  # fmt: skip
    assert (resolved.upstream, resolved.port, resolved.upstream_key_env) == (
        "http://gpu-box:23333/v1",
        9000,
        "GPU_KEY",
    )
    assert resolved.upstream_model("gpt-5.5") == "qwen3"
    other = bridge_config.resolve(
        upstream="http://other/v1", upstream_key_env=None, host=None, port=None,
        model_map=[], api_key_env=None,
    )  # fmt: skip
    assert other.upstream == "http://other/v1" and other.upstream_key_env is None


def test_serve_without_any_upstream_says_how_to_get_one(cli):
    result = cli("bridge", "serve")
    assert result.exit_code == 2
    assert "--upstream" in result.stderr
    assert "pdnotes config codex --bridge --base-url" in result.stderr.replace("\n", " ")


def test_serve_refuses_an_unset_key_variable(cli):
    result = cli("bridge", "serve", "--upstream", "http://h/v1", "--upstream-key-env", "NOPE_KEY")
    assert result.exit_code == 2
    assert "NOPE_KEY" in result.stderr


def test_bad_model_map_is_a_usage_error():
    with pytest.raises(UsageError):
        bridge_config.parse_model_map(["no-equals-sign"])


# --- the user service -------------------------------------------------------------------------


def _record(**kw) -> bridge_config.BridgeConfig:
    config = bridge_config.BridgeConfig(upstream="http://gpu-box:23333/v1", **kw)
    bridge_config.save_record(config)
    return config


def test_install_dry_run_shows_the_unit_and_writes_nothing(cli, isolated_home, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated_home / "xdg"))
    monkeypatch.setattr("sys.platform", "linux")
    _record(upstream_key_env="GPU_KEY")
    result = cli("bridge", "install", "--dry-run")
    assert result.exit_code == 0, result.stderr
    unit = isolated_home / "xdg" / "systemd" / "user" / "pdnotes-bridge.service"
    assert str(unit) in result.stdout.replace("\n", "")
    assert "ExecStart=" in result.stdout and "bridge serve" in result.stdout
    assert "PassEnvironment=GPU_KEY" in result.stdout
    assert "systemctl --user enable --now pdnotes-bridge.service" in result.stdout
    assert not unit.exists()


def test_install_and_uninstall_write_and_remove_the_unit(cli, isolated_home, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated_home / "xdg"))
    monkeypatch.setattr("sys.platform", "linux")
    ran: list[list[str]] = []
    monkeypatch.setattr(service, "run_manager", lambda command: ran.append(list(command)) or 0)
    monkeypatch.setenv("GPU_KEY", "sk-secret-value-123456")
    _record(upstream_key_env="GPU_KEY")
    assert cli("bridge", "install").exit_code == 0
    unit = isolated_home / "xdg" / "systemd" / "user" / "pdnotes-bridge.service"
    text = unit.read_text()
    assert "sk-secret-value-123456" not in text  # names only, never the key
    assert f"PDNOTES_HOME={os.environ['PDNOTES_HOME']}" in text
    assert ["systemctl", "--user", "enable", "--now", "pdnotes-bridge.service"] in ran
    result = cli("bridge", "uninstall")
    assert result.exit_code == 0, result.stderr
    assert not unit.exists()
    assert ["systemctl", "--user", "disable", "--now", "pdnotes-bridge.service"] in ran


def test_launchd_agent_on_macos(isolated_home):
    import plistlib

    plan = service.plan_service(_record(api_key_env="BRIDGE_KEY"), platform="darwin")
    assert plan.path == isolated_home / "Library" / "LaunchAgents" / "net.pdnotes.bridge.plist"
    agent = plistlib.loads(plan.text.encode())
    assert agent["ProgramArguments"][-2:] == ["bridge", "serve"]
    assert plan.key_hint and "launchctl setenv BRIDGE_KEY" in plan.key_hint
    assert plan.enable == (("launchctl", "load", "-w", str(plan.path)),)


def test_install_without_a_record_says_what_to_run_first(cli):
    result = cli("bridge", "install", "--dry-run")
    assert result.exit_code == 2
    assert "pdnotes config codex --bridge --base-url" in result.stderr.replace("\n", " ")


def _up(extra: str) -> str:
    """A record with a good upstream and `extra` (`, "port": 1`)."""
    return '{"upstream": "http://gpu-box:23333/v1"' + extra + "}"


DAMAGED_RECORDS = {
    "port-overflows": _up(', "port": 1e400'),
    "port-out-of-range": _up(', "port": 70000'),
    "port-a-string": _up(', "port": "8787"'),
    "key-env-a-number": _up(', "upstream_key_env": 5'),
    "key-env-a-key": _up(', "api_key_env": "sk-live-0123456789abcdef0123"'),
    "upstream-a-list": '{"upstream": ["http://gpu-box:23333/v1"]}',
    "model-map-nested": _up(', "model_map": {"a": {"b": 1}}'),
    "not-an-object": "[1, 2]",
    "not-json": '{"upstream": ',
    "nested-too-deeply": "[" * 100_000 + "]" * 100_000,
}


def _on_linux_without_systemctl(isolated_home, monkeypatch) -> None:
    """`bridge install` as on Linux, its unit under the test's home, systemctl not run."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated_home / "xdg"))
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("PDNOTES_SERVICE_MANAGER", "skip")


@pytest.mark.parametrize("text", DAMAGED_RECORDS.values(), ids=DAMAGED_RECORDS.keys())
@pytest.mark.parametrize(
    "command",
    [
        ("bridge", "install", "--no-start"),
        ("bridge", "serve", "--port", "0"),
    ],
    ids=["install", "serve"],
)
def test_a_damaged_record_is_bad_input_naming_the_file(
    cli, isolated_home, monkeypatch, command, text
):
    _on_linux_without_systemctl(isolated_home, monkeypatch)

    def served(config, **_):
        raise AssertionError(f"served {config} from a damaged record")

    monkeypatch.setattr("notes_cli.bridge.server.serve_forever", served)  # never blocks
    record = isolated_home / ".pdnotes" / "bridge.json"
    record.parent.mkdir(parents=True)
    record.write_text(text)
    result = cli(*command)  # a traceback would raise here
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"{record} is not a bridge record" in result.stderr.replace("\n", "")
    assert "0123456789abcdef0123" not in result.stdout + result.stderr
    assert not (isolated_home / "xdg" / "systemd").exists()
    assert record.read_text() == text  # reported, not rewritten


@pytest.mark.parametrize("text", DAMAGED_RECORDS.values(), ids=DAMAGED_RECORDS.keys())
def test_config_bridge_rewrites_a_damaged_record(cli, isolated_home, text):
    record = isolated_home / ".pdnotes" / "bridge.json"
    record.parent.mkdir(parents=True)
    record.write_text(text)
    result = cli(
        "config", "codex", "--bridge", "--base-url", "http://gpu-box:23333/v1", "--model", "m",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    loaded = bridge_config.load_record()
    assert loaded is not None and (loaded.upstream, loaded.port) == (
        "http://gpu-box:23333/v1",
        8787,
    )


def test_uninstall_removes_the_unit_even_with_a_damaged_record(cli, isolated_home, monkeypatch):
    _on_linux_without_systemctl(isolated_home, monkeypatch)
    _record()
    assert cli("bridge", "install", "--no-start").exit_code == 0
    unit = isolated_home / "xdg" / "systemd" / "user" / "pdnotes-bridge.service"
    assert unit.exists()
    (isolated_home / ".pdnotes" / "bridge.json").write_text('{"upstream": ')
    result = cli("bridge", "uninstall")
    assert result.exit_code == 0, result.stderr
    assert not unit.exists()
    assert f"removed {unit}" in result.stdout.replace("\n", "")


def test_config_bridge_changes_nothing_when_the_record_cannot_be_written(cli, isolated_home):
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "old"\n')
    (isolated_home / ".pdnotes" / "bridge.json").mkdir(parents=True)  # cannot be replaced
    result = cli(
        "config", "codex", "--bridge", "--base-url", "http://gpu-box:23333/v1", "--model", "m",
    )  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "bridge.json is a folder" in result.stderr.replace("\n", "")
    assert "wrote" not in result.stdout
    assert config.read_text() == 'model = "old"\n'  # Codex still points where it did


@pytest.mark.parametrize("had_record", [True, False], ids=["record", "no-record"])
def test_config_bridge_puts_the_record_back_when_the_client_file_fails(
    cli, isolated_home, monkeypatch, had_record
):
    from notes_cli import fileio
    from notes_cli.errors import ConfigWriteError

    record = isolated_home / ".pdnotes" / "bridge.json"
    if had_record:
        _record(model_map={"gpt-5.5": "qwen3"})
    before = record.read_bytes() if had_record else None
    real_write = fileio.atomic_write

    def failing(path, data, **kw):
        if path.name == "config.toml":
            raise ConfigWriteError(f"cannot write {path}: disk full; nothing was changed")
        return real_write(path, data, **kw)

    monkeypatch.setattr(fileio, "atomic_write", failing)
    result = cli(
        "config", "codex", "--bridge", "--base-url", "http://other:8000/v1", "--model", "m",
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "nothing was changed" in result.stderr
    assert not (isolated_home / ".codex" / "config.toml").exists()
    assert (record.read_bytes() if record.exists() else None) == before


@pytest.mark.parametrize(
    "args",
    [
        ("config", "codex", "--bridge", "--bridge-port", "70000"),
        ("config", "claude", "--bridge", "--bridge-port", "65536"),
        ("config", "codex", "--bridge", "--bridge-port", "0"),  # a client cannot call port 0
        ("config", "codex", "--bridge", "--bridge-port", "-1"),
        ("bridge", "serve", "--port", "70000"),
        ("bridge", "serve", "--port", "-1"),
    ],
    ids=lambda a: f"{a[1]}{a[-2]}={a[-1]}",
)
def test_a_port_outside_the_tcp_range_is_a_usage_error(cli, isolated_home, monkeypatch, args):
    def served(config, **_):
        raise AssertionError(f"served on port {config.port}")

    monkeypatch.setattr("notes_cli.bridge.server.serve_forever", served)  # never blocks
    upstream = ["--base-url" if args[0] == "config" else "--upstream", "http://gpu-box:23333/v1"]
    result = cli(*args, *upstream, *(["--model", "m"] if args[0] == "config" else []))
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"Invalid value for '{args[-2]}'" in result.stderr
    assert not (isolated_home / ".codex").exists() and not (isolated_home / ".claude").exists()
    assert not (isolated_home / ".pdnotes" / "bridge.json").exists()


HOSTILE_HOME = "My %20 Notes $HOME \"q' \\z é"  # URL-encoded space, a specifier, quotes, …


def _unit_for(isolated_home, monkeypatch, cli, pdnotes_home: str, pythonpath: str) -> Path:
    _on_linux_without_systemctl(isolated_home, monkeypatch)
    monkeypatch.setenv("PDNOTES_HOME", pdnotes_home)
    monkeypatch.setenv("PYTHONPATH", pythonpath)
    _record()
    result = cli("bridge", "install", "--no-start")
    assert result.exit_code == 0, result.stderr
    return isolated_home / "xdg" / "systemd" / "user" / "pdnotes-bridge.service"


def test_unit_values_are_escaped_for_systemd(cli, isolated_home, monkeypatch):
    home = str(isolated_home / HOSTILE_HOME)
    unit = _unit_for(isolated_home, monkeypatch, cli, home, "/src/a%1:/src/$X")
    lines = unit.read_text().splitlines()
    quoted = home.replace("%", "%%").replace("\\", "\\\\").replace('"', '\\"')
    assert f'Environment="PDNOTES_HOME={quoted}"' in lines
    assert 'Environment="PYTHONPATH=/src/a%%1:/src/$X"' in lines  # `$` is literal here
    assert f"EnvironmentFile=-{home.replace('%', '%%')}/bridge.env" in lines  # read as written
    assert not any("%20" in line.replace("%%", "") for line in lines)


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_systemd_reads_back_exactly_the_paths_pdnotes_meant(cli, isolated_home, monkeypatch):
    home = str(isolated_home / HOSTILE_HOME)
    unit = _unit_for(isolated_home, monkeypatch, cli, home, "/src/a%1:/src/$X")
    copy = isolated_home / "pdnotes-verify.service"  # verify wants a unit name it can load
    copy.write_text(unit.read_text())
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(copy)],
        capture_output=True, text=True, timeout=30,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug"},
    )  # fmt: skip
    log = checked.stdout + checked.stderr
    assert "specifier" not in log and "bad unit file setting" not in log, log
    assert f"Environment: PDNOTES_HOME={home}\n" in log, log
    assert "Environment: PYTHONPATH=/src/a%1:/src/$X\n" in log
    assert f"EnvironmentFile: -{home}/bridge.env\n" in log


@pytest.mark.parametrize(
    ("executable", "pdnotes_home"),
    [("/opt/it's/bin/python3", None), (None, "two\nlines")],
    ids=["quote-in-python", "line-end-in-home"],
)
def test_a_path_a_unit_cannot_carry_is_refused(
    cli, isolated_home, monkeypatch, executable, pdnotes_home
):
    _on_linux_without_systemctl(isolated_home, monkeypatch)
    if pdnotes_home:
        monkeypatch.setenv("PDNOTES_HOME", str(isolated_home / pdnotes_home))
    _record()
    if executable:
        monkeypatch.setattr("sys.executable", executable)
    result = cli("bridge", "install", "--no-start")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "cannot carry" in result.stderr and "no service file" in result.stderr
    assert not (isolated_home / "xdg").exists()


def test_launchd_agent_escapes_xml_and_refuses_control_characters(isolated_home, monkeypatch):
    import plistlib

    monkeypatch.setenv("PDNOTES_HOME", str(isolated_home / "a <&> b"))
    plan = service.plan_service(_record(), platform="darwin")
    agent = plistlib.loads(plan.text.encode())
    assert agent["EnvironmentVariables"]["PDNOTES_HOME"] == str(isolated_home / "a <&> b")
    monkeypatch.setenv("PYTHONPATH", "/src\x01")
    with pytest.raises(UsageError, match="launchd service cannot carry"):
        service.plan_service(_record(), platform="darwin")


USER_EDIT = "MemoryMax=200M\nEnvironment=HTTPS_PROXY=http://proxy:3128\n"


def _installed(cli, isolated_home, monkeypatch, **record) -> Path:
    _on_linux_without_systemctl(isolated_home, monkeypatch)
    _record(**record)
    assert cli("bridge", "install", "--no-start").exit_code == 0
    return isolated_home / "xdg" / "systemd" / "user" / "pdnotes-bridge.service"


def _edit(unit: Path) -> str:
    edited = unit.read_text().replace("RestartSec=2\n", "RestartSec=2\n" + USER_EDIT)
    unit.write_text(edited)
    return edited


def test_install_refuses_to_replace_an_edited_unit_without_force(cli, isolated_home, monkeypatch):
    unit = _installed(cli, isolated_home, monkeypatch)
    edited = _edit(unit)
    refused = cli("bridge", "install", "--no-start")
    assert refused.exit_code == 1, refused.stdout + refused.stderr
    assert unit.read_text() == edited  # the user's lines are still there
    assert "-MemoryMax=200M" in refused.stderr  # the diff says what would be lost
    assert "nothing was changed" in refused.stderr and "--force" in refused.stderr
    dry = cli("bridge", "install", "--dry-run")
    assert dry.exit_code == 0 and "refuse" in dry.stdout and unit.read_text() == edited
    forced = cli("bridge", "install", "--no-start", "--force")
    assert forced.exit_code == 0, forced.stderr
    assert "MemoryMax" not in unit.read_text()
    (backup,) = (isolated_home / ".pdnotes" / "backups" / "bridge-service").glob("*.bak")
    assert backup.read_text() == edited  # kept, and the report says where
    assert str(backup) in forced.stdout.replace("\n", "")


def test_install_replaces_the_unit_an_earlier_install_wrote(cli, isolated_home, monkeypatch):
    unit = _installed(cli, isolated_home, monkeypatch)
    _record(upstream_key_env="GPU_KEY")  # the unit pdnotes writes changes (PassEnvironment=)
    result = cli("bridge", "install", "--no-start")
    assert result.exit_code == 0, result.stderr
    assert "PassEnvironment=GPU_KEY" in unit.read_text()
    assert not (isolated_home / ".pdnotes" / "backups" / "bridge-service").exists()


def test_uninstall_keeps_a_copy_of_an_edited_unit(cli, isolated_home, monkeypatch):
    unit = _installed(cli, isolated_home, monkeypatch, upstream_key_env="GPU_KEY")
    edited = _edit(unit)
    result = cli("bridge", "uninstall")
    assert result.exit_code == 0, result.stderr
    assert not unit.exists()
    (backup,) = (isolated_home / ".pdnotes" / "backups" / "bridge-service").glob("*.bak")
    assert backup.read_text() == edited
    assert str(backup) in result.stdout.replace("\n", "")
    unit = _installed(cli, isolated_home, monkeypatch, upstream_key_env="GPU_KEY")
    assert cli("bridge", "uninstall").exit_code == 0  # unedited: removed, no second copy
    assert not unit.exists()
    assert len(list((isolated_home / ".pdnotes" / "backups" / "bridge-service").glob("*.bak"))) == 1


@pytest.mark.parametrize("edited", [False, True], ids=["as-written", "user-edited"])
def test_a_unit_an_older_pdnotes_wrote_is_replaced_unless_edited(
    cli, isolated_home, monkeypatch, edited: bool
):
    # before pdnotes kept a note of what it wrote, there is no digest to compare with
    unit = _installed(cli, isolated_home, monkeypatch)
    (isolated_home / ".pdnotes" / "bridge-service.json").unlink()
    before = _edit(unit) if edited else unit.read_text()
    _record(upstream_key_env="GPU_KEY")  # the unit pdnotes writes changes
    result = cli("bridge", "install", "--no-start")
    if edited:
        assert result.exit_code == 1 and unit.read_text() == before
    else:
        assert result.exit_code == 0, result.stderr
        assert "PassEnvironment=GPU_KEY" in unit.read_text()


def test_a_launchd_agent_an_older_pdnotes_wrote_counts_as_its_own(isolated_home, monkeypatch):
    import plistlib

    monkeypatch.setenv("HOME", str(isolated_home))
    plan = service.plan_service(_record(), platform="darwin")
    agent = plistlib.loads(plan.text.encode())
    plan.path.parent.mkdir(parents=True)
    agent["ProgramArguments"] = ["/old/python", "-m", "notes_cli", "bridge", "serve"]
    plan.path.write_bytes(plistlib.dumps(agent))
    assert service.file_state(plan) == "ours"  # only what pdnotes writes, an older command
    plan.path.write_bytes(plistlib.dumps({**agent, "Nice": 5}))  # a key the user added
    assert service.file_state(plan) == "edited"


def test_uninstall_without_a_user_systemd_bus_still_removes_the_unit_and_says_so(
    cli, isolated_home, monkeypatch, tmp_path
):
    """Over ssh or in a container `systemctl --user` has no bus (issue 35): uninstall used to
    stop at its error, with install's advice, and leave the unit behind."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated_home / "xdg"))
    monkeypatch.setattr("sys.platform", "linux")
    real = service.run_manager
    monkeypatch.setattr(service, "run_manager", lambda command: 0)
    _record()
    assert cli("bridge", "install").exit_code == 0
    unit = isolated_home / "xdg" / "systemd" / "user" / "pdnotes-bridge.service"
    assert unit.exists()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"
    no_bus = "echo 'Failed to connect to bus: No medium found' >&2"
    systemctl.write_text(f"#!/bin/sh\n{no_bus}\nexit 1\n")
    systemctl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(service, "run_manager", real)  # the real runner, on the fake systemctl
    result = cli("bridge", "uninstall")
    assert result.exit_code == 1
    assert not unit.exists()
    assert f"removed {unit}" in result.stdout.replace("\n", "")
    said = " ".join(result.stderr.split())
    assert "did not stop the service" in said
    assert "`systemctl --user disable --now pdnotes-bridge.service` exited with status 1" in said
    assert "`systemctl --user daemon-reload` exited with status 1" in said
    assert "start it by hand" not in said  # install's advice
    assert "fix:" in said and "systemctl --user disable --now pdnotes-bridge.service" in said
    again = cli("bridge", "uninstall")
    assert again.exit_code == 0 and "nothing installed" in again.stdout
