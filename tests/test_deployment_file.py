"""Deployment files: `dump_deployment` writes one, `engine serve --preset FILE` and `engine
simulate -p FILE` run it exactly as the preset it came from, and a broken file is refused with
exit 2 naming the file and the problem."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from notes_cli.engine.core.deployment_file import dump_deployment, resolve_preset
from notes_cli.engine.core.profiles import NodeGroup, load_catalog
from tests.engine_process import EngineProcess

SIM = ("--rate", "3", "-n", "120", "--input-len", "700", "--output-len", "40", "--json")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _configurations(result: Any) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.stderr
    return result.json()["configurations"]  # type: ignore[no-any-return]


def test_every_shipped_preset_reads_back_as_the_same_deployment(tmp_path: Path) -> None:
    catalog = load_catalog()
    for name, deployment in catalog.deployments.items():
        text = dump_deployment(deployment, catalog)
        assert text.startswith("# pdnotes deployment file, written by pdnotes")
        tomllib.loads(text)  # strict TOML
        again, _ = resolve_preset(str(_write(tmp_path / f"{name}.toml", text)))
        assert again == deployment, name
    staged = catalog.deployment("mooncake-h800-tp8")
    staged = replace(staged, prefill=replace(staged.prefill, tp=4, pp=2))  # type: ignore[arg-type]
    text = dump_deployment(staged, catalog)
    assert 'prefill = {count = 1, chip = "h800", tp = 4, pp = 2}' in text
    assert resolve_preset(str(_write(tmp_path / "staged.toml", text)))[0] == staged


NEW_KEYS = {  # issue 25: every key a 2026 deployment file may carry
    "models": (
        "weight_dtype", "ffn", "experts", "active_experts", "shared_experts", "expert_ffn",
        "dense_layers", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
        "sliding_window", "sliding_layers",
    ),
    "chips": ("fp8_tflops", "fp4_tflops", "node_gpus", "scaleout_gbps", "scaleout_us"),
    "deployments": ("weight_dtype", "kv_dtype"),
}  # fmt: skip


def test_every_new_key_survives_the_round_trip(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A MoE + MLA + sliding-window model on a custom chip, served in fp8 with attention DP and
    EP: the file holds every key, reads back as the same rows and simulates."""
    catalog = load_catalog()
    model = replace(
        catalog.models["deepseek-r1"],
        name="my-moe",
        weight_dtype="nvfp4",
        sliding_window=4096,
        sliding_layers=30,
    )
    chip = replace(
        catalog.chips["b200"],
        name="my-b200",
        fp8_tflops=4400.0,
        fp4_tflops=8800.0,
        node_gpus=16,
        scaleout_gbps=100.0,
        scaleout_us=15.0,
    )
    base = catalog.deployment("deepseek-r1-h200-disagg")
    dep = replace(
        base,
        name="my-dep",
        model="my-moe",
        weight_dtype="fp8",
        kv_dtype="fp8",
        prefill=NodeGroup(2, "my-b200", tp=4, pp=1, ep=8, dp=2),
        decode=NodeGroup(1, "my-b200", tp=2, pp=2, ep=16, dp=8),
    )
    mine = replace(
        catalog,
        models={**catalog.models, "my-moe": model},
        chips={**catalog.chips, "my-b200": chip},
        deployments={**catalog.deployments, "my-dep": dep},
    )
    text = dump_deployment(dep, mine)
    tables = tomllib.loads(text)
    for kind, keys in NEW_KEYS.items():
        (row,) = tables[kind].values()
        assert set(keys) <= set(row), kind
    assert tables["deployments"]["my-dep"]["decode"] == {
        "count": 1, "chip": "my-b200", "tp": 2, "pp": 2, "ep": 16, "dp": 8,
    }  # fmt: skip
    path = _write(tmp_path / "mine.toml", text)
    again, with_file = resolve_preset(str(path))
    assert again == dep
    assert with_file.models["my-moe"] == model
    assert with_file.chips["my-b200"] == chip
    (config,) = _configurations(
        cli("engine", "simulate", "-p", str(path), "-n", "20", "--rate", "2", "--json")
    )
    assert config["prefill_chips"] == 2 * 4 * 2 and config["decode_chips"] == 2 * 2 * 8
    assert config["label"].endswith("weights fp8 KV fp8")
    # A dense row leaves the MoE, MLA and window keys out (zero means absent) and reads back.
    dense = replace(catalog.models["llama-3.1-8b"], name="my-dense")
    plain = replace(catalog.deployment("h100-disagg"), name="plain", model="my-dense")
    ours = replace(catalog, models={**catalog.models, "my-dense": dense})
    text = dump_deployment(plain, ours)
    assert "experts" not in text and "kv_lora_rank" not in text and "sliding" not in text
    assert "layerwise_transfer = false" in text  # a false is still written
    again, with_file = resolve_preset(str(_write(tmp_path / "dense.toml", text)))
    assert again == plain and with_file.models["my-dense"] == dense


def test_simulating_the_file_gives_the_presets_numbers(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    catalog = load_catalog()
    for name in ("h800-h20-rdma", "h100-chunked", "mooncake-h800-tp8"):
        path = _write(tmp_path / f"{name}.toml", dump_deployment(catalog.deployment(name), catalog))
        by_name = _configurations(cli("engine", "simulate", "-p", name, *SIM))
        by_file = _configurations(cli("engine", "simulate", "-p", str(path), *SIM))
        assert by_file[0].pop("preset") == str(path)
        assert by_name[0].pop("preset") == name
        assert by_file == by_name  # label, chips, every metric of every point


def test_pipeline_stages_count_as_chips(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A prefill node of TP4 x PP2 spends 8 GPUs: goodput per chip must divide by all of them."""
    catalog = load_catalog()
    base = catalog.deployment("mooncake-h800-tp8")
    staged = replace(base, prefill=replace(base.prefill, tp=4, pp=2))  # type: ignore[arg-type]
    path = _write(tmp_path / "staged.toml", dump_deployment(staged, catalog))
    (config,) = _configurations(cli("engine", "simulate", "-p", str(path), *SIM))
    assert config["prefill_chips"] == 8
    assert config["chips"] == 8 + base.decode.gpus  # type: ignore[union-attr]


def test_a_file_carries_the_users_own_rows_with_it(
    cli: Callable[..., Any], isolated_home: Path, tmp_path: Path
) -> None:
    """Written on a machine with a custom chip, the file still means that chip where the user's
    row is gone, and a local row of the same name cannot change it."""
    user_rows = isolated_home / ".pdnotes" / "engine" / "mine.toml"
    user_rows.parent.mkdir(parents=True)
    _write(
        user_rows,
        '[chips.h20]\ntflops = 148.0\nhbm_gb = 96.0\nhbm_tbps = 2.0\nsource = "derated"\n'
        "[chips.lab-npu]\ntflops = 300.0\nhbm_gb = 64.0\nhbm_tbps = 1.6\n",
    )
    catalog = load_catalog()
    shipped = catalog.deployment("h800-h20-rdma")
    planned = replace(
        shipped,
        name="plan-a",
        decode=replace(shipped.decode, count=2, chip="lab-npu"),  # type: ignore[arg-type]
    )
    derated = _write(tmp_path / "derated.toml", dump_deployment(shipped, catalog))
    lab = _write(tmp_path / "lab.toml", dump_deployment(planned, catalog, written_by="a test"))
    assert "[chips.h20]" in derated.read_text() and "[chips.h800]" not in derated.read_text()
    assert "[chips.lab-npu]" in lab.read_text() and "written by a test" in lab.read_text()
    expected = {
        p: _configurations(cli("engine", "simulate", "-p", str(p), *SIM)) for p in (derated, lab)
    }

    user_rows.write_text(  # the custom chip gone, h20 redefined, the preset given an overhead
        "[chips.h20]\ntflops = 1.0\nhbm_gb = 40.0\nhbm_tbps = 0.1\n"
        "[deployments.h800-h20-rdma]\nrequest_overhead_ms = 900.0\n"
    )
    for path, before in expected.items():
        assert _configurations(cli("engine", "simulate", "-p", str(path), *SIM)) == before
    plain = _configurations(cli("engine", "simulate", "-p", "h800-h20-rdma", *SIM))
    assert plain[0]["points"] != expected[derated][0]["points"]  # the local row does apply here


def test_serving_the_file_answers_a_completion(tmp_path: Path) -> None:
    catalog = load_catalog()
    deployment = replace(catalog.deployment("h100-2p2d-ib"), name="plan-served")
    path = _write(tmp_path / "plan.toml", dump_deployment(deployment, catalog))
    with EngineProcess("--preset", str(path), "--speed", "50") as engine:
        answer = httpx.post(
            f"{engine.base_url}/chat/completions",
            json={
                "model": "pd-mock-1",
                "messages": [{"role": "user", "content": "say hi"}],
                "max_tokens": 8,
            },
            timeout=20,
        )
        state = httpx.get(engine.url("/engine/state"), timeout=10).json()
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"]
    assert state["preset"] == "plan-served"
    assert state["config"]["preset"] == str(path)


_GOOD = '[deployments.x]\nmode = "disagg"\nmodel = "qwen3-8b"\nlink = "roce-200g"\n'
_GROUPS = 'prefill = { count = 1, chip = "h800" }\ndecode = { count = 1, chip = "h20" }\n'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[deployments.x\nmode = 1\n", "is not valid TOML"),
        (_GOOD + _GROUPS + "[deployments.y]\nmode = 'disagg'\n", "exactly one [deployments.NAME]"),
        ('[chips.h900]\ntflops = 1.0\nhbm_gb = 1.0\nhbm_tbps = 1.0\n', "exactly one"),
        ("[serving]\nport = 1\n", "unknown top-level key(s) serving"),
        (_GOOD + _GROUPS + "max_batch = 'many'\n", "max_batch = 'many' should be a whole number"),
        (_GOOD + _GROUPS + "max_bath = 64\n", "unknown keys: max_bath"),
        (_GOOD + 'prefill = { chip = "h800" }\ndecode = { count = 1, chip = "h20" }\n', "count"),
        (_GOOD + 'prefill = { count = 1, chip = "h999" }\ndecode = { count = 1, chip = "h20" }\n',
         "chip 'h999' is not defined"),
        (_GOOD.replace("disagg", "turbo") + _GROUPS, "mode 'turbo'"),
    ],
)  # fmt: skip
def test_a_broken_file_is_refused_naming_the_file_and_the_problem(
    cli: Callable[..., Any], tmp_path: Path, text: str, problem: str
) -> None:
    path = _write(tmp_path / "bad.toml", text)
    commands = (("engine", "simulate", "-p", str(path)), ("engine", "serve", "--preset", str(path)))
    for args in commands:
        result = cli(*args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert str(path) in result.stderr and problem in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_a_path_that_is_not_a_regular_file_is_refused(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    fifo = tmp_path / "plan.toml"
    os.mkfifo(fifo)
    folder = tmp_path / "plans.toml"
    folder.mkdir()
    missing = tmp_path / "nowhere" / "plan.toml"
    cases = ((fifo, "not a regular file"), (folder, "a folder"), (missing, "no deployment file"))
    for path, problem in cases:
        result = cli("engine", "simulate", "-p", str(path))  # a FIFO must not hang the read
        assert result.exit_code == 2, result.stderr
        assert str(path) in result.stderr and problem in result.stderr


def test_a_name_is_still_a_name(cli: Callable[..., Any]) -> None:
    result = cli("engine", "simulate", "-p", "no-such-preset")
    assert result.exit_code == 2
    assert "unknown engine preset 'no-such-preset'" in result.stderr


def test_the_json_report_of_a_file_is_plain_json(cli: Callable[..., Any], tmp_path: Path) -> None:
    catalog = load_catalog()
    text = dump_deployment(catalog.deployment("h100-colocated"), catalog)
    path = _write(tmp_path / "a.toml", text)
    result = cli("engine", "simulate", "-p", str(path), *SIM)
    assert json.loads(result.stdout)["configurations"][0]["mode"] == "colocated"
