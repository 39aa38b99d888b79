"""What the demo draws, from fixed results (no engine): numbers and wrapping as users read them."""

from __future__ import annotations

import re

import pytest

from notes_cli.demo.pd_experiment import ExperimentResult, PresetResult


def _experiment(transfer_ms: float, gap_ms: float, hidden_ms: float = 0.0) -> ExperimentResult:
    colocated = PresetResult("h800-colocated", "colocated", 36.0, 7.4, 353.7, 347.5, 0.0, [7.4])
    disagg = PresetResult(
        "dlslime-h800-h20", "disagg", 35.0, 6.7, gap_ms, 361.9, transfer_ms, [6.7], hidden_ms, 2
    )
    return ExperimentResult(2.0, [colocated, disagg])


# 2.849 was shown as 2.9 ms in the table (rounded to 2.85, then to one decimal) and as 2.8 ms in
# the sentence under it; 9.24 as 9.2 ms in the table and 9 ms in the sentence.
@pytest.mark.parametrize(("transfer_ms", "gap_ms"), [(2.849, 9.24), (0.349, 9.96), (12.5, 10.49)])
def test_the_sentence_quotes_the_tables_numbers(
    capsys: pytest.CaptureFixture[str], transfer_ms: float, gap_ms: float
) -> None:
    from notes_cli.render import demo as draw

    result = _experiment(transfer_ms, gap_ms)
    draw._experiment({"experiment": result.to_json()})
    shown = capsys.readouterr().out
    row = next(line for line in shown.splitlines() if "│ dlslime-h800-h20" in line)
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    gap_cell, transfer_cell = cells[4], cells[6]
    sentence = result.conclusion()
    assert f"paid instead a {transfer_cell} KV-cache transfer" in sentence
    assert f"the disaggregated one's {gap_cell} (2 chips);" in sentence
    assert re.search(rf"dlslime-h800-h20 .* max {re.escape(gap_cell)}$", shown, re.MULTILINE)


def test_the_sentence_says_how_many_chips_each_side_uses_and_what_the_layers_hid() -> None:
    sentence = _experiment(1.67, 6.9, hidden_ms=51.4).conclusion()
    assert "the colocated node (1 chip) froze" in sentence
    assert "6.9 ms (2 chips)" in sentence
    assert "a 1.7 ms KV-cache transfer" in sentence
    assert "(51 ms more of it ran under the prefill, layer by layer)" in sentence
    assert "under the prefill" not in _experiment(1.67, 6.9).conclusion()


def test_a_chinese_note_is_wrapped_in_the_terminal_not_cut(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from notes_cli.render import demo as draw

    long_cell = "计算密集：长提示词的稠密矩阵乘法需要大量算力，目标指标为首字延迟（TTFT），" * 3
    table = {"columns": ["阶段", "瓶颈", "优化手段", "对应组件"]}
    table["rows"] = [["预填充（Prefill）", long_cell, "图模式整图下沉与子图融合", "DLInfer"]]
    draw._notes({"table": table, "verdict": "pass", "attempts": 1, "files": []})
    shown = capsys.readouterr().out

    assert "…" not in shown
    cells = "".join(line.split("│")[2].strip() for line in shown.splitlines() if "│" in line)
    assert cells == long_cell
