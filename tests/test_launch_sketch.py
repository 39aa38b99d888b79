"""Launch sketches for LMDeploy, vLLM and SGLang: every flag a sketch writes (read back from its
shell text) is one the engine's own source defines, per the recorded flag data, with values among
the recorded choices; the commands say what the deployment says; nothing claims to have run."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from notes_cli.engine.core.deployment_file import dump_deployment
from notes_cli.engine.core.profiles import Catalog, Deployment, load_catalog
from notes_cli.plan import launch
from notes_cli.plan.launch import ENGINES, launch_sketch
from notes_cli.plan.launch_flags import check_command, check_sketch, load_launch_flags


def _variants(catalog: Catalog) -> Iterator[Deployment]:
    for dep in catalog.deployments.values():
        modes = ("disagg", "colocated", "chunked") if dep.prefill else (dep.mode, "chunked")
        for mode in modes:
            yield dep.with_mode(mode)
            yield replace(dep.with_mode(mode), decode_exec="eager", kv_capacity_tokens=50_000)


def _argvs(sketch: launch.LaunchSketch) -> list[list[str]]:
    """The commands as a shell would split them (continuations joined)."""
    return [shlex.split(c.replace("\\\n", " ")) for c in sketch.commands()]


def _after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == flag]


def test_every_flag_of_every_sketch_is_recorded_for_that_engine_version() -> None:
    catalog = load_catalog()
    checked = 0
    for dep in _variants(catalog):
        for engine in ENGINES:
            sketch = launch_sketch(dep, catalog, engine)
            assert check_sketch(sketch) == [], (dep.name, dep.mode, engine)
            checked += sum(1 for argv in _argvs(sketch) for w in argv if w.startswith("--"))
    assert checked > 1000  # the loop did look at the flags


def test_the_checker_catches_a_wrong_flag_choice_or_value() -> None:
    flags = load_launch_flags()
    lmdeploy, vllm = flags.engine("lmdeploy"), flags.engine("vllm")
    good = ["CUDA_VISIBLE_DEVICES=0", "lmdeploy", "serve", "api_server", "m", "--tp", "2"]
    assert check_command(good, lmdeploy) == []
    cases = {
        "--tp-size": [*good, "--tp-size", "2"],
        "'Prefil' is not one of Decode, Hybrid, Prefill": [*good, "--role", "Prefil"],
        "--tp needs a value": [*good[:-1], "--eager-mode"],
        "--eager-mode takes no value": [*good, "--eager-mode", "yes"],
        "not a command recorded": ["lmdeploy", "serve", "gradio", "m"],
        "--link-type 'Ethernet'": ["lmdeploy", "serve", "proxy", "--link-type", "Ethernet"],
    }
    for problem, argv in cases.items():
        assert any(problem in p for p in check_command(argv, lmdeploy)), problem
    kv = '{"kv_connector":"P2pNcclConnector","kv_role":"kv_producer"}'
    problems = check_command(["vllm", "serve", "m", "--kv-transfer-config", kv], vllm)
    assert problems and "P2pNcclConnector" in problems[0] and "factory.py" in problems[0]


def test_a_planted_wrong_flag_fails_the_sketch_check(
    monkeypatch: pytest.MonkeyPatch, cli: Callable[..., Any]
) -> None:
    real = launch._sglang

    def planted(plan: Any) -> Any:
        steps, notes = real(plan)
        first = steps[0]
        return [replace(first, argv=(*first.argv, "--tp", "2")), *steps[1:]], notes

    monkeypatch.setattr(launch, "_sglang", planted)
    catalog = load_catalog()
    sketch = launch_sketch(catalog.deployment("h100-disagg"), catalog, "sglang")
    assert any("--tp is not a recorded flag" in p for p in check_sketch(sketch))
    result = cli("engine", "sketch", "h100-disagg", "--engine", "sglang")
    assert result.exit_code == 1 and "--tp is not a recorded flag" in result.stderr


def test_lmdeploy_pd_runs_prefill_and_decode_roles_behind_the_proxy_with_dlslime() -> None:
    catalog = load_catalog()
    dep = catalog.deployment("distserve-13b-disagg")  # prefill TP2, decode TP1, NVLink
    proxy, prefill, decode = _argvs(launch_sketch(dep, catalog, "lmdeploy"))
    assert proxy[:3] == ["lmdeploy", "serve", "proxy"]
    assert _after(proxy, "--serving-strategy") == ["DistServe"]
    assert _after(proxy, "--migration-protocol") == ["NVLINK"]
    for argv, role, tp in ((prefill, "Prefill", "2"), (decode, "Decode", "1")):
        assert argv[1:5] == ["lmdeploy", "serve", "api_server", "$MODEL"]
        assert _after(argv, "--role") == [role] and _after(argv, "--tp") == [tp]
        assert _after(argv, "--migration-backend") == ["DLSlime"]
        assert _after(argv, "--backend") == ["pytorch"]
        assert _after(argv, "--proxy-url") == ["http://$PROXY_HOST:8000"]
        assert _after(argv, "--max-batch-size") == ["128"]
    assert prefill[0] == "CUDA_VISIBLE_DEVICES=0,1" and decode[0] == "CUDA_VISIBLE_DEVICES=0"
    rdma = _argvs(launch_sketch(catalog.deployment("h100-2p2d-ib"), catalog, "lmdeploy"))
    assert _after(rdma[0], "--link-type") == ["IB"] and len(rdma) == 5  # proxy + 2P + 2D


def test_vllm_pd_sets_a_registered_kv_connector_and_says_the_router_is_yours() -> None:
    catalog = load_catalog()
    sketch = launch_sketch(catalog.deployment("mooncake-h800-tp8"), catalog, "vllm")
    argvs = _argvs(sketch)
    assert [a[1:3] for a in argvs] == [["vllm", "serve"]] * 2
    for argv in argvs:
        assert _after(argv, "--tensor-parallel-size") == ["8"]
        (config,) = _after(argv, "--kv-transfer-config")
        assert '"kv_connector":"NixlConnector"' in config
    assert any("router is yours" in note for note in sketch.notes)


def test_sglang_pd_sets_disaggregation_flags_and_its_router() -> None:
    catalog = load_catalog()
    *workers, router = _argvs(launch_sketch(catalog.deployment("h800-h20-rdma"), catalog, "sglang"))
    modes = [_after(argv, "--disaggregation-mode") for argv in workers]
    assert modes == [["prefill"], ["decode"]]
    for argv in workers:
        assert _after(argv, "--disaggregation-transfer-backend") == ["mooncake"]
        assert _after(argv, "--disaggregation-ib-device") == ["$IB_DEVICE"]
    assert router[:3] == ["python", "-m", "sglang_router.launch_router"]
    assert "--pd-disaggregation" in router
    assert _after(router, "--prefill") == ["http://$PREFILL_HOST_1:30000"]
    assert _after(router, "--decode") == ["http://$DECODE_HOST_1:30001"]
    nvlink = _argvs(launch_sketch(catalog.deployment("h100-disagg"), catalog, "sglang"))
    assert _after(nvlink[0], "--disaggregation-transfer-backend") == ["nixl"]


def test_colocated_and_chunked_get_single_server_commands_with_their_chunk_flags() -> None:
    catalog = load_catalog()
    chunked = catalog.deployment("h100-chunked")  # 512-token chunks
    expect = {
        "lmdeploy": ("--max-prefill-token-num", "512"),
        "vllm": ("--max-num-batched-tokens", "512"),
        "sglang": ("--chunked-prefill-size", "512"),
    }
    for engine, (flag, value) in expect.items():
        (argv,) = _argvs(launch_sketch(chunked, catalog, engine))
        assert _after(argv, flag) == [value], engine
        assert not any(
            w in argv for w in ("--role", "--kv-transfer-config", "--disaggregation-mode")
        )
    (vllm,) = _argvs(launch_sketch(chunked, catalog, "vllm"))
    assert "--enable-chunked-prefill" in vllm
    (sglang,) = _argvs(launch_sketch(catalog.deployment("h100-colocated"), catalog, "sglang"))
    assert _after(sglang, "--chunked-prefill-size") == ["-1"]
    two = _argvs(launch_sketch(catalog.deployment("a100-13b-colocated"), catalog, "sglang"))
    assert len(two) == 3 and "--worker-urls" in two[-1]  # two servers and a router


def test_every_sketch_says_it_was_not_launched() -> None:
    catalog = load_catalog()
    for engine in ENGINES:
        sketch = launch_sketch(catalog.deployment("h800-h20-rdma"), catalog, engine)
        assert "# NOT LAUNCHED: pdnotes wrote this sketch" in sketch.text()
        assert sketch.to_json()["launched"] is False
        version = load_launch_flags().engine(engine).version
        assert sketch.version == version and version in sketch.text()


def test_the_flag_data_names_a_version_commit_and_file_for_everything() -> None:
    flags = load_launch_flags()
    assert set(flags.engines) == set(ENGINES)
    for engine in flags.engines.values():
        assert engine.version and engine.commit and engine.source
        for command in engine.commands.values():
            assert command.flags, command.name
            for flag in command.flags.values():
                assert flag.file.endswith(".py") and flag.file.split("/")[0] in (
                    "lmdeploy", "vllm", "sglang", "sglang_router",
                ), flag  # fmt: skip
    docs = (Path(__file__).resolve().parents[1] / "docs" / "launch.md").read_text()
    for engine in flags.engines.values():
        assert engine.version in docs and engine.commit[:9] in docs, engine.engine


def test_engine_sketch_cli_takes_a_preset_or_a_deployment_file(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    catalog = load_catalog()
    plan = replace(catalog.deployment("h800-h20-rdma"), name="plan-2d", max_batch=96)
    path = tmp_path / "plan.toml"
    path.write_text(dump_deployment(replace(plan, decode=replace(plan.decode, count=2)), catalog))  # type: ignore[arg-type]
    text = cli("engine", "sketch", str(path), "--engine", "lmdeploy")
    assert text.exit_code == 0, text.stderr
    assert "# Launch sketch: plan-2d on LMDeploy" in text.stdout
    assert text.stdout.count("--role Decode") == 2 and "--max-batch-size 96" in text.stdout
    doc = cli("engine", "sketch", "h100-disagg", "-e", "vllm", "--mode", "chunked", "--json")
    assert doc.exit_code == 0 and doc.json()["schema"] == "pdnotes.launch-sketch/1"
    assert "--enable-chunked-prefill" in doc.json()["steps"][0]["argv"]
    bad = cli("engine", "sketch", "h100-disagg", "--engine", "tensorrt")
    assert bad.exit_code == 2 and "unknown engine 'tensorrt'" in bad.stderr
