"""`pdnotes config codex --profile NAME`: the profile file `$CODEX_HOME/NAME.config.toml` (what
`codex --profile NAME` layers over config.toml) gets the provider, with config.toml's guarantees
(comments kept, a backup, undo byte for byte, a dry run that writes nothing); doctor and
`config show` with `-p NAME` read it as Codex does, config.toml or not."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

MOCK = ("--preset", "mock", "--base-url", "http://127.0.0.1:9/v1")


def profile_file(home: Path, name: str = "work") -> Path:
    return home / ".codex" / f"{name}.config.toml"


def test_the_profile_file_gets_the_provider_and_config_toml_is_left_alone(
    cli, isolated_home: Path
) -> None:
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "gpt-5"\n', encoding="utf-8")
    result = cli("config", "codex", "--profile", "work", *MOCK, "--no-model-catalog")
    assert result.exit_code == 0, result.stderr
    assert str(profile_file(isolated_home)) in result.stdout
    written = tomllib.loads(profile_file(isolated_home).read_text(encoding="utf-8"))
    provider = written["model_providers"][written["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:9/v1"
    assert config.read_text(encoding="utf-8") == 'model = "gpt-5"\n'


def test_comments_and_other_keys_of_the_profile_stay_and_undo_restores_it(
    cli, isolated_home: Path
) -> None:
    path = profile_file(isolated_home)
    path.parent.mkdir(parents=True)
    before = '# my work profile\nmodel_reasoning_effort = "high"  # keep this\n'
    path.write_text(before, encoding="utf-8")
    result = cli("config", "codex", "--profile", "work", *MOCK, "--no-model-catalog")
    assert result.exit_code == 0, result.stderr
    after = path.read_text(encoding="utf-8")
    assert after.startswith(before)
    assert not (isolated_home / ".codex" / "config.toml").exists()
    undone = cli("config", "undo", "--client", "codex")
    assert undone.exit_code == 0, undone.stderr
    assert path.read_text(encoding="utf-8") == before


def test_a_dry_run_shows_the_profile_diff_and_writes_nothing(cli, isolated_home: Path) -> None:
    result = cli("config", "codex", "--profile", "work", *MOCK, "--no-model-catalog", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "work.config.toml" in result.stdout and "base_url" in result.stdout
    assert not (isolated_home / ".codex").exists()


def test_a_profile_name_that_is_a_path_is_refused_before_anything_is_written(
    cli, isolated_home: Path
) -> None:
    for name in ("../evil", "a/b", ".hidden", ""):
        result = cli("config", "codex", "--profile", name, *MOCK)
        assert result.exit_code == 2, (name, result.stdout)
        assert "--profile" in result.stderr
    assert not (isolated_home / ".codex").exists()
    assert not list(isolated_home.rglob("*.toml"))


def test_doctor_and_config_show_read_the_profile_as_codex_does(cli, isolated_home: Path) -> None:
    assert cli("config", "codex", "--profile", "work", *MOCK, "--no-model-catalog").exit_code == 0
    doctor = cli("doctor", "--client", "codex", "--offline", "--json", "-p", "work")
    found = {f["id"] for f in json.loads(doctor.stdout)["findings"]}
    assert "config-missing" not in found  # Codex runs on the profile file alone
    shown = cli("config", "show", "--client", "codex", "--json", "-p", "work")
    assert shown.exit_code == 0, shown.stderr
    assert "127.0.0.1:9" in shown.stdout
    # without -p Codex reads no profile: nothing is configured
    plain = cli("doctor", "--client", "codex", "--offline", "--json")
    assert "config-missing" in {f["id"] for f in json.loads(plain.stdout)["findings"]}


def test_through_the_bridge_the_profile_file_names_the_bridge(cli, isolated_home: Path) -> None:
    result = cli("config", "codex", "--profile", "work", *MOCK, "--bridge", "--bridge-port", "8799")
    assert result.exit_code == 0, result.stderr
    written = tomllib.loads(profile_file(isolated_home).read_text(encoding="utf-8"))
    assert written["model_providers"][written["model_provider"]]["base_url"].startswith(
        "http://127.0.0.1:8799"
    )
    assert not (isolated_home / ".codex" / "config.toml").exists()
