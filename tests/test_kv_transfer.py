"""KV transfer as multi-GPU deployments do it: sharded by TP, one rail per GPU, optionally
layer by layer under the prefill (issue 13.1)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from notes_cli.engine.core.api import RequestRecord
from notes_cli.engine.core.profiles import Catalog, Deployment, load_catalog
from notes_cli.engine.core.simcore import SimRequest, simulate

GB = 1e9


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


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
