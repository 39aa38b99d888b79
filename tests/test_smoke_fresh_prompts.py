"""Each smoke run asks its own prompt (issue 36). On a server with a prefix cache (llama.cpp
keeps every prompt it processed) the same prompt three times made runs 2 and 3 cache hits, so
smoke's latency verdict compared a cold run with warm ones. Now each run's prompt starts with a
nonce, and the prompt tokens the server reports it served from its cache are shown. A
llama.cpp-like server with a prompt cache, on a real loopback socket (the real engine's check
is tests/test_real_engine.py's)."""

from __future__ import annotations

from one_slot_llama import MODEL, OneSlotLlama


def _smoke(cli, llama: OneSlotLlama, *extra: str):
    args = ("smoke", "--client", "openai", "--base-url", llama.base_url, "--model", MODEL)
    return cli(*args, "-n", "3", "--max-tokens", "4", "--minimal", *extra)


def test_no_run_is_served_from_the_cache_another_run_filled(cli) -> None:
    with OneSlotLlama() as llama:
        first = _smoke(cli, llama, "--json").json()
        again = _smoke(cli, llama, "--json").json()  # a second smoke: its runs are fresh too
    runs = first["runs"] + again["runs"]
    assert [run["cached_tokens"] for run in runs] == [0] * 6  # the server's own `cache_n`
    prompts = [run["prompt"] for run in runs]
    assert len(set(prompts)) == 6
    # the same question, the same length: only the nonce in front differs
    assert len({p.split(") ", 1)[1] for p in prompts}) == 1
    assert len({len(p) for p in prompts}) == 1


def test_the_runs_table_shows_the_servers_cached_tokens(cli) -> None:
    with OneSlotLlama() as llama:
        result = _smoke(cli, llama)
    header = next(line for line in result.stdout.splitlines() if "TTFT" in line)
    assert "cached" in header.split()
