"""`pdnotes doctor --client qwen`: each of Qwen Code's known misconfigurations gives its named
finding (and a clean setup none); the live probe calls Qwen Code's resolved endpoint in Qwen
Code's recorded request shape."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import client_shapes  # noqa: E402


def settings_file(home: Path) -> Path:
    return home / ".qwen" / "settings.json"


def write(path: Path, data: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def provider(model: str, base_url: str, env_key: str | None = "GW_KEY") -> dict[str, Any]:
    entry = {"id": model, "baseUrl": base_url}
    if env_key:
        entry["envKey"] = env_key
    return {
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": model},
        "modelProviders": {"openai": [entry]},
    }


def doctor(cli: Callable[..., Any], *extra: str) -> tuple[int, list[dict[str, Any]]]:
    result = cli("doctor", "--client", "qwen", "--offline", "--json", *extra)
    return result.exit_code, [f for f in result.json()["findings"] if f["client"] == "qwen"]


def ids(findings: list[dict[str, Any]]) -> list[str]:
    return [f["id"] for f in findings]


def test_a_setup_written_by_config_qwen_has_no_findings(cli, isolated_home: Path) -> None:
    assert cli("config", "qwen", "--preset", "mock").exit_code == 0

    code, findings = doctor(cli)

    assert (code, findings) == (0, [])


def test_no_settings_file_is_an_error_when_asked_for(cli, isolated_home: Path) -> None:
    result = cli("doctor", "--client", "qwen", "--offline", "--json")
    everyone = cli("doctor", "--offline", "--json")

    assert result.exit_code == 1
    assert [(f["id"], f["client"]) for f in result.json()["findings"]] == [
        ("config-missing", "qwen")
    ]
    assert "qwen" not in {f["client"] for f in everyone.json()["findings"]}


def test_a_trailing_comma_names_line_and_column(cli, isolated_home: Path) -> None:
    write(settings_file(isolated_home), '{\n  // ok\n  "model": {"name": "m"},\n}\n')

    code, findings = doctor(cli)

    assert code == 1
    assert ids(findings) == ["qwen-settings-syntax"]
    assert findings[0]["line"] == 4
    assert "comments are fine" in findings[0]["fix"]


def test_selected_type_not_openai_while_openai_variables_are_set(
    cli, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(settings_file(isolated_home), {"security": {"auth": {"selectedType": "qwen-oauth"}}})
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gw.example/v1")

    code, findings = doctor(cli)

    assert code == 1
    assert ids(findings) == ["qwen-auth-type"]
    assert "'qwen-oauth'" in findings[0]["message"] and "OPENAI_BASE_URL" in findings[0]["message"]


def test_selected_type_not_openai_alone_is_not_this_tools_business(
    cli, isolated_home: Path
) -> None:
    write(settings_file(isolated_home), {"security": {"auth": {"selectedType": "qwen-oauth"}}})

    assert doctor(cli) == (0, [])


def test_no_model_anywhere(cli, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(settings_file(isolated_home), {"security": {"auth": {"selectedType": "openai"}}})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")

    code, findings = doctor(cli)

    assert ids(findings) == ["qwen-model-missing"]
    assert code == 1


def test_the_model_has_no_provider_entry(
    cli, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = provider("m-entry", "https://gw.example/v1")
    data["model"]["name"] = "m-other"
    write(settings_file(isolated_home), data)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")

    _, findings = doctor(cli)

    assert ids(findings) == ["qwen-provider-missing"]
    assert "m-entry" in findings[0]["message"]


@pytest.mark.parametrize(
    ("url", "finding", "suggested"),
    [
        ("https://gw.example/v1/v1", "qwen-v1-doubled", "https://gw.example/v1"),
        ("https://api.openai.com", "qwen-v1-missing", "https://api.openai.com/v1"),
        ("https://gw.example/v1/chat/completions", "base-url-endpoint-suffix", None),
    ],
)
def test_base_url_shapes_qwen_code_would_404_on(
    cli,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    finding: str,
    suggested: str | None,
) -> None:
    write(settings_file(isolated_home), provider("m1", url))
    monkeypatch.setenv("GW_KEY", "sk-test-0000000000000000")

    code, findings = doctor(cli)

    assert ids(findings) == [finding]
    if suggested:
        assert suggested in findings[0]["fix"]
        assert "modelProviders.openai[m1]" in findings[0]["fix"]


def test_an_unexported_key_variable(
    cli, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(settings_file(isolated_home), provider("m1", "https://gw.example/v1"))

    code, alone = doctor(cli)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-000000000000000")
    fallback_code, fallback = doctor(cli)

    assert (code, ids(alone)) == (1, ["qwen-key-env-unset"])
    assert "export GW_KEY=" in alone[0]["fix"]
    assert ids(fallback) == ["qwen-key-env-unset"]
    assert fallback[0]["severity"] == "warning" and fallback_code == 0
    assert "$OPENAI_API_KEY" in fallback[0]["message"]


def test_a_key_in_a_dotenv_file_counts(
    cli, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(settings_file(isolated_home), provider("m1", "https://gw.example/v1"))
    write(isolated_home / ".qwen" / ".env", "export GW_KEY=sk-from-dotenv-0000000000\n")

    assert doctor(cli) == (0, [])


def test_a_dotenv_base_url_over_the_settings(cli, isolated_home: Path, tmp_path: Path) -> None:
    data = {
        "security": {"auth": {"selectedType": "openai", "baseUrl": "https://settings.example/v1"}},
        "model": {"name": "m1"},
    }
    write(settings_file(isolated_home), data)
    dotenv = write(
        tmp_path / ".env", "OPENAI_BASE_URL=https://stale.example/v1\nOPENAI_API_KEY=x\n"
    )

    _, findings = doctor(cli)

    assert ids(findings) == ["qwen-dotenv-override"]
    assert findings[0]["file"] == str(dotenv)
    assert "security.auth.baseUrl" in findings[0]["message"]


def test_a_provider_entry_beats_the_dotenv(cli, isolated_home: Path, tmp_path: Path) -> None:
    data = provider("m1", "https://gw.example/v1", env_key=None)
    data["security"]["auth"]["baseUrl"] = "https://settings.example/v1"
    write(settings_file(isolated_home), data)
    write(tmp_path / ".env", "OPENAI_BASE_URL=https://stale.example/v1\nOPENAI_API_KEY=x\n")

    assert doctor(cli) == (0, [])


def test_a_literal_key_in_the_settings(cli, isolated_home: Path, sentinel_key: str) -> None:
    data = provider("m1", "https://gw.example/v1", env_key=None)
    data["security"]["auth"]["apiKey"] = sentinel_key
    write(settings_file(isolated_home), data)

    result = cli("doctor", "--client", "qwen", "--offline", "--json")

    assert [f["id"] for f in result.json()["findings"]] == ["key-in-file"]
    assert sentinel_key not in result.stdout


def test_the_live_probe_sends_qwen_codes_request(
    cli, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_KEY", "sk-gw-key-000000000000")
    with client_shapes.recording_server() as (url, requests):
        assert cli("config", "qwen", "--base-url", f"{url}/v1", "--key-env", "GW_KEY",
                   "--model", client_shapes.MODEL).exit_code == 0  # fmt: skip
        result = cli("doctor", "--client", "qwen", "--json", "--timeout", "10")

    assert result.exit_code == 0, result.stdout + result.stderr
    turn = next(r for r in requests if r["path"] == "/v1/chat/completions")
    assert turn["headers"]["user-agent"].startswith("QwenCode/")
    assert turn["headers"]["authorization"] == "Bearer sk-gw-key-000000000000"
    assert [t["function"]["name"] for t in turn["body"]["tools"]][:3] == [
        "agent", "get_goal", "glob",
    ]  # fmt: skip
    assert turn["body"]["stream"] is True


def test_the_live_probe_confirms_a_doubled_v1(cli, isolated_home: Path, engine_server: Any) -> None:
    assert cli("config", "qwen", "--preset", "mock", "--base-url",
               engine_server.base_url).exit_code == 0  # fmt: skip
    path = settings_file(isolated_home)
    path.write_text(
        path.read_text().replace(engine_server.base_url, engine_server.base_url + "/v1/v1")
    )

    result = cli("doctor", "--client", "qwen", "--json", "--timeout", "10")

    assert result.exit_code == 1
    found = [f["id"] for f in result.json()["findings"]]
    assert "qwen-v1-doubled" in found
    probes = result.json()["probes"]
    assert any(p["status"] == 404 for p in probes)
