"""Run as a script by the Python that has aiconfigurator (plan/crosscheck.py starts it): reads
{"queries": [{"id": ..., "kwargs": {...}}]} on stdin, calls aiconfigurator's public
`aiconfigurator.cli.api.cli_estimate(**kwargs)` for each, and prints one JSON document:
{"version": ..., "results": [{"id", "ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "batch",
"error"}]}.

It imports nothing of pdnotes (aiconfigurator usually lives in a virtualenv of its own, where
pdnotes is not installed) and nothing but the standard library beside aiconfigurator.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import Any

BATCH_KEYS = ("decode_batch_size", "batch_size")


def estimate(cli_estimate: Any, query: dict[str, Any]) -> dict[str, Any]:
    """One configuration's estimate. A batch whose KV cache aiconfigurator finds out of memory is
    halved until it fits (pdnotes' engine caps a batch by its KV room as it runs)."""
    kwargs = dict(query["kwargs"])
    key = next((k for k in BATCH_KEYS if k in kwargs), None)
    while True:
        try:
            result = cli_estimate(**kwargs)
            break
        except Exception as exc:  # aiconfigurator cannot pose it: its own words are the reason
            text = " ".join(str(exc).split()) or type(exc).__name__
            if "OOM" in text and key is not None and kwargs[key] > 1:
                kwargs[key] //= 2
                continue
            return {"id": query["id"], "error": text[:300]}
    raw = result.raw or {}
    return {
        "id": query["id"],
        "ttft_ms": float(result.ttft),
        "tpot_ms": float(result.tpot),
        "tokens_per_s_per_gpu": float(raw.get("tokens/s/gpu", float("nan"))),
        "batch": kwargs.get(key) if key else None,
        "backend": f"{result.backend_name} {result.backend_version}",
    }


def main() -> None:
    logging.disable(logging.WARNING)  # aiconfigurator logs its search; stdout is the answer
    warnings.filterwarnings("ignore")
    queries = json.load(sys.stdin)["queries"]
    from aiconfigurator.cli.api import cli_estimate

    try:
        release = version("aiconfigurator")
    except PackageNotFoundError:
        release = "unknown"
    results = [estimate(cli_estimate, q) for q in queries]
    json.dump({"version": release, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
