"""Bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE, the isolates U+2066-U+2069, the other
embeddings and marks) that a gateway, a model or a PDF sends never reach the terminal raw: a
terminal that honours them shows the text in another order than its bytes (a file name, a
command, a key). pdnotes shows each as `\\u202e`, through the same `render.visible` as ESC and
C1; `--json` keeps the exact text (as `\\u202e` escapes, which every JSON parser reads back).

The gateways are real loopback servers (`loopback.py`); the PDF is made with fpdf2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from loopback import LoopbackServer, Received, Reply, chat_stream

from notes_cli.render import BIDI_CONTROLS, visible

BIDI = "evil\u202e\u2066gpj.exe\u2069\u202a\u202b\u202c\u202d\u200e\u200f\u061c\u2067\u2068end"
SHOWN = (
    "evil\\u202e\\u2066gpj.exe\\u2069\\u202a\\u202b\\u202c\\u202d\\u200e\\u200f\\u061c"
    "\\u2067\\u2068end"
)
KEY_ENV = "BIDI_KEY"
Run = Callable[..., object]


def assert_no_bidi(output: str) -> None:
    raw = sorted({f"U+{ord(c):04X}" for c in output if ord(c) in BIDI_CONTROLS})
    assert not raw, f"bidi controls reach the terminal raw: {raw}"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-value")


def test_visible_shows_every_bidi_control_and_nothing_else_of_its_block() -> None:
    assert visible(BIDI) == SHOWN
    for code in [*range(0x0600, 0x0700), *range(0x2000, 0x2070)]:
        char = chr(code)
        assert visible(char) == (f"\\u{code:04x}" if code in BIDI_CONTROLS else char)


def _gateway(request: Received) -> Reply:
    """/models lists a model id carrying the controls; a turn answers with them."""
    if request.method == "GET":
        return Reply.json({"object": "list", "data": [{"id": BIDI}]})
    return Reply.sse(chat_stream([BIDI]))


def _error_gateway(request: Received) -> Reply:
    if request.method == "GET":
        return Reply.json({"object": "list", "data": [{"id": BIDI}]})
    return Reply.json({"error": {"message": BIDI, "type": "invalid_request_error"}}, 400)


def _smoke(cli: Run, base: str, *extra: str) -> object:
    return cli(
        "smoke", "--client", "openai", "--base-url", base + "/v1", "--model", "m",
        "--key-env", KEY_ENV, "-n", "1", "--timeout", "10", *extra,
    )  # fmt: skip


def test_smoke_shows_a_models_answer_with_its_bidi_controls_escaped(cli: Run) -> None:
    with LoopbackServer(_gateway) as gateway:
        result = _smoke(cli, gateway.url)
        as_json = _smoke(cli, gateway.url, "--json")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    assert_no_bidi(result.stdout + result.stderr)  # type: ignore[attr-defined]
    # the preview column may be cut to the width; its start shows the escape
    assert "evil\\u202e" in result.stdout  # type: ignore[attr-defined]
    assert_no_bidi(as_json.stdout)  # type: ignore[attr-defined]
    assert as_json.json()["runs"][0]["preview"] == BIDI  # type: ignore[attr-defined]


def test_smoke_shows_a_gateways_error_with_its_bidi_controls_escaped(cli: Run) -> None:
    with LoopbackServer(_error_gateway) as gateway:
        result = _smoke(cli, gateway.url)
        as_json = _smoke(cli, gateway.url, "--json")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_no_bidi(result.stdout + result.stderr)  # type: ignore[attr-defined]
    assert SHOWN in result.stderr  # type: ignore[attr-defined]
    assert_no_bidi(as_json.stdout)  # type: ignore[attr-defined]
    assert as_json.json()["runs"][0]["error"]["error_message"] == BIDI  # type: ignore[attr-defined]


def test_doctor_shows_a_served_model_name_and_an_error_body_with_bidi_escaped(
    cli: Run, isolated_home: Path
) -> None:
    with LoopbackServer(_error_gateway) as gateway:
        folder = isolated_home / ".codex"
        folder.mkdir()
        (folder / "config.toml").write_text(
            'model = "wanted"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "gw"\n'
            f'base_url = "{gateway.url}/v1"\nenv_key = "{KEY_ENV}"\nwire_api = "responses"\n'
        )
        result = cli("doctor", "--client", "codex", "--timeout", "10")
        as_json = cli("doctor", "--client", "codex", "--timeout", "10", "--json")
    shown = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert_no_bidi(shown)
    assert SHOWN in shown
    assert_no_bidi(as_json.stdout)  # type: ignore[attr-defined]
    assert BIDI in as_json.stdout.encode().decode("unicode_escape")  # type: ignore[attr-defined]
    assert any(BIDI in f["message"] for f in as_json.json()["findings"])  # type: ignore[attr-defined]


def test_notes_sources_shows_a_pdf_title_with_its_bidi_controls_escaped(
    cli: Run, tmp_path: Path
) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(BIDI)
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Prefill and decode run on separate workers.")
    path = tmp_path / "paper.pdf"
    pdf.output(str(path))

    result = cli("notes", "sources", str(path))
    as_json = cli("notes", "sources", str(path), "--json")

    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    assert_no_bidi(result.stdout + result.stderr)  # type: ignore[attr-defined]
    # the preview column may be cut to the width; its start shows the escape
    assert "evil\\u202e" in result.stdout  # type: ignore[attr-defined]
    assert_no_bidi(as_json.stdout)  # type: ignore[attr-defined]
    assert as_json.json()["sources"][0]["title"] == BIDI  # type: ignore[attr-defined]
