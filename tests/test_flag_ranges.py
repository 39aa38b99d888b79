"""Every numeric flag of `engine plan`, `engine simulate`, `engine serve`, `bench` and `doctor`
has a documented range (docs/planner.md, docs/simulate-bench.md, docs/connect.md): nan, inf,
zero, negative, huge and tiny values are usage errors (exit 2) naming the flag and the range,
never a traceback or a run that does not end. A plan's search space over the documented bound is
refused with the numbers that made it large; a file written to a folder that does not exist is
refused before any work (issue 24, point 5)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

from notes_cli.engine.core.profiles import load_catalog
from notes_cli.plan.space import ChipOption, SearchSpace, count_candidates, enumerate_candidates

PLAN = ("engine", "plan", "--model", "llama-3-8b", "--chip", "h800", "--slo-ttft-ms", "500")
SIMULATE = ("engine", "simulate")
BENCH = ("bench", "--base-url", "http://127.0.0.1:9/api")  # nothing listens on the discard port
SERVE = ("engine", "serve", "--port", "0")
DOCTOR = ("doctor", "--offline")

# (command, flag, low, high): the documented ranges.
RANGES = [
    (PLAN, "--rate", 1e-6, 1e6),
    (PLAN, "--input-len", 1, 1_048_576),
    (PLAN, "--output-len", 1, 131_072),
    (PLAN, "--burstiness", 0.01, 100),
    (PLAN, "--requests", 1, 100_000),
    (PLAN, "--window-s", 1, 600),
    (PLAN, "--slo-ttft-ms", 0.001, 600_000),
    (PLAN, "--slo-tpot-ms", 0.001, 600_000),
    (PLAN, "--slo-tbt-ms", 0.001, 600_000),
    (PLAN, "--percentile", 50, 99.99),
    (PLAN, "--slo-percentile", 50, 99.99),
    (PLAN, "--attainment", 0.01, 1),
    (PLAN, "--max-chips", 1, 4096),
    (PLAN, "--max-tp", 1, 64),
    (PLAN, "--max-instances", 1, 64),
    (PLAN, "--seed", 0, 2**32 - 1),
    (PLAN, "--tolerance", 0.001, 0.5),
    (PLAN, "--top", 1, 100),
    (PLAN, "--jobs", 1, 256),
    (SIMULATE, "--rate", 1e-6, 1e6),
    (SIMULATE, "--input-len", 1, 1_048_576),
    (SIMULATE, "--output-len", 1, 131_072),
    (SIMULATE, "--burstiness", 0.01, 100),
    (SIMULATE, "--concurrency", 1, 100_000),
    (SIMULATE, "--requests", 1, 1_000_000),
    (SIMULATE, "--slo-ttft-ms", 0.001, 600_000),
    (SIMULATE, "--slo-tpot-ms", 0.001, 600_000),
    (SIMULATE, "--slo-tbt-ms", 0.001, 600_000),
    (SIMULATE, "--slo-percentile", 50, 99.99),
    (SIMULATE, "--percentile", 50, 99.99),
    (SIMULATE, "--attainment", 0.01, 1),
    (SIMULATE, "--seed", 0, 2**32 - 1),
    (BENCH, "--rate", 1e-6, 1e6),
    (BENCH, "--burstiness", 0.01, 100),
    (BENCH, "--concurrency", 1, 10_000),
    (BENCH, "--requests", 1, 1_000_000),
    (BENCH, "--input-len", 1, 1_048_576),
    (BENCH, "--output-len", 1, 131_072),
    (BENCH, "--slo-ttft-ms", 0.001, 600_000),
    (BENCH, "--timeout", 0.1, 86_400),
    (BENCH, "--duration", 0.1, 86_400),
    (BENCH, "--server-speed", 0.001, 10_000),
    (BENCH, "--seed", 0, 2**32 - 1),
    (SERVE, "--speed", 0.001, 10_000),
    (SERVE, "--seed", 0, 2**32 - 1),
    (SERVE, "--max-queue", 1, 1_000_000),
    (DOCTOR, "--timeout", 0.1, 3600),
]
INTEGER_FLAGS = {
    "--input-len", "--output-len", "--requests", "--max-chips", "--max-tp", "--max-instances",
    "--seed", "--top", "--jobs", "--concurrency", "--max-queue",
}  # fmt: skip


def _outside(low: float, high: float, integer: bool) -> list[str]:
    """Values a flag must refuse: nan, infinities, just past each end, far past each end."""
    below = low - 1 if integer else low / 2 if low > 0 else -1e-9
    above = high + 1 if integer else high * 1.01
    values = ["nan", "inf", "-inf", "-1", "1e308", "-1e308", repr(below), repr(above)]
    if not integer:
        values += ["1e-300"]  # the burstiness that gave two tracebacks
    return sorted(set(values) - ({"-1"} if low <= -1 else set()))


CASES = [
    pytest.param(command, flag, value, id=f"{command[0]}-{command[1]}{flag}={value}")
    for command, flag, low, high in RANGES
    for value in _outside(low, high, flag in INTEGER_FLAGS)
]


@pytest.mark.parametrize(("command", "flag", "value"), CASES)
def test_a_value_outside_the_documented_range_is_a_usage_error(
    cli: Callable[..., CliResult], command: tuple[str, ...], flag: str, value: str
) -> None:
    result = cli(*command, flag, value)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    assert flag in result.stderr


@pytest.mark.parametrize(
    ("command", "flag", "value", "says"),
    [
        (PLAN, "--rate", "1e308", "1e+308 is outside the range 1e-06 to 1000000"),
        (PLAN, "--max-tp", "100000", "100000 is outside the range 1 to 64"),
        (SIMULATE, "--burstiness", "1e-300", "1e-300 is outside the range 0.01 to 100"),
        (BENCH, "--timeout", "nan", "nan is outside the range 0.1 to 86400"),
        (SERVE, "--speed", "inf", "inf is outside the range 0.001 to 10000"),
        (DOCTOR, "--timeout", "nan", "nan is outside the range 0.1 to 3600"),
    ],
)
def test_the_error_states_the_range(
    cli: Callable[..., CliResult], command: tuple[str, ...], flag: str, value: str, says: str
) -> None:
    result = cli(*command, flag, value)
    assert says in " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("command", "flag", "value", "says"),
    [
        (PLAN, "--max-batch", "1000000000", "not a whole number from 1 to 16384"),
        (PLAN, "--max-batch", "0", "not a whole number from 1 to 16384"),
        (PLAN, "--chunk-tokens", "200000", "not a whole number from 1 to 131072"),
        (SIMULATE, "--rates", "1,nan", "outside the range"),
        (SIMULATE, "--rates", "1,1e308", "outside the range"),
        (SIMULATE, "--rates", "0", "outside the range"),
        (SIMULATE, "--rates", ",".join(str(r) for r in range(1, 66)), "at most 64"),
        (SIMULATE, "--pd-ratio", "100000:1", "each 1 to 64"),
    ],
)
def test_list_flags_hold_their_range_too(
    cli: Callable[..., CliResult], command: tuple[str, ...], flag: str, value: str, says: str
) -> None:
    result = cli(*command, flag, value)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert says in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr


def test_a_search_space_over_the_bound_is_refused_with_its_numbers(
    cli: Callable[..., CliResult],
) -> None:
    # Each limit in range, together 148,224 candidates (the default space has 596).
    result = cli(*PLAN, "--max-tp", "64", "--max-instances", "64", "--max-chips", "4096")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    said = " ".join(result.stderr.split())
    assert "148,224 candidates" in said and "5,000" in said
    for number in ("--max-tp 64", "64 nodes per group", "--max-chips 4096", "3 mode(s)"):
        assert number in said


def test_many_list_values_make_a_space_too_large_as_well(cli: Callable[..., CliResult]) -> None:
    batches = ",".join(str(b) for b in range(1, 31))
    chunks = ",".join(str(64 * c) for c in range(1, 21))
    result = cli(*PLAN, "--max-batch", batches, "--chunk-tokens", chunks)
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "12,870 candidates" in said and "30 --max-batch x 20 --chunk-tokens" in said


@pytest.mark.parametrize(
    ("max_tp", "max_chips", "max_instances", "modes", "kinds"),
    [
        (8, 16, 4, ("disagg", "colocated", "chunked"), 1),
        (4, 8, 3, ("disagg",), 2),
        (16, 64, 8, ("colocated", "chunked"), 2),
        (2, 3, 5, ("disagg", "chunked"), 1),
        (1, 1, 1, ("disagg", "colocated"), 3),
    ],
)
def test_the_count_the_bound_uses_is_the_number_of_candidates_searched(
    max_tp: int, max_chips: int, max_instances: int, modes: tuple[str, ...], kinds: int
) -> None:
    catalog = load_catalog()
    chips = tuple(ChipOption(name) for name in sorted(catalog.chips)[:kinds])
    space = SearchSpace(chips, modes, max_tp, max_chips, max_instances, (16, 256), (256, 512, 1024))
    model = catalog.models["llama-3-8b"]
    assert count_candidates(space, model) == len(enumerate_candidates(space, model))


def _missing(tmp_path: Path, name: str) -> Path:
    return tmp_path / "no-such-folder" / name


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("notes", "cards", "{note}", "-o", "{out}/c.csv"), "-o"),
        (("notes", "generate", "--base-url", "http://127.0.0.1:9/v1", "-o", "{out}/n.md"), "-o"),
        ((*PLAN, "--out", "{out}/best.toml"), "--out"),
        ((*PLAN, "--plot", "{out}/plan.html"), "--plot"),
        ((*SIMULATE, "--rates", "1,2", "--slo-ttft-ms", "100", "--plot", "{out}/s.svg"), "--plot"),
    ],
)
def test_writing_into_a_folder_that_does_not_exist_is_refused_before_any_work(
    cli: Callable[..., CliResult], tmp_path: Path, args: tuple[str, ...], flag: str
) -> None:
    from notes_cli.notes.kits import load_kit
    from notes_cli.notes.knowledge import answer_for

    note = tmp_path / "note.md"
    note.write_text(answer_for(load_kit("pd-disagg").prompt("en"), seed=2) or "", encoding="utf-8")
    folder = tmp_path / "no-such-folder"
    argv = [a.format(note=note, out=folder) for a in args]
    result = cli(*argv)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    said = " ".join(result.stderr.split())
    assert f"{flag} {folder}" in said and "does not exist" in said
    assert not folder.exists()
