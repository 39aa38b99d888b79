"""benchmarks/bench_client/clients.py counts the CPU of a client's whole process tree: aiperf
runs a dozen processes, and one that outlives its parent must still be counted (the runner is
the tree's child subreaper), or aiperf's CPU per request would be undercounted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A client whose parent exits at once, leaving a grandchild that burns 0.4 s of its own CPU.
ORPHANING_CLIENT = """
import os, subprocess, sys, time
burn = "import time\\nwhile time.process_time() < 0.4: pass\\n"
subprocess.Popen([sys.executable, "-c", burn], start_new_session=False)
os._exit(0)
"""

MEASURE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import clients
clients.become_subreaper()
code, cpu_s, wall_s, out = clients.run_tree(
    [sys.executable, "-c", sys.argv[2]], {}, None, set(), Path(sys.argv[3])
)
print(code, cpu_s)
"""


def test_the_cpu_of_a_descendant_that_outlives_its_parent_is_counted(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(ROOT / "benchmarks" / "bench_client"),
         ORPHANING_CLIENT, str(tmp_path / "stderr.log")],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    code, cpu_s = done.stdout.split()
    assert code == "0"
    # The grandchild's 0.4 s (process time, not the wall clock) is in the tree's CPU.
    assert float(cpu_s) >= 0.4, done.stdout


SHADOW = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import clients
code, cpu_s, wall_s, out = clients.run_tree(
    [sys.executable, "-m", "notes_cli"], {"PYTHONPATH": sys.argv[2]}, None, set(),
    Path(sys.argv[3]),
)
print(out.strip())
"""


def test_the_tree_pythonpath_names_runs_even_from_inside_another_checkout(tmp_path: Path) -> None:
    """bench@COMMIT runs `python -m notes_cli` with PYTHONPATH at the commit's tree; started
    from inside this checkout, `-m` would put the checkout first and run today's code."""
    other = tmp_path / "other" / "notes_cli"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    (other / "__main__.py").write_text("print('the other tree')\n")
    (tmp_path / "run").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SHADOW, str(ROOT / "benchmarks" / "bench_client"),
         str(tmp_path / "other"), str(tmp_path / "run" / "stderr.log")],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the other tree"
