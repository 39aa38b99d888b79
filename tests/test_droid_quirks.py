"""What only Factory Droid does, beyond the generic client tests: the id Droid gives a
`customModels` entry (displayName with blanks as `-`, then how many KEPT entries before it share
that name: an entry without a provider is dropped and not counted), which `config droid` must
write as the top-level `model`; and the two ways Droid's settings break it that doctor names
(`droid-settings-syntax`: a trailing comma makes Droid ignore the file; `droid-model-undefined`:
a `model` no entry has). The interop tests check each against the real `droid exec`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_support import client_binary, run_client

from notes_cli.clients.droid.config import parse
from notes_cli.clients.headless import headless

_NEIGHBOURS = """{
  // entries of the user's own, before pdnotes' one
  "customModels": [
    {"model": "m0", "displayName": "other", "baseUrl": "http://127.0.0.1:9/api",
     "provider": "generic-chat-completion-api"},
    {"model": "m1", "displayName": "gw  one", "baseUrl": "http://127.0.0.1:9/api",
     "provider": "generic-chat-completion-api"},
    {"model": "m2", "displayName": "gw\\tone", "baseUrl": "http://127.0.0.1:9/api"},
    {"model": "m3", "displayName": "gw one", "baseUrl": "http://127.0.0.1:9/api"}
  ]
}
"""
"""Droid's ids of these: `other` custom:other-0, `gw  one` custom:gw-one-0 (blanks run into
one -); `gw<TAB>one` and `gw one` have no provider, so Droid drops them and counts neither.
pdnotes completes `gw one` (its --display-name): it becomes custom:gw-one-1 (not -3, its place
in the array, nor -2, counting the dropped `gw<TAB>one`)."""


def _settings(home: Path) -> Path:
    return home / ".factory" / "settings.json"


def _write(home: Path, text: str) -> None:
    _settings(home).parent.mkdir(parents=True, exist_ok=True)
    _settings(home).write_text(text, encoding="utf-8")


def _configure_beside_neighbours(cli: Callable[..., Any], home: Path, base_url: str) -> str:
    _write(home, _NEIGHBOURS)
    result = cli(
        "config", "droid", "--preset", "mock", "--base-url", base_url, "--display-name", "gw one"
    )
    assert result.exit_code == 0, result.stderr
    text = _settings(home).read_text("utf-8")
    assert "// entries of the user's own" in text  # merge-safe: the comment stays
    return str(parse(text, _settings(home))["model"])


def test_config_droid_selects_the_id_droid_gives_its_entry(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    model = _configure_beside_neighbours(cli, isolated_home, "http://127.0.0.1:8000/api")
    assert model == "custom:gw-one-1"
    data = parse(_settings(isolated_home).read_text("utf-8"), _settings(isolated_home))
    names = [entry["displayName"] for entry in data["customModels"]]
    assert names == ["other", "gw  one", "gw\tone", "gw one"]  # updated in place, not added


def _doctor(cli: Callable[..., Any]) -> list[str]:
    result = cli("doctor", "--client", "droid", "--offline", "--json")
    return [f["id"] for f in result.json()["findings"] if f["severity"] == "error"]


_BROKEN = {
    # a trailing comma: Droid ignores the file and starts with Factory's own model
    "trailing-comma": (
        '{"customModels": [{"model": "pd-mock-1", "displayName": "pdnotes", '
        '"baseUrl": "URL", "provider": "generic-chat-completion-api",}], '
        '"model": "custom:pdnotes-0"}\n',
        "droid-settings-syntax",
        "Authentication failed",
    ),
    # an id whose name no entry has (droid 0.215.0 takes `custom:pdnotes-1` for the one
    # `pdnotes` entry: only an unknown name fails)
    "unknown-id": (
        '{"customModels": [{"model": "pd-mock-1", "displayName": "pdnotes", '
        '"baseUrl": "URL", "provider": "generic-chat-completion-api"}], '
        '"model": "custom:nothing-0"}\n',
        "droid-model-undefined",
        "Invalid model",
    ),
}


@pytest.mark.parametrize("case", sorted(_BROKEN))
def test_doctor_names_the_settings_droid_cannot_start_with(
    cli: Callable[..., Any], isolated_home: Path, case: str
) -> None:
    text, finding, _ = _BROKEN[case]
    _write(isolated_home, text.replace("URL", "http://127.0.0.1:8000/api"))
    assert finding in _doctor(cli)


def test_an_id_whose_number_is_off_still_names_the_entry_as_droid_resolves_it(
    cli: Callable[..., Any], isolated_home: Path
) -> None:
    """droid 0.215.0 answers with `custom:pdnotes-7` when the one `pdnotes` entry is
    `custom:pdnotes-0` (checked by hand with droid exec): doctor must not call it undefined."""
    _write(isolated_home, _BROKEN["unknown-id"][0].replace("URL", "http://127.0.0.1:8000/api")
           .replace("custom:nothing-0", "custom:pdnotes-7"))  # fmt: skip
    assert "droid-model-undefined" not in _doctor(cli)


# -- the real droid --------------------------------------------------------------------------


def _droid(home: Path, prompt: str) -> Any:
    """`droid exec` as HEADLESS runs it: `-m` the file's model (none when the file does not
    parse: then Droid picks, as a user's plain `droid exec` would)."""
    recipe = headless("droid")
    assert recipe is not None
    command = recipe.command(client_binary("droid"), home, prompt)
    return recipe, run_client(command.argv, env=command.env, cwd=command.cwd)


@pytest.mark.interop
def test_droid_answers_with_the_entry_config_droid_selected_beside_others(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any
) -> None:
    client_binary("droid")
    model = _configure_beside_neighbours(cli, isolated_home, engine_server.base_url)

    recipe, run = _droid(isolated_home, "say pong")

    assert run.returncode == 0, run.stdout + run.stderr
    assert recipe.turn(run.stdout, run.stderr).texts == ["pong"]
    assert f'"model":"{model}"' in run.stdout  # Droid's init event names the model it runs


@pytest.mark.interop
@pytest.mark.parametrize("case", sorted(_BROKEN))
def test_the_settings_doctor_flags_are_ones_droid_fails_on(
    cli: Callable[..., Any], isolated_home: Path, engine_server: Any, case: str
) -> None:
    client_binary("droid")
    text, finding, failure = _BROKEN[case]
    _write(isolated_home, text.replace("URL", engine_server.base_url))
    assert finding in _doctor(cli)

    _, run = _droid(isolated_home, "say pong")

    assert run.returncode != 0
    assert failure in run.stdout + run.stderr
