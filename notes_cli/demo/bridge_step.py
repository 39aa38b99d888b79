"""The demo's bridge step: Codex on a chat-only endpoint. The bundled engine plays a gateway
that serves only chat completions (`--protocols chat`: its /responses is a 404, which is what
Codex would hit), `pdnotes config codex --bridge` points a scratch Codex config at the bridge
in front of it, and a smoke run goes through the bridge the way Codex calls it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from notes_cli.demo.step import CLIENT, ENGINE_PRESET, TITLES, Step

if TYPE_CHECKING:
    from notes_cli.demo.sandbox import Sandbox


def bridge_step(box: Sandbox, speed: float) -> Step:
    from notes_cli.bridge.config import BridgeConfig
    from notes_cli.bridge.server import start_bridge
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    config = EngineConfig(preset=ENGINE_PRESET, speed=speed)
    with start_engine(config, protocols=("chat",)) as engine:
        direct = _responses_status(engine.base_url)
        with start_bridge(BridgeConfig(upstream=engine.base_url, port=0)) as bridge:
            port = bridge.config.port
            written, request_url = _configure(box, engine.base_url, port)
            smoke = _smoke(box)
    ok = direct == 404 and written and smoke["verdict"]["ok"]
    commands = [
        f"pdnotes engine serve --protocols chat --preset {ENGINE_PRESET} --speed {speed:g}",
        f"pdnotes config codex --bridge --base-url {engine.base_url} --model pd-mock-1 "
        f"--bridge-port {port}",
        "pdnotes bridge serve",
        "pdnotes smoke --client codex -n 2",
    ]
    data: dict[str, Any] = {
        "upstream": engine.base_url,
        "upstream_responses_status": direct,
        "bridge_codex_base_url": f"http://127.0.0.1:{port}/v1",
        "request_url": request_url,
        "smoke": smoke,
    }
    return Step("bridge", TITLES["bridge"], ok, commands, data)


def _responses_status(base_url: str) -> int | None:
    """What Codex would get from the chat-only engine directly: the status of /responses."""
    from notes_cli.clients.endpoint import Endpoint
    from notes_cli.gateway import GatewayClient
    from notes_cli.gateway import errors as gw

    endpoint = Endpoint(CLIENT, base_url, "responses", model="pd-mock-1")
    try:
        with GatewayClient(endpoint, timeout=10) as client:
            return client.stream("say pong", max_tokens=8).status
    except gw.HttpStatusError as exc:
        return exc.status
    except gw.GatewayError:
        return None


def _configure(box: Sandbox, upstream: str, port: int) -> tuple[bool, str]:
    from notes_cli.bridge.client_setup import BridgeOptions, plan_bridged
    from notes_cli.bridge.config import save_record
    from notes_cli.clients import registry
    from notes_cli.clients.plan import apply
    from notes_cli.clients.plugin import ConfigRequest, Where

    client = registry.get(CLIENT)
    assert client is not None
    request = ConfigRequest(
        {"base_url": upstream, "model": "pd-mock-1"}, Where({client.name: box.scratch("bridge")})
    )
    plan, record = plan_bridged(client, request, BridgeOptions(port=port))
    result = apply(plan)
    save_record(record)
    return bool(result.written), plan.request_url


def _smoke(box: Sandbox) -> dict[str, Any]:
    from notes_cli.clients.setups import resolve_endpoints
    from notes_cli.smoke import run_smoke

    (endpoint,) = resolve_endpoints(CLIENT, homes={CLIENT: box.scratch("bridge")})
    return run_smoke(endpoint, n=2, timeout=30.0).to_json()
