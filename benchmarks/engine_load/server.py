"""The engine as `pdnotes engine serve` runs it, plus an observer that keeps every finished
request's modelled timing (RequestRecord, with each inter-token gap) and writes them as JSON
when SIGTERM / SIGINT stops the server, with how often the driver had to hold simulated time.
Run by run.py in its own process."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from notes_cli.engine.core.api import RequestRecord
from notes_cli.engine.core.config import EngineConfig
from notes_cli.engine.http.server import serve_forever
from notes_cli.engine.live.service import create_service


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="h800-h20-rdma")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--records", required=True, help="JSON file for the modelled records")
    args = parser.parse_args()

    records: list[dict[str, object]] = []

    def keep(item: object) -> None:
        if isinstance(item, RequestRecord):
            records.append(asdict(item))

    def ready(address: object) -> None:
        print(f"READY {address.base_url}", flush=True)  # type: ignore[attr-defined]

    config = EngineConfig(preset=args.preset, speed=args.speed, max_queue=4096)
    service = create_service(config)
    service.add_observer(keep)
    serve_forever(config, port=0, on_ready=ready, service=service)
    clock = service.clock  # how often the driver ran so late that it held simulated time
    driver = {"holds": clock.holds, "held_ms": round(clock.held_ms, 3)}
    with open(args.records, "w", encoding="utf-8") as fh:
        json.dump({"records": records, "driver": driver}, fh)
    print(f"wrote {len(records)} records", file=sys.stderr)


if __name__ == "__main__":
    main()
