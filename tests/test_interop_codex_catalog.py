"""The real Codex reads the model catalog `pdnotes config codex --model-catalog` writes: the
"Model metadata for X not found" warning is gone, `codex debug models` lists the model with the
window pdnotes wrote, and the request Codex sends carries the same instructions and tools as
with its fallback metadata (the entry changes the metadata, not the prompt). And the Codex data
pdnotes ships is the binary's (scripts/codex_data.py check)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from interop_support import client_binary, codex_overrides, run_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import client_shapes  # noqa: E402
import codex_data  # noqa: E402

pytestmark = pytest.mark.interop
MODEL = "pd-mock-1"
WARNING = f"Model metadata for `{MODEL}` not found"


def configure(cli: Any, home: Path, base_url: str, *extra: str) -> None:
    result = cli("config", "codex", "--preset", "mock", "--base-url", base_url, *extra)
    assert result.exit_code == 0, result.stderr


def codex_exec(home: Path, *extra: str) -> Any:
    workdir = home / "work"
    workdir.mkdir(exist_ok=True)
    args = [str(client_binary("codex")), "exec", "--skip-git-repo-check", "--strict-config"]
    args += [*codex_overrides("pdnotes-mock"), *extra, "say pong"]
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    return run_client(args, env=env, cwd=workdir)


@pytest.fixture(autouse=True)
def _codex_under_test(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`config codex` picks the catalog data of the binary under test (pinned or newest)."""
    monkeypatch.setenv("PDNOTES_CODEX_BIN", str(client_binary("codex")))


def test_the_shipped_codex_data_is_the_binarys() -> None:
    """Schema catalogue, fallback window and the catalog entry's instructions against the
    binary, as `scripts/codex_data.py check` reports them."""
    codex = client_binary("codex")
    assert codex_data.check(codex.parent) == []


@pytest.mark.parametrize("catalog", [False, True], ids=["window-only", "catalog"])
def test_codex_warns_of_the_model_until_pdnotes_catalogues_it(
    cli: Any, isolated_home: Path, engine_server: Any, catalog: bool
) -> None:
    flag = "--model-catalog" if catalog else "--no-model-catalog"
    configure(cli, isolated_home, engine_server.base_url, flag)

    run = codex_exec(isolated_home)

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().lower().rstrip(".!") == "pong"
    assert (WARNING in run.stderr) is not catalog, run.stderr


def test_codex_lists_the_catalogued_model_with_the_window_pdnotes_wrote(
    cli: Any, isolated_home: Path, engine_server: Any
) -> None:
    configure(cli, isolated_home, engine_server.base_url, "--model-catalog")
    codex_home = isolated_home / ".codex"
    config = tomllib.loads((codex_home / "config.toml").read_text(encoding="utf-8"))

    run = run_client(
        [str(client_binary("codex")), "debug", "models"],
        env={"HOME": str(isolated_home), "CODEX_HOME": str(codex_home)},
        cwd=isolated_home,
    )

    first = next(line for line in run.stdout.splitlines() if line.startswith("{"))
    models = {m["slug"]: m for m in json.loads(first)["models"]}
    assert list(models) == [MODEL]
    assert models[MODEL]["context_window"] == config["model_context_window"] == 32768


def recorded_turn(cli: Any, home: Path, *extra: str) -> dict[str, Any]:
    with client_shapes.recording_server() as (url, requests):
        configure(cli, home, url, "--model", client_shapes.MODEL, *extra)
        run = codex_exec(home)
    turns = [r["body"] for r in requests if isinstance(r["body"], dict) and r["body"].get("tools")]
    assert turns, run.stderr
    body: dict[str, Any] = turns[-1]
    return body


def test_the_catalogued_model_gets_the_prompt_and_tools_of_codexs_fallback(
    cli: Any, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same instructions, same tools, same reasoning request: only the metadata changed."""
    fallback = recorded_turn(cli, isolated_home, "--no-model-catalog")
    other_home = tmp_path / "other-home"
    (other_home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("CODEX_HOME", str(other_home / ".codex"))
    monkeypatch.setenv("HOME", str(other_home))
    catalogued = recorded_turn(cli, other_home, "--model-catalog")

    def instructions(body: dict[str, Any]) -> str:
        text: str = body["input"][0]["content"][0]["text"]
        return text

    assert instructions(catalogued) == instructions(fallback)
    assert [t.get("name") for t in catalogued["tools"]] == [
        t.get("name") for t in fallback["tools"]
    ]
    assert catalogued["reasoning"] == fallback["reasoning"]


@pytest.mark.parametrize(
    ("parameters", "reasoning"),
    [(["tools", "reasoning"], {"effort": "medium", "summary": "auto"}), (["tools"], {})],
    ids=["reasons", "does-not-reason"],
)
def test_codex_asks_for_reasoning_as_the_gateway_says_the_model_reasons(
    cli: Any, isolated_home: Path, parameters: list[str], reasoning: dict[str, str]
) -> None:
    """OpenRouter-style `/models` (`supported_parameters`) → the catalog entry → what Codex
    puts in `reasoning`: an effort for a model that reasons, no summary for one that does not
    (its fallback asks every model for `{"summary": "auto"}`)."""
    from loopback import LoopbackServer, Reply, responses_stream

    listing = {"data": [{"id": "m1", "context_length": 65536, "supported_parameters": parameters}]}

    def handler(request: object) -> Reply:
        if getattr(request, "method", "") == "GET":
            return Reply.json(listing)
        return Reply.sse(responses_stream(["pong"]))

    with LoopbackServer(handler) as server:
        written = cli(
            "config", "codex", "--base-url", f"{server.url}/api", "--model", "m1",
            "--provider", "pdnotes-mock", "--context-window", "gateway", "--model-catalog",
        )  # fmt: skip
        assert written.exit_code == 0, written.stderr
        run = codex_exec(isolated_home)
        turns = [r.json() for r in server.requests if r.method == "POST"]

    assert run.returncode == 0, run.stderr
    assert WARNING.replace(MODEL, "m1") not in run.stderr
    assert turns and turns[-1]["reasoning"] == reasoning
