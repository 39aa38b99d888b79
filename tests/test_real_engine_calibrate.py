"""One live calibration against llama.cpp's server (xllamacpp, Gemma 3 270M): `bench
--input-lens` records the grid, `engine calibrate` fits it and predicts the held-back load, and
the file runs in `engine simulate`. No wall-clock assertion: how fast this machine is decides
the numbers, the test checks that the whole path works on a real engine's records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from real_engine import MODEL_ID, LlamaServer, missing

pytestmark = [pytest.mark.real_engine, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parent.parent


def pdnotes(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notes_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_a_live_sweep_calibrates_and_predicts_its_held_back_load(tmp_path) -> None:
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    records = tmp_path / "llama.jsonl"
    with LlamaServer(parallel=3) as server:
        run = pdnotes(
            "bench", "--base-url", server.base_url, "--input-lens", "32,128",
            "--concurrency", "1,2,3", "-n", "3", "--output-len", "4", "--ignore-eos",
            "--timeout", "300", "--records", str(records),
        )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    files = sorted(tmp_path.glob("llama.i*.c*.jsonl"))
    assert len(files) == 6
    out = tmp_path / "llama-server.toml"
    fitted = pdnotes("engine", "calibrate", *map(str, files), "--out", str(out), "--json")
    assert fitted.returncode == 0, fitted.stderr
    doc = json.loads(fitted.stdout)
    assert f"model {MODEL_ID}" in doc["provenance"] and server.base_url in doc["provenance"]
    assert sorted(p["concurrency"] for p in doc["held_out"]) == [3, 3]
    for point in doc["held_out"]:
        assert point["predicted_ttft_ms"] > 0 and point["predicted_tpot_ms"] > 0
    assert doc["held_out_error"]["ttft"] is not None and doc["held_out_error"]["tpot"] is not None
    shown = pdnotes("engine", "simulate", "-p", str(out), "-c", "3", "--input-len", "128",
                    "--output-len", "4", "-n", "6")  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "calibrated:" in shown.stdout
