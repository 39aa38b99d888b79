"""bench samples the server's Prometheus /metrics during a run: the bundled engine's gauges,
llama.cpp's cache counters, and a server without metrics, which costs the run nothing."""

from __future__ import annotations

from loopback import LoopbackServer, Received, Reply
from test_bench_prompts_records import llama_like

LLAMA_METRICS = """# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total {prompt}
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache
# TYPE llamacpp:prompt_tokens_cached_total counter
llamacpp:prompt_tokens_cached_total {cached}
# HELP llamacpp:requests_processing Number of requests processing
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing {running}
# HELP llamacpp:requests_deferred Number of requests deferred
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
"""


def test_the_bundled_engines_queue_running_and_kv_gauges_are_reported(
    cli, start_engine_server
) -> None:
    engine = start_engine_server()
    args = ("-n", "6", "-c", "3", "--input-len", "64", "--output-len", "8", "--json")
    result = cli("bench", "--base-url", engine.base_url, *args)
    assert result.exit_code == 0, result.stderr
    metrics = result.json()["server_metrics"]
    assert metrics["url"] == engine.base_url.rsplit("/api", 1)[0] + "/metrics"
    assert metrics["samples"] >= 2 and metrics["failed_scrapes"] == 0
    assert set(metrics) >= {"waiting", "running", "kv_usage"}
    assert 0 <= metrics["kv_usage"]["mean"] <= metrics["kv_usage"]["max"] <= 1


def llama_with_metrics() -> LoopbackServer:
    """A llama.cpp-like server whose cache counters grow by 300 processed and 100 cached
    prompt tokens between its first scrape and every later one."""
    scrapes: list[int] = []

    def handler(request: Received) -> Reply:
        if request.path == "/metrics":
            scrapes.append(1)
            n = 0 if len(scrapes) == 1 else 1
            text = LLAMA_METRICS.format(prompt=1000 + 300 * n, cached=50 + 100 * n, running=n)
            return Reply(200, {"content-type": "text/plain"}, [text.encode()])
        return Reply.sse(llama_like(1.5, 30, 10))

    return LoopbackServer(handler)


def test_llama_cpp_cache_counters_give_the_hit_rate_over_the_run(cli) -> None:
    with llama_with_metrics() as server:
        result = cli("bench", "--base-url", server.url + "/v1", "--model", "m", "-n", "2")
    with llama_with_metrics() as server:
        doc = cli("bench", "--base-url", server.url + "/v1", "--model", "m", "-n", "2", "--json")
    assert result.exit_code == 0, result.stderr
    assert "prefix-cache hit rate 25.0%" in result.stdout
    metrics = doc.json()["server_metrics"]
    assert metrics["cache_hit_rate"] == 0.25
    assert metrics["running"]["max"] == 1.0


def test_a_server_without_metrics_still_gets_its_report(cli) -> None:
    def handler(request: Received) -> Reply:
        if request.path == "/metrics":
            return Reply(404, {"content-type": "text/plain"}, [b"not found"])
        return Reply.sse(llama_like(1.5, 30, 10))

    with LoopbackServer(handler) as server:
        result = cli("bench", "--base-url", server.url + "/v1", "--model", "m", "-n", "3", "--json")
        off = cli("bench", "--base-url", server.url + "/v1", "--model", "m", "-n", "1")
        paths = [r.path for r in server.requests]
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["completed"] == 3 and doc["server_metrics"] is None
    assert "404" in doc["server_metrics_error"]
    assert paths.count("/metrics") == 2  # one failed scrape per run, no retries during it
    assert off.exit_code == 0 and "server metrics: none" in off.stdout


def test_an_anthropic_messages_target_gets_the_same_report(cli, start_engine_server) -> None:
    engine = start_engine_server()
    base = engine.base_url + "/anthropic"
    args = ("--api", "anthropic", "-n", "4", "-c", "2", "--output-len", "6", "--json")
    result = cli("bench", "--base-url", base, *args)
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["target"]["api"] == "anthropic" and doc["completed"] == 4
    assert doc["tokens_source"] == {"usage": 4, "counted": 0}
    assert doc["metrics"]["itl_ms"]["count"] == 4 * 5
    assert doc["server"]["requests"] == 4  # the engine's pd_timing, read from Messages usage
    assert doc["server_metrics"]["samples"] >= 2
    wrong = cli("bench", "--base-url", base, "--api", "gemini", "-n", "1")
    assert wrong.exit_code == 2 and "anthropic" in wrong.stderr


# A vLLM-like page: labelled gauges, `_total` counters, comments and histogram buckets (most of
# a real page) that the report never reads.
VLLM_PAGE = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 400.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.7e9
vllm:num_requests_waiting_by_reason{reason="capacity"} 9.0
"""
BUCKETS = "".join(
    f'vllm:time_to_first_token_seconds_bucket{{le="{le}",model_name="m"}} {i}.0\n'
    for i, le in enumerate(("0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1.0", "+Inf"))
)


def test_a_scrape_parses_only_the_lines_the_report_reads_and_reads_them_the_same() -> None:
    from notes_cli.bench.server_metrics import READ, parse

    page = VLLM_PAGE + BUCKETS * 40
    whole = parse(page)
    read = parse(page, READ)
    assert read == {name: rows for name, rows in whole.items() if name in READ}
    assert read["vllm:num_requests_waiting"] == [({"engine": "0", "model_name": "m"}, 7.0)]
    assert set(read) == {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
    }  # not `..._waiting_by_reason` (a longer name) nor the buckets


def test_a_metrics_page_over_the_bound_is_refused_and_the_run_still_reported(cli) -> None:
    from notes_cli.bench.server_metrics import MAX_METRICS_BYTES

    huge = (LLAMA_METRICS.format(prompt=1, cached=0, running=0) * 40_000).encode()
    assert len(huge) > MAX_METRICS_BYTES

    def handler(request: Received) -> Reply:
        if request.path == "/metrics":
            return Reply(200, {"content-type": "text/plain"}, [huge])
        return Reply.sse(llama_like(1.5, 30, 10))

    with LoopbackServer(handler) as server:
        result = cli("bench", "--base-url", server.url + "/v1", "--model", "m", "-n", "2", "--json")
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["completed"] == 2 and doc["server_metrics"] is None
    assert "over 4 MiB" in doc["server_metrics_error"], doc["server_metrics_error"]
