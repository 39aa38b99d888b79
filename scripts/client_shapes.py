"""Record the request each real client (Codex CLI, Claude Code, Gemini CLI, Qwen Code, OpenCode
and every client whose folder has a headless module) sends for a turn, as data for doctor's
client-shaped probe and smoke (notes_cli/clients/<client>/shapes/<version>.json).

    PDNOTES_INTEROP_BIN=.interop/node_modules/.bin python scripts/client_shapes.py [CLIENT…]

(CLIENT: any registered client; all of them by default.)

Each client runs once (bounded, in a temp HOME, its own process group) against a recording server
on 127.0.0.1 that answers every turn with a minimal valid stream. The turn request (the POST that
carries the tools) is kept with its headers, after `sanitise`: credentials and connection headers
dropped, ids and the model replaced by placeholders, and every long text (the clients' own
instructions, system prompt and tool descriptions) replaced by `<text: N chars>`, so no client
text and no secret lands in pdnotes. tests/test_interop_client_shapes.py uses `record` to compare
a fresh recording with what the probe sends.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODEL = "shape-model"
PROMPT = "Reply with the single word ok."
CLIENT_TIMEOUT_S = 90.0
LONG_TEXT = 200
DROP_HEADERS = {
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "host",
    "content-length",
    "connection",
    "accept-encoding",
    "transfer-encoding",
}
ID_HEADERS = re.compile(
    r"^(session[-_]id|thread[-_]id|x-client-request-id|x-codex-window-id|"
    r"x-codex-turn-metadata|x-claude-code-session-id|x-stainless-retry-count|"
    r"x-session-id|x-session-affinity)$"
)
ID_FIELDS = {"id", "prompt_cache_key", "user_id", "session_id", "thread_id", "previous_response_id"}


# ------------------------------------------------------------------------------ the server


Reject = Callable[[dict[str, Any]], str | None]
"""A gateway's rule: the error message for a turn body it refuses, None to serve it (the
headers' rule, `reject_headers`, reads the request's headers, names in lower case)."""


class _Recorder(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]]
    reject: Reject | None = None
    reject_headers: Callable[[dict[str, str]], str | None] | None = None

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.requests.append({"path": self.path, "headers": headers, "body": None})
        body = json.dumps(
            {"object": "list", "data": [{"id": MODEL, "object": "model"}],
             "models": [{"name": f"models/{MODEL}"}]}
        )  # fmt: skip
        self._send(200, "application/json", body.encode())

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.requests.append({"path": self.path, "headers": headers, "body": body})
        rules = type(self)
        refused = rules.reject(body) if rules.reject and isinstance(body, dict) else None
        if refused is None and rules.reject_headers is not None:
            refused = rules.reject_headers(headers)
        if refused is not None:
            error = {"error": {"message": refused, "type": "invalid_request_error", "code": None}}
            self._send(400, "application/json", json.dumps(error).encode())
        elif "/messages" in self.path:
            self._send(200, "text/event-stream", _anthropic_stream())
        elif ":streamGenerateContent" in self.path:
            self._send(200, "text/event-stream", _gemini_stream())
        elif self.path.endswith("/chat/completions"):
            self._send(200, "text/event-stream", _chat_stream())
        else:
            self._send(200, "text/event-stream", _responses_stream())

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def _responses_stream() -> bytes:
    item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "ok", "annotations": []}],
    }
    response = {"id": "resp_1", "object": "response", "model": MODEL, "status": "completed"}
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    return _sse(
        [
            ("response.created", {"type": "response.created", "response": response}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
            (
                "response.output_text.delta",
                {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {**response, "output": [item], "usage": usage},
                },
            ),
        ]
    )


def _gemini_stream() -> bytes:
    chunk = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": MODEL,
    }
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "model": {"name": MODEL},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
"""What a Gemini CLI run needs to call the recorder and nothing else (no update check, no
usage statistics, no telemetry)."""


def _chat_stream() -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        data = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
                "choices": [choice]}  # fmt: skip
        return f"data: {json.dumps(data)}\n\n".encode()

    usage = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
             "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                      "total_tokens": 2}}  # fmt: skip
    return (
        chunk({"role": "assistant", "content": "ok"}, None)
        + chunk({}, "stop")
        + f"data: {json.dumps(usage)}\n\n".encode()
        + b"data: [DONE]\n\n"
    )


def _anthropic_stream() -> bytes:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 0},
    }
    return _sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "ok"},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 1},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


@contextlib.contextmanager
def recording_server(
    reject: Reject | None = None,
    reject_headers: Callable[[dict[str, str]], str | None] | None = None,
) -> Any:
    """(base URL, list of recorded requests) of a loopback server answering every turn with a
    minimal valid stream, or 400 when `reject` says so."""
    handler = type(
        "Recorder",
        (_Recorder,),
        {
            "requests": [],
            "reject": staticmethod(reject) if reject else None,
            "reject_headers": staticmethod(reject_headers) if reject_headers else None,
        },
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.requests
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------ the clients


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env={**base, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=CLIENT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def client_version(binary: Path) -> str:
    """`binary --version` (stdout, else stderr: Pi prints it there), in a throwaway HOME: a
    client may unpack itself into its cache on first run (Copilot CLI: 235 MB)."""
    with tempfile.TemporaryDirectory() as home:
        run = _run([str(binary), "--version"], {"HOME": home}, Path(home))
    out = run.stdout if re.search(r"\d+\.\d+\.\d+", run.stdout) else run.stderr
    match = re.search(r"\d+\.\d+\.\d+", out)
    if not match:
        raise SystemExit(f"cannot read the version of {binary}: {out!r}")
    return match.group(0)


def client_command(
    client: str, binary: Path, url: str, home: Path, extra_args: tuple[str, ...] = ()
) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of one non-interactive turn of `client` against the server at `url`, with
    everything it writes under `home`; `extra_args` go right after `exec` / `-p`. A client whose
    folder has a headless module is configured by `pdnotes config` and run as it says."""
    from notes_cli.clients.headless import headless

    runner = headless(client)
    if runner is not None:
        configure_with_pdnotes(client, url, home)
        command = runner.command(binary, home, PROMPT)
        return [*command.argv, *extra_args], command.env
    if client == "codex":
        (home / ".codex").mkdir(exist_ok=True)
        provider = (
            f'model_providers.rec={{name="rec", base_url="{url}/v1", env_key="REC_KEY", '
            "request_max_retries=0, stream_max_retries=0}"
        )
        args = [
            str(binary), "exec", *extra_args, "--skip-git-repo-check", "-m", MODEL,
            "-c", "model_provider=rec", "-c", provider,
            "-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false",
            PROMPT,
        ]  # fmt: skip
        return args, {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "REC_KEY": "rec"}
    if client == "gemini":
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
        args = [str(binary), "-p", PROMPT, *extra_args]
        return args, {
            "HOME": str(home),
            "GEMINI_API_KEY": "rec",
            "GOOGLE_GEMINI_BASE_URL": url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }
    if client == "qwen":
        return [str(binary), "-p", *extra_args, PROMPT], qwen_env(home, f"{url}/v1")
    if client == "opencode":
        return opencode_command(binary, url, home, extra_args)
    args = [str(binary), "-p", *extra_args, "--model", MODEL, PROMPT]
    return args, {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_AUTH_TOKEN": "rec",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def configure_with_pdnotes(client: str, url: str, home: Path) -> None:
    """`pdnotes config CLIENT --preset mock` pointed at the recorder, every file under `home`."""
    from notes_cli.clients import registry

    plugin = registry.get(client)
    assert plugin is not None, client
    base = url if plugin.protocol in ("anthropic", "gemini") else f"{url}/v1"
    args = [sys.executable, "-m", "notes_cli", "config", client, "--preset", "mock"]
    env = {"HOME": str(home), "PDNOTES_HOME": str(home / ".pdnotes"), "PYTHONPATH": str(ROOT)}
    done = _run([*args, "--base-url", base, "--model", MODEL], env, home)
    if done.returncode != 0:
        raise RuntimeError(f"pdnotes config {client} failed: {done.stderr[-2000:]}")


QWEN_QUIET = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "disableAutoUpdate": True, "disableUpdateNag": True},
}
"""Qwen Code settings that keep it from phoning home (usage statistics, telemetry, the update
check), as its settings schema names them."""


def qwen_env(home: Path, base_url: str) -> dict[str, str]:
    """Qwen Code's environment for one turn against `base_url` (settings in `home`/.qwen)."""
    settings = {
        "$version": 4,
        **QWEN_QUIET,
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": MODEL},
        "modelProviders": {"openai": [{"id": MODEL, "baseUrl": base_url, "envKey": "REC_KEY"}]},
    }
    (home / ".qwen").mkdir(exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings), "utf-8")
    return {"HOME": str(home), "QWEN_HOME": str(home / ".qwen"), "REC_KEY": "rec"}


OPENCODE_OFFLINE = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    # OpenCode npm-installs @opencode-ai/plugin into each config folder in the background:
    # offline, against a registry on a closed loopback port, it cannot reach the network.
    "npm_config_offline": "true",
    "npm_config_registry": "http://127.0.0.1:9/",
}
"""What keeps `opencode run` off the network: no update check, no models.dev fetch, no LSP
download, no plugin install, no share links, no reading of ~/.claude."""


def opencode_command(
    binary: Path, url: str, home: Path, extra_args: tuple[str, ...] = ()
) -> tuple[list[str], dict[str, str]]:
    """`opencode run` against `url` with a provider in $XDG_CONFIG_HOME/opencode. The prompt
    goes as separate words: `opencode run` wraps an argument holding a space in quotes."""
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "provider": {
            "rec": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": f"{url}/v1", "apiKey": "{env:REC_KEY}"},
                "models": {MODEL: {"limit": {"context": 32768, "output": 4096}}},
            }
        },
        "model": f"rec/{MODEL}",
    }
    (folder / "opencode.json").write_text(json.dumps(config), "utf-8")
    args = [str(binary), "run", *extra_args, *PROMPT.split()]
    return args, {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "REC_KEY": "rec",
        **OPENCODE_OFFLINE,
    }


def run_client(
    client: str, bin_dir: Path, url: str, extra_args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """One bounded turn of the real `client` against `url`, in a throwaway HOME."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "work").mkdir()
        args, env = client_command(client, bin_dir / client, url, home, extra_args)
        return _run(args, env, home / "work")


def record(
    client: str, bin_dir: Path, extra_args: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]]:
    """(version, raw turn request) of one real run of `client` (codex, claude, gemini, qwen or
    opencode)."""
    version = client_version(bin_dir / client)
    with recording_server() as (url, requests):
        run = run_client(client, bin_dir, url, extra_args)
    turns = [r for r in requests if isinstance(r["body"], dict) and r["body"].get("tools")]
    if client == "qwen":
        turns = turns[:1]  # the turn itself; Qwen Code's memory side-call follows it
    if not turns:
        raise RuntimeError(
            f"{client} {version} sent no turn with tools (exit {run.returncode}): "
            f"{run.stderr[-2000:]}"
        )
    return version, turns[-1]


# ------------------------------------------------------------------------------ sanitising


def sanitise(client: str, version: str, request: dict[str, Any]) -> dict[str, Any]:
    path, _, query = request["path"].partition("?")
    path = path.replace(f"/models/{MODEL}:", "/models/<model>:")  # Gemini: the model is in it
    headers = {
        name: "<id>" if ID_HEADERS.match(name) else value.replace(f"/{MODEL} ", "/<model> ")
        for name, value in sorted(request["headers"].items())
        if name not in DROP_HEADERS
    }
    return {
        "client": client,
        "version": version,
        "recorded_with": "scripts/client_shapes.py (real client against a loopback recorder)",
        "method": "POST",
        "path": path,
        "query": query,
        "headers": headers,
        "body": _stable(_clean(request["body"], ())),
    }


def _stable(body: dict[str, Any]) -> dict[str, Any]:
    """Key order the client does not keep stable (a map in Codex) sorted, for clean diffs."""
    if isinstance(body.get("client_metadata"), dict):
        body["client_metadata"] = dict(sorted(body["client_metadata"].items()))
    return body


def _clean(value: Any, where: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        cleaned = {}
        for key, inner in value.items():
            if key in ID_FIELDS and isinstance(inner, str):
                cleaned[key] = "<id>"
            elif key == "model" and where == ():
                cleaned[key] = "<model>"
            elif where[-1:] == ("client_metadata",) and isinstance(inner, str):
                cleaned[key] = "<id>"
            else:
                cleaned[key] = _clean(inner, (*where, str(key)))
        return cleaned
    if isinstance(value, list):
        return [_clean(v, where) for v in value]
    if isinstance(value, str) and len(value) > LONG_TEXT:
        return f"<text: {len(value)} chars>"
    return value


def main(argv: list[str] | None = None) -> int:
    from notes_cli.clients import registry

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "clients", nargs="*", default=list(registry.names()), choices=registry.names()
    )
    parser.add_argument("--out", type=Path, default=None, help="default: where doctor reads them")
    args = parser.parse_args(argv)

    bin_dir = Path(os.environ.get("PDNOTES_INTEROP_BIN") or ROOT / ".interop/node_modules/.bin")
    for client in args.clients:
        version, request = record(client, bin_dir)
        shape = sanitise(client, version, request)
        plugin = registry.get(client)
        assert plugin is not None, client  # argparse's choices are the registry's
        folder = args.out / client if args.out is not None else plugin.shapes_dir()
        target = folder / f"{version}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(shape, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(f"{client} {version}: {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
