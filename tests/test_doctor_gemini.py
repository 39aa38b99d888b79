"""`pdnotes doctor --client gemini` (offline): Gemini CLI's misconfigurations, each with its id
and a fix, judged on the files and environment as Gemini CLI 0.61 reads them."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder below the home (the home itself is where ~/.gemini lives), trusted."""
    folder = tmp_path / "home" / "work" / "proj"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    return folder


def _doctor(cli) -> dict:  # type: ignore[no-untyped-def,type-arg]
    result = cli("doctor", "--offline", "--client", "gemini", "--json")
    assert result.exit_code in (0, 1), result.stderr
    return result.json()


def _ids(document: dict) -> list[str]:  # type: ignore[type-arg]
    """The problems (info notes left out)."""
    return [f["id"] for f in document["findings"] if f["severity"] != "info"]


def _by_id(document: dict, finding_id: str) -> dict:  # type: ignore[type-arg]
    return next(f for f in document["findings"] if f["id"] == finding_id)


def _settings(home: Path, text: str) -> None:
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_setup_written_by_config_gemini_is_clean(cli, project: Path, monkeypatch) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    document = _doctor(cli)
    assert document["ok"] and _ids(document) == []


def test_missing_config_names_the_command_that_writes_it(cli, project: Path) -> None:
    document = _doctor(cli)
    finding = _by_id(document, "config-missing")
    assert finding["severity"] == "error" and "pdnotes config gemini" in finding["fix"]


def test_doubled_v1beta_is_an_error_with_the_root_to_use(cli, project: Path, monkeypatch) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://gw.example/api/v1beta")
    finding = _by_id(_doctor(cli), "gemini-base-url-v1beta")
    assert finding["severity"] == "error"
    assert "--base-url https://gw.example/api" in finding["fix"]


def test_a_stray_v1_warns_and_points_to_the_bridge(cli, project: Path, monkeypatch) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://gw.example/v1")
    finding = _by_id(_doctor(cli), "gemini-base-url-v1")
    assert finding["severity"] == "warning" and "--bridge" in finding["fix"]


def test_a_chat_only_gateway_points_to_the_bridge(cli, project: Path, monkeypatch) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://api.deepseek.com")
    finding = _by_id(_doctor(cli), "gemini-chat-only-endpoint")
    assert "pdnotes config gemini --bridge --preset deepseek" in finding["fix"]
    assert "pdnotes bridge serve" in finding["fix"]


@pytest.mark.parametrize("selected", [None, "oauth-personal", "vertex-ai"])
def test_auth_type_other_than_api_key_with_a_base_url_is_an_error(
    cli, project: Path, isolated_home: Path, monkeypatch, selected: str | None
) -> None:
    auth = f'"security": {{"auth": {{"selectedType": "{selected}"}}}},' if selected else ""
    _settings(isolated_home, f'{{ {auth} "model": {{"name": "m"}} }}')
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:8000/api/gemini")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    document = _doctor(cli)
    assert _ids(document) == ["gemini-auth-type"]
    assert "pdnotes config gemini" in _by_id(document, "gemini-auth-type")["fix"]


def test_unset_key_is_an_error_and_a_non_exported_one_is_named(
    cli, project: Path, isolated_home: Path
) -> None:
    assert (
        cli("config", "gemini", "--base-url", "https://gw.example", "--model", "m").exit_code == 0
    )
    (isolated_home / ".bashrc").write_text("GEMINI_API_KEY=abc\n")
    finding = _by_id(_doctor(cli), "gemini-key-missing")
    assert finding["severity"] == "error"
    assert "without export" in finding["fix"]


def test_a_project_env_file_that_hides_the_base_url_is_an_error(
    cli, project: Path, isolated_home: Path
) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    (project.parent / ".env").write_text("DATABASE_URL=postgres://x\n")  # found walking up
    finding = _by_id(_doctor(cli), "gemini-env-file-shadowed")
    assert finding["file"] == str(project.parent / ".env")
    assert "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8000/api/gemini" in finding["fix"]


def test_an_environment_variable_overriding_the_env_file_warns(
    cli, project: Path, monkeypatch
) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9999")
    finding = _by_id(_doctor(cli), "gemini-env-overridden")
    assert finding["line"] == 2 and "unset GOOGLE_GEMINI_BASE_URL" in finding["fix"]


def test_an_untrusted_folder_hides_the_env_file(cli, project: Path, monkeypatch) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    monkeypatch.delenv("GEMINI_CLI_TRUST_WORKSPACE")
    document = _doctor(cli)
    finding = _by_id(document, "gemini-folder-untrusted")
    assert finding["severity"] == "error" and "GEMINI_CLI_TRUST_WORKSPACE=true" in finding["fix"]


def test_a_trusted_folders_rule_trusts_the_folder(
    cli, project: Path, isolated_home: Path, monkeypatch
) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    monkeypatch.delenv("GEMINI_CLI_TRUST_WORKSPACE")
    rules = isolated_home / ".gemini" / "trustedFolders.json"
    rules.write_text(f'{{"{project.parent}": "TRUST_FOLDER"}}')
    assert _ids(_doctor(cli)) == []
    rules.write_text(f'{{"{project.parent}": "TRUST_FOLDER", "{project}": "DO_NOT_TRUST"}}')
    assert "gemini-folder-untrusted" in _ids(_doctor(cli))


def test_no_model_with_a_custom_base_url_is_an_error(
    cli, project: Path, isolated_home: Path, monkeypatch
) -> None:
    _settings(isolated_home, '{"security": {"auth": {"selectedType": "gemini-api-key"}}}')
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:8000/api/gemini")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert _ids(_doctor(cli)) == ["gemini-model-missing"]
    monkeypatch.setenv("GEMINI_MODEL", "m")
    assert _ids(_doctor(cli)) == []


def test_settings_with_comments_parse_and_a_trailing_comma_is_located(
    cli, project: Path, isolated_home: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    _settings(isolated_home, '{\n  // fine\n  "model": {"name": "m"},\n}\n')
    finding = _by_id(_doctor(cli), "gemini-settings-syntax")
    assert (finding["line"], finding["severity"]) == (4, "error")


def test_the_system_override_layer_wins(cli, project: Path, isolated_home: Path) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    system = isolated_home / "etc-gemini" / "settings.json"
    system.parent.mkdir()
    system.write_text('{"security": {"auth": {"selectedType": "oauth-personal"}}}')
    finding = _by_id(_doctor(cli), "gemini-auth-type")
    assert finding["file"] == str(system)


def test_usage_statistics_are_noted_until_no_phone_home(cli, project: Path) -> None:
    assert cli("config", "gemini", "--preset", "mock").exit_code == 0
    note = _by_id(_doctor(cli), "gemini-usage-statistics")
    assert note["severity"] == "info" and "--no-phone-home" in note["fix"]
    assert cli("config", "gemini", "--preset", "mock", "--no-phone-home").exit_code == 0
    assert "gemini-usage-statistics" not in [f["id"] for f in _doctor(cli)["findings"]]


def test_live_probe_on_a_chat_only_engine_names_the_bridge_command(
    cli, project: Path, start_engine_server
) -> None:
    engine = start_engine_server(protocols=("chat",))  # no Gemini routes: a chat-only gateway
    args = ("--base-url", engine.base_url, "--model", "pd-mock-1")  # its /chat/completions root
    assert cli("config", "gemini", "--preset", "mock", *args).exit_code == 0
    result = cli("doctor", "--client", "gemini", "--json", "--timeout", "5")
    finding = _by_id(result.json(), "gemini-chat-only-endpoint")
    assert result.exit_code == 1 and finding["severity"] == "error"
    assert "pdnotes config gemini --bridge --base-url" in finding["fix"]


def test_live_probe_sends_gemini_clis_recorded_request(
    cli, project: Path, monkeypatch: pytest.MonkeyPatch, sentinel_key: str
) -> None:
    """The streamed turn of the live probe is Gemini CLI's recorded request (its SDK header,
    user agent and tools), as docs/connect.md says, not pdnotes' small body."""
    import json

    from loopback import LoopbackServer, Reply

    monkeypatch.setenv("GEMINI_API_KEY", sentinel_key)
    monkeypatch.setenv("PDNOTES_GEMINI_BIN", "/nonexistent")  # the newest recorded shape
    done = {"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}

    def answer(request):  # type: ignore[no-untyped-def]
        if request.method == "GET":
            return Reply.json({"models": [{"name": "models/gm-1"}]})
        return Reply.sse([f"data: {json.dumps(done)}\r\n\r\n".encode()])

    with LoopbackServer(answer) as server:
        args = ("--base-url", server.url + "/gw", "--model", "gm-1")
        assert cli("config", "gemini", *args).exit_code == 0
        result = cli("doctor", "--client", "gemini", "--json", "--timeout", "5")
        turns = [r for r in server.requests if r.method == "POST"]
    assert result.exit_code == 0, result.stdout + result.stderr
    assert turns and turns[0].path == "/gw/v1beta/models/gm-1:streamGenerateContent?alt=sse"
    assert turns[0].headers["x-goog-api-client"].startswith("google-genai-sdk/")
    assert turns[0].headers["user-agent"].startswith("GeminiCLI")
    assert [t for t in turns[0].json().get("tools", []) if t.get("functionDeclarations")]
    assert sentinel_key not in result.stdout + result.stderr
