"""`notes generate` against a real model (issue 29, point 6): llama.cpp's `llama-server` with
Gemma 3 270M (scripts/real_engine.sh installs both). A 270M base model does not write a good
note; the pipeline must still behave: bounded tokens, bounded time, no note written, and a
verdict that names the real cause, its fix, and every answer with its finish reason, token
counts and text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from heldout_reading import write_reading
from real_engine import MODEL_ID, LlamaServer

pytestmark = [pytest.mark.real_engine, pytest.mark.timeout(600)]

MAX_TOKENS = 64
LIMIT_VERDICTS = {"no-table", "truncated", "at-limit"}


def test_a_real_models_answers_get_verdicts_that_name_their_cause(
    llama: LlamaServer, tmp_path: Path
) -> None:
    pdf, page = write_reading(tmp_path)
    note = tmp_path / "note.md"
    done = subprocess.run(
        [sys.executable, "-m", "notes_cli", "notes", "generate", "--base-url", llama.base_url,
         "--model", MODEL_ID, "--lang", "en", "--source", str(pdf), "--source", str(page),
         "--max-tokens", str(MAX_TOKENS), "--max-repairs", "1", "--timeout", "120",
         "-o", str(note), "--json"],
        capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "Traceback" not in done.stderr
    document = json.loads(done.stdout)
    attempts = document["attempts"]
    assert [a["kind"] for a in attempts] == ["initial", "repair"][: len(attempts)]
    for attempt in attempts:
        assert attempt["answer"] and 0 < attempt["output_tokens"] <= MAX_TOKENS
        assert attempt["max_tokens"] == MAX_TOKENS
        if attempt["finish_reason"] == "length":  # a base model does not stop by itself
            assert attempt["verdict"] in LIMIT_VERDICTS, attempt
            assert "token limit" in attempt["detail"], attempt
        if attempt["verdict"] == "no-table":  # no two table-shaped lines in a row went unseen
            rows = [ln.strip().startswith("|") for ln in attempt["answer"].splitlines()]
            assert not any(a and b for a, b in zip(rows, rows[1:], strict=False)), attempt
    if len(attempts) == 2:  # the repair quotes the first answer's own problem
        assert attempts[0]["problems"][0] in attempts[1]["request"]
    if done.returncode == 1 and document["schema"] == "pdnotes.error/1":
        assert document["verdict"] == attempts[-1]["verdict"]
        # a model that stops by itself may also write a table without the kit's columns
        assert document["verdict"] in LIMIT_VERDICTS | {"refusal", "wrong-columns"}
        assert not note.exists() and document["fix"]
        if attempts[-1]["finish_reason"] == "length":  # the limit's fault: the fix says so
            assert f"--max-tokens (now {MAX_TOKENS})" in document["fix"]
    else:  # a table, however poor: written, judged by the rubric and its citations
        assert document["schema"] == "pdnotes.notes.generate/1" and note.exists()
        assert document["citations"] is not None


def test_a_base_model_repeating_the_request_gets_the_base_model_advice(
    llama: LlamaServer, tmp_path: Path
) -> None:
    note = tmp_path / "note.md"
    done = subprocess.run(
        [sys.executable, "-m", "notes_cli", "notes", "generate", "--base-url", llama.base_url,
         "--model", MODEL_ID, "--lang", "en", "--max-tokens", str(MAX_TOKENS),
         "--max-repairs", "1", "--timeout", "120", "-o", str(note), "--json"],
        capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "Traceback" not in done.stderr
    document = json.loads(done.stdout)
    # Gemma 3 270M, a base model, continues its prompt: it writes pdnotes' own request out
    # again, whose sentences name the columns as `Stage | Bottleneck | Optimisation | Component`
    # (with the server's seed it does, on the first answer and the repair).
    quoted = re.compile(r"\w[^|\n]*Stage \| Bottleneck \| Optimisation \| Component[.,]")
    echoes = [a for a in document["attempts"] if quoted.search(a["answer"])]
    if not echoes:  # a machine whose sampling wrote something else: nothing to judge here
        return
    for attempt in echoes:
        # Those lines are the prompt, not a table "complete but truncated at the limit".
        assert attempt["verdict"] == "no-table", attempt
        assert "repeats pdnotes' own request" in attempt["detail"], attempt
    if document["attempts"][-1] in echoes:
        assert done.returncode == 1 and not note.exists()
        assert "instruction-tuned" in document["fix"] and "will not help" in document["fix"]
        assert "so the answer can end on its own" not in document["fix"]
