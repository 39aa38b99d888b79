"""The secrets sweep (issue 11): one sentinel key, placed in every source a key can come from,
through every command, in human and --json output, against a gateway that echoes everything it
received (path, query and every header) in its 401 and 500 bodies. The sentinel must appear in
no output and in no file except the ones that held it before (the user's own literal, and the
0600 backups of it) and the one written on request (--write-token-from-env); every file holding
it is 0600.

The sentinel is a 28-character `tt-…` key without digits: nothing about its shape says "key",
so only masking by position (and scrubbing the key actually sent) can hide it."""

from __future__ import annotations

import base64
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.loopback import LoopbackServer, Received, Reply

SENTINEL = "tt-qwertyuiopasdfghjklzxcvbn"
BASIC = base64.b64encode(f"u:{SENTINEL}".encode()).decode()
"""How the sentinel travels from URL user-info: `Authorization: Basic base64(u:key)`."""
FORBIDDEN = (SENTINEL, BASIC)
MODEL = "pd-mock-1"


class EchoGateway:
    """Answers every request with `status`, quoting the request back: a gateway that puts the
    key it was sent into its error message (seen in the wild on 401s and proxy 500s)."""

    def __init__(self) -> None:
        self.status = 401
        self.server = LoopbackServer(self._answer)

    def _answer(self, request: Received) -> Reply:
        seen = " ".join([request.path, *request.headers.values()])
        if self.status == 401:
            error = {"message": f"invalid key in: {seen}", "type": "authentication_error"}
            return Reply.json({"error": error, "received": seen}, status=401)
        return Reply(500, {"content-type": "text/plain"}, [f"upstream crashed on {seen}".encode()])

    @property
    def base(self) -> str:
        return self.server.url + "/api"

    def sent_the_key(self) -> bool:
        seen = [" ".join([r.path, *r.headers.values()]) for r in self.server.requests]
        return any(secret in text for text in seen for secret in FORBIDDEN)


@dataclass
class Source:
    """One place a key can come from: the files and variables that put it there."""

    client: str  # whose commands use it: codex or claude
    codex: Callable[[str], str] | None = None  # base URL -> config.toml text
    claude: Callable[[str], dict] | None = None  # base URL -> settings.json data
    env: dict[str, str] = field(default_factory=dict)
    write_token: bool = False  # set up with `config claude --write-token-from-env`
    sends_key: bool = True  # pdnotes really sends it (a helper's output is not run)
    bench_url: Callable[[str], str] | None = None  # the URL bench is pointed at


def _codex(extra: str = "", *, base_url: str | None = None) -> Callable[[str], str]:
    def text(base: str) -> str:
        url = base_url.format(base=base, host=base.split("://", 1)[1]) if base_url else base
        return (
            f'model = "{MODEL}"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "gw"\n'
            f'base_url = "{url}"\nwire_api = "responses"\n{extra}\n'
        )

    return text


def _claude(env: dict[str, str] | None = None, **top: str) -> Callable[[str], dict]:
    def data(base: str) -> dict:
        block = {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_MODEL": MODEL, **(env or {})}
        return {**top, "env": {k: v.format(base=base) for k, v in block.items()}}

    return data


def _userinfo(base: str) -> str:
    return base.replace("://", f"://u:{SENTINEL}@")


SOURCES = {
    "env var named by env_key": Source(
        "codex",
        codex=_codex('env_key = "GW_KEY"'),
        env={"GW_KEY": SENTINEL},
        bench_url=lambda base: base,
    ),
    "codex literal bearer token": Source(
        "codex", codex=_codex(f'experimental_bearer_token = "{SENTINEL}"')
    ),
    "http_headers": Source(
        "codex",
        codex=_codex(
            f'http_headers = {{ Authorization = "Bearer {SENTINEL}", "x-api-key" = "{SENTINEL}" }}'
        ),
    ),
    "query_params": Source(
        "codex",
        codex=_codex(f'query_params = {{ key = "{SENTINEL}" }}'),
        bench_url=lambda base: f"{base}?key={SENTINEL}",
    ),
    "env_http_headers holding a token": Source(
        "codex", codex=_codex(f'env_http_headers = {{ "x-api-key" = "{SENTINEL}" }}'),
        sends_key=False,
    ),
    "codex URL user-info": Source(
        "codex",
        codex=_codex(base_url=f"http://u:{SENTINEL}@{{host}}"),
        bench_url=_userinfo,
    ),
    "ANTHROPIC_AUTH_TOKEN in the environment": Source(
        "claude", claude=_claude(), env={"ANTHROPIC_AUTH_TOKEN": SENTINEL}
    ),
    "claude literal token": Source(
        "claude", claude=_claude({"ANTHROPIC_AUTH_TOKEN": SENTINEL})
    ),
    "--write-token-from-env": Source(
        "claude", claude=_claude(), env={"GW_KEY": SENTINEL}, write_token=True
    ),
    "claude URL user-info": Source(
        "claude", claude=_claude({"ANTHROPIC_BASE_URL": f"http://u:{SENTINEL}@{{base}}"})
    ),
    "apiKeyHelper echo": Source(
        "claude", claude=_claude(apiKeyHelper=f"echo {SENTINEL}"), sends_key=False
    ),
    "ANTHROPIC_CUSTOM_HEADERS": Source(
        "claude", claude=_claude({"ANTHROPIC_CUSTOM_HEADERS": f"x-api-key: {SENTINEL}"})
    ),
}  # fmt: skip


def _offline_runs(client: str) -> list[list[str]]:
    rewrite = ["config", client, "--model", "m2"]
    return [
        ["config", "show"],
        ["config", "show", "--json"],
        [*rewrite, "--dry-run"],
        [*rewrite, "--json"],
        ["config", "undo", "--client", client],
    ]


def _live_runs(source: Source, gateway: EchoGateway, status: int) -> list[list[str]]:
    """doctor (its static findings included) and smoke in both formats; notes generate and
    bench in one format per status, to keep the sweep fast."""
    client = source.client
    json_or_not = ["--json"] if status == 500 else []
    runs = [
        ["doctor", "--client", client, "--timeout", "5"],
        ["doctor", "--client", client, "--timeout", "5", "--json"],
        ["smoke", "--client", client, "-n", "1", "--timeout", "5"],
        ["smoke", "--client", client, "-n", "1", "--timeout", "5", "--json"],
        ["notes", "generate", "--client", client, "-o", "note.json", "--no-repair",
         "--timeout", "5", *json_or_not],
    ]  # fmt: skip
    if source.bench_url:
        bench = ["bench", "--base-url", source.bench_url(gateway.base), "--model", MODEL,
                 "-n", "1", "--output-len", "4", "--timeout", "5", *json_or_not]  # fmt: skip
        runs.append([*bench, "--key-env", "GW_KEY"] if source.env else bench)
    return runs


def _seed(source: Source, home: Path, base: str, cli, monkeypatch) -> set[Path]:
    """Put the sentinel where `source` says (files 0600); return the files now holding it."""
    for name, value in source.env.items():
        monkeypatch.setenv(name, value)
    held: set[Path] = set()
    if source.codex:
        path = home / ".codex" / "config.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source.codex(base))
        path.chmod(0o600)
        held.add(path)
    if source.claude:
        path = home / ".claude" / "settings.json"
        path.parent.mkdir(exist_ok=True)
        data = source.claude(base)
        url = data["env"]["ANTHROPIC_BASE_URL"]
        if f"u:{SENTINEL}@" in url:
            data["env"]["ANTHROPIC_BASE_URL"] = _userinfo(base)
        path.write_text(json.dumps(data, indent=2))
        path.chmod(0o600)
        held.add(path)
    if source.write_token:
        result = cli("config", "claude", "--base-url", base, "--model", MODEL,
                     "--write-token-from-env", "GW_KEY", "--json")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        assert SENTINEL not in result.stdout + result.stderr
    return {p for p in held if SENTINEL in p.read_text()} | (
        {home / ".claude" / "settings.json"} if source.write_token else set()
    )


@pytest.mark.parametrize("source_name", list(SOURCES))
def test_the_sentinel_never_leaks(
    source_name: str, cli, isolated_home: Path, tmp_path: Path, monkeypatch
) -> None:
    source = SOURCES[source_name]
    gateway = EchoGateway()
    with gateway.server:
        allowed = _seed(source, isolated_home, gateway.base, cli, monkeypatch)
        runs = [(None, args) for args in _offline_runs(source.client)]
        runs += [(s, args) for s in (401, 500) for args in _live_runs(source, gateway, s)]
        for status, args in runs:
            gateway.status = status or 401
            result = cli(*args)
            shown = result.stdout + result.stderr
            for secret in FORBIDDEN:
                assert secret not in shown, (source_name, status, args, shown)
            assert "Traceback" not in shown, (source_name, args, shown)
            assert result.exit_code in (0, 1, 2), (args, result.exit_code)
            if "--json" in args and result.stdout.strip():
                json.loads(result.stdout)  # one clean document, even on failure
        if source.sends_key:
            assert gateway.sent_the_key(), "the key never travelled: the sweep proved nothing"

    for path in tmp_path.rglob("*"):
        if not path.is_file() or not any(k.encode() in path.read_bytes() for k in FORBIDDEN):
            continue
        is_backup = os.environ["PDNOTES_HOME"] in str(path)
        assert path in allowed or is_backup, f"{path} holds the key but was not asked to"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, f"{path} holds the key and is not 0600"
