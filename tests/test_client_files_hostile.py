"""No traceback on hostile client files (issue 11.6): deep nesting, huge integers, lone
surrogates, NaN / 1e400, binary and non-UTF-8 bytes. Every command that reads the file exits 2
with a message naming it, and doctor reports `toml-syntax` / `json-syntax` / `file-unreadable`,
within a bounded time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

CODEX_CASES = {
    "arrays nested 600 deep": "x = " + "[" * 600 + "]" * 600 + "\n",
    "inline tables nested 600 deep": "x = " + "{a=" * 600 + "1" + "}" * 600 + "\n",
    "a dotted table 2,000 levels deep": "[" + ".".join(["a"] * 2000) + "]\nb = 1\n",
    "a dotted key 2,000 levels deep": ".".join(["a"] * 2000) + " = 1\n",
    "a 5,000-digit integer": "x = " + "1" * 5000 + "\n",
    "an integer past 64 bits": "x = 9223372036854775808\n",
    "binary": b"\xff\xfe\x00garbage",
    "not UTF-8": b'model = "caf\xe9"\n',
}
CLAUDE_CASES = {
    "arrays nested 5,000 deep": "[" * 5000 + "]" * 5000,
    "objects nested 5,000 deep": '{"a":' * 5000 + "1" + "}" * 5000,
    "a 5,000-digit integer": '{"x": ' + "1" * 5000 + "}",
    "a lone surrogate": '{"env": {"ANTHROPIC_BASE_URL": "https://x", "Z": "\\ud800"}}',
    "a lone surrogate in a key": '{"\\udc00": 1}',
    "1e400": '{"x": 1e400}',
    "-1e400": '{"x": [-1e400]}',
    "NaN": '{"x": NaN}',
    "Infinity": '{"x": Infinity}',
    "-Infinity": '{"x": -Infinity}',
    "binary": b"\x80\x81{}",
    "not UTF-8": b'{"a": "caf\xe9"}',
}
WRITE = {
    "codex": ["config", "codex", "--provider", "gw", "--base-url", "https://gw.example/api",
              "--model", "m"],
    "claude": ["config", "claude", "--base-url", "https://gw.example", "--model", "m"],
}  # fmt: skip
TOTAL_CASES = len(CODEX_CASES) + len(CLAUDE_CASES)


def place(home: Path, client: str, content: str | bytes) -> Path:
    path = home / (".codex/config.toml" if client == "codex" else ".claude/settings.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notes_cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


CASES = [("codex", name) for name in CODEX_CASES] + [("claude", name) for name in CLAUDE_CASES]


@pytest.mark.parametrize(("client", "case"), CASES)
def test_hostile_file_is_an_input_error_for_every_command(
    cli, isolated_home: Path, client: str, case: str
) -> None:
    content = (CODEX_CASES if client == "codex" else CLAUDE_CASES)[case]
    path = place(isolated_home, client, content)
    before = path.read_bytes()

    started = time.monotonic()
    results = {
        "write": cli(*WRITE[client]),
        "show": cli("config", "show", "--client", client),
        "doctor": cli("doctor", "--offline", "--client", client, "--json"),
    }
    elapsed = time.monotonic() - started

    for name in ("write", "show"):
        result = results[name]
        assert result.exit_code == 2, (name, result.stderr)
        assert "Traceback" not in result.stderr and str(path) in result.stderr, result.stderr
    doctor = results["doctor"]
    assert doctor.exit_code == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    ids = {f["id"] for f in doctor.json()["findings"] if f.get("file") == str(path)}
    assert ids & {"toml-syntax", "json-syntax", "file-unreadable"}, ids
    assert path.read_bytes() == before
    assert elapsed < 20  # generous: the point is "bounded", not a speed target


@pytest.mark.parametrize("case", ["a 5,000-digit integer", "arrays nested 600 deep"])
def test_a_real_process_exits_2_without_a_traceback(isolated_home: Path, case: str) -> None:
    place(isolated_home, "codex", CODEX_CASES[case])
    result = run(["config", "show"])
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_nesting_a_client_file_really_uses_is_fine(cli, isolated_home: Path) -> None:
    place(isolated_home, "claude", json.dumps({"permissions": {"allow": [["a", ["b", [1.5]]]]}}))
    assert cli(*WRITE["claude"]).exit_code == 0


def test_the_parse_error_names_where_the_bad_number_is(cli, isolated_home: Path) -> None:
    place(isolated_home, "claude", '{\n  "env": {},\n  "x": 1e400\n}\n')
    result = cli(*WRITE["claude"])
    assert result.exit_code == 2 and "settings.json:3:8: 1e400" in result.stderr


# Far under the 10 MB cap, yet tomllib or tomlkit would take minutes (or hundreds of MB) on them.
SLOW_CODEX_CASES = {
    "a key of 100,000 dotted parts (200 KB)": ".".join(["a"] * 100_000) + " = 1\n",
    "60 ten-part dotted keys repeating a prefix in one table (2 KB)": "[t]\n"
    + "".join(".".join(["p"] * 9) + f".k{i} = 1\n" for i in range(60)),
    "500 top-level dotted keys of 16 parts (40 KB)": "".join(
        ".".join(["p"] * 15) + f".k{i} = 1\n" for i in range(500)
    ),
    "40,000 tables (0.3 MB)": "".join(f"[t{i}]\n" for i in range(40_000)),
    "an inline table of 200,000 entries (1.9 MB)": "x = {"
    + ",".join(f"k{i}=1" for i in range(200_000))
    + "}\n",
    "tables re-opened 2,000 times": "".join(f"[a.b.k{i}]\n[a.c.k{i}]\n" for i in range(1_000)),
    "80,000 trust entries (5 MB)": "".join(
        f'[projects."/home/u/src/project-{i}"]\ntrust_level = "trusted"\n\n' for i in range(80_000)
    ),
}


@pytest.mark.timeout(30)  # without the pre-scan, each runs for minutes
@pytest.mark.parametrize("case", list(SLOW_CODEX_CASES))
def test_a_file_the_parsers_would_take_unbounded_time_on_is_refused_at_once(
    cli, isolated_home: Path, case: str
) -> None:
    path = place(isolated_home, "codex", SLOW_CODEX_CASES[case])
    before = path.read_bytes()

    for args in (WRITE["codex"], ["config", "show", "--client", "codex"]):
        started = time.monotonic()
        result = cli(*args)
        assert time.monotonic() - started < 5, args  # refused by the pre-scan: ~0.1 s
        assert result.exit_code == 2, (args, result.stderr)
        assert str(path) in result.stderr and "Traceback" not in result.stderr
        assert "the file was not changed" in result.stderr
    doctor = cli("doctor", "--offline", "--client", "codex", "--json")
    assert doctor.exit_code == 1 and "Traceback" not in doctor.stderr
    assert "file-unreadable" in {f["id"] for f in doctor.json()["findings"]}
    assert path.read_bytes() == before
    assert not (isolated_home / ".pdnotes" / "backups").exists()


def _projects(count: int) -> str:
    entries = (
        f'[projects."/Users/someone/src/github.com/org/repo-{i}"]\ntrust_level = "trusted"\n\n'
        for i in range(count)
    )
    return 'model = "x"\n\n' + "".join(entries)


def test_the_limits_keep_real_configs_thousands_of_trust_entries_included() -> None:
    from notes_cli.clients import toml_bounds

    for text in (
        (Path(__file__).parent / "fixtures" / "config" / "rich.toml").read_text("utf-8"),
        _projects(5_000),
        "[mcp_servers.gh]\n" + "".join(f'env.VAR_{i} = "v"\n' for i in range(200)),
        "".join(
            f"profiles.p{i}.sandbox_workspace_write.network_access = true\n" for i in range(500)
        ),
        "".join(f"[t{i % 2}.x{i}]\n" for i in range(400)),  # a table re-opened 398 times
    ):
        toml_bounds.check(text, Path("config.toml"))


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"x": [1, {"y": float("nan")}]}, {"x": [1, {"y": float("nan")}]}, True),
        (True, 1, False),  # a rewrite that turned `true` into `1` is not what was meant
        (1, 1.0, False),
        ({"x": 1}, {"x": 1, "y": 2}, False),
        ([1, 2], [1], False),
    ],
)
def test_a_rewrite_is_read_back_as_toml_values_not_as_python_equality(
    a: object, b: object, same: bool
) -> None:
    from notes_cli.clients.files import same_toml_value

    assert same_toml_value(a, b) is same
