#!/usr/bin/env python3
"""llama.cpp's server from PyPI's `xllamacpp` wheel, started with llama-server's own flags.

`python3 scripts/xllamacpp_server.py -m model.gguf --alias NAME --port 8080 -c 4096 …` serves
what `llama-server` with the same flags serves (the same C++ server, compiled as a Python
extension: /v1/chat/completions, /v1/responses, /v1/models, /props, /metrics, …) until SIGTERM or
SIGINT. It maps the flags the real-engine tests and benchmarks use; any other flag is refused
(exit 2) rather than silently ignored. scripts/real_engine.sh installs the wheel and the model.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="xllamacpp_server.py",
        description="llama-server's flags, served by xllamacpp (only the flags listed here).",
    )
    p.add_argument("-m", "--model", help="the GGUF file (required)")
    p.add_argument("-a", "--alias", help="the model's names in the API, comma-separated")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("-t", "--threads", type=int)
    p.add_argument("-tb", "--threads-batch", type=int)
    p.add_argument("-np", "--parallel", type=int, help="slots")
    p.add_argument("-c", "--ctx-size", type=int, help="the context, shared by the slots")
    p.add_argument("-b", "--batch-size", type=int)
    p.add_argument("-ub", "--ubatch-size", type=int)
    p.add_argument("-n", "--n-predict", type=int)
    p.add_argument("-s", "--seed", type=int)
    p.add_argument("--no-repack", action="store_true", help="no CPU weight repacking")
    p.add_argument("--swa-full", action="store_true", help="a full-size sliding-window cache")
    p.add_argument("--kv-unified", action="store_true", help="one KV buffer for all slots")
    p.add_argument("--cache-reuse", type=int)
    p.add_argument("--chat-template-file", type=Path)
    p.add_argument("--chat-template")
    p.add_argument("--jinja", action="store_true", default=True)
    p.add_argument("--no-jinja", dest="jinja", action="store_false")
    p.add_argument("--metrics", action="store_true", help="the /metrics endpoint")
    p.add_argument("--props", action="store_true", help="POST /props (GET is always served)")
    p.add_argument("--no-slots", action="store_true", help="no /slots endpoint")
    p.add_argument("--no-webui", "--no-ui", dest="no_ui", action="store_true")
    p.add_argument("--api-key", help="a key clients must send (default: none)")
    p.add_argument("--version", action="store_true", help="print xllamacpp's version and exit")
    return p


def params(args: argparse.Namespace) -> Any:  # xllamacpp.CommonParams (untyped)
    """xllamacpp's CommonParams, as llama-server's argument parser would fill them."""
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = args.model
    if args.alias:
        # a set of names: a string would become a set of its characters
        p.model_alias = {name.strip() for name in args.alias.split(",") if name.strip()}
    p.hostnames = [args.host]
    p.port = args.port
    if args.threads is not None:
        p.cpuparams.n_threads = args.threads
    if args.threads_batch is not None:
        p.cpuparams_batch.n_threads = args.threads_batch
    for flag, field in (
        ("parallel", "n_parallel"),
        ("ctx_size", "n_ctx"),
        ("batch_size", "n_batch"),
        ("ubatch_size", "n_ubatch"),
        ("n_predict", "n_predict"),
        ("cache_reuse", "n_cache_reuse"),
    ):
        value = getattr(args, flag)
        if value is not None:
            setattr(p, field, value)
    if args.seed is not None:
        p.sampling.seed = args.seed
    p.no_extra_bufts = args.no_repack  # what llama-server's --no-repack sets
    p.swa_full = args.swa_full
    p.kv_unified = args.kv_unified
    if args.chat_template_file is not None:  # llama-server reads the file into chat_template
        p.chat_template = args.chat_template_file.read_text(encoding="utf-8")
    elif args.chat_template is not None:
        p.chat_template = args.chat_template
    p.use_jinja = args.jinja
    p.endpoint_metrics = args.metrics
    p.endpoint_props = args.props
    p.endpoint_slots = not args.no_slots
    p.ui = not args.no_ui
    if args.api_key:
        p.api_keys = [args.api_key]
    return p


def _exit_now(signum: int, _frame: object) -> None:
    os._exit(0)


def main(argv: list[str]) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    import xllamacpp

    if args.version:
        sys.stderr.write(f"xllamacpp {xllamacpp.__version__}\n")
        return 0
    if not args.model:
        cli.error("the following arguments are required: -m/--model")
    # SIGTERM or SIGINT end the process at once: the server holds nothing worth a graceful stop,
    # and its destructor can wait forever when asked to stop while its loop is still starting.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _exit_now)
    # Returns once the model is loaded and the port listens; the server runs on its own threads.
    server = xllamacpp.Server(params(args))
    for signum in (signal.SIGTERM, signal.SIGINT):  # again, in case the server took them over
        signal.signal(signum, _exit_now)
    sys.stderr.write(f"xllamacpp server listening on {server.listening_address}\n")
    sys.stderr.flush()
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
