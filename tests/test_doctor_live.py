"""Live doctor probes against respx-mocked gateways: each failure gives the exact finding."""

from __future__ import annotations

import time

import httpx
import pytest
import respx
from loopback import anthropic_stream, chat_stream, responses_stream
from loopback import sse_response as sse

from notes_cli.clients.endpoint import Endpoint
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.live import closest_ids, probe_endpoint

KEY = "sk-SENTINEL0123456789abcdefXYZW"
GW = "https://gw.example"
SOURCE = "/home/u/.codex/config.toml [model_providers.gw]"


def codex(base: str = f"{GW}/api", model: str = "pd-mock-1") -> Endpoint:
    return Endpoint(
        "codex", base, "responses", model=model, key=KEY, key_env="GW_KEY", source=SOURCE
    )


def claude(base: str = f"{GW}/api/anthropic") -> Endpoint:
    return Endpoint(
        "claude",
        base,
        "anthropic",
        model="pd-mock-1",
        key=KEY,
        key_env="ANTHROPIC_AUTH_TOKEN",
        source="/home/u/.claude/settings.json",
    )


MODELS = httpx.Response(200, json={"data": [{"id": "pd-mock-1"}, {"id": "pd-mock-2"}]})


def ids(findings: list[Finding]) -> list[str]:
    return [f.id for f in findings]


@respx.mock
def test_healthy_codex_endpoint_has_no_findings_and_two_probes() -> None:
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    route = respx.post(f"{GW}/api/responses").mock(return_value=sse(responses_stream(["pong"])))
    findings, probes = probe_endpoint(codex())
    assert findings == []
    assert [(p.name, p.method, p.status, p.ok) for p in probes] == [
        ("models", "GET", 200, True),
        ("stream", "POST", 200, True),
    ]
    assert all(p.ms is not None and KEY not in p.url for p in probes)
    body = route.calls.last.request.read()
    assert b'"max_output_tokens": 256' in body  # a budget a reasoning model can finish in


@respx.mock
def test_401_with_openai_error_body_is_auth_rejected() -> None:
    respx.get(f"{GW}/api/models").mock(
        return_value=httpx.Response(
            401, json={"error": {"message": "Invalid token", "code": "invalid_api_key"}}
        )
    )
    findings, probes = probe_endpoint(codex())
    assert ids(findings) == ["auth-rejected"]
    assert "Invalid token" in findings[0].message and "$GW_KEY" in findings[0].fix
    assert len(probes) == 1 and probes[0].status == 401 and not probes[0].ok


@respx.mock
def test_auth_rejected_mentions_the_unset_key() -> None:
    respx.get(f"{GW}/api/models").mock(return_value=httpx.Response(401))
    static = [Finding("env-key-unset", "error", "codex", "GW_KEY is unset", "export GW_KEY=…")]
    findings, _ = probe_endpoint(codex(), static_findings=static)
    assert "no key was sent" in findings[0].message


@respx.mock
def test_v1_doubled_url_where_the_undoubled_one_works() -> None:
    respx.get(f"{GW}/api/v1/models").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/v1/responses").mock(
        return_value=httpx.Response(404, content=b"<html><title>404 Not Found</title></html>")
    )
    respx.post(f"{GW}/api/responses").mock(return_value=sse(responses_stream(["pong"])))
    static = [
        Finding(
            "base-url-v1-suffix",
            "warning",
            "codex",
            "…",
            "…",
            file="/home/u/.codex/config.toml",
            line=7,
        )
    ]
    findings, probes = probe_endpoint(codex(f"{GW}/api/v1"), static_findings=static)
    assert ids(findings) == ["base-url-v1-suffix"]
    finding = findings[0]
    assert finding.severity == "error" and finding.line == 7
    assert finding.fix == f'in {SOURCE} set: base_url = "{GW}/api"'
    assert [p.ok for p in probes] == [False, False, True]


@respx.mock
def test_claude_base_url_ending_in_v1() -> None:
    respx.get(f"{GW}/api/anthropic/v1/v1/models").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/anthropic/v1/v1/messages").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/anthropic/v1/messages").mock(return_value=sse(anthropic_stream(["p"])))
    findings, _ = probe_endpoint(claude(f"{GW}/api/anthropic/v1"))
    assert ids(findings) == ["base-url-v1-suffix"]
    assert "Claude Code adds /v1/messages itself" in findings[0].message
    assert findings[0].fix.endswith(f'"ANTHROPIC_BASE_URL": "{GW}/api/anthropic" (inside "env")')


@respx.mock
def test_missing_v1_that_the_gateway_needs() -> None:
    respx.get(f"{GW}/models").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/responses").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/v1/responses").mock(return_value=sse(responses_stream(["pong"])))
    findings, _ = probe_endpoint(codex(GW))
    assert ids(findings) == ["base-url-v1-missing"]
    assert findings[0].fix.endswith(f'base_url = "{GW}/v1"')


@respx.mock
def test_gateway_without_responses_api() -> None:
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    respx.post(f"{GW}/api/responses").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/v1/responses").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/chat/completions").mock(return_value=sse(chat_stream(["pong"])))
    findings, probes = probe_endpoint(codex())
    assert ids(findings) == ["responses-unsupported"]
    assert probes[-1].name == "chat-completions" and probes[-1].ok


@respx.mock
def test_404_everywhere_is_path_not_found() -> None:
    respx.get(f"{GW}/api/models").mock(return_value=httpx.Response(404))
    respx.post(url__startswith=GW).mock(return_value=httpx.Response(404))
    findings, _ = probe_endpoint(codex())
    assert ids(findings) == ["path-not-found"]
    assert SOURCE in findings[0].fix


@respx.mock
def test_404_json_model_not_found_suggests_closest_ids() -> None:
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    respx.post(f"{GW}/api/responses").mock(
        return_value=httpx.Response(
            404,
            json={
                "error": {
                    "message": "The model `PD_Mock-1` does not exist",
                    "code": "model_not_found",
                }
            },
        )
    )
    findings, _ = probe_endpoint(codex(model="PD_Mock-1"))
    assert ids(findings) == ["model-unknown"]
    assert findings[0].fix.startswith('in /home/u/.codex/config.toml set: model = "pd-mock-1"')
    assert "closest served ids: pd-mock-1, pd-mock-2" in findings[0].fix


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (httpx.Response(429, headers={"retry-after": "30"}), "rate limited (it asks for 30 s)"),
        (httpx.Response(500, json={"error": {"message": "boom"}}), "the gateway or its upstream"),
        (sse(responses_stream(["half"], completed=False)), "cut the answer off"),
    ],
)
@respx.mock
def test_other_failures_of_the_test_turn(response: httpx.Response, expected: str) -> None:
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    respx.post(f"{GW}/api/responses").mock(return_value=response)
    findings, _ = probe_endpoint(codex())
    assert ids(findings) == ["probe-failed"] and expected in findings[0].fix


@respx.mock
def test_connection_refused_is_unreachable_and_stops_probing() -> None:
    respx.get(f"{GW}/api/models").mock(side_effect=httpx.ConnectError("Connection refused"))
    stream = respx.post(f"{GW}/api/responses")
    findings, probes = probe_endpoint(codex())
    assert ids(findings) == ["unreachable"] and not stream.called and len(probes) == 1


@respx.mock
def test_server_that_never_sends_headers_is_no_response() -> None:
    respx.get(f"{GW}/api/models").mock(side_effect=httpx.ReadTimeout("timed out"))
    findings, _ = probe_endpoint(codex())
    assert ids(findings) == ["no-response"] and "no response headers" in findings[0].message


@respx.mock
def test_stalled_stream_is_reported() -> None:
    class Stalls(httpx.SyncByteStream):
        def __iter__(self):  # type: ignore[no-untyped-def]
            yield responses_stream(["a"])[1]
            raise httpx.ReadTimeout("timed out")

    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    respx.post(f"{GW}/api/responses").mock(
        return_value=httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Stalls()
        )
    )
    findings, _ = probe_endpoint(codex())
    assert ids(findings) == ["stream-never-finished"] and "went silent" in findings[0].message


def test_hanging_variants_cost_at_most_three_timeouts() -> None:
    from loopback import LoopbackServer, Reply

    def handler(request: object) -> Reply:
        path = getattr(request, "path", "")
        if path.endswith("/v1/responses") or path.endswith("/chat/completions"):
            return Reply(hold_headers=30)  # every variant hangs
        return Reply(404)

    with LoopbackServer(handler) as server:
        start = time.monotonic()
        findings, probes = probe_endpoint(codex(f"{server.url}/api"), timeout=0.4)
        elapsed = time.monotonic() - start
    assert ids(findings) == ["path-not-found"]
    assert [p.name for p in probes][:2] == ["models", "stream"]
    # The budget (3 timeouts) plus each probe's own overhead, taken from the slowest probe that
    # got an answer (a 404: a few ms on a quiet machine, a few hundred under CPU load), and 0.5 s.
    answered_s = max(p.ms for p in probes if p.status is not None) / 1000
    assert elapsed < 3 * 0.4 + len(probes) * answered_s + 0.5


def test_closest_ids_ignore_case_and_hyphens() -> None:
    served = ["deepseek-v3", "DeepSeek-R1", "qwen2.5-72b"]
    assert closest_ids("DEEPSEEK_R1", served)[0] == "DeepSeek-R1"
    assert closest_ids("qwen25-72b", served)[0] == "qwen2.5-72b"
    assert closest_ids("llama", served) == []


def test_no_key_in_findings_or_probes() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "bad"}})

    findings, probes = probe_endpoint(codex(), transport=httpx.MockTransport(refuse))
    dumped = repr([f.to_json() for f in findings]) + repr([p.to_json() for p in probes])
    assert KEY not in dumped


@respx.mock
def test_doubled_v1_and_a_miscased_model_are_both_reported() -> None:
    respx.get(f"{GW}/api/v1/models").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/v1/responses").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/responses").mock(
        return_value=httpx.Response(
            404,
            json={
                "error": {
                    "message": "The model `PD-Mock-1` does not exist",
                    "code": "model_not_found",
                }
            },
        )
    )
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    findings, probes = probe_endpoint(codex(f"{GW}/api/v1", model="PD-Mock-1"))
    assert ids(findings) == ["base-url-v1-suffix", "model-unknown"]
    assert "exists (it answered 404)" in findings[0].message
    assert '"pd-mock-1"' in findings[1].fix
    assert probes[-1].name == "models (without /v1)" and probes[-1].ok


@respx.mock
def test_doubled_v1_and_a_rejected_key_are_both_reported() -> None:
    respx.get(f"{GW}/api/v1/models").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/v1/responses").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/responses").mock(return_value=httpx.Response(401))
    respx.get(f"{GW}/api/models").mock(return_value=httpx.Response(401))
    findings, _ = probe_endpoint(codex(f"{GW}/api/v1"))
    assert ids(findings) == ["base-url-v1-suffix", "auth-rejected"]


@respx.mock
def test_responses_stream_codex_cannot_show_is_reported() -> None:
    from loopback import sse_event

    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    respx.post(f"{GW}/api/responses").mock(
        return_value=sse(
            [
                sse_event({"type": "response.output_text.delta", "delta": "pong"}),
                sse_event({"type": "response.completed", "response": {"status": "completed"}}),
            ]
        )
    )
    findings, probes = probe_endpoint(codex())
    assert ids(findings) == ["probe-failed"] and probes[-1].ok
    assert "response.output_item.done" in findings[0].fix


def test_unreachable_names_the_proxy_that_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused")

    findings, _ = probe_endpoint(codex(), transport=httpx.MockTransport(refused))
    assert ids(findings) == ["unreachable"]
    assert "through the proxy http://proxy.corp:3128" in findings[0].fix
    monkeypatch.setenv("NO_PROXY", "gw.example")
    findings, _ = probe_endpoint(codex(), transport=httpx.MockTransport(refused))
    assert "through the proxy" not in findings[0].fix


@respx.mock
def test_responses_unsupported_gives_the_exact_bridge_commands() -> None:
    respx.get(f"{GW}/api/models").mock(return_value=MODELS)
    respx.post(f"{GW}/api/responses").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/v1/responses").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/api/chat/completions").mock(return_value=sse(chat_stream(["pong"])))
    findings, _ = probe_endpoint(codex())
    assert ids(findings) == ["responses-unsupported"]
    assert (
        f"pdnotes config codex --bridge --base-url {GW}/api --env-key GW_KEY --model pd-mock-1 "
        "&& pdnotes bridge serve"
    ) in findings[0].fix


@respx.mock
def test_claude_on_a_chat_only_gateway_is_messages_unsupported() -> None:
    respx.get(f"{GW}/v1/models").mock(return_value=MODELS)
    respx.post(url__startswith=f"{GW}/v1/messages").mock(return_value=httpx.Response(404))
    respx.post(f"{GW}/v1/chat/completions").mock(return_value=sse(chat_stream(["pong"])))
    findings, _ = probe_endpoint(claude(GW))
    assert ids(findings) == ["messages-unsupported"]
    assert f"pdnotes config claude --bridge --base-url {GW}/v1" in findings[0].fix
    assert "--token-env ANTHROPIC_AUTH_TOKEN" in findings[0].fix


BRIDGE = "http://127.0.0.1:8787"


def _via_bridge() -> Endpoint:
    return Endpoint("codex", f"{BRIDGE}/v1", "responses", model="m", source=SOURCE)


@respx.mock
def test_a_bridge_that_is_not_running_says_how_to_start_it() -> None:
    respx.get(f"{BRIDGE}/v1/models").mock(side_effect=httpx.ConnectError("refused"))
    findings, _ = probe_endpoint(_via_bridge())
    assert ids(findings) == ["bridge-not-running"]
    assert "pdnotes bridge serve" in findings[0].fix


@respx.mock
def test_a_bridge_whose_upstream_is_down_names_the_upstream() -> None:
    said = "upstream http://gpu-box:23333/v1: cannot connect to http://gpu-box:23333/v1/models"
    respx.get(f"{BRIDGE}/v1/models").mock(
        return_value=httpx.Response(502, json={"error": {"message": said, "type": "api_error"}})
    )
    findings, _ = probe_endpoint(_via_bridge())
    assert ids(findings) == ["bridge-upstream-failed"]
    assert "gpu-box:23333" in findings[0].message


@respx.mock
def test_findings_mask_the_key_the_probes_sent_even_when_it_is_not_key_shaped() -> None:
    # a vLLM started with `--api-key token-abc123` (its docs' example) whose model list, by a
    # misconfiguration, lists the key: the finding quotes the served ids
    key = "token-abc123"
    served = httpx.Response(200, json={"data": [{"id": key}, {"id": "other"}]})
    respx.get(f"{GW}/api/models").mock(return_value=served)
    respx.post(f"{GW}/api/responses").mock(
        return_value=httpx.Response(404, json={"error": {"code": "model_not_found"}})
    )
    endpoint = Endpoint("codex", f"{GW}/api", "responses", model="m", key=key, key_env="GW_KEY")
    findings, _ = probe_endpoint(endpoint)
    shown = " ".join(f.message + f.fix for f in findings)
    assert findings and key not in shown, shown
    assert "other" in shown  # the rest of what helps stays


@respx.mock
def test_a_minimal_turn_that_gets_no_answer_leaves_the_clients_own_error_standing() -> None:
    """Issue 35 (`test_hostile_gateway.py::…[drip-400-claude]` failed once under load): the
    minimal turn that tells a refused body from a refused endpoint runs on the endpoint's
    leftover budget (0.1 s at worst). Whether its answer came in time decided the finding:
    `probe-failed` (the 400 Claude Code got) or `no-response`, though the endpoint had answered.
    The minimal turn getting nothing now proves nothing, and the client's 400 stands."""
    from notes_cli.doctor.client_shape import shape_for

    shape = shape_for("anthropic")
    assert shape is not None and "tools" in shape.body
    error = {"type": "invalid_request_error", "message": "the prompt is too long"}
    refused = httpx.Response(400, json={"error": error})

    def answer(request: httpx.Request) -> httpx.Response:
        if b'"tools"' in request.content:
            return refused  # Claude Code's own request
        raise httpx.ReadTimeout("timed out")  # the minimal turn: no answer within its budget

    respx.get(f"{GW}/api/anthropic/v1/models").mock(return_value=MODELS)
    respx.post(url__startswith=f"{GW}/api/anthropic/v1/messages").mock(side_effect=answer)
    findings, probes = probe_endpoint(claude(), shape=shape)
    assert ids(findings) == ["probe-failed"], findings
    assert "400" in findings[0].message and "the prompt is too long" in findings[0].message
    assert [p.name for p in probes] == ["models", "stream", "stream (minimal)"]


@pytest.mark.parametrize(
    ("events", "finding_id", "said"),
    [
        (chat_stream(["a"] * 256, finish="length"), "model-did-not-stop", "did not stop by itself"),
        (chat_stream(["a"] * 3, finish="stop"), None, ""),
        # the server's own count at the limit while it says `stop` (llama-server's Responses
        # API does so for an answer cut at max_output_tokens)
        (chat_stream(["a"] * 256, finish="stop"), "model-did-not-stop", "natural stop"),
        (chat_stream([]), "answer-empty", "without writing any text"),
        (chat_stream(["a"], finish="content_filter"), "answer-not-completed", "content_filter"),
    ],
)
@respx.mock
def test_doctor_and_smoke_judge_a_returned_turn_the_same_way(
    events: list[bytes], finding_id: str | None, said: str
) -> None:
    """Issue 36: doctor called a cut answer "ok" while smoke failed it. One verdict for both:
    the same id's message is smoke's problem, and its fix smoke's fix."""
    from notes_cli.smoke import run_smoke

    endpoint = Endpoint("qwen", f"{GW}/v1", "chat", model="m", key=KEY, key_env="GW_KEY")
    respx.get(f"{GW}/v1/models").mock(return_value=httpx.Response(200, json={"data": []}))
    respx.post(f"{GW}/v1/chat/completions").mock(side_effect=lambda _: sse(events))
    findings, probes = probe_endpoint(endpoint, timeout=5)
    report = run_smoke(endpoint, n=1, max_tokens=256)

    (run,) = report.runs
    if finding_id is None:
        assert findings == [] and run.ok and report.verdict.ok
        return
    (finding,) = findings
    assert finding.id == finding_id and said in finding.message
    assert probes[-1].ok is (finding.severity != "error")
    assert run.problem == finding.message and run.fix == finding.fix
    assert not report.verdict.ok
    if finding_id == "model-did-not-stop":
        assert "QWEN_CODE_MAX_OUTPUT_TOKENS" in finding.fix  # Qwen Code's own cap
