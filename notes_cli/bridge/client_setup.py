"""`pdnotes config <client> --bridge`: point a client at the local
bridge for an upstream that serves only chat completions (or whose fallbacks the bridge should
try), and record that upstream for `pdnotes bridge serve`.

With `--bridge`, `--base-url` / the client's key option (`Client.key_option`: `--env-key`,
`--token-env`, `--key-env`) / the preset describe the UPSTREAM, as they would without it; the
client file gets the bridge preset's URL on `--bridge-port` instead. The record
(`$PDNOTES_HOME/bridge.json`) and the client file change together or not at all
(`cli.config._write_with_record`); it holds variable names, never keys.
It lives in bridge/ because it writes the bridge's record; clients/ (below) plans the files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from notes_cli.bridge import config as bridge_config
from notes_cli.clients import presets
from notes_cli.clients.model_limits import LimitsFetcher, ModelLimits
from notes_cli.clients.plan import WritePlan
from notes_cli.clients.plugin import BridgeTarget, Client, ConfigRequest
from notes_cli.errors import UsageError
from notes_cli.secrets import check_env_name, mask_url

BRIDGE_PRESET = "bridge"


@dataclass(frozen=True)
class BridgeOptions:
    port: int = bridge_config.DEFAULT_PORT
    api_key_env: str | None = None
    # None: keep the fallbacks recorded for the same upstream; a tuple replaces them
    fallbacks: tuple[bridge_config.Fallback, ...] | None = None

    @classmethod
    def of(
        cls,
        port: int,
        api_key_env: str | None,
        fallbacks: list[str] | None,
        fallback_key_envs: list[str] | None,
    ) -> BridgeOptions:
        """From `--bridge-port`, `--bridge-key-env`, `--bridge-fallback` (repeated) and
        `--bridge-fallback-key-env` (repeated, paired by position)."""
        if fallback_key_envs and not fallbacks:
            raise UsageError(
                "--bridge-fallback-key-env without --bridge-fallback",
                fix="name the fallback too: --bridge-fallback URL --bridge-fallback-key-env NAME",
            )
        if not fallbacks:
            return cls(port, api_key_env)
        paired = bridge_config.pair_upstreams(
            fallbacks,
            fallback_key_envs or [],
            url_flag="--bridge-fallback",
            key_flag="--bridge-fallback-key-env",
        )
        return cls(port, api_key_env, tuple(paired))


def _upstream(
    preset_name: str | None, base_url: str | None, key_env: str | None, model: str | None
) -> tuple[str, str | None, str]:
    preset = presets.load_preset(preset_name) if preset_name else None
    url = base_url or (preset.openai.base_url if preset and preset.openai else None)
    if not url:
        raise UsageError(
            "--bridge needs the upstream: its chat-completions API root",
            fix="pass --base-url https://host/v1 (the URL before /chat/completions) or a --preset",
        )
    key_env = key_env or (preset.openai.env_key if preset and preset.openai else None)
    check_env_name("--env-key", key_env)
    model = model or (preset.model if preset else None)
    if not model:
        raise UsageError(
            "no model id to write",
            fix="pass --model with the id exactly as the upstream serves it",
        )
    return url, key_env, model


def _record(
    url: str, key_env: str | None, model: str, options: BridgeOptions
) -> bridge_config.BridgeConfig:
    check_env_name("--bridge-key-env", options.api_key_env)
    return bridge_config.new_record(
        upstream=url,
        upstream_key_env=key_env,
        port=options.port,
        api_key_env=options.api_key_env,
        model=model,
        fallbacks=options.fallbacks,
    )


def plan_bridged(
    client: Client, request: ConfigRequest, bridge: BridgeOptions
) -> tuple[WritePlan, bridge_config.BridgeConfig]:
    """A client through the bridge: the request's URL, key variable (the client's
    `key_option`) and model describe the upstream; the client file gets the bridge's URL of the
    client's kind, and the upstream's model limits (`_upstream_limits`) for a client that writes
    a window."""
    url, key_env, model = _upstream(
        request["preset"], request["base_url"], request[client.key_option], request["model"]
    )
    record = _record(url, key_env, model, bridge)
    window, fetch = _upstream_limits(
        _Limits(request["preset"], request.context_window, request.fetch_limits),
        url,
        key_env,
        model,
    )
    bridge_url = {
        "v1": record.v1_base_url,
        "anthropic": record.anthropic_base_url,
        "root": record.root_url,
    }[client.bridge_url]
    target = BridgeTarget(bridge_url, model, bridge.api_key_env, BRIDGE_PRESET, window, fetch)
    plan = client.plan(client.via_bridge(request, target))
    return _with_notes(plan, record), record


@dataclass(frozen=True)
class _Limits:
    preset: str | None
    context_window: int | None
    fetch_limits: LimitsFetcher | None


def _upstream_limits(
    options: _Limits, url: str, key_env: str | None, model: str
) -> tuple[int | None, LimitsFetcher | None]:
    """The model's window as the UPSTREAM states it, for a client file that names the bridge:
    `--context-window N`, else the upstream preset's window for its own model, and
    `--context-window gateway` asks the upstream's /models (with the upstream's key), so the
    bridge need not be running while the config is written."""
    preset = presets.load_preset(options.preset) if options.preset else None
    own = preset.openai if preset and model == preset.model else None
    window = options.context_window
    if window is None and own is not None:
        window = own.context_window
    ask = options.fetch_limits
    if ask is None:
        return window, None

    def fetch_upstream(_bridge_url: str, _bridge_key: str | None, name: str) -> ModelLimits:
        return ask(url, key_env, name)

    return window, fetch_upstream


def _with_notes(plan: WritePlan, record: bridge_config.BridgeConfig) -> WritePlan:
    serve = "pdnotes bridge serve"
    notes = (
        f"through the pdnotes bridge at {record.root_url} to "
        f"{mask_url(record.upstream)}/chat/completions",
        *(
            f"then, when it is down or answers 5xx / 429, to {mask_url(f.upstream)} (fallback {n})"
            for n, f in enumerate(record.fallbacks, 1)
        ),
        f"records the upstream in {bridge_config.record_path()}; start the bridge with "
        f"`{serve}` (or keep it running: `pdnotes bridge install`)",
    )
    return replace(plan, notes=plan.notes + notes)
