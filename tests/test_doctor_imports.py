"""`pdnotes --help` and `pdnotes doctor --offline` must stay light: no HTTP client, server or
metrics library gets imported (checked in a fresh interpreter, not timed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("httpx", "uvicorn", "fastapi", "starlette", "prometheus_client", "openai")
PROBE = """
import json, sys
args, watched = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["pdnotes", *args]
from notes_cli.cli import main
try:
    main()
except SystemExit:
    pass
heavy = [m for m in watched if m in sys.modules]
sys.stderr.write("HEAVY=" + json.dumps(heavy) + "\\n")
"""


@pytest.mark.parametrize(
    "args", [["--help"], ["doctor", "--offline"], ["doctor", "--offline", "--json"]]
)
def test_no_heavy_imports(args: list[str], isolated_home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
        start_new_session=True,
        check=False,
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("HEAVY="))
    assert json.loads(line.removeprefix("HEAVY=")) == []
