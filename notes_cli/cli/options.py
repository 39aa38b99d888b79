"""Options shared by the `engine` commands, each flag defined once as an `Annotated` type: the
SLO group (TTFT, TPOT, TBT, the percentile they are judged at, a per-request attainment target)
and the workload group (lengths, arrival shape, seed) of `engine plan` and `engine simulate`,
and the flags that take one of a set of names (`--mode`, precisions, lengths, engines). A
command writes its default after `=`, so one flag keeps one name, one range and one help text
wherever it is used. Ranges go through `ranges.in_range` (Click's own min/max let `nan`
through); a set of names is a `Names` parser, which also completes them in the shell."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

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


class Names:
    """A flag that takes one of a set of names, as `click.Choice` would, but read at the first
    check rather than at import: the sets live in the engine's modules, which `pdnotes --help`
    must not load. Typer takes it as the option's `parser` (and `complete` as its
    `autocompletion`). A wrong name is the project's UsageError (exit 2, and the error document
    under --json) in the words of `refusal`, a format string with {value} and {choices}, and
    `fix`. With
    `comma_list`, the value is a comma list of names, each checked; it stays a string without
    blanks, which the command splits."""

    def __init__(
        self,
        names: Callable[[], Sequence[str]],
        refusal: str,
        *,
        fix: str | None = None,
        comma_list: bool = False,
    ) -> None:
        # click names a parser-backed type after the parser (FuncParamType reads __name__,
        # which an instance lacks): "text", as click calls a plain string.
        self.__name__ = "text"
        self._names = names
        self._refusal = refusal
        self._fix = fix
        self._comma_list = comma_list

    def __call__(self, value: str) -> str:
        known = tuple(self._names())
        parts = [p.strip() for p in value.split(",") if p.strip()] if self._comma_list else [value]
        for part in parts:
            if part not in known:
                refusal = self._refusal.format(value=repr(part), choices=", ".join(known))
                raise UsageError(refusal, fix=self._fix)
        return ",".join(parts) if self._comma_list else value

    def complete(self, incomplete: str) -> list[str]:
        """Shell completion: the names starting with what is typed (after the last comma)."""
        head, _, last = incomplete.rpartition(",") if self._comma_list else ("", "", incomplete)
        prefix = f"{head}," if head else ""
        return [prefix + n for n in self._names() if n.startswith(last)]


def one_of(names: Names, *decls: str, help: str) -> Any:
    """`typer.Option(*decls, help=...)` taking one of `names` (for `Annotated`)."""
    return typer.Option(*decls, parser=names, autocompletion=names.complete, help=help)


def _modes() -> Sequence[str]:
    from notes_cli.engine.core.config import MODES

    return MODES


def _weight_dtypes() -> Sequence[str]:
    from notes_cli.engine.core.profiles import WEIGHT_DTYPES

    return tuple(WEIGHT_DTYPES)


def _kv_dtypes() -> Sequence[str]:
    from notes_cli.engine.core.profiles import KV_DTYPES

    return tuple(KV_DTYPES)


def _engines() -> Sequence[str]:
    from notes_cli.plan.launch import ENGINES

    return ENGINES


def length_dists() -> Sequence[str]:
    return ("fixed", "lognormal")


def workloads() -> Sequence[str]:
    from notes_cli.bench.length_tables import workload_names

    return workload_names()


MODE = Names(_modes, "unknown --mode {value}; choose from {choices}")
MODE_LIST = Names(_modes, "--modes: unknown mode {value}; choose from {choices}", comma_list=True)
WEIGHT_DTYPE = Names(
    _weight_dtypes, "--weight-dtype: unknown precision {value}; choose from {choices}"
)
KV_DTYPE = Names(_kv_dtypes, "--kv-dtype: unknown precision {value}; choose from {choices}")
ENGINE = Names(_engines, "--sketch: unknown engine {value}; choose {choices}")
SKETCH_ENGINE = Names(_engines, "--engine: unknown engine {value}; choose from {choices}")
LENGTH_DIST = Names(length_dists, "unknown length distribution {value}; use fixed or lognormal")
WORKLOAD = Names(workloads, "unknown --workload {value}; choose from {choices}")
# `engine plan --dist` takes a built-in workload too.
DIST_OR_WORKLOAD = Names(
    lambda: (*length_dists(), *workloads()), "--dist: unknown {value}; choose from {choices}"
)
