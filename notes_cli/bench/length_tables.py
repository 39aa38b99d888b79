"""Built-in length distributions: `--workload sharegpt|longbench|arxiv-sum|azure-conv|azure-code`.

The numbers live in templates/workloads.toml, each entry with its source (DistServe's ShareGPT
set, LongBench's published averages, the arXiv-summarisation and Azure traces Sarathi-Serve,
Vidur and Splitwise use); no prompt text is shipped. Two kinds:

- `quantiles`: the source's token counts at the file's `percentiles` (P0..P99, P99.5, P99.9,
  P100); a draw takes u uniform in [0, 100) and interpolates linearly between the two
  neighbouring percentiles (inverse-CDF sampling), so the draws reproduce the source's
  percentiles, and its mean within a few per cent (the finer tail points keep a long tail from
  inflating it: with P0..P100 alone the coding trace's mean output came out 21% high).
- `lognormal`: a median and a sigma, with optional caps (a context window, a generation limit).

Input and output are drawn independently (one uniform each), from the workload's own
`random.Random`, so a seed gives the same lengths byte for byte.
"""

from __future__ import annotations

import math
import random
import tomllib
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from notes_cli.errors import InputError, UsageError
from notes_cli.resources import template_path


@dataclass(frozen=True)
class NamedLengths:
    """One built-in length distribution (see the module docstring for the two kinds)."""

    name: str
    description: str
    source: str
    kind: str
    percentiles: tuple[float, ...] = ()
    input_quantiles: tuple[int, ...] = ()
    output_quantiles: tuple[int, ...] = ()
    input_median: float = 0.0
    output_median: float = 0.0
    sigma: float = 0.5
    input_max: int | None = None
    output_max: int | None = None
    input_stats: dict[str, float] = field(default_factory=dict)
    output_stats: dict[str, float] = field(default_factory=dict)

    def pairs(self, rng: random.Random) -> Iterator[tuple[int, int]]:
        """Endless (input_tokens, output_tokens) draws."""
        if self.kind == "quantiles":
            points, qin, qout = self.percentiles, self.input_quantiles, self.output_quantiles
            draw = rng.random
            while True:
                yield _inverse_cdf(points, qin, draw()), _inverse_cdf(points, qout, draw())
        mu_in, mu_out, sigma = math.log(self.input_median), math.log(self.output_median), self.sigma
        cap_in, cap_out = self.input_max or math.inf, self.output_max or math.inf
        while True:
            n_in = min(cap_in, max(1, round(rng.lognormvariate(mu_in, sigma))))
            n_out = min(cap_out, max(1, round(rng.lognormvariate(mu_out, sigma))))
            yield int(n_in), int(n_out)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "source": self.source}


def _inverse_cdf(points: tuple[float, ...], values: tuple[int, ...], u: float) -> int:
    """The value at percentile 100·u, linear between the neighbouring table points."""
    position = u * 100.0
    index = bisect_right(points, position) - 1
    p0, low = points[index], values[index]
    share = (position - p0) / (points[index + 1] - p0)
    return max(1, round(low + share * (values[index + 1] - low)))


def workload_names() -> list[str]:
    return sorted(builtin_workloads())


def named_workload(name: str) -> NamedLengths:
    """The built-in distribution `name`; a UsageError listing the known ones otherwise."""
    workloads = builtin_workloads()
    try:
        return workloads[name]
    except KeyError:
        raise UsageError(
            f"unknown --workload {name!r}", fix=f"choose from {', '.join(sorted(workloads))}"
        ) from None


@cache
def builtin_workloads() -> dict[str, NamedLengths]:
    """Parse and check templates/workloads.toml once per process."""
    path = template_path("workloads.toml")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read the built-in workloads {path}: {exc}") from exc
    points = _percentiles(str(path), data.get("percentiles"))
    return {
        name: _parse(f"{path} [workloads.{name}]", name, row, points)
        for name, row in data.get("workloads", {}).items()
    }


def _percentiles(where: str, values: object) -> tuple[float, ...]:
    if (
        not isinstance(values, list)
        or len(values) < 2
        or values[0] != 0
        or values[-1] != 100
        or any(not b > a for a, b in zip(values, values[1:], strict=False))
    ):
        raise InputError(f"{where}: percentiles must rise strictly from 0 to 100")
    return tuple(float(v) for v in values)


def _parse(where: str, name: str, row: dict[str, Any], points: tuple[float, ...]) -> NamedLengths:
    kind = row.get("kind")
    common: dict[str, Any] = {
        "name": name,
        "description": str(row.get("description", "")),
        "source": str(row.get("source", "")),
        "kind": kind,
        "input_stats": dict(row.get("input_stats", {})),
        "output_stats": dict(row.get("output_stats", {})),
    }
    if not common["source"]:
        raise InputError(f"{where}: every workload names its source")
    if kind == "quantiles":
        return NamedLengths(
            **common,
            percentiles=points,
            input_quantiles=_quantiles(where, "input", row.get("input"), len(points)),
            output_quantiles=_quantiles(where, "output", row.get("output"), len(points)),
        )
    if kind == "lognormal":
        try:
            medians = float(row["input_median"]), float(row["output_median"])
            sigma = float(row.get("sigma", 0.5))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{where}: lognormal needs input_median and output_median") from exc
        if min(medians) < 1 or not sigma > 0:
            raise InputError(f"{where}: medians must be at least 1 and sigma positive")
        return NamedLengths(
            **common,
            input_median=medians[0],
            output_median=medians[1],
            sigma=sigma,
            input_max=row.get("input_max"),
            output_max=row.get("output_max"),
        )
    raise InputError(f"{where}: kind must be quantiles or lognormal, got {kind!r}")


def _quantiles(where: str, what: str, values: object, points: int) -> tuple[int, ...]:
    if (
        not isinstance(values, list)
        or len(values) != points
        or not all(isinstance(v, int) and v >= 1 for v in values)
        or any(b < a for a, b in zip(values, values[1:], strict=False))
    ):
        raise InputError(
            f"{where}: {what} must be {points} non-decreasing positive token counts, one per "
            "percentile"
        )
    return tuple(values)
