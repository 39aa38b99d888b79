"""Copilot CLI's one difference from every other client, which the registry-wide contract tests
cannot see: it reads its provider from the environment only, so `pdnotes config copilot` writes
an env file the user's shell loads (`set -a; . FILE; set +a`). What must hold:

- a real shell loading the file gets exactly the variables pdnotes says Copilot will use
  (quoting that the shell and pdnotes read alike), the user's own lines kept;
- the key travels by reference (`printenv NAME`), never into the file;
- the shell's variables win over the file's, and doctor says when the file is not loaded here
  or the shell holds other values.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_copilot_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own Copilot setup stays out (tests/conftest.py does not scrub COPILOT_*)."""
    for name in list(os.environ):
        if name.startswith("COPILOT_"):
            monkeypatch.delenv(name)


def env_file(home: Path) -> Path:
    return home / ".copilot" / "pdnotes.env"


def loaded(path: Path) -> dict[str, str]:
    """The COPILOT_* variables a real POSIX shell has after `set -a; . FILE; set +a`."""
    script = 'set -a; . "$1"; set +a; env'
    out = subprocess.run(
        ["sh", "-c", script, "sh", str(path)],
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    pairs = (line.partition("=") for line in out.splitlines())
    return {k: v for k, _, v in pairs if k.startswith("COPILOT_") or k == "MINE"}


def shown(result_json: dict) -> dict[str, str]:  # type: ignore[type-arg]
    (setup,) = result_json["clients"]
    return {v["name"]: v["value"] for v in setup["values"]}


def test_a_real_shell_loading_the_file_gets_what_config_show_says(cli, isolated_home) -> None:
    path = env_file(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text("# my own\nexport MINE='kept as it was'   # a comment\n", encoding="utf-8")

    result = cli(
        "config", "copilot", "--base-url", "https://gw.example/v1/", "--model", "org/m:1",
        "--key-env", "GW_KEY", "--context-window", "32768",
    )  # fmt: skip

    assert result.exit_code == 0, result.stderr
    assert "set -a; . ~/.copilot/pdnotes.env; set +a" in result.stdout
    in_shell = loaded(path)
    assert in_shell["MINE"] == "kept as it was"
    assert in_shell["COPILOT_PROVIDER_API_KEY_COMMAND"] == "printenv GW_KEY"
    assert in_shell["COPILOT_PROVIDER_BASE_URL"] == "https://gw.example/v1"
    assert in_shell["COPILOT_MODEL"] == "org/m:1"
    assert in_shell["COPILOT_OFFLINE"] == "true"
    # the window is prompt + output tokens; the output an eighth of it
    assert in_shell["COPILOT_PROVIDER_MAX_OUTPUT_TOKENS"] == "4096"
    assert in_shell["COPILOT_PROVIDER_MAX_PROMPT_TOKENS"] == str(32768 - 4096)
    show = cli("config", "show", "--client", "copilot", "--json")
    assert show.exit_code == 0, show.stderr
    del in_shell["MINE"]
    assert shown(show.json()) == in_shell


def test_the_key_stays_in_its_variable_and_doctor_says_when_it_is_unset(
    cli, isolated_home, sentinel_key, monkeypatch
) -> None:
    monkeypatch.setenv("GW_KEY", sentinel_key)

    result = cli("config", "copilot", "--base-url", "https://gw.example/v1", "--model", "m")

    assert result.exit_code == 0
    result = cli("config", "copilot", "--key-env", "GW_KEY")
    assert result.exit_code == 0, result.stderr
    text = env_file(isolated_home).read_text()
    assert sentinel_key not in text + result.stdout + result.stderr
    for name, value in loaded(env_file(isolated_home)).items():
        monkeypatch.setenv(name, value)  # the user loaded the file
    show = cli("config", "show", "--client", "copilot", "--json").json()["clients"][0]
    assert show["key_env"] == "GW_KEY"
    assert show["key"] != sentinel_key and show["key"].endswith(sentinel_key[-4:])

    monkeypatch.delenv("GW_KEY")
    doctor = cli("doctor", "--client", "copilot", "--offline", "--json")
    ids = [f["id"] for f in doctor.json()["findings"]]
    assert "copilot-key-env-unset" in ids
    assert doctor.exit_code == 1


def test_the_shell_wins_over_the_file_and_doctor_says_when_they_differ(
    cli, isolated_home, monkeypatch
) -> None:
    assert cli("config", "copilot", "--preset", "mock").exit_code == 0

    not_loaded = cli("doctor", "--client", "copilot", "--offline", "--json").json()
    assert [f["id"] for f in not_loaded["findings"]] == ["copilot-env-not-loaded"]

    for name, value in loaded(env_file(isolated_home)).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("COPILOT_MODEL", "other-model")
    show = cli("config", "show", "--client", "copilot", "--json").json()["clients"][0]
    assert show["model"] == "other-model"  # what a copilot started from this shell sends
    found = cli("doctor", "--client", "copilot", "--offline", "--json").json()["findings"]
    pairs = [(f["id"], f.get("line")) for f in found]
    # the model line of the file, and the mock engine does not serve that model
    assert pairs == [("copilot-env-overridden", 8), ("model-unknown", None)]


def test_a_literal_key_in_copilots_providers_json_is_found_and_not_shown(
    cli, isolated_home, sentinel_key
) -> None:
    """providers.json takes a key only as a literal (no variable reaches it): doctor says so."""
    path = isolated_home / ".copilot" / "providers.json"
    path.parent.mkdir(parents=True)
    entry = {"name": "gw", "baseUrl": "https://gw.example/v1", "apiKey": sentinel_key}
    path.write_text(json.dumps({"providers": [entry], "models": []}, indent=1), encoding="utf-8")
    assert cli("config", "copilot", "--preset", "mock").exit_code == 0

    doctor = cli("doctor", "--client", "copilot", "--offline", "--json")

    found = [f for f in doctor.json()["findings"] if f["id"] == "key-in-file"]
    assert [(f["file"], f["line"]) for f in found] == [(str(path), 6)]
    assert sentinel_key not in doctor.stdout + doctor.stderr


def test_a_file_saved_with_crlf_is_refused_and_kept(cli, isolated_home) -> None:
    """A shell loading `NAME=value\\r\\n` keeps the CR in the value, so pdnotes would read
    another value than Copilot gets: it leaves the file alone and says which line."""
    path = env_file(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"# mine\nCOPILOT_MODEL=m\r\n")

    result = cli("config", "copilot", "--preset", "mock")

    assert result.exit_code == 2
    assert "line 2 ends in a carriage return" in result.stderr
    assert path.read_bytes() == b"# mine\nCOPILOT_MODEL=m\r\n"
