"""Other gateways' words for "unknown model" (templates/gateway_errors.toml, each with its
source) are recognised as model-unknown: every example body parses to a model error, the live
probe reports model-unknown instead of probe-failed, and other errors stay what they are."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from notes_cli.clients.endpoint import Endpoint
from notes_cli.gateway._http import parse_error_body
from notes_cli.gateway.errors import HttpStatusError
from notes_cli.gateway.model_errors import model_unknown_gateway, wordings

GW = "https://gw.example"


def error_from(status: int, body: str) -> HttpStatusError:
    message, kind, code = parse_error_body(body.encode("utf-8"))
    return HttpStatusError(
        "x",
        url=f"{GW}/api/responses",
        status=status,
        error_message=message,
        error_type=kind,
        error_code=code,
    )


@pytest.mark.parametrize("wording", wordings(), ids=lambda w: w.gateway)
def test_every_recorded_wording_is_a_model_error(wording) -> None:
    assert wording.source  # each wording says where it comes from
    for status in wording.statuses:
        assert error_from(status, wording.example).is_model_error, wording.example


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (503, '{"error": {"message": "当前分组 default 下对于模型 gpt-4o 无可用渠道"}}'),
        (400, '{"error": "/responses: Invalid model name passed in model=GPT-4O"}'),
    ],
)
def test_variants_of_the_wordings(status: int, body: str) -> None:
    assert error_from(status, body).is_model_error


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (503, '{"error": {"message": "upstream overloaded, try again"}}'),
        (400, '{"error": {"message": "Invalid value: \'namespace\'"}}'),
        (401, '{"error": {"message": "Invalid model name passed in model=x"}}'),  # wrong status
        (503, '{"error": {"message": "数据库一致性已被破坏，请联系管理员"}}'),
    ],
)
def test_other_errors_are_not_model_errors(status: int, body: str) -> None:
    assert not error_from(status, body).is_model_error
    assert model_unknown_gateway(status, parse_error_body(body.encode())[0]) is None


@respx.mock
@pytest.mark.parametrize("wording", wordings(), ids=lambda w: w.gateway)
def test_the_live_probe_reports_model_unknown_in_any_gateways_words(wording) -> None:
    from notes_cli.doctor.live import probe_endpoint

    status = min(wording.statuses)
    respx.get(f"{GW}/api/models").mock(
        return_value=httpx.Response(200, json={"data": [{"id": "gpt-4o-mini"}]})
    )
    respx.post(f"{GW}/api/responses").mock(
        return_value=httpx.Response(
            status,
            content=wording.example.encode("utf-8"),
            headers={"content-type": "application/json"},
        )
    )
    endpoint = Endpoint(
        "codex",
        f"{GW}/api",
        "responses",
        model="gpt-4o",
        key="k",
        key_env="GW_KEY",
        source="config.toml",
    )

    findings, _ = probe_endpoint(endpoint, timeout=5)

    found = [f for f in findings if f.id == "model-unknown"]
    assert found, [f.id for f in findings]
    assert "gpt-4o-mini" in found[0].fix
    assert json.loads(wording.example)  # the examples are real JSON bodies
