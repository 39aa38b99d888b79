"""Nothing a gateway, a model, a page or a config file sends can act on the user's terminal:
every place pdnotes shows such text prints its control characters visibly (`\\x1b`), while
`--json` keeps the exact text, and pdnotes' own colours still reach a colour terminal.

The gateway is a real loopback server (`hostile_gateway.py`, TERMINAL_MODES) whose answer and
error message carry OSC 52 (clipboard), OSC 0 (title), CSI 2J (clear screen) and a CR.
"""

from __future__ import annotations

import ast
import io
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_gateway import TERMINAL_ATTACK, HostileGateway

import notes_cli
from notes_cli.render import visible

KEY = "sk-VISIBLE0123456789abcdefXYZW"
KEY_ENV = "VISIBLE_KEY"
# TERMINAL_ATTACK as it must be shown: each control character as \xNN.
SHOWN = "A\\x1b]52;c;cm0gLXJmIH4K\\x07B\\x1b]0;pwned\\x07C\\x1b[2JD\\x9b2JE\\x0dF"
Run = Callable[..., object]


def assert_inert(output: str) -> None:
    """No character a terminal acts on: C0 but line feed and tab, DEL, C1."""
    acting = [c for c in output if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert not acting, f"raw control characters reach the terminal: {acting!r}"


def assert_no_attack(output: str) -> None:
    """For a colour terminal, where rich's own SGR codes (ESC [ … m) are expected."""
    for raw in ("\x1b]", "\x07", "\x1b[2J", "\x9b", "\r"):
        assert raw not in output, f"{raw!r} reached the terminal"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def smoke(cli: Run, base: str, *extra: str) -> object:
    return cli(
        "smoke", "--client", "openai", "--base-url", base, "--model", "pd-mock-1",
        "--key-env", KEY_ENV, "-n", "1", "--timeout", "10", *extra,
    )  # fmt: skip


def codex_config(home: Path, base_url: str) -> Path:
    """A Codex config.toml whose base_url is `base_url` (TOML \\u escapes allowed)."""
    folder = home / ".codex"
    folder.mkdir(exist_ok=True)
    path = folder / "config.toml"
    path.write_text(
        'model = "pd-mock-1"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "gw"\n'
        f'base_url = "{base_url}"\nenv_key = "{KEY_ENV}"\nwire_api = "responses"\n'
    )
    return path


# --------------------------------------------------------------------------- the sanitiser


def test_visible_shows_each_control_character_and_keeps_the_rest() -> None:
    for code in range(0x110):
        char = chr(code)
        acts = (code < 0x20 and char not in "\n\t") or 0x7F <= code < 0xA0
        assert visible(char) == (f"\\x{code:02x}" if acts else char)
    assert visible(TERMINAL_ATTACK) == SHOWN
    assert visible("ok ✓\n\tnext [bold]") == "ok ✓\n\tnext [bold]"


def test_a_renderable_built_without_a_string_is_shown_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A `Text` or a table of them never passes rich's render_str; the console's last step
    before the stream catches it."""
    from rich.table import Table
    from rich.text import Text

    from notes_cli import render

    table = Table("cell")
    table.add_row(Text("A\x1b[2JB"))
    render.out().print(Text("A\x1b]0;pwned\x9cB"), table)
    written = capsys.readouterr().out
    assert_inert(written)
    assert "A\\x1b]0;pwned\\x9cB" in written
    assert "A\\x1b[2JB" in written


# --------------------------------------------------------------------------- smoke


def test_smoke_preview_shows_the_models_escapes_and_json_keeps_them(
    cli: Run, hostile: HostileGateway
) -> None:
    result = smoke(cli, hostile.base("escape-answer"))
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    assert_inert(result.stdout + result.stderr)  # type: ignore[attr-defined]
    assert "A\\x1b]52;c;" in result.stdout  # type: ignore[attr-defined]

    as_json = smoke(cli, hostile.base("escape-answer"), "--json")
    assert_inert(as_json.stdout)  # type: ignore[attr-defined]
    # The preview folds whitespace (the CR) but keeps every escape as the model sent it.
    assert as_json.json()["runs"][0]["preview"].startswith(TERMINAL_ATTACK[:-2])  # type: ignore[attr-defined]


def test_smoke_error_lines_show_the_gateways_escapes_and_json_keeps_them(
    cli: Run, hostile: HostileGateway
) -> None:
    result = smoke(cli, hostile.base("escape-error"))
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_inert(result.stdout + result.stderr)  # type: ignore[attr-defined]
    assert "run 1: FAIL - http-status 400" in result.stderr  # type: ignore[attr-defined]
    assert result.stderr.rstrip().endswith(SHOWN)  # type: ignore[attr-defined]
    assert "did not return: http-status 400" in result.stdout  # type: ignore[attr-defined]
    assert SHOWN in result.stdout  # type: ignore[attr-defined]

    as_json = smoke(cli, hostile.base("escape-error"), "--json")
    assert_inert(as_json.stdout)  # type: ignore[attr-defined]
    assert as_json.json()["runs"][0]["error"]["error_message"] == TERMINAL_ATTACK  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- doctor


def test_doctor_error_and_probe_lines_show_the_gateways_escapes_and_json_keeps_them(
    cli: Run, hostile: HostileGateway, isolated_home: Path
) -> None:
    codex_config(isolated_home, hostile.base("escape-error"))
    result = cli("doctor", "--client", "codex", "--timeout", "10")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert_inert(result.stdout + result.stderr)  # type: ignore[attr-defined]
    lines = result.stdout.splitlines()  # type: ignore[attr-defined]
    errors = [x for x in lines if x.lstrip().startswith("error   probe-failed")]
    probes = [x for x in lines if x.lstrip().startswith("probe fail")]
    assert errors and all(x.endswith(SHOWN) for x in errors)
    assert probes and all(x.endswith(SHOWN) for x in probes)

    as_json = cli("doctor", "--client", "codex", "--timeout", "10", "--json")
    assert_inert(as_json.stdout)  # type: ignore[attr-defined]
    document = as_json.json()  # type: ignore[attr-defined]
    assert any(f["message"].endswith(TERMINAL_ATTACK) for f in document["findings"])
    assert any(p["detail"].endswith(TERMINAL_ATTACK) for p in document["probes"])


def test_doctor_offline_shows_escapes_planted_in_the_config_base_url(
    cli: Run, isolated_home: Path
) -> None:
    codex_config(isolated_home, "http://gw.example/v1\\u001b]0;pwned\\u0007\\u001b[2J")
    result = cli("doctor", "--offline", "--client", "codex")
    assert_inert(result.stdout + result.stderr)  # type: ignore[attr-defined]
    calls = next(x for x in result.stdout.splitlines() if "calls POST" in x)  # type: ignore[attr-defined]
    assert "http://gw.example/v1\\x1b]0;" in calls
    assert "\\x1b[2J/responses" in calls


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_colour_terminal_gets_pdnotes_colours_and_no_planted_escape(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal rich draws (not the plain path): its own colour codes pass, the config's
    escapes are shown."""
    from notes_cli.cli import main

    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "300")
    codex_config(isolated_home, "http://gw.example/v1\\u001b]0;pwned\\u0007\\u001b[2J")
    out, err = _Terminal(), _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit):
        main(["doctor", "--offline", "--client", "codex"])
    shown = out.getvalue() + err.getvalue()
    assert "\x1b[1m" in shown  # pdnotes' bold client title: colour is on
    assert_no_attack(shown)
    assert "http://gw.example/v1\\x1b]0;" in shown


def test_the_live_status_line_still_returns_to_its_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pdnotes' own cursor moves are rich control segments, not text, so they still act: the
    streaming status line is redrawn in place (a "\\r" printed as text would be shown)."""
    from notes_cli.render.notes import StreamProgress

    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "xterm-256color")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    status = StreamProgress("answer 1")
    for text in ("a", "b"):
        status._last_draw = float("-inf")  # draw every chunk, whatever the clock says
        status.on_chunk(text, 0.0)
    status.done("2 tokens")
    shown = terminal.getvalue()
    assert shown.count("\r\x1b[2K") == 3  # before each redraw and before the summary
    assert "\\x0d" not in shown
    assert shown.endswith("2 tokens\x1b[0m\n")


# --------------------------------------------------------------------------- notes, click, logs


def test_notes_sources_shows_a_titles_escapes_and_json_keeps_them(cli: Run, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Title {TERMINAL_ATTACK}\n\nSome text about prefill and decode.\n")
    result = cli("notes", "sources", str(page))
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    assert_inert(result.stdout + result.stderr)  # type: ignore[attr-defined]
    assert "A\\x1b]52;c;" in result.stdout  # type: ignore[attr-defined]

    as_json = cli("notes", "sources", str(page), "--json")
    assert_inert(as_json.stdout)  # type: ignore[attr-defined]
    # The title is the heading's line; the CR ends that line.
    title = as_json.json()["sources"][0]["title"]  # type: ignore[attr-defined]
    assert title == f"Title {TERMINAL_ATTACK[:-2]}"


def test_a_usage_error_quoting_the_command_line_shows_its_escapes(cli: Run) -> None:
    """Click words usage errors (typer's vendored Click escapes what it quotes); pinned here
    so a Typer upgrade that stops doing so fails."""
    for args in (["smoke", f"--{TERMINAL_ATTACK}"], ["smoke", TERMINAL_ATTACK], [TERMINAL_ATTACK]):
        result = cli(*args)
        assert result.exit_code == 2  # type: ignore[attr-defined]
        assert_inert(result.stdout + result.stderr)  # type: ignore[attr-defined]


def test_the_bridge_log_shows_escapes_and_still_masks_keys() -> None:
    from notes_cli.render.log import stderr_handler

    handler = stderr_handler("pdnotes bridge", lambda text: text.replace(KEY, "sk-…XYZW"))
    record = logging.LogRecord("pdnotes", logging.WARNING, __file__, 1, "%s", (None,), None)
    record.args = (f"upstream said {TERMINAL_ATTACK} for {KEY}",)
    line = handler.format(record)
    assert line == f"pdnotes bridge: upstream said {SHOWN} for sk-…XYZW"


def test_json_escapes_del_and_c1_which_json_itself_leaves_raw(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from notes_cli import render

    text = "\x7f\x9b2J\x85" + TERMINAL_ATTACK
    render.emit_json({"schema": "test/1", "text": text})
    written = capsys.readouterr().out
    assert_inert(written)
    assert json.loads(written)["text"] == text


# --------------------------------------------------------------------------- no way around it

_TERMINAL_WRITERS = {
    ("sys", "stdout"), ("sys", "stderr"), ("sys", "__stdout__"), ("sys", "__stderr__"),
    ("typer", "echo"), ("typer", "secho"), ("click", "echo"), ("click", "secho"),
    ("os", "write"), ("logging", "StreamHandler"), ("pprint", "pprint"),
}  # fmt: skip


def direct_writes(source: str) -> list[str]:
    """Where `source` writes to the terminal without notes_cli.render: print(), sys.stdout /
    sys.stderr, typer/click echo, os.write, a logging StreamHandler (also when imported by
    name)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "print":
            found.append(f"line {node.lineno}: print")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in _TERMINAL_WRITERS:
                found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (node.module, alias.name) in _TERMINAL_WRITERS:
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
    return found


def test_the_guard_finds_each_way_of_writing_to_the_terminal() -> None:
    planted = [
        "print('x')",
        "import sys\nsys.stdout.write('x')",
        "import sys\nsys.stderr.flush()",
        "import typer\ntyper.echo('x')",
        "from click import echo",
        "from sys import stderr",
        "import os\nos.write(1, b'x')",
        "import logging\nlogging.StreamHandler()",
    ]
    for source in planted:
        assert direct_writes(source), source
    assert not direct_writes("from notes_cli import render\nrender.text('x')\nx.print('y')")


# Modules that write to a pipe, never the terminal, each with its reason.
NOT_THE_TERMINAL = {
    "plan/aiconfigurator_estimate.py": "a script run in aiconfigurator's own Python (stdlib "
    "only, no pdnotes there); its stdout is the pipe plan/crosscheck.py reads as JSON",
}


def test_only_render_writes_to_the_terminal() -> None:
    package = Path(notes_cli.__file__).parent
    render = package / "render"
    offenders = {
        str(path.relative_to(package)): found
        for path in sorted(package.rglob("*.py"))
        if render not in path.parents
        and str(path.relative_to(package)) not in NOT_THE_TERMINAL
        and (found := direct_writes(path.read_text()))
    }
    assert not offenders, f"write through notes_cli.render (render.visible) instead: {offenders}"
