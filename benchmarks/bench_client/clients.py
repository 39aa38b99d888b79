"""bench's CPU per request beside aiperf and guidellm, and a sweep against its points run one by
one: `python3 benchmarks/bench_client/clients.py [--repeat 3] [--aiperf BIN] [--guidellm BIN]`.

Part 1, side by side. One `pdnotes engine serve --preset h100-disagg` per run (`--speed`,
default 1), the OpenAI routes under /v1 so every client finds them where it looks. Each client
sends the same load: `--requests` (1000) streamed chat completions, Poisson arrivals at `--rate`
(100 req/s), at most `--concurrency` (64) in flight, 128-token prompts, 64 output tokens asked
for. The clients:

- `bench`: this tree's `pdnotes bench` with everything issue 27 added switched on: unique seeded
  prompts (the default), `--records FILE.jsonl`, and the server-metrics sampler (the default).
- `bench, no --records`: the same without `--records`, the command the baseline runs.
- `bench@COMMIT` (`--baseline`, default a9e2b76, the commit before issue 27's bench work): the
  same command from `git archive COMMIT`, without `--records` (it had none).
- `aiperf` and `guidellm` when their executables are given (each in its own venv; see
  docs/benchmarks/simulate-bench.md). Both need a tokenizer; offline there is none to download,
  so a word-level one (`tokenizers`, saved in the Hugging Face layout) is made in a temporary
  folder with the client's own Python.

CPU = user + system seconds of the client's whole process tree (aiperf runs a dozen processes):
this process is the tree's child subreaper, so a descendant that outlives its parent is still
reaped here, and `RUSAGE_CHILDREN` counts every reaped descendant. Requests and output tokens
are the engine's own counts (its Prometheus `/metrics`), the same yardstick for every client.
"start-up" is the CPU of the same client sending `--startup-requests` (5) requests; "per request,
net" = (CPU - start-up) / (requests - startup requests). Ratios are taken within a round (the
same minutes of a shared machine) and summarised as median [min-max] over rounds.

Part 2, sweep (`--sweep-requests`, 0 to skip): `pdnotes bench --concurrency 1,4,16,64 -n N`
against one engine at `--sweep-speed` (10), beside the same four points as four processes, both
with `--records`. The sweep pays Python's start-up once and the points four times, so the table
shows both raw and net of start-up.

`--full-answers` serves every answer to its full 64 tokens (the engine's `--fault no-stop`): the
clients' prompts differ (bench's are unique per request since issue 27), so with the engine's
own stops their answers differ in length, and a per-request comparison compares workloads too.

Rounds are interleaved (client A, B, C, then again) so that a slow spell of the machine hits all.
Engine and client are pinned to two different CPUs (`--no-pin` turns it off), as in run.py.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import cpus_to_pin, free_port, pinner, wait_healthy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PR_SET_CHILD_SUBREAPER = 36
MODEL = "pd-mock-1"
SWEEP_LEVELS = (1, 4, 16, 64)


@dataclass(frozen=True)
class Load:
    requests: int
    rate: float  # 0: closed loop
    concurrency: int
    input_len: int = 128
    output_len: int = 64


@dataclass(frozen=True)
class Run:
    """One client process tree against one engine: its CPU and what the engine served."""

    cpu_s: float
    wall_s: float
    requests: int  # chat completions the engine answered with 200
    output_tokens: int
    returncode: int


@dataclass
class Tally:
    runs: list[Run] = field(default_factory=list)
    startups: list[Run] = field(default_factory=list)


# ---- process accounting ----------------------------------------------------------------------


def become_subreaper() -> None:
    """Orphaned descendants are reparented to this process (Linux), so their CPU is counted."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit(f"prctl(PR_SET_CHILD_SUBREAPER): errno {ctypes.get_errno()}")


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _my_children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def reap_leftovers(keep: set[int], grace_s: float = 5.0) -> None:
    """Wait for (then kill) every child not in `keep`: descendants orphaned by the client."""
    deadline = time.monotonic() + grace_s
    while True:
        left = [pid for pid in _my_children() if pid not in keep]
        for pid in left:
            if os.waitpid(pid, os.WNOHANG)[0]:
                left.remove(pid)
        if not left:
            return
        if time.monotonic() > deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
            return
        time.sleep(0.05)


def run_tree(
    command: list[str], env: dict[str, str], cpu: int | None, keep: set[int], log: Path
) -> tuple[int, float, float, str]:
    """(exit code, CPU seconds of the whole tree, wall seconds, stdout) of one command."""
    before = children_cpu_s()
    started = time.perf_counter()
    with open(log, "wb") as err, tempfile.TemporaryFile() as out:
        # In the run's own folder: `python -m` puts the working directory first on sys.path,
        # so a checkout there would shadow the tree PYTHONPATH names (bench@COMMIT).
        process = subprocess.Popen(
            command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True, preexec_fn=pinner(cpu), cwd=log.parent,
        )  # fmt: skip
        try:
            process.wait(timeout=900)
        except BaseException:  # a timeout, Ctrl-C or SIGTERM: the client goes too
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        wall = time.perf_counter() - started
        # Descendants the client left behind finish their work (and are counted) first.
        reap_leftovers(keep)
        out.seek(0)
        stdout = out.read().decode(errors="replace")
    return process.returncode, children_cpu_s() - before, wall, stdout


# ---- the engine ------------------------------------------------------------------------------


def engine_counts(port: int) -> tuple[int, int]:
    """(chat completions answered 200, output tokens) from the engine's Prometheus metrics."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    requests = tokens = 0.0
    for line in text.splitlines():
        if line.startswith('pdnotes_engine_requests_total{route="chat",status="200"}'):
            requests = float(line.split()[-1])
        elif line.startswith("pdnotes_engine_output_tokens_total "):
            tokens = float(line.split()[-1])
    return int(requests), int(tokens)


@contextlib.contextmanager
def engine(
    speed: float, cpu: int | None, full_answers: bool = False
) -> Iterator[tuple[int, set[int]]]:
    """(port, {the engine's pid}): the pid is this process's child, never reaped as a leftover."""
    port = free_port()
    command = [
        sys.executable, "-m", "notes_cli", "engine", "serve", "--port", str(port),
        "--preset", "h100-disagg", "--speed", str(speed), "--prefix", "/v1",
        "--max-queue", "100000",
    ]  # fmt: skip
    if full_answers:
        command += ["--fault", "no-stop"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        start_new_session=True, preexec_fn=pinner(cpu), cwd=ROOT,
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health")
        yield port, {process.pid}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def measure(
    command: list[str], env: dict[str, str], served: tuple[int, set[int]], cpu: int | None,
    log: Path,
) -> Run:  # fmt: skip
    port, keep = served
    requests_before, tokens_before = engine_counts(port)
    code, cpu_s, wall_s, _ = run_tree(command, env, cpu, keep, log)
    requests_after, tokens_after = engine_counts(port)
    if code != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{command[:4]} exited {code}:\n{tail}")
    return Run(cpu_s, wall_s, requests_after - requests_before, tokens_after - tokens_before, code)


# ---- the clients -----------------------------------------------------------------------------

Command = Callable[[str, Load, Path], list[str]]


def bench_command(records: bool) -> Command:
    def command(url: str, load: Load, tmp: Path) -> list[str]:
        args = [
            sys.executable, "-m", "notes_cli", "bench", "--base-url", url + "/v1",
            "-n", str(load.requests), "--concurrency", str(load.concurrency),
            "--input-len", str(load.input_len), "--output-len", str(load.output_len),
            "--timeout", "120", "--json",
        ]  # fmt: skip
        if load.rate:
            args += ["--rate", str(load.rate)]
        if records:
            args += ["--records", str(tmp / "records.jsonl")]
        return args

    return command


def aiperf_command(binary: str, tokenizer: Path) -> Command:
    def command(url: str, load: Load, tmp: Path) -> list[str]:
        args = [
            binary, "profile", "--model", MODEL, "--tokenizer", str(tokenizer),
            "--url", url, "--endpoint-type", "chat", "--streaming",
            "--request-count", str(load.requests), "--concurrency", str(load.concurrency),
            "--synthetic-input-tokens-mean", str(load.input_len),
            "--synthetic-input-tokens-stddev", "0",
            "--output-tokens-mean", str(load.output_len), "--output-tokens-stddev", "0",
            "--random-seed", "0", "--artifact-dir", str(tmp / "aiperf"), "--ui-type", "none",
            "--no-gpu-telemetry",  # no GPU here: it would only poll DCGM ports that are closed
        ]  # fmt: skip
        if load.rate:
            args += ["--request-rate", str(load.rate)]
        return args

    return command


def guidellm_command(binary: str, tokenizer: Path) -> Command:
    def command(url: str, load: Load, tmp: Path) -> list[str]:
        profile = (
            f"kind=poisson,rate={load.rate:g},max_concurrency={load.concurrency}"
            if load.rate
            else f"kind=concurrent,streams={load.concurrency}"
        )
        return [
            binary, "run", "--backend", f"kind=openai_http,target={url},model={MODEL}",
            "--profile", profile, "--constraint", f"kind=max_requests,count={load.requests}",
            "--tokenizer", f"kind=hf_auto,model={tokenizer}",
            "--data", f"kind=synthetic_text,prompt_tokens={load.input_len},"
            f"output_tokens={load.output_len}",
            "--output", f"kind=json,path={tmp / 'guidellm.json'}", "--disable-progress",
        ]  # fmt: skip

    return command


TOKENIZER_SCRIPT = """
import json, pathlib, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
out, words = sys.argv[1], open(sys.argv[2]).read().split()
try:  # aiperf cuts its prompts out of this corpus
    import aiperf
    corpus = pathlib.Path(aiperf.__file__).parent / "dataset/generator/assets/shakespeare.txt"
    words += corpus.read_text().split()
except ImportError:
    pass
try:  # guidellm writes its prompts with Faker
    from faker import Faker
    fake = Faker()
    fake.seed_instance(0)
    words += " ".join(fake.text(max_nb_chars=2000) for _ in range(3000)).split()
except ImportError:
    pass
tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##")  # joins the words with spaces
trainer = trainers.WordLevelTrainer(vocab_size=10**7, special_tokens=["[UNK]"])
tok.train_from_iterator([words], trainer)
tok.save(out + "/tokenizer.json")
config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"}
json.dump({**config, "model_max_length": 10**6}, open(out + "/tokenizer_config.json", "w"))
json.dump({"model_type": "llama"}, open(out + "/config.json", "w"))
"""


def make_tokenizer(client_bin: str, folder: Path) -> Path:
    """A word-level tokenizer in the Hugging Face layout, made with the client's own Python
    (its venv has `tokenizers`): one whitespace-separated word is one token, as in bench's
    prompts, over bench's words and the words the client writes its prompts with (aiperf's
    Shakespeare corpus, guidellm's Faker text), so no prompt is made of unknown tokens."""
    from notes_cli.bench.prompts import WORDS

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "words.txt").write_text(" ".join(WORDS))
    python = str(Path(client_bin).parent / "python")
    subprocess.run(
        [python, "-c", TOKENIZER_SCRIPT, str(folder), str(folder / "words.txt")],
        check=True, timeout=300,
    )  # fmt: skip
    return folder


# ---- the report ------------------------------------------------------------------------------


def per_request_ms(run: Run) -> float:
    return run.cpu_s * 1000 / max(1, run.requests)


def net_ms(run: Run, startup: Run) -> float:
    return (run.cpu_s - startup.cpu_s) * 1000 / max(1, run.requests - startup.requests)


def per_token_us(run: Run, startup: Run) -> float:
    tokens = max(1, run.output_tokens - startup.output_tokens)
    return (run.cpu_s - startup.cpu_s) * 1e6 / tokens


def spread(values: list[float], digits: int = 3) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (
        f"{statistics.median(values):.{digits}f} "
        f"[{min(values):.{digits}f}-{max(values):.{digits}f}]"
    )


def side_by_side(args: argparse.Namespace, pin: bool) -> dict[str, Tally]:
    engine_cpu, client_cpu = cpus_to_pin(pin)
    load = Load(args.requests, args.rate, args.concurrency)
    startup_load = Load(args.startup_requests, args.rate, args.concurrency)
    work = Path(tempfile.mkdtemp(prefix="bench-clients-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    clients: dict[str, tuple[Command, dict[str, str]]] = {
        "bench": (bench_command(records=True), env),
        "bench, no --records": (bench_command(records=False), env),
    }
    if args.baseline:
        tree = work / f"bench@{args.baseline}"
        tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        clients[f"bench@{args.baseline}"] = (
            bench_command(records=False),
            {**os.environ, "PYTHONPATH": str(tree)},
        )
    # The clients' own configuration and caches stay in the run's folder. (Not HF_HUB_OFFLINE:
    # aiperf then looks a local tokenizer folder up in the Hub's cache and fails.)
    quiet = {**os.environ, "HOME": str(work / "home")}
    if args.aiperf:
        tokenizer = make_tokenizer(args.aiperf, work / "tok-aiperf")
        clients["aiperf"] = (aiperf_command(args.aiperf, tokenizer), quiet)
    if args.guidellm:
        tokenizer = make_tokenizer(args.guidellm, work / "tok-guidellm")
        clients["guidellm"] = (guidellm_command(args.guidellm, tokenizer), quiet)
    tallies = {name: Tally() for name in clients}
    try:
        for round_ in range(args.repeat):
            for name, (command, client_env) in clients.items():
                for sized, target in ((load, "runs"), (startup_load, "startups")):
                    tmp = Path(tempfile.mkdtemp(dir=work))
                    with engine(args.speed, engine_cpu, args.full_answers) as served:
                        url = f"http://127.0.0.1:{served[0]}"
                        run = measure(
                            command(url, sized, tmp), client_env, served, client_cpu,
                            tmp / "stderr.log",
                        )  # fmt: skip
                    getattr(tallies[name], target).append(run)
                    print(
                        f"round {round_ + 1} {name} ({target}): {run.requests} requests, "
                        f"{run.output_tokens} output tokens, {run.cpu_s:.3f} s CPU, "
                        f"{run.wall_s:.1f} s",
                        file=sys.stderr,
                    )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return tallies


def report_side_by_side(tallies: dict[str, Tally]) -> None:
    """Net CPU per request, and per output token: the clients' prompts differ, so the engine's
    answers (ended by its own stop, not only by max_tokens) can differ in length too."""
    print(
        "| client | requests served | output tokens / request | CPU / request, start-up "
        "included | start-up CPU | CPU / request, net | net, x bench | net CPU / output "
        "token | per token, x bench |\n|---|---|---|---|---|---|---|---|---|"
    )
    bench = tallies["bench"]
    bench_net = [net_ms(r, s) for r, s in zip(bench.runs, bench.startups, strict=True)]
    bench_token = [per_token_us(r, s) for r, s in zip(bench.runs, bench.startups, strict=True)]
    for name, tally in tallies.items():
        nets = [net_ms(r, s) for r, s in zip(tally.runs, tally.startups, strict=True)]
        per_token = [per_token_us(r, s) for r, s in zip(tally.runs, tally.startups, strict=True)]
        ratios = [n / b for n, b in zip(nets, bench_net, strict=True)]
        token_ratios = [n / b for n, b in zip(per_token, bench_token, strict=True)]
        tokens = [r.output_tokens / max(1, r.requests) for r in tally.runs]
        print(
            f"| {name} | {spread([float(r.requests) for r in tally.runs], 0)} | "
            f"{spread(tokens, 1)} | {spread([per_request_ms(r) for r in tally.runs])} ms | "
            f"{spread([s.cpu_s for s in tally.startups], 2)} s | {spread(nets)} ms | "
            f"{spread(ratios, 2)} | {spread(per_token, 1)} µs | {spread(token_ratios, 2)} |"
        )


def sweep_runs(args: argparse.Namespace, pin: bool) -> tuple[list[Run], list[list[Run]], list[Run]]:
    """Per round: the sweep, the four one-point runs, and a 1-request start-up run."""
    engine_cpu, client_cpu = cpus_to_pin(pin)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    sweeps: list[Run] = []
    singles: list[list[Run]] = []
    startups: list[Run] = []
    levels = ",".join(str(level) for level in SWEEP_LEVELS)
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as work:
        tmp = Path(work)
        for round_ in range(args.repeat):
            with engine(args.sweep_speed, engine_cpu) as served:
                port = served[0]
                base = [
                    sys.executable, "-m", "notes_cli", "bench",
                    "--base-url", f"http://127.0.0.1:{port}/v1", "--timeout", "120", "--json",
                ]  # fmt: skip
                n = str(args.sweep_requests)
                sweep = base + ["-n", n, "--concurrency", levels]
                sweep += ["--records", str(tmp / "sweep.jsonl")]
                sweeps.append(measure(sweep, env, served, client_cpu, tmp / "sweep.log"))
                points = []
                for level in SWEEP_LEVELS:
                    one = base + ["-n", n, "--concurrency", str(level)]
                    one += ["--records", str(tmp / f"c{level}.jsonl")]
                    points.append(measure(one, env, served, client_cpu, tmp / "one.log"))
                singles.append(points)
                startup = base + ["-n", "1", "--concurrency", "1"]
                startups.append(measure(startup, env, served, client_cpu, tmp / "s.log"))
            print(
                f"round {round_ + 1} sweep: {sweeps[-1].cpu_s:.2f} s CPU; one by one: "
                f"{sum(p.cpu_s for p in points):.2f} s",
                file=sys.stderr,
            )
    return sweeps, singles, startups


def report_sweep(sweeps: list[Run], singles: list[list[Run]], startups: list[Run]) -> None:
    raw_sweep, raw_singles, net_sweep, net_singles, ratios = [], [], [], [], []
    for sweep, points, startup in zip(sweeps, singles, startups, strict=True):
        requests = sum(p.requests for p in points)
        raw_sweep.append(sweep.cpu_s * 1000 / sweep.requests)
        raw_singles.append(sum(p.cpu_s for p in points) * 1000 / requests)
        net_s = (sweep.cpu_s - startup.cpu_s) * 1000 / sweep.requests
        net_1 = (sum(p.cpu_s for p in points) - len(points) * startup.cpu_s) * 1000 / requests
        net_sweep.append(net_s)
        net_singles.append(net_1)
        ratios.append(net_s / net_1)
    print(
        "| | CPU / request, start-up included | CPU / request, net of start-up |\n"
        "|---|---|---|\n"
        f"| one sweep process (`--concurrency 1,4,16,64`) | {spread(raw_sweep)} ms | "
        f"{spread(net_sweep)} ms |\n"
        f"| four processes, one point each | {spread(raw_singles)} ms | "
        f"{spread(net_singles)} ms |\n"
        f"| sweep / one by one | | {spread(ratios, 2)} |\n\n"
        f"start-up (a 1-request run): {spread([s.cpu_s for s in startups], 2)} s CPU; "
        f"requests per run: {sweeps[0].requests} (sweep), "
        f"{', '.join(str(p.requests) for p in singles[0])} (one by one)"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0, help="req/s; 0: closed loop")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--speed", type=float, default=1.0, help="the engine's --speed")
    parser.add_argument("--startup-requests", type=int, default=5)
    parser.add_argument("--baseline", default="a9e2b76", help="commit to compare ('' to skip)")
    parser.add_argument(
        "--aiperf", help="the aiperf executable (e.g. /work/venvs/aiperf/bin/aiperf)"
    )
    parser.add_argument("--guidellm", help="the guidellm executable")
    parser.add_argument("--sweep-requests", type=int, default=200, help="per point; 0: skip")
    parser.add_argument("--sweep-speed", type=float, default=10.0)
    parser.add_argument("--skip-clients", action="store_true", help="only the sweep part")
    parser.add_argument(
        "--full-answers",
        action="store_true",
        help="every answer runs to max_tokens (the engine's --fault no-stop): equal lengths",
    )
    parser.add_argument("--keep", action="store_true", help="keep the clients' output folder")
    parser.add_argument("--no-pin", action="store_true", help="let the kernel place processes")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    pin = not args.no_pin
    become_subreaper()
    # SIGTERM unwinds like Ctrl-C, so the engine and the client (own sessions) are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    placement = "pinned to two CPUs" if cpus_to_pin(pin)[0] is not None else "unpinned"
    print(
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, Python "
        f"{platform.python_version()}; engine and client {placement}; {args.repeat} rounds\n"
        f"command: python3 benchmarks/bench_client/clients.py {' '.join(sys.argv[1:])}\n"
    )
    if not args.skip_clients:
        print(
            f"{args.requests} requests, Poisson {args.rate:g} req/s, at most "
            f"{args.concurrency} in flight, 128 in / 64 out, engine --speed {args.speed:g}"
            f"{' --fault no-stop' if args.full_answers else ''}\n"
        )
        report_side_by_side(side_by_side(args, pin))
        print()
    if args.sweep_requests:
        print(
            f"sweep: {args.sweep_requests} requests per point, closed loop, engine "
            f"--speed {args.sweep_speed:g}\n"
        )
        report_sweep(*sweep_runs(args, pin))


if __name__ == "__main__":
    main()
