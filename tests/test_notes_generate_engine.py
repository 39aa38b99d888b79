"""`notes generate` against the bundled engine over a real socket: the knowledge base answers
the kit prompt in either language, the note passes the rubric in every export format, and a
kit demanding a fact the engine does not know triggers repair requests that name it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult

from notes_cli.notes.check import check_text, read_answer
from notes_cli.notes.kits import bundled_kits_dir, load_kit, user_kits_dir


def _generate(cli: Callable[..., CliResult], engine: Any, *args: str) -> CliResult:
    return cli("notes", "generate", "--base-url", engine.base_url, "--model", "pd-mock-1", *args)


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("fmt", ["md", "csv", "json", "html"])
def test_generated_note_passes_in_every_format(
    lang: str, fmt: str, engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    target = tmp_path / f"note.{fmt}"
    result = _generate(cli, engine_server, "--lang", lang, "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("PASS rubric score 1.00")
    text, source_format = read_answer(target)
    check = check_text(text, load_kit("pd-disagg"), source_format=source_format)
    assert check.passed
    assert check.extraction.table is not None
    expected_header = "阶段" if lang == "zh" else "Stage"
    if fmt == "json":  # rows are keyed by column key; labels are in "columns"
        assert json.loads(text)["columns"][0]["label"] == expected_header
    else:
        assert check.extraction.table.header[0] == expected_header


def test_json_report_names_model_endpoint_and_no_repairs(
    engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    result = _generate(cli, engine_server, "--format", "json", "-o", "n.json", "--json")
    assert result.exit_code == 0
    report = result.json()
    assert report["schema"] == "pdnotes.notes.generate/1"
    assert [a["kind"] for a in report["attempts"]] == ["initial"]
    note = report["note"]
    assert note["schema"] == "pdnotes.notes/1"
    assert note["endpoint"] == engine_server.base_url
    assert note["model"] == "pd-mock-1"
    assert note["missing_concepts"] == [] and note["score"] == 1.0


def test_an_output_name_too_long_is_a_clear_error(
    engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    result = _generate(cli, engine_server, "-o", str(tmp_path / ("n" * 300 + ".md")))

    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "name too long for the file system" in result.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("n")]


def test_configured_codex_client_is_used(
    engine_server: Any, cli: Callable[..., CliResult], isolated_home: Path, tmp_path: Path
) -> None:
    codex = isolated_home / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        'model = "pd-mock-1"\nmodel_provider = "mock"\n\n[model_providers.mock]\n'
        f'name = "Mock"\nbase_url = "{engine_server.base_url}"\nwire_api = "responses"\n',
        encoding="utf-8",
    )
    result = cli("notes", "generate", "--lang", "en", "-o", "note.md")
    assert result.exit_code == 0, result.stderr
    assert "/api/responses" in result.stderr
    assert (tmp_path / "note.md").read_text(encoding="utf-8").count("✓") >= 3


def _strict_kit() -> None:
    """A user kit whose rubric also demands Mooncake, which the engine's knowledge lacks."""
    target = user_kits_dir() / "pd-strict"
    shutil.copytree(bundled_kits_dir() / "pd-disagg", target)
    kit_toml = target / "kit.toml"
    kit_toml.write_text(
        kit_toml.read_text(encoding="utf-8").replace('"pd-disagg"', '"pd-strict"'),
        encoding="utf-8",
    )
    with (target / "rubric.toml").open("a", encoding="utf-8") as rubric:
        rubric.write(
            '\n[[rows]]\nkey = "kv-store"\nlabel = "KV cache store"\nrequired = true\n'
            'match = ["kv cache 跨节点", "cross-node"]\n\n  [[rows.concepts]]\n'
            '  key = "mooncake"\n  label = "Mooncake"\n  synonyms = ["mooncake"]\n'
        )


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_wrong_answer_triggers_repairs_naming_the_missing_concept(
    lang: str, engine_server: Any, cli: Callable[..., CliResult]
) -> None:
    _strict_kit()
    result = _generate(cli, engine_server, "--kit", "pd-strict", "--lang", lang, "--json")
    assert result.exit_code == 1
    report = result.json()
    attempts = report["attempts"]
    assert [a["kind"] for a in attempts] == ["initial", "repair", "repair"]
    assert all(a["verdict"] == "fail" for a in attempts)
    assert "Mooncake" in attempts[1]["request"] and "KV cache store" in attempts[1]["request"]
    assert report["note"]["missing_concepts"] == ["KV cache store: Mooncake"]
    assert "repair 2: asking the model to fix its table" in result.stderr


def test_no_repair_sends_one_request(engine_server: Any, cli: Callable[..., CliResult]) -> None:
    _strict_kit()
    result = _generate(cli, engine_server, "--kit", "pd-strict", "--no-repair", "--json")
    assert result.exit_code == 1
    assert len(result.json()["attempts"]) == 1


def test_sources_are_cut_to_the_budget_and_say_so(
    engine_server: Any, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    short = tmp_path / "short.md"
    short.write_text("DLSlime 支持 RDMA、NVShmem、NVLink、HCCS。", encoding="utf-8")
    page = tmp_path / "long.html"
    body = "".join(f"<p>Paragraph {i}: decode is memory-bound.</p>" for i in range(400))
    page.write_text(f"<html><head><style>p{{}}</style></head><body>{body}</body></html>")
    result = _generate(
        cli,
        engine_server,
        "--source",
        str(short),
        "--source",
        str(page),
        "--max-source-tokens",
        "300",
        "--cut",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    sources = {Path(s["path"]).name: s for s in result.json()["prompt"]["sources"]}
    assert sources["short.md"]["cut"] is False
    assert sources["long.html"]["cut"] is True
    assert sources["short.md"]["tokens"] + sources["long.html"]["tokens"] <= 300
    said = " ".join(result.stderr.split())
    assert "--cut: keeping" in said and "to fit --max-source-tokens 300" in said
    assert "left out: S2" in said


@pytest.mark.parametrize("protocol", ["responses", "anthropic"])
def test_other_wire_protocols_reach_the_same_knowledge(
    protocol: str, engine_server: Any, cli: Callable[..., CliResult]
) -> None:
    base = engine_server.anthropic_base_url if protocol == "anthropic" else engine_server.base_url
    result = cli(
        "notes",
        "generate",
        "--base-url",
        base,
        "--model",
        "pd-mock-1",
        "--protocol",
        protocol,
        "--lang",
        "en",
        "-o",
        "note.html",
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("PASS")


def test_configured_gemini_client_is_used(
    engine_server: Any,
    cli: Callable[..., CliResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--client gemini`: the endpoint Gemini CLI would call (its .gemini/.env read in a
    trusted folder), in Gemini's own protocol."""
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    base = engine_server.gemini_base_url
    assert cli("config", "gemini", "--preset", "mock", "--base-url", base).exit_code == 0
    result = cli("notes", "generate", "--client", "gemini", "--lang", "en", "-o", "note.md")
    assert result.exit_code == 0, result.stderr
    assert "/api/gemini/v1beta/models/pd-mock-1:streamGenerateContent" in result.stderr
    assert (tmp_path / "note.md").read_text(encoding="utf-8").count("✓") >= 3
