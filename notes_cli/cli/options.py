"""Option groups shared by `engine plan` and `engine simulate`, each flag defined once as an
`Annotated` type: the SLOs (TTFT, TPOT, TBT, the percentile they are judged at, a per-request
attainment target) and the workload's lengths, arrival shape and seed. A command writes its
default after `=`, so one flag keeps one name, one range and one help text wherever it is used.
Ranges go through `ranges.in_range` (Click's own min/max let `nan` through)."""

from __future__ import annotations

from typing import Annotated

import typer

from notes_cli.cli.ranges import BURSTINESS, INPUT_LEN, OUTPUT_LEN, SEED, SLO_MS, in_range
from notes_cli.errors import UsageError

# A percentile below the median is no objective; 100 would be the single worst request.
PERCENTILE = (50.0, 99.99)
DEFAULT_PERCENTILE = 90.0

_SLO_TTFT = in_range("--slo-ttft-ms", low=SLO_MS[0], high=SLO_MS[1], help="TTFT objective (ms).")
SloTtftMs = Annotated[float, _SLO_TTFT]
SloTtftMsOrNone = Annotated[float | None, _SLO_TTFT]
SloTpotMs = Annotated[
    float | None,
    in_range("--slo-tpot-ms", low=SLO_MS[0], high=SLO_MS[1], help="TPOT objective (ms)."),
]
SloTbtMs = Annotated[
    float | None,
    in_range(
        "--slo-tbt-ms",
        low=SLO_MS[0],
        high=SLO_MS[1],
        help="Inter-token gap objective (ms), judged at P99 (TBT).",
    ),
]
SloPercentile = Annotated[
    float,
    in_range(
        "--slo-percentile",
        low=PERCENTILE[0],
        high=PERCENTILE[1],
        help="Percentile TTFT and TPOT are judged at: 90 (DistServe) or 99. Also accepted as "
        "--percentile, the name older scripts of `engine plan` use.",
    ),
]
PercentileAlias = Annotated[
    float | None,
    in_range(
        "--percentile",
        low=PERCENTILE[0],
        high=PERCENTILE[1],
        help="The former name of --slo-percentile.",
        hidden=True,
    ),
]
Attainment = Annotated[
    float | None,
    in_range(
        "--attainment",
        low=0.01,
        high=1.0,
        help="Judge per request instead: this share (e.g. 0.9, as DistServe) must meet every "
        "objective.",
    ),
]

DEFAULT_INPUT_LEN = 512
DEFAULT_OUTPUT_LEN = 64
_INPUT_LEN = in_range(
    "--input-len",
    low=INPUT_LEN[0],
    high=INPUT_LEN[1],
    help="Prompt tokens (median if lognormal).",
)
_OUTPUT_LEN = in_range(
    "--output-len",
    low=OUTPUT_LEN[0],
    high=OUTPUT_LEN[1],
    help="Output tokens (median if lognormal).",
)
InputLen = Annotated[int, _INPUT_LEN]
OutputLen = Annotated[int, _OUTPUT_LEN]
Burstiness = Annotated[
    float,
    in_range(
        "--burstiness",
        low=BURSTINESS[0],
        high=BURSTINESS[1],
        help="Gamma shape of arrival gaps: 1 = Poisson, <1 burstier.",
    ),
]
Seed = Annotated[
    int, in_range("--seed", low=SEED[0], high=SEED[1], help="Seed for lengths and arrivals.")
]


def percentile(ctx: typer.Context, alias: float | None) -> float:
    """--slo-percentile, or the value given under its former name --percentile."""
    if alias is None:
        return float(ctx.params["slo_percentile"])
    if given(ctx, "slo_percentile"):
        raise UsageError("--percentile is the former name of --slo-percentile: give one of them")
    return alias


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user set the parameter `name` (on the command line or through the
    environment), rather than leaving its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")
