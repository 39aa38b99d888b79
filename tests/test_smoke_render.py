"""The human smoke report, rendered at the pinned non-terminal width, compared exactly."""

from __future__ import annotations

import pytest

from notes_cli.smoke import SmokeReport, SmokeRun, breakdown, judge


def run(index: int, total: float, **kw: object) -> SmokeRun:
    base = dict(
        index=index,
        ok=True,
        status=200,
        connect_ms=12.0 if index == 1 else None,
        headers_ms=30.0,
        ttft_ms=80.0,
        total_ms=total,
        output_tokens=40,
        tokens_source="usage",
        tokens_per_s=80.0,
        finish_reason="stop",
        completed=True,
        preview="PD splits prefill…",
    )
    base.update(kw)
    return SmokeRun(**base)  # type: ignore[arg-type]


def report(runs: list[SmokeRun]) -> SmokeReport:
    return SmokeReport(
        client="openai",
        protocol="chat",
        url="https://gw.example/v1/chat/completions",
        model="m",
        key="sk-…abcd",
        proxy=None,
        runs=runs,
        verdict=judge(runs),
        breakdown=breakdown(runs),
    )


EXPECTED_PASS = """\
smoke runs (ms from request start)

 run   status   connect   headers   TTFT   total   tokens   tok/s   finish   preview
 ──────────────────────────────────────────────────────────────────────────────────────────────
   1      200        12        30     80     560       40    80.0   stop     PD splits prefill…
   2      200    reused        30     80     540       40    80.0   stop     PD splits prefill…

where the time goes (median): network + gateway: connect 12 ms, headers at 30 ms; model: first \
token 50 ms after headers, decode 80.0 tok/s
PASS returned yes, completed yes, stable yes  (stable = no run over 3x the median time after \
connecting (differences under 500 ms ignored) and no timeout)
"""


def test_passing_report(capsys: pytest.CaptureFixture[str]) -> None:
    from notes_cli.render import smoke as draw

    draw.report(report([run(1, 560.0), run(2, 540.0)]))
    assert _plain(capsys.readouterr().out) == EXPECTED_PASS


def test_table_rows_have_no_trailing_spaces(capsys: pytest.CaptureFixture[str]) -> None:
    from notes_cli.render import smoke as draw

    draw.report(report([run(1, 560.0), run(2, 540.0, preview="ok")]))
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    assert any(line.endswith("stop     ok") for line in lines)


def test_failing_report_lists_one_fix_per_cause(capsys: pytest.CaptureFixture[str]) -> None:
    from notes_cli.render import smoke as draw

    error = {"kind": "http-status", "message": "404 Not Found from u", "fix": "check /v1"}
    failed = [
        run(
            i,
            None,
            ok=False,
            status=404,
            connect_ms=None,
            headers_ms=None,
            ttft_ms=None,  # type: ignore[arg-type]
            output_tokens=None,
            tokens_per_s=None,
            finish_reason=None,
            completed=False,
            preview="",
            error=error,
            problem="http-status 404: 404 Not Found from u",
        )
        for i in (1, 2)
    ]
    draw.report(report(failed))
    out = _plain(capsys.readouterr().out)
    assert out.count("fix: check /v1") == 1
    assert "where the time goes" not in out
    assert "FAIL returned NO, completed NO, stable NO" in out
    assert "  • run 2 did not return: http-status 404: 404 Not Found from u" in out
    assert "  • latency not judged: 0 of 2 runs returned" in out


def test_a_wide_number_is_shown_whole_and_the_preview_gives_way(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A stream read in one burst (the client was descheduled) has a huge decode rate: the
    table is then wider than the terminal, and the preview is cut, not the numbers."""
    from notes_cli.render import smoke as draw

    long = "This answer comes from the mock engine and goes on for a while"
    runs = [run(i, 24.0, total_ms=12_345_678.0, tokens_per_s=1_234_567.8, preview=long)
            for i in (1, 2)]  # fmt: skip
    draw.report(report(runs))
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("   1 "))
    assert "12345678" in row and "1234567.8" in row
    assert row.endswith("   This answer co…")
    header = next(line for line in lines if "status" in line)
    assert header.split() == [
        "run", "status", "connect", "headers", "TTFT", "total", "tokens", "tok/s", "finish",
        "preview",
    ]  # fmt: skip


def _plain(text: str) -> str:
    """Trailing spaces are rich's padding, not content."""
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
