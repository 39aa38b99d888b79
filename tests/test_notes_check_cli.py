"""`pdnotes notes check FILE`: exit 0 pass, 1 fail, 2 unreadable; --json; what is reported."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

CORPUS = Path(__file__).parent / "corpus" / "answers"


def test_passing_answer_exits_0_and_lists_rows_and_concepts(cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "check", str(CORPUS / "zh_fenced_basic.md"))
    assert result.exit_code == 0
    assert result.stdout.startswith("PASS")
    assert "✓ Decode" in result.stdout and "✓ PagedAttention" in result.stdout


def test_failing_answer_exits_1_naming_the_missing_concept(cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "check", str(CORPUS / "en_missing_paged_attention.md"))
    assert result.exit_code == 1
    assert result.stdout.startswith("FAIL")
    assert "✗ PagedAttention" in result.stdout
    assert "The row “Decode” does not mention: PagedAttention." in result.stdout


def test_json_report(cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "check", str(CORPUS / "zh_missing_kv_row.md"), "--json")
    assert result.exit_code == 1
    document = result.json()
    assert document["schema"] == "pdnotes.notes.check/1"
    assert document["ok"] is False and document["verdict"] == "fail"
    assert document["rubric"]["missing_rows"] == ["Cross-node KV cache transfer"]
    assert document["table"]["header"] == ["阶段", "瓶颈", "优化手段", "对应组件"]
    assert document["rubric"]["score"] < 1


@pytest.mark.parametrize(
    ("name", "verdict"),
    [("en_refusal.txt", "REFUSAL"), ("zh_truncated.md", "TRUNCATED"), ("en_csv.csv", "PASS")],
)
def test_verdict_is_the_first_word(name: str, verdict: str, cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "check", str(CORPUS / name))
    assert result.stdout.split()[0] == verdict
    assert result.exit_code == (0 if verdict == "PASS" else 1)


def test_stdin(cli: Callable[..., CliResult]) -> None:
    answer = (CORPUS / "en_bold_links.md").read_text(encoding="utf-8")
    assert cli("notes", "check", "-", input=answer).exit_code == 0


def test_missing_file_exits_2(cli: Callable[..., CliResult]) -> None:
    result = cli("notes", "check", "nowhere.md")
    assert result.exit_code == 2
    assert "no such note or answer: nowhere.md" in result.stderr
    assert "Traceback" not in result.stderr


def test_binary_file_exits_2(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    path = tmp_path / "answer.md"
    path.write_bytes(b"\xff\xfe\x00\x81 not utf-8")
    result = cli("notes", "check", str(path), "--json")
    assert result.exit_code == 2
    assert result.json()["schema"] == "pdnotes.error/1"


def test_broken_json_file_exits_2_with_the_position(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    path = tmp_path / "answer.json"
    path.write_text('[{"stage": "Prefill",', encoding="utf-8")
    result = cli("notes", "check", str(path))
    assert result.exit_code == 2
    assert "is not valid JSON" in result.stderr and "line 1" in result.stderr


def test_same_answer_checks_under_any_extension(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    for suffix in (".txt", ".md"):
        target = tmp_path / f"answer{suffix}"
        shutil.copy(CORPUS / "zh_html_table.html", target)
        assert cli("notes", "check", str(target)).exit_code == 0
