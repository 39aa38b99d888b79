"""KV transfer as multi-GPU deployments do it: sharded by TP, one rail per GPU, optionally
layer by layer under the prefill (issue 13.1)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from notes_cli.engine.core.api import RequestRecord
from notes_cli.engine.core.profiles import Catalog, Deployment, load_catalog
from notes_cli.engine.core.simcore import SimRequest, simulate

GB = 1e9


def one_request(catalog: Catalog, dep: Deployment, prompt: int) -> RequestRecord:
    return next(simulate(dep, [SimRequest(0.0, prompt, 4)], catalog=catalog))


def test_tp8_kv_moves_over_all_eight_rails_at_mooncakes_aggregate_rate(catalog: Catalog) -> None:
    # Mooncake's transfer engine reaches ~190 GB/s over 8 x 400 Gb/s: a TP8 1P1D request's KV
    # (each GPU's shard on its own NIC) must move at that rate, not at one NIC's 24 GB/s.
    dep = catalog.deployment("mooncake-h800-tp8")
    record = one_request(catalog, dep, 32768)
    rate_gbps = record.transfer_bytes / GB / ((record.transfer_ms - 0.2) / 1e3)
    assert rate_gbps == pytest.approx(190, rel=0.05)


def test_tp1_uses_one_rail_and_a_single_nic_link_is_shared_by_the_shards(
    catalog: Catalog,
) -> None:
    dep = catalog.deployment("mooncake-h800-tp8")
    sharded = one_request(catalog, dep, 8192).transfer_ms
    one_gpu = replace(dep, prefill=replace(dep.prefill, tp=1))  # type: ignore[type-var]
    assert one_request(catalog, one_gpu, 8192).transfer_ms == pytest.approx(8 * sharded, rel=0.1)
    tcp = replace(dep, link="tcp-100g")  # one socket path: TP does not help
    tcp_tp8 = one_request(catalog, tcp, 8192).transfer_ms
    tcp_tp1 = one_request(catalog, replace(one_gpu, link="tcp-100g"), 8192).transfer_ms
    assert tcp_tp8 == pytest.approx(tcp_tp1, rel=0.01)


def test_layerwise_transfer_hides_the_link_under_the_prefill(catalog: Catalog) -> None:
    dep = catalog.deployment("mooncake-h800-tp8")
    whole = one_request(catalog, dep, 32768)
    layered = one_request(catalog, replace(dep, layerwise_transfer=True), 32768)
    assert whole.transfer_overlap_ms == 0.0
    # The link keeps up with the layers: only the last layer's message (and alpha) is left.
    assert layered.transfer_ms < whole.transfer_ms / 20
    assert layered.transfer_overlap_ms > 0.9 * (whole.transfer_ms - 0.2)
    assert layered.ttft_ms < whole.ttft_ms - 0.9 * (whole.transfer_ms - layered.transfer_ms)
    timing = layered.pd_timing().to_json()
    assert timing["transfer_overlap_ms"] == round(layered.transfer_overlap_ms, 3)


def test_layerwise_over_a_slow_link_leaves_what_the_prefill_cannot_cover(
    catalog: Catalog,
) -> None:
    dep = replace(catalog.deployment("mooncake-h800-tp8"), link="tcp-25g")
    whole = one_request(catalog, dep, 8192)
    layered = one_request(catalog, replace(dep, layerwise_transfer=True), 8192)
    # The link is the bottleneck: the prefill hides (layers-1)/layers of its own time, no more.
    hidden = layered.prefill_ms * (79 / 80)
    assert layered.transfer_overlap_ms == pytest.approx(hidden, rel=0.01)
    assert layered.transfer_ms > whole.transfer_ms - hidden - 1.0


def test_pipeline_stages_shard_the_kv_further_each_stage_on_its_own_rail(
    catalog: Catalog,
) -> None:
    # Llama-3-70B, prefill TP4 x PP2 into decode TP4 x PP2 over 8 rails: each of the eight
    # prefill GPUs holds a quarter of the heads of half the layers and sends that shard over
    # its own NIC, so the KV moves twice as fast as with TP4 alone (4 rails).
    dep = catalog.deployment("mooncake-h800-tp8")
    tp4 = replace(
        dep,
        prefill=replace(dep.prefill, tp=4),  # type: ignore[type-var]
        decode=replace(dep.decode, tp=4),  # type: ignore[type-var]
    )
    tp4pp2 = replace(
        tp4,
        prefill=replace(tp4.prefill, pp=2),  # type: ignore[type-var]
        decode=replace(tp4.decode, pp=2),  # type: ignore[type-var]
    )
    alpha = catalog.links[dep.link].alpha_ms
    four_rails = one_request(catalog, tp4, 16384).transfer_ms - alpha
    eight_rails = one_request(catalog, tp4pp2, 16384).transfer_ms - alpha
    assert eight_rails == pytest.approx(four_rails / 2, rel=0.02)
    # A single-stage decode node has only its four GPUs' NICs to receive on.
    into_pp1 = replace(tp4pp2, decode=tp4.decode)
    assert one_request(catalog, into_pp1, 16384).transfer_ms - alpha == pytest.approx(
        four_rails, rel=0.02
    )


def test_pipeline_stages_add_kv_memory_not_speed(catalog: Catalog) -> None:
    from notes_cli.engine.core.costmodel import NodeCost

    model, chip = catalog.models["llama-3-70b"], catalog.chips["h800"]
    tp4 = NodeCost(model, chip, tp=4)
    tp4pp2 = NodeCost(model, chip, tp=4, pp=2)
    free_tp4 = tp4.kv_capacity_tokens()
    # Twice the HBM, the same weights: more than twice the KV room.
    assert tp4pp2.kv_capacity_tokens() > 2 * free_tp4
    # One request passes the stages in turn: its latency is TP4's plus the stage hop.
    assert tp4pp2.prefill_time_ms(4096) > tp4.prefill_time_ms(4096)
    assert tp4pp2.prefill_time_ms(4096) == pytest.approx(tp4.prefill_time_ms(4096), rel=0.05)


def test_a_pipeline_degree_is_read_from_the_preset_file(tmp_path, monkeypatch, cli) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    (home / "engine").mkdir(parents=True)
    (home / "engine" / "pp.toml").write_text(
        '[deployments.pp-test]\nmode = "disagg"\nmodel = "llama-3-70b"\nlink = "rdma-8x400g"\n'
        'prefill = { count = 1, chip = "h800", tp = 4, pp = 2 }\n'
        'decode = { count = 1, chip = "h800", tp = 8 }\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("PDNOTES_HOME", str(home))
    dep = load_catalog().deployment("pp-test")
    assert dep.prefill is not None and dep.prefill.pp == 2 and dep.prefill.gpus == 8
    listed = {p["name"]: p for p in cli("engine", "presets", "--json").json()["presets"]}
    assert listed["pp-test"]["prefill"] == {
        "count": 1,
        "chip": "h800",
        "tp": 4,
        "pp": 2,
        "ep": 1,
        "dp": 1,
    }
    from notes_cli.render.engine import _nodes  # the presets table's cell (the table truncates)

    assert _nodes(listed["pp-test"]["prefill"]) == "1x h800 tp4 pp2"
    (home / "engine" / "pp.toml").write_text(
        '[deployments.pp-test]\nprefill = { count = 1, chip = "h800", tp = 4, pp = 0 }\n',
        encoding="utf-8",
    )
    from notes_cli.errors import InputError

    with pytest.raises(InputError, match="pp must be at least 1"):
        load_catalog()


def test_engine_simulate_counts_every_stage_as_chips(catalog: Catalog) -> None:
    # Goodput per chip divides by nodes x tp x pp: a TP4 x PP2 node is eight chips.
    from notes_cli.engine.simulate.configs import SimConfig
    from notes_cli.engine.simulate.engine_simulator import EngineSimulator

    dep = catalog.deployment("mooncake-h800-tp8")
    staged = replace(
        dep,
        name="staged",
        prefill=replace(dep.prefill, tp=4, pp=2),  # type: ignore[type-var]
    )
    simulator = EngineSimulator(replace(catalog, deployments={"staged": staged}))
    resolved = simulator.resolve(SimConfig("staged"))
    assert (resolved.prefill_chips, resolved.decode_chips) == (8, 8)
