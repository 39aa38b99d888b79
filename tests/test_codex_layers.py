"""Codex's config layers as Codex layers them: system < user < trusted project files (root down to
the current folder) < `-p NAME` profile file < `-c key=value`; each finding names the file and
line that won, and `config show` shows the layer of each value."""

from __future__ import annotations

from pathlib import Path

import pytest

from notes_cli.clients.codex.layers import codex_layers, parse_override

USER = (
    'model = "good-model"\nmodel_provider = "gw"\n'
    '[model_providers.gw]\nname = "GW"\nbase_url = "https://gw.example/api"\n'
)


@pytest.fixture
def project(isolated_home: Path, monkeypatch) -> Path:
    """A git project with a subfolder to run from; no codex binary on PATH."""
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(isolated_home / "no-codex-here"))
    monkeypatch.setenv("PDNOTES_CODEX_SYSTEM_CONFIG", str(isolated_home / "no-system.toml"))
    root = isolated_home.parent / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "sub").mkdir()
    (isolated_home / ".codex").mkdir(parents=True, exist_ok=True)
    return root


def write_user(home: Path, root: Path, *, trusted: bool, extra: str = "") -> Path:
    trust = f'[projects."{root}"]\ntrust_level = "trusted"\n' if trusted else ""
    path = home / ".codex" / "config.toml"
    path.write_text(USER + extra + trust, encoding="utf-8")
    return path


def write_project(folder: Path, text: str) -> Path:
    path = folder / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def doctor(cli, root: Path, *args: str) -> dict:
    return cli(
        "doctor", "--offline", "--client", "codex", "--json", "--project-dir", str(root), *args
    ).json()


def test_a_wrong_model_in_a_trusted_projects_config_is_reported_at_that_file(
    cli, isolated_home: Path, project: Path
) -> None:
    write_user(isolated_home, project, trusted=True)
    bad = write_project(project, 'model = "<model-id>"\n')

    doc = doctor(cli, project / "sub")

    found = next(f for f in doc["findings"] if f["id"] == "model-placeholder")
    assert found["file"] == str(bad) and found["line"] == 1
    assert doc["ok"] is False


def test_an_untrusted_projects_config_is_ignored_and_said_so(
    cli, isolated_home: Path, project: Path
) -> None:
    write_user(isolated_home, project, trusted=False)
    ignored = write_project(project, 'model = "<model-id>"\n')

    doc = doctor(cli, project / "sub")

    assert "model-placeholder" not in {f["id"] for f in doc["findings"]}
    warn = next(f for f in doc["findings"] if f["id"] == "project-config-untrusted")
    assert warn["file"] == str(ignored) and str(project) in warn["fix"]


def test_the_closest_project_file_wins(isolated_home: Path, project: Path) -> None:
    write_user(isolated_home, project, trusted=True)
    write_project(project, 'model = "root-model"\nreview_model = "root-review"\n')
    closest = write_project(project / "sub", 'model = "sub-model"\n')

    merged = codex_layers(None, cwd=project / "sub")

    assert merged.doc["model"] == "sub-model"
    assert merged.doc["review_model"] == "root-review"
    assert merged.at(None, "model") == {"file": str(closest), "line": 1}


def test_without_a_root_marker_only_the_current_folder_counts(
    isolated_home: Path, project: Path
) -> None:
    (project / ".git").rmdir()
    write_user(isolated_home, project / "sub", trusted=True)
    write_project(project, 'model = "parent-model"\n')

    merged = codex_layers(None, cwd=project / "sub")

    assert merged.doc["model"] == "good-model"


def test_profile_file_and_c_override_win_in_that_order(
    cli, isolated_home: Path, project: Path
) -> None:
    write_user(isolated_home, project, trusted=True)
    write_project(project, 'model = "project-model"\n')
    profile = isolated_home / ".codex" / "fast.config.toml"
    profile.write_text('model = "<profile-model>"\n', encoding="utf-8")

    with_profile = doctor(cli, project, "--profile", "fast")
    found = next(f for f in with_profile["findings"] if f["id"] == "model-placeholder")
    assert found["file"] == str(profile)

    overridden = doctor(cli, project, "--profile", "fast", "-c", 'model="<c-model>"')
    found = next(f for f in overridden["findings"] if f["id"] == "model-placeholder")
    assert found["file"] == '-c model="<c-model>"'
    assert "<c-model>" in found["message"]


def test_a_missing_profile_file_is_a_warning(cli, isolated_home: Path, project: Path) -> None:
    write_user(isolated_home, project, trusted=True)

    doc = doctor(cli, project, "--profile", "nope")

    warn = next(f for f in doc["findings"] if f["id"] == "profile-file-missing")
    assert warn["file"].endswith("nope.config.toml")


def test_a_legacy_profiles_table_is_an_error_when_that_profile_is_selected(
    cli, isolated_home: Path, project: Path
) -> None:
    write_user(isolated_home, project, trusted=True, extra='[profiles.fast]\nmodel = "m"\n')

    plain = doctor(cli, project)
    selected = doctor(cli, project, "--profile", "fast")

    def legacy(doc: dict) -> str:
        return next(f["severity"] for f in doc["findings"] if f["id"] == "profile-legacy")

    assert legacy(plain) == "warning"
    assert legacy(selected) == "error"


def test_c_override_can_break_the_provider(cli, isolated_home: Path, project: Path) -> None:
    write_user(isolated_home, project, trusted=True)

    doc = doctor(cli, project, "-c", "model_provider=nowhere")

    found = next(f for f in doc["findings"] if f["id"] == "provider-missing")
    assert found["file"] == "-c model_provider=nowhere"


@pytest.mark.parametrize(
    ("raw", "dotted", "value"),
    [
        ('model="o3"', ("model",), "o3"),
        ("model=o3", ("model",), "o3"),  # not TOML: taken as a string, as Codex does
        (
            "model_providers.gw.request_max_retries=3",
            ("model_providers", "gw", "request_max_retries"),
            3,
        ),
        (
            'sandbox_permissions=["disk-full-read-access"]',
            ("sandbox_permissions",),
            ["disk-full-read-access"],
        ),
    ],
)
def test_parse_override_like_codex(raw: str, dotted: tuple[str, ...], value: object) -> None:
    assert parse_override(raw) == (dotted, value)


def test_config_show_names_the_layer_each_value_came_from(
    cli, isolated_home: Path, project: Path, monkeypatch
) -> None:
    write_user(isolated_home, project, trusted=True)
    winner = write_project(project, 'model = "project-model"\n')
    monkeypatch.chdir(project / "sub")

    shown = cli("config", "show", "--client", "codex", "--json").json()

    text = str(shown)
    assert "project-model" in text and str(winner) in text


def test_config_show_takes_profile_and_c_like_codex(
    cli, isolated_home: Path, project: Path
) -> None:
    write_user(isolated_home, project, trusted=True)
    (isolated_home / ".codex" / "fast.config.toml").write_text('model = "fast-model"\n')

    shown = cli(
        "config", "show", "--client", "codex", "--json", "--project-dir", str(project),
        "--profile", "fast", "-c", "model_provider=gw",
    ).json()  # fmt: skip

    text = str(shown)
    assert "fast-model" in text and "fast.config.toml" in text
    assert "-c model_provider=gw" in text
