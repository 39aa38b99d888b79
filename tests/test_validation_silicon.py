"""The harness behind docs/validation.md "Measured serving runs: bias per group"
(benchmarks/validation/): aiconfigurator-core's measured runs, the project's held-back rows
filtered out where the file is read, a deterministic split, rows posed to `engine simulate -c`,
signed ratios grouped. These tests check the mechanics, never the numbers.
"""

from __future__ import annotations

import csv
import random
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "benchmarks" / "validation"
sys.path.insert(0, str(HARNESS))

import silicon  # noqa: E402

from notes_cli.engine.core.profiles import load_catalog  # noqa: E402

COLUMNS = list(silicon.KEPT_COLUMNS)


def _row(run_id: str, **changes: str) -> dict[str, str]:
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        id=run_id,
        backend="trtllm",
        backend_version="1.0.0rc3",
        model_path="meta-llama/Llama-3.1-8B-Instruct",
        system="h200_sxm",
        mode="agg",
        isl="1024",
        osl="64",
        concurrency="4",
        batch_size="4",
        tp_size="1",
        attention_dp_size="1",
        moe_ep_size="1",
        silicon_ttft_ms="50",
        silicon_tpot_ms="8",
    )
    row.update(changes)
    return row


def _write(path: Path, rows: list[dict[str, str]], comment: str = "") -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(comment)
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


# ---- the held-back rows never come out -----------------------------------------------------------


def test_the_loader_never_yields_a_listed_id(tmp_path: Path) -> None:
    listed = silicon.holdout_ids()
    some_listed = sorted(listed)[:5]
    rows = [_row(i) for i in some_listed] + [_row(f"kept-{n}") for n in range(3)]
    random.Random(3).shuffle(rows)
    # a listed id with stray spaces is still the listed id
    rows.append(_row(f" {some_listed[0]} "))
    path = _write(tmp_path / "runs.csv", rows, comment="# a derived file's license header\n")
    got = [row["id"] for row in silicon.read_runs(path)]
    assert sorted(got) == ["kept-0", "kept-1", "kept-2"]


def test_a_row_without_an_id_stops_the_loader(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text("model_path,isl\nx,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no `id`"):
        list(silicon.read_runs(path))


def test_an_empty_holdout_list_refuses_to_read(tmp_path: Path) -> None:
    empty = tmp_path / "ids.txt"
    empty.write_text("# nothing listed\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no ids"):
        silicon.holdout_ids(empty)


def test_the_repository_list_is_the_projects_and_the_derived_runs_hold_none_of_it() -> None:
    listed = silicon.holdout_ids()
    assert len(listed) == 52
    derived = silicon.HERE / "silicon_runs.csv"
    # read raw here on purpose: the committed file itself must not contain a listed id
    with derived.open(encoding="utf-8") as handle:
        ids = {
            row["id"].strip()
            for row in csv.DictReader(line for line in handle if not line.startswith("#"))
        }
    assert len(ids) > 1000
    assert not ids & listed
    assert not {row["id"] for row in silicon.read_runs(derived)} & listed


# ---- the split ----------------------------------------------------------------------------------


def _rows_for_split() -> list[dict[str, str]]:
    """12 configurations x 3 concurrencies, every run its own measurement."""
    rows = []
    for config in range(12):
        for conc in (1, 8, 64):
            tp = str(1 + config % 2)
            measured = {"silicon_ttft_ms": f"{100 + len(rows)}", "silicon_tpot_ms": "8.5"}
            rows.append(_row(f"cfg{config}_agg_c{conc}_tp{tp}", tp_size=tp, **measured))
    return rows


def test_the_split_is_fixed_by_ids_groups_and_which_runs_share_a_measurement() -> None:
    rows = _rows_for_split()
    parts = silicon.split(rows)
    shuffled = list(reversed(rows))
    # other numbers, every run still its own measurement: the same split, whatever their size
    other_numbers = [dict(r, silicon_ttft_ms=f"{9e6 - i}", silicon_tpot_ms="1") for i, r in
                     enumerate(shuffled)]  # fmt: skip
    assert silicon.split(other_numbers) == parts


def test_configurations_that_share_a_measured_run_are_dealt_to_one_part() -> None:
    """The source names some runs twice (a dated file's id, a database dump's `cfg` id, the
    same TTFT and TPOT to every digit): the split deals the two configurations together, so a
    validation run is never a calibration run under another name."""
    rows = _rows_for_split()
    parts = silicon.split(rows)
    apart = [
        (a, b)
        for a in rows
        for b in rows
        if a["tp_size"] == b["tp_size"] and parts[a["id"]] != parts[b["id"]]
    ]
    assert apart  # the plain split deals these to different parts
    first, other = apart[0]
    other.update(silicon_ttft_ms=first["silicon_ttft_ms"], silicon_tpot_ms=first["silicon_tpot_ms"])
    joined = silicon.split(rows)
    assert _harness_run().twins(rows, joined) == set()
    unit = silicon.unit_of
    both = [r["id"] for r in rows if unit(r["id"]) in {unit(first["id"]), unit(other["id"])}]
    assert len(both) == 6 and len({joined[i] for i in both}) == 1
    # a zero or missing measurement joins nothing
    blank = [dict(r, silicon_ttft_ms="0") for r in rows]
    assert silicon.split(blank) == parts


def test_the_split_keeps_a_configuration_together_and_balances_each_group() -> None:
    parts = silicon.split(_rows_for_split())
    for config in range(12):
        tp = 1 + config % 2
        assert len({parts[f"cfg{config}_agg_c{c}_tp{tp}"] for c in (1, 8, 64)}) == 1
    for tp in (1, 2):
        mine = [parts[f"cfg{c}_agg_c1_tp{tp}"] for c in range(12) if 1 + c % 2 == tp]
        assert mine.count("calibration") == mine.count("validation") == 3


def test_a_measurement_named_twice_across_the_parts_is_found_as_twins() -> None:
    """The source repeats some runs under a second id scheme; the split (by id) may deal the two
    names to different parts, so `run.py twins` finds them by their measured pair."""
    rows = _rows_for_split()
    parts = silicon.split(rows)
    first = rows[0]
    other = next(r for r in rows if parts[r["id"]] != parts[first["id"]])
    same_part = next(r for r in rows if r is not first and parts[r["id"]] == parts[first["id"]])
    measured = {"silicon_ttft_ms": "123.456", "silicon_tpot_ms": "7.891"}
    for row in (first, other):
        row.update(measured)
    rows.append(dict(same_part, id="dup-in-one-part", silicon_ttft_ms="5", silicon_tpot_ms="6"))
    same_part.update(silicon_ttft_ms="5", silicon_tpot_ms="6")
    parts["dup-in-one-part"] = parts[same_part["id"]]
    for row in rows:  # every other row's measurement is its own
        if row["id"] not in {first["id"], other["id"], same_part["id"], "dup-in-one-part"}:
            row.update(silicon_ttft_ms=row["id"], silicon_tpot_ms=row["id"])

    near = next(r for r in rows if parts[r["id"]] == parts[other["id"]] and r is not other)
    near.update(silicon_ttft_ms="123.456", silicon_tpot_ms="7.89")  # another run, same TTFT

    assert _harness_run().twins(rows, parts) == {first["id"], other["id"]}


# ---- a row posed and scored ---------------------------------------------------------------------


def test_a_row_becomes_its_deployment() -> None:
    agg = silicon.deployment_for(
        _row("a", tp_size="8", model_path="deepseek-ai/DeepSeek-R1", precision="fp8"),
        ["trtllm"],
    )
    assert (agg.mode, agg.model, agg.weight_dtype, agg.backend) == (
        "chunked",
        "deepseek-r1",
        "fp8",
        "trtllm",
    )
    assert (agg.colocated.chip, agg.colocated.tp, agg.max_batch) == ("h200", 8, 4)
    disagg = silicon.deployment_for(
        _row(
            "d",
            mode="disagg",
            backend="sglang",
            prefill_tp_size="8",
            decode_tp_size="1",
            decode_attention_dp_size="8",
            decode_moe_ep_size="8",
            decode_batch_size="32",
        ),
        ["trtllm"],
    )
    assert disagg.mode == "disagg" and disagg.backend is None  # no sglang description: none
    assert disagg.prefill.tp == 8
    # the row's decode batch is per attention-DP rank: a DP8 worker holds 8 x 32
    assert (disagg.decode.dp, disagg.decode.ep, disagg.max_batch) == (8, 8, 8 * 32)
    assert disagg.link == "rdma-8x400g"  # 16 GPUs and more: beyond one node


def test_an_agg_row_with_attention_dp_holds_its_batch_on_every_rank() -> None:
    # TRT-LLM's TP1·DP8·EP8 agg rows: batch_size is per attention-DP rank (concurrency 64 at
    # batch 8), as the disagg rows' decode batch is; so is the step's token budget. Posed
    # with a batch of 8 for the whole replica, 56 of 64 clients queued (TTFT 18-60x measured).
    row = _row(
        "dp",
        model_path="deepseek-ai/DeepSeek-R1",
        precision="fp8",
        concurrency="64",
        batch_size="8",
        tp_size="1",
        attention_dp_size="8",
        moe_ep_size="8",
    )
    agg = silicon.deployment_for(row, ["trtllm"])
    assert (agg.colocated.dp, agg.max_batch) == (8, 64)
    assert agg.chunk_tokens == agg.prefill_token_budget == 8 * silicon.CHUNK_TOKENS
    plain = silicon.deployment_for(_row("tp", tp_size="8", batch_size="16"), ["trtllm"])
    assert (plain.max_batch, plain.chunk_tokens) == (16, silicon.CHUNK_TOKENS)


def test_the_fitted_disagg_request_time_applies_to_the_engines_disagg_rows_only() -> None:
    tuning = {"trtllm": {"step_overhead_ms": 2.0, "disagg_request_overhead_ms": 400.0}}
    agg = silicon.deployment_for(_row("a"), ["trtllm"], tuning)
    assert agg.step_overhead_ms == 2.0
    assert agg.overhead_ms < 100.0  # the backend's own, not the disagg stack's fit
    pd = _disagg("d", backend="trtllm", prefill_num_workers="1", decode_num_workers="1")
    disagg = silicon.deployment_for(pd, ["trtllm"], tuning)
    assert (disagg.step_overhead_ms, disagg.overhead_ms) == (2.0, 400.0)
    other = silicon.deployment_for(dict(pd, backend="sglang"), ["trtllm"], tuning)
    assert other.overhead_ms < 100.0  # another engine's rows keep the default


def test_the_fitted_agg_request_time_applies_to_the_engines_agg_rows_only() -> None:
    tuning = {"trtllm": {"agg_request_overhead_ms": 150.0, "disagg_request_overhead_ms": 400.0}}
    assert silicon.deployment_for(_row("a"), ["trtllm"], tuning).overhead_ms == 150.0
    pd = _disagg("d", backend="trtllm", prefill_num_workers="1", decode_num_workers="1")
    assert silicon.deployment_for(pd, ["trtllm"], tuning).overhead_ms == 400.0
    other = silicon.deployment_for(_row("a", backend="vllm"), ["trtllm"], tuning)
    assert other.overhead_ms < 100.0  # another engine's rows keep the default


def test_the_added_request_time_is_the_least_squares_one_on_log_ttft() -> None:
    # predicted 100 ms where 300 and 500 were measured: adding x makes the log errors
    # log((100+x)/300) and log((100+x)/500) cancel at 100 + x = sqrt(300 x 500) = 387
    assert silicon.fit_added_ms([(100.0, 300.0), (100.0, 500.0)]) == 290.0
    assert silicon.fit_added_ms([(100.0, 90.0)]) == 0.0  # never negative


def _disagg(run_id: str, **changes: str) -> dict[str, str]:
    """A DeepSeek-R1 fp8 disagg row on H200, TP8·EP8 prefill and decode, no worker counts."""
    fields = {
        "model_path": "deepseek-ai/DeepSeek-R1",
        "precision": "fp8",
        "mode": "disagg",
        "batch_size": "",
        "tp_size": "",
        "prefill_tp_size": "8",
        "prefill_moe_ep_size": "8",
        "decode_tp_size": "8",
        "decode_moe_ep_size": "8",
        "isl": "1024",
        "osl": "1024",
    }
    fields.update(changes)
    return _row(run_id, **fields)


def test_a_disagg_row_with_worker_counts_runs_them() -> None:
    row = _disagg(
        "w",
        concurrency="1152",
        prefill_num_workers="2",
        decode_num_workers="9",
        decode_attention_dp_size="8",
        decode_tp_size="1",
        decode_batch_size="16",
    )
    dep = silicon.deployment_for(row, ["trtllm"])
    assert (dep.prefill.count, dep.decode.count, dep.max_batch) == (2, 9, 16 * 8)
    assert dep.decode.count * dep.max_batch == 1152  # concurrency = workers x DP x batch
    # a prefill step takes the row's prefill batch of its prompts, per attention-DP rank
    dp_prefill = dict(row, prefill_tp_size="1", prefill_attention_dp_size="8")
    batched = silicon.deployment_for(dict(dp_prefill, prefill_batch_size="2"), ["trtllm"])
    assert batched.prefill_token_budget == 2 * 8 * 1024
    # ... and where the row does not say, the prompts one 8,192-token budget holds, per rank
    unsaid = dict(dp_prefill, prefill_batch_size="")
    assert silicon.deployment_for(unsaid, ["trtllm"]).prefill_token_budget == 8 * 8192
    long = dict(unsaid, isl="16384")  # a prompt longer than the budget still goes, one a rank
    assert silicon.deployment_for(long, ["trtllm"]).prefill_token_budget == 8 * 16384
    assert silicon.deployment_for(row, ["trtllm"]).prefill_token_budget == 8192


def test_without_worker_counts_the_decode_workers_hold_every_client() -> None:
    catalog = load_catalog(user=False)
    for clients in (1, 64, 1024, 4096):
        row = _disagg(f"c{clients}", concurrency=str(clients))
        sizes = silicon.disagg_sizes(row, catalog)
        fits = silicon._phase_costs(row, catalog).decode_fits
        assert sizes.decode_workers * sizes.decode_batch >= clients  # nobody waits for a slot
        assert sizes.decode_batch <= min(silicon.DEFAULT_MAX_BATCH, fits)  # per worker limits
        assert sizes.decode_workers == 1 or (sizes.decode_workers - 1) * sizes.decode_batch < (
            clients
        )  # no idle decode worker
    # long prompts + answers fill a worker's KV memory before its batch limit: more workers
    long = silicon.disagg_sizes(_disagg("l", concurrency="160", isl="8192"), catalog)
    assert long.decode_workers > 1


def test_without_worker_counts_prefill_is_rate_matched_to_decode() -> None:
    catalog = load_catalog(user=False)
    row = _disagg("p", concurrency="1024")
    short = silicon.disagg_sizes(row, catalog)
    costs = silicon._phase_costs(row, catalog)
    prefill_rate = 8 / costs.prefill.prefill_batch_ms([1024] * 8)  # 8 prompts in a budget
    step = costs.decode.decode_step_ms(short.decode_batch, short.decode_batch * 1536)
    decode_rate = short.decode_batch / (step * 1023)
    # enough prefill workers to feed the decode workers, and not one more
    assert short.prefill_workers * prefill_rate >= short.decode_workers * decode_rate
    assert (short.prefill_workers - 1) * prefill_rate < short.decode_workers * decode_rate
    # eight times the prompt for the same answers needs more prefill workers
    longer = silicon.disagg_sizes(_disagg("q", concurrency="1024", isl="8192"), catalog)
    assert longer.prefill_workers > short.prefill_workers


def test_the_one_pair_rule_is_kept_for_comparison() -> None:
    one_pair = silicon.Harness(disagg_rule="one-pair")
    sizes = silicon.disagg_sizes(_disagg("o", concurrency="4096"), harness=one_pair)
    assert (sizes.prefill_workers, sizes.decode_workers) == (1, 1)
    assert sizes.decode_batch == silicon.DEFAULT_MAX_BATCH


def test_a_row_falls_in_its_group() -> None:
    assert silicon.group_of(_row("a", precision="fp8", tp_size="2")) == (
        "dense fp8",
        "trtllm",
        "TP2",
        "agg",
    )
    assert silicon.group_of(_row("b"))[0] == "dense bf16"
    moe = _row(
        "c",
        model_path="deepseek-ai/DeepSeek-V3",
        precision="fp8",
        mode="disagg",
        prefill_tp_size="8",
        decode_tp_size="1",
        decode_attention_dp_size="8",
        decode_moe_ep_size="8",
    )
    assert silicon.group_of(moe) == ("MoE", "trtllm", "P TP8 / D TP1·DP8·EP8", "disagg")


def test_a_versioned_backend_is_preferred_when_pdnotes_has_one() -> None:
    assert silicon.backend_for("vllm", "0.12.0", ["vllm", "vllm-0.12"]) == "vllm-0.12"
    assert silicon.backend_for("vllm", "0.18.0", ["vllm", "vllm-0.12"]) == "vllm"
    assert silicon.backend_for("vllm", "", ["trtllm"]) is None


def test_the_ratio_is_predicted_over_measured() -> None:
    catalog = load_catalog(user=False)
    row = _row("r", silicon_ttft_ms="1000000", silicon_tpot_ms="0.001")
    got = silicon.score(row, catalog, "calibration")
    assert got.ttft_ms < 1000000 and got.ttft_ratio < 1  # pdnotes faster than a slow measurement
    assert got.tpot_ms > 0.001 and got.tpot_ratio > 1
    assert got.ttft_ratio == pytest.approx(got.ttft_ms / 1000000)


def test_later_rounds_come_from_clients_spread_over_one_requests_cycle() -> None:
    """Round seven's closed loop: the first round is the burst of every client at once, the
    later ones those of clients spread evenly over a request's cycle; where the burst queues
    prompts (16 clients of 4,096 tokens), the spread rounds do not, so the mean TTFT falls, and
    the burst's round stays in it."""
    catalog = load_catalog(user=False)
    row = _row("r", isl="4096", concurrency="16", batch_size="16")
    lockstep = silicon.Harness(later_rounds="lockstep")
    together = silicon.score(row, catalog, "calibration", harness=lockstep)
    spread = silicon.score(row, catalog, "calibration")
    burst_only = silicon.score(row, catalog, "calibration", harness=silicon.Harness(rounds=1))
    assert silicon.HARNESS.later_rounds == "spread"
    assert spread.ttft_ms < 0.8 * together.ttft_ms  # 182 against 254 ms
    # the burst's 16 requests are a tenth of the 160, so the mean is above the spread rounds'
    no_burst = silicon.score(
        row, catalog, "calibration", harness=silicon.Harness(skip_first_round=True)
    )
    assert no_burst.ttft_ms < spread.ttft_ms < burst_only.ttft_ms
    assert spread.ttft_ms == pytest.approx(0.1 * burst_only.ttft_ms + 0.9 * no_burst.ttft_ms)


def test_spread_clients_start_evenly_over_one_cycle() -> None:
    from notes_cli.bench.closed_loop import spread_starts

    assert spread_starts(1000.0, 4) == [0.0, 250.0, 500.0, 750.0]


# ---- grouping ---------------------------------------------------------------------------------


def _scored(ratio_ttft: float, ratio_tpot: float, group: str, part: str) -> silicon.Scored:
    return silicon.Scored(
        id=f"{group}-{ratio_ttft}-{ratio_tpot}",
        part=part,
        group=("dense bf16", group, "TP1", "agg"),
        isl=1024,
        osl=1024,
        ttft_ms=100 * ratio_ttft,
        tpot_ms=10 * ratio_tpot,
        measured_ttft_ms=100,
        measured_tpot_ms=10,
    )


def test_bias_is_reported_per_group_with_median_spread_and_share() -> None:
    runs = [_scored(r, 0.5, "vllm", "calibration") for r in (0.4, 0.9, 1.0, 1.2, 3.0)]
    runs += [_scored(1.0, r, "trtllm", "calibration") for r in (1.1, 1.2)]
    table = silicon.by_group(runs, lambda s: (s.group[1],))
    vllm = table[("vllm",)]
    assert vllm.runs == 5 and vllm.ttft[1] == pytest.approx(1.0)
    assert vllm.ttft[0] < 0.9 and vllm.ttft[2] > 1.2  # P10 and P90 around the median
    assert vllm.ttft_within == pytest.approx(3 / 5) and vllm.tpot_within == 0
    assert vllm.tpot[1] == pytest.approx(0.5)  # signed: too fast shows below 1
    assert table[("trtllm",)].both_within == 1


def test_calibration_and_validation_are_never_pooled() -> None:
    runs = [_scored(1.0, 1.0, "vllm", "calibration"), _scored(1.0, 1.0, "vllm", "validation")]
    with pytest.raises(ValueError, match="never pooled"):
        silicon.by_group(runs, lambda s: (s.group[1],))


# ---- scoring validation needs the model that was frozen ------------------------------------------


def _harness_run():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("validation_run", HARNESS / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_validation_is_scored_only_with_the_model_frozen_as_named(tmp_path: Path) -> None:
    import subprocess

    run = _harness_run()

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    for path in run.FROZEN_PATHS.values():
        target = tmp_path / path
        if "." not in target.name:  # a tree: one file in it
            target = target / "model.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("cost = 1\n")
    git("add", "-A")
    git("commit", "-qm", "model")
    frozen = {key: git("rev-parse", f"HEAD:{path}") for key, path in run.FROZEN_PATHS.items()}
    assert run.unfrozen(tmp_path, frozen) == []

    harness = tmp_path / "benchmarks/validation/silicon.py"
    harness.write_text("cost = 2\n")  # changed after the freeze, not committed
    assert run.unfrozen(tmp_path, frozen) == [
        "benchmarks/validation/silicon.py has uncommitted changes"
    ]
    git("commit", "-qam", "a change after the freeze")
    (changed,) = run.unfrozen(tmp_path, frozen)
    assert changed.startswith("benchmarks/validation/silicon.py is ")
    (tmp_path / "notes_cli/engine/model.py").write_text("cost = 3\n")
    git("commit", "-qam", "the engine too")
    assert len(run.unfrozen(tmp_path, frozen)) == 2


def test_scoring_one_group_takes_exactly_that_group_s_runs_of_the_part() -> None:
    run = _harness_run()  # its rows come through the holdout-filtered loader

    half = run.rows_of("calibration", every=2)
    moe_agg = run.rows_of("calibration", every=2, group="MoE,agg")
    wanted = [r for r in half if silicon.group_of(r)[0] == "MoE" and r["mode"] == "agg"]
    assert moe_agg and [r["id"] for r in moe_agg] == [r["id"] for r in wanted]
    assert len(moe_agg) < len(half)
    assert run.rows_of("calibration", every=2, group="dense bf16, trtllm, TP1")
    assert not run.rows_of("calibration", every=2, group="MoE,dense bf16")
