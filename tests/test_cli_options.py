"""The option groups `engine plan` and `engine simulate` share (notes_cli/cli/options.py): one
percentile flag whose former name stays hidden but works, and flags that take one of a set of
names, checked and completed from the set their owner module keeps."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import CliResult

from notes_cli.cli import options


@pytest.mark.parametrize("command", ["plan", "simulate"])
def test_help_shows_one_percentile_flag_and_names_the_former_one(
    cli: Callable[..., CliResult], command: str
) -> None:
    text = " ".join(cli("engine", command, "--help").stdout.split())
    assert "--slo-percentile SLO_PERCENTILE" in text
    assert "Also accepted as --percentile" in text
    assert "--percentile PERCENTILE" not in text  # the alias is hidden


def test_names_complete_each_entry_of_a_comma_list() -> None:
    assert options.MODE_LIST.complete("disagg,co") == ["disagg,colocated"]
    assert options.MODE_LIST.complete("") == ["disagg", "colocated", "chunked"]
    assert options.KV_DTYPE.complete("fp") == ["fp16", "fp8"]


def test_names_refuse_an_unknown_entry_anywhere_in_the_list(
    cli: Callable[..., CliResult],
) -> None:
    result = cli(
        "engine", "plan", "--model", "llama-3-8b", "--chip", "h800", "--slo-ttft-ms", "500",
        "--modes", "disagg, chunked ,pipelined", "--json",
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.json()["error"].startswith("--modes: unknown mode 'pipelined'")
