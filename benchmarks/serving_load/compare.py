"""pdnotes against measured closed-loop serving runs (docs/validation.md, "Serving under load").

    python benchmarks/serving_load/compare.py            # summary and the table of every run
    python benchmarks/serving_load/compare.py --summary  # the accuracy summary only

Each run of tests/fixtures/serving_load.toml (mean TTFT and TPOT at C clients, fixed lengths) is
replayed through `engine simulate -c`: as pdnotes described it before issue 25 (a colocated
node, prefill first, no engine CPU costs), as the measured engine runs (prompts prefilled
together before decoding resumes, the trtllm backend's CPU costs and full KV reservation), and,
for the summary, as in-flight batching (prompts mixed into decode steps, mode chunked). Prints
the share of runs within TTFT +-50 % and TPOT +-30 %, per split, and a Markdown table. About
5 min of CPU.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from notes_cli.engine.core.profiles import load_catalog  # noqa: E402
from notes_cli.engine.simulate.measured_runs import BEFORE, IN_FLIGHT, NIM_TRTLLM, compare  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "serving_load.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true", help="print the summary only")
    args = parser.parse_args()
    runs = tomllib.loads(FIXTURE.read_text(encoding="utf-8"))["runs"]
    catalog = load_catalog(user=False)
    rows = []
    for run in runs:
        before = compare(run, catalog, BEFORE, "h100-sxm")
        after = compare(run, catalog, NIM_TRTLLM, "h100-sxm")
        mixed = compare(run, catalog, IN_FLIGHT, "h100-sxm")
        rows.append((run, before, after, mixed))
    print(
        "| split | runs | before: TTFT / TPOT / both | after: TTFT / TPOT / both "
        "| in-flight: TTFT / TPOT / both |"
    )
    print("|---|---|---|---|---|")
    for split in ("calibration", "held-out"):  # never pooled (issue 37)
        chosen = [r for r in rows if split in ("all", r[0]["split"])]
        n = len(chosen)

        def share(cmp_index: int, chosen: list = chosen, n: int = n) -> str:
            ttft = sum(abs(r[cmp_index].ttft_ratio - 1) <= 0.5 for r in chosen)
            tpot = sum(abs(r[cmp_index].tpot_ratio - 1) <= 0.3 for r in chosen)
            both = sum(r[cmp_index].within for r in chosen)
            return f"{ttft / n:.0%} / {tpot / n:.0%} / **{both / n:.0%}**"

        print(f"| {split} | {n} | {share(1)} | {share(2)} | {share(3)} |")
    if args.summary:
        return
    print()
    print(
        "| model | TP | ISL/OSL | C | measured TTFT / TPOT ms | before | after "
        "| after ratio | split |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for run, before, after, _ in rows:
        print(
            f"| {run['model']} | {run['tp']} | {run['isl']}/{run['osl']} | {run['concurrency']} "
            f"| {run['ttft_ms']:.0f} / {run['tpot_ms']:.1f} "
            f"| {before.ttft_ms:.0f} / {before.tpot_ms:.1f} "
            f"| {after.ttft_ms:.0f} / {after.tpot_ms:.1f} "
            f"| {after.ttft_ratio:.2f} / {after.tpot_ratio:.2f}{'' if after.within else ' ✗'} "
            f"| {run['split']} |"
        )


if __name__ == "__main__":
    main()
