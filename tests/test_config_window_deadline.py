"""`config codex --context-window gateway` reads the gateway's `GET /models` within one overall
deadline (issue 36): each read was bounded, the whole answer was not, so a gateway that
trickles its model list a byte at a time held the command for as long as it kept sending."""

from __future__ import annotations

import asyncio
import contextlib
import json

from bridge_support import asyncio_upstream


async def _dripping_models(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    body = json.dumps({"data": [{"id": "m-1", "context_length": 4096}]}).encode()
    body += b" " * 4000
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
    writer.write(b"content-length: %d\r\n\r\n" % len(body))
    with contextlib.suppress(ConnectionError):
        for byte in body[:400]:  # a byte every 50 ms: 20 s, then it hangs up (bounded)
            writer.write(bytes([byte]))
            await writer.drain()
            with contextlib.suppress(TimeoutError):
                if not await asyncio.wait_for(reader.read(1), 0.05):
                    break  # the client hung up
    writer.close()


def test_a_trickled_model_list_ends_at_the_deadline_with_a_clear_message(
    cli, isolated_home
) -> None:
    with asyncio_upstream(_dripping_models, lifetime_s=40) as url:
        result = cli(
            "config", "codex", "--base-url", url + "/v1", "--model", "m-1", "--provider", "gw",
            "--context-window", "gateway",
        )  # fmt: skip
    assert result.exit_code == 2, result.stdout
    assert "cannot read the model list" in result.stderr
    assert "10 s" in result.stderr  # the deadline, named (not a connection that broke off)
    assert not (isolated_home / ".codex" / "config.toml").exists()  # nothing written
