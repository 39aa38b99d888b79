"""The registry of doctor finding ids: a public contract (docs/architecture.md). Each entry says
when the finding fires, shows an example and carries the fix template; checks build findings only
through `make`, so every finding has a registered id and a concrete fix. docs/findings.md is
generated from here (`python -m notes_cli.doctor.registry > docs/findings.md`; a test keeps it in
step).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from notes_cli.doctor.findings import Finding, FindingClient, Severity

RegistryClient = Literal["codex", "claude", "env", "any"]


@dataclass(frozen=True)
class Entry:
    id: str
    severity: Severity
    client: RegistryClient
    when: str
    example: str
    fix: str
    """A `str.format` template; the checks pass the fields it names."""
    live: bool = False


_ENTRIES: tuple[Entry, ...] = (
    # -- files ---------------------------------------------------------------------------------
    Entry(
        "config-missing",
        "warning",
        "any",
        "the client's config file does not exist (an error when that client was asked for, or "
        "when neither client is configured)",
        "~/.codex/config.toml: no such file",
        "create it: pdnotes config {tool} --preset <name> (see pdnotes config presets)",
    ),
    Entry(
        "toml-syntax",
        "error",
        "codex",
        "config.toml does not parse (line and column given); Codex refuses to start",
        "config.toml:4:22: unclosed table, expected `]`",
        "fix the TOML at line {line}, column {column} of {file}",
    ),
    Entry(
        "json-syntax",
        "error",
        "claude",
        "a settings file is not strict JSON; Claude Code drops the whole file",
        "settings.json:3:5: trailing comma",
        "fix line {line}, column {column} of {file}: strict JSON, no comments or trailing commas",
    ),
    Entry(
        "file-unreadable",
        "error",
        "any",
        "a config file cannot be read (a folder, binary, huge, or permission denied)",
        "~/.codex/config.toml is a folder, not a file",
        "{detail}",
    ),
    # -- Codex provider ------------------------------------------------------------------------
    Entry(
        "provider-missing",
        "error",
        "codex",
        "`model_provider` names no [model_providers.X] table and no built-in provider",
        'model_provider = "taotoken" without [model_providers.taotoken]',
        "add the provider: pdnotes config codex --preset {provider} (or fix model_provider)",
    ),
    Entry(
        "provider-reserved-id",
        "error",
        "codex",
        "a custom provider uses a reserved built-in id (openai, ollama, lmstudio)",
        "[model_providers.openai]",
        "rename the table and model_provider to another id, e.g. {provider}-custom",
    ),
    Entry(
        "provider-name-empty",
        "error",
        "codex",
        "a provider's `name` is missing or empty; Codex refuses to load the config",
        '[model_providers.gw] without name = "…"',
        'add name = "{provider}" to [model_providers.{provider}]',
    ),
    Entry(
        "unknown-key",
        "warning",
        "codex",
        "a key the Codex release in use does not know (it ignores it, and --strict-config "
        "rejects it); an error when it is a typo of model, model_provider or model_providers, "
        "since Codex then calls its default",
        'model_provder = "gw" (did you mean `model_provider`?)',
        "remove or correct `{key}` in {file}{hint}",
    ),
    Entry(
        "config-type-invalid",
        "error",
        "codex",
        "a known key has a value of the wrong type or shape; Codex refuses to load the file",
        'approval_policy = "granular", model_providers = "gw", [[model_providers]]',
        "make `{key}` {expected} in {file}",
    ),
    Entry(
        "provider-field-invalid",
        "error",
        "codex",
        "a provider field of the right type that Codex still refuses (aws outside "
        "amazon-bedrock, gateway_oauth without exactly one credential source, auth without "
        "command)",
        "[model_providers.gw] aws = {}",
        "{detail}",
    ),
    Entry(
        "wire-api-chat-removed",
        "error",
        "codex",
        'wire_api = "chat" on a Codex that only speaks the Responses API (>= 0.80)',
        'wire_api = "chat" (the source article\'s config)',
        'set wire_api = "responses" in [model_providers.{provider}] '
        "(or run: pdnotes config codex --provider {provider})",
    ),
    Entry(
        "wire-api-invalid",
        "error",
        "codex",
        'wire_api is neither "responses" nor "chat"',
        'wire_api = "completions"',
        'set wire_api = "responses" in [model_providers.{provider}]',
    ),
    Entry(
        "auth-mixed",
        "error",
        "codex",
        "`auth` is combined with env_key, experimental_bearer_token or requires_openai_auth",
        'auth = {command = …} and env_key = "GW_KEY"',
        "keep one credential source in [model_providers.{provider}]",
    ),
    Entry(
        "env-http-header-unset",
        "warning",
        "codex",
        "an env_http_headers variable is unset, so Codex silently omits that header",
        'env_http_headers = {"X-Org" = "GW_ORG"} with GW_ORG unset',
        "export {variable}=…",
    ),
    Entry(
        "retries-too-high",
        "warning",
        "codex",
        "request_max_retries / stream_max_retries above Codex's maximum of 100",
        "request_max_retries = 500",
        "set {key} to 100 or less",
    ),
    # -- Codex top level -----------------------------------------------------------------------
    Entry(
        "profile-legacy",
        "error",
        "codex",
        "top-level `profile = …` (fatal) or [profiles.*] tables (fatal with -p)",
        'profile = "fast"',
        "move the profile to $CODEX_HOME/{profile}.config.toml and use `codex --profile {profile}`",
    ),
    Entry(
        "project-config-untrusted",
        "warning",
        "codex",
        "a project `.codex/config.toml` (project root down to the current folder) that Codex "
        'skips because the user config has no [projects."<root>"] trust_level = "trusted"',
        "~/work/app/.codex/config.toml with ~/work/app untrusted",
        'trust the project in Codex (or add [projects."{project}"] trust_level = "trusted" to '
        "{codex_file}), or move the settings to {codex_file}",
    ),
    Entry(
        "profile-file-missing",
        "warning",
        "codex",
        "`doctor --profile NAME` names a profile whose $CODEX_HOME/NAME.config.toml does not "
        "exist; `codex -p NAME` silently runs without it",
        "codex -p fast without ~/.codex/fast.config.toml",
        "create {file} with the settings of profile {profile}",
    ),
    Entry(
        "approval-untrusted",
        "error",
        "codex",
        'approval_policy = "untrusted", which Codex no longer accepts',
        'approval_policy = "untrusted"',
        'remove approval_policy, or use "on-request"',
    ),
    Entry(
        "enum-value-invalid",
        "error",
        "codex",
        "an enum key (sandbox_mode, approval_policy, model_verbosity, …) has an unknown value",
        'sandbox_mode = "read_only"',
        "use one of: {choices}",
    ),
    Entry(
        "reasoning-effort-invalid",
        "warning",
        "codex",
        "model_reasoning_effort is not a catalogued value; Codex sends it unchecked",
        'model_reasoning_effort = "hgih"',
        "use one of: {choices}",
    ),
    Entry(
        "model-missing",
        "warning",
        "codex",
        "no top-level `model`: Codex asks the gateway for its own default id",
        "config.toml without model = …",
        'add model = "<id from your gateway\'s console>" (pdnotes config codex --model ID)',
    ),
    Entry(
        "anthropic-in-codex",
        "warning",
        "codex",
        "ANTHROPIC_* settings in Codex's config.toml (they belong to Claude Code)",
        'ANTHROPIC_BASE_URL = "https://…" in ~/.codex/config.toml',
        "remove `{key}` from {file}; for Claude Code run: pdnotes config claude --base-url URL",
    ),
    # -- base URL and model (both clients) -----------------------------------------------------
    Entry(
        "base-url-v1-suffix",
        "warning",
        "any",
        "the base URL ends in /v1 but the gateway (or Claude Code, which adds /v1 itself) "
        "does not want it; error when a live probe shows only the URL without /v1 works",
        "https://taotoken.net/api/v1 -> POST /api/v1/responses -> 404",
        "use {suggested}",
    ),
    Entry(
        "base-url-query",
        "error",
        "any",
        "a query string (e.g. ?utm_source=…) in the base URL; the client appends its path after it",
        "https://taotoken.net/api?utm_source=blog -> /api?utm_source=blog/responses",
        "use {suggested}{query_hint}",
    ),
    Entry(
        "base-url-endpoint-suffix",
        "error",
        "any",
        "the base URL already ends in an endpoint path (/chat/completions, /responses, "
        "/v1/messages)",
        "https://gw/api/chat/completions -> /api/chat/completions/responses",
        "use {suggested}",
    ),
    Entry(
        "base-url-no-scheme",
        "error",
        "any",
        "the base URL has no http:// or https://",
        'base_url = "taotoken.net/api"',
        "use https://{url}",
    ),
    Entry(
        "base-url-fragment",
        "error",
        "any",
        "the base URL has a #fragment",
        "https://gw/api#docs",
        "use {suggested}",
    ),
    Entry(
        "model-placeholder",
        "error",
        "any",
        "the model id is a placeholder copied from a guide (YOUR_MODEL_ID, <model>, …)",
        'model = "YOUR_MODEL_ID"',
        "set the model id exactly as your gateway's console shows it (case and hyphens too)",
    ),
    Entry(
        "model-unknown",
        "error",
        "any",
        "the model id is not served; `fix` suggests the closest served ids "
        "(case/hyphen-insensitive). Static (warning) for presets that list their models, "
        "live otherwise",
        'model = "PD-Mock-1" while the engine serves "pd-mock-1"',
        "use {suggested}",
    ),
    Entry(
        "gateway-not-accelerator",
        "info",
        "any",
        "shown with a remote gateway endpoint: a gateway supplies a key and a base URL; it "
        "does not make inference faster",
        "expecting TaoToken to speed up decoding",
        "the gateway supplies a key and a base URL; speed comes from the serving engine "
        "(see `pdnotes engine simulate`)",
    ),
    # -- credentials ---------------------------------------------------------------------------
    Entry(
        "env-key-unset",
        "error",
        "codex",
        "the variable named by env_key is unset or empty in this environment",
        'env_key = "TAOTOKEN_API_KEY" but `echo $TAOTOKEN_API_KEY` prints nothing',
        "export {variable}=<your key> (in the shell that runs codex; check with echo ${variable})",
    ),
    Entry(
        "env-key-looks-like-secret",
        "error",
        "codex",
        "env_key holds what looks like a key instead of a variable name",
        'env_key = "sk-…"',
        "export the key as a variable and set env_key to its NAME, e.g. env_key = "
        '"TAOTOKEN_API_KEY"; then rotate the key, it sits in a file',
    ),
    Entry(
        "key-in-file",
        "warning",
        "any",
        "a literal secret sits in a client config file: a token variable, a bearer token, an "
        "http_headers / ANTHROPIC_CUSTOM_HEADERS value, a query_params value, a token in "
        "env_http_headers, user-info or a key in the base URL, an apiKeyHelper that echoes a "
        "literal (error when git tracks the file, or the symlink's target)",
        '"ANTHROPIC_AUTH_TOKEN": "sk-…" in .claude/settings.json',
        "remove the literal, export the key and read it from the variable: {how}",
    ),
    Entry(
        "claude-credential-missing",
        "error",
        "claude",
        "no ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY or apiKeyHelper: Claude Code says "
        '"Not logged in"',
        "settings.json sets ANTHROPIC_BASE_URL only",
        "export ANTHROPIC_AUTH_TOKEN=<your key>, or pdnotes config claude --token-env NAME",
    ),
    Entry(
        "custom-provider-no-key",
        "warning",
        "codex",
        "the selected custom provider has no env_key (nor token, auth or requires_openai_auth) "
        "while OPENAI_API_KEY is exported: Codex sends no key to the gateway",
        "[model_providers.gw] without env_key, OPENAI_API_KEY=sk-…",
        'add env_key = "OPENAI_API_KEY" (or the gateway\'s own variable) to '
        "[model_providers.{provider}] in {file}",
    ),
    Entry(
        "openai-auth-missing",
        "error",
        "codex",
        "the provider has requires_openai_auth = true and no env_key, but $CODEX_HOME/auth.json "
        "does not exist: Codex sends no Authorization header",
        "[model_providers.gw] requires_openai_auth = true, no auth.json",
        "run `codex login` (writes {auth_json}), or use env_key for a gateway key",
    ),
    Entry(
        "api-key-helper-fails",
        "error",
        "claude",
        "the apiKeyHelper reads an unset variable (`printenv VAR`, `echo $VAR`), or, when run "
        "(user/managed scope, or --run-helpers; 5 s limit, output never shown), does not exit "
        "0 with output: Claude Code sends an empty key",
        "apiKeyHelper = printenv OLD_GATEWAY_KEY, OLD_GATEWAY_KEY unset",
        "{detail}",
    ),
    Entry(
        "claude-credential-conflict",
        "warning",
        "claude",
        "an apiKeyHelper and a literal ANTHROPIC_AUTH_TOKEN / ANTHROPIC_API_KEY side by side "
        "(left by a switch of credential kind): the helper wins",
        "apiKeyHelper + env.ANTHROPIC_AUTH_TOKEN in settings.json",
        "keep one: remove {drop} from {file} (pdnotes config claude now does it on a switch)",
    ),
    Entry(
        "anthropic-auth-conflict",
        "warning",
        "claude",
        "both ANTHROPIC_AUTH_TOKEN and ANTHROPIC_API_KEY are set (both headers are sent)",
        "ANTHROPIC_AUTH_TOKEN in settings and ANTHROPIC_API_KEY in the shell",
        "keep one: unset ANTHROPIC_API_KEY (or remove it from {file})",
    ),
    Entry(
        "api-key-helper-in-env",
        "error",
        "claude",
        "apiKeyHelper placed inside `env`, where it is an unused variable",
        '"env": {"apiKeyHelper": "printenv KEY"}',
        "move apiKeyHelper to the top level of {file}",
    ),
    # -- Claude settings -----------------------------------------------------------------------
    Entry(
        "claude-settings-ignored",
        "error",
        "claude",
        "a settings file Claude Code silently ignores: a non-object `env` or a wrong type on "
        "a known key",
        '"model": 5, or "env": ["ANTHROPIC_BASE_URL=…"]',
        "{detail}",
    ),
    Entry(
        "env-outside-block",
        "error",
        "claude",
        "ANTHROPIC_*, API_TIMEOUT_MS or CLAUDE_CODE_* at the top level of settings.json "
        "instead of inside `env` (ignored)",
        '{"ANTHROPIC_BASE_URL": "https://…"}',
        'move "{key}" into the "env" object of {file}',
    ),
    Entry(
        "codex-in-claude",
        "warning",
        "claude",
        "Codex keys (model_providers, wire_api, base_url, env_key…) in Claude settings, where "
        "they do nothing",
        '"wire_api": "responses" in settings.json',
        "remove `{key}` from {file}; Claude Code reads env.ANTHROPIC_BASE_URL "
        "(pdnotes config claude)",
    ),
    Entry(
        "disable-flag-false-value",
        "warning",
        "claude",
        'a DISABLE_* variable set to "0" or "false", which still disables',
        '"DISABLE_TELEMETRY": "0"',
        "remove {key} to keep the feature on; any non-empty value disables it",
    ),
    Entry(
        "model-env-override",
        "warning",
        "claude",
        "ANTHROPIC_MODEL in the shell overrides the `model` key of the settings files",
        'export ANTHROPIC_MODEL=claude-x while settings.json says "model": "glm-4.6"',
        "unset ANTHROPIC_MODEL, or set env.ANTHROPIC_MODEL in {file} (pdnotes config claude "
        "--model ID)",
    ),
    Entry(
        "claude-json-env",
        "warning",
        "claude",
        'an "env" block in the state file ~/.claude.json, an undocumented layer that can keep '
        "stale gateway settings alive",
        '~/.claude.json: "env": {"ANTHROPIC_BASE_URL": "https://old.example"}',
        'remove "env" from {file}; keep gateway settings in settings.json (pdnotes config claude)',
    ),
    # -- environment ---------------------------------------------------------------------------
    Entry(
        "openai-api-key-ignored",
        "warning",
        "codex",
        "Codex uses its built-in openai provider and OPENAI_API_KEY is set, but that provider "
        "does not read it",
        "no model_provider in config.toml, export OPENAI_API_KEY=sk-…",
        "use a custom provider that reads it: pdnotes config codex --preset openai --model ID "
        "(or codex login --with-api-key, which reads the key from stdin)",
    ),
    Entry(
        "openai-base-url-ignored",
        "warning",
        "env",
        "OPENAI_BASE_URL is set, but Codex does not read it",
        "export OPENAI_BASE_URL=https://taotoken.net/api",
        "configure the provider in config.toml instead: pdnotes config codex --base-url URL",
    ),
    Entry(
        "no-proxy-entry-ignored",
        "warning",
        "env",
        "a NO_PROXY entry that does not bypass what it seems to while a proxy is set: a "
        "default port (`api.corp.com:443`), a CIDR range (a range for Codex, one address for "
        "httpx) or a `*.` wildcard (literal for httpx)",
        "NO_PROXY=api.corp.com:443 with HTTPS_PROXY set",
        "write the entry as {suggestion} (NO_PROXY matches hosts and domain suffixes)",
    ),
    Entry(
        "proxy-case-mismatch",
        "warning",
        "env",
        "HTTP(S)_PROXY and http(s)_proxy are both set and disagree; tools pick different ones",
        "HTTPS_PROXY=http://a:3128 and https_proxy=http://b:3128",
        "set both {upper} and {lower} to the same value (or unset one)",
    ),
    # -- live (emitted by notes_cli.doctor.live) -----------------------------------------------
    Entry(
        "unreachable",
        "error",
        "any",
        "DNS, TCP or TLS failure reaching the base URL (live)",
        "connect to taotoken.net:443 failed: Name or service not known",
        "check the host in the base URL, your network and proxy variables",
        live=True,
    ),
    Entry(
        "auth-rejected",
        "error",
        "any",
        "the gateway answered 401/403 (live)",
        "401 invalid api key",
        "check the key in the variable the client reads, and that it is for this gateway",
        live=True,
    ),
    Entry(
        "path-not-found",
        "error",
        "any",
        "404 on the endpoint the client will call (live)",
        "POST https://taotoken.net/api/v1/responses -> 404",
        "check the base URL's path prefix (e.g. /api, with or without /v1)",
        live=True,
    ),
    Entry(
        "base-url-v1-missing",
        "error",
        "codex",
        "the endpoint 404s, and a live probe shows the same URL with /v1 appended works (the "
        "gateway's API root includes /v1) (live)",
        "https://api.example.com -> POST /responses 404; /v1/responses 200",
        "append /v1 to the base URL",
        live=True,
    ),
    Entry(
        "probe-failed",
        "error",
        "any",
        "the test turn returned but not in a form the client accepts (e.g. Responses events "
        "without response.output_item.done / response.completed) (live)",
        "stream ended without response.completed",
        "make the gateway send the full event sequence the client expects",
        live=True,
    ),
    Entry(
        "request-shape-rejected",
        "error",
        "any",
        "the gateway refuses the request the client really sends (recorded in "
        "templates/clients/) while doctor's minimal turn works; doctor retries without parts "
        "(one non-function tool type, all of them, all tools, reasoning/include or thinking, "
        "system-role messages, the client's headers) and names the first whose removal works",
        "400 Invalid value: 'namespace' -> tools of type `namespace`",
        'add `[features] multi_agent = false` / `web_search = "disabled"` to config.toml '
        "(for Codex's `namespace` / `web_search` tools), make the gateway accept the part, or "
        "put a bridge in front that drops or maps it",
        live=True,
    ),
    Entry(
        "responses-unsupported",
        "error",
        "codex",
        "the gateway serves /chat/completions but not /responses, which Codex needs (live)",
        "POST /responses -> 404 while /chat/completions -> 200",
        "serve it through the pdnotes bridge: pdnotes config codex --bridge --base-url "
        "{chat_base} --model {model} && pdnotes bridge serve (docs/bridge.md)",
        live=True,
    ),
    Entry(
        "messages-unsupported",
        "error",
        "claude",
        "the gateway serves /chat/completions but not Anthropic's /v1/messages, which Claude "
        "Code needs (live)",
        "POST /v1/messages?beta=true -> 404 while /v1/chat/completions -> 200",
        "serve it through the pdnotes bridge: pdnotes config claude --bridge --base-url "
        "{chat_base} --model {model} && pdnotes bridge serve (docs/bridge.md)",
        live=True,
    ),
    Entry(
        "bridge-not-running",
        "error",
        "any",
        "the client points at a pdnotes bridge (its preset's address or the recorded one) and "
        "nothing answers there (live)",
        "GET http://127.0.0.1:8787/v1/models: connection refused",
        "start it: pdnotes bridge serve (or keep it running: pdnotes bridge install)",
        live=True,
    ),
    Entry(
        "bridge-upstream-failed",
        "error",
        "any",
        "the pdnotes bridge answers, but the chat upstream behind it is down, slow or refuses "
        "its key (live)",
        "502: upstream http://gpu-box:23333/v1: cannot connect",
        "check the upstream the bridge serves: --upstream / --upstream-key-env of pdnotes "
        "bridge serve, or pdnotes config … --bridge again",
        live=True,
    ),
    # -- live: a server that breaks a probe's bounds (every probe has a wall clock and a byte
    # cap, so a whole doctor ends within BUDGET_PROBES x --timeout per endpoint) -------------
    Entry(
        "no-response",
        "error",
        "any",
        "the server accepted the connection but sent no complete response headers within the "
        "probe's deadline (it never answers, or answers a byte at a time) (live)",
        "connected to https://gw/api/models but no complete response headers within 10 s",
        "check that the base URL points at the gateway and that it is up (a proxy holding "
        "the request does this too); raise --timeout only if the gateway is just slow",
        live=True,
    ),
    Entry(
        "stream-never-finished",
        "error",
        "any",
        "the answer started but did not finish within the probe's deadline: an endless stream, "
        "keep-alive pings only, a trickle, or a stream that went silent (live)",
        "the answer from https://gw/api/responses was still arriving after 10 s",
        "the gateway must end the stream with the protocol's completion event; check the "
        "gateway, or raise --timeout if the model is just slow",
        live=True,
    ),
    Entry(
        "response-too-large",
        "error",
        "any",
        "the answer went over pdnotes' byte bound after decoding (8 MiB for a JSON body, 4 MiB "
        "for one event, 64 MiB for a stream): an endless body or a compression bomb (live)",
        "the answer from https://gw/api/models was cut off: the body over 8 MiB (decoded)",
        "no answer to a probe is that large: check that the base URL points at the gateway's "
        "API and not at something else",
        live=True,
    ),
    Entry(
        "headers-too-large",
        "error",
        "any",
        "the response headers are over 64 KiB, which no gateway sends (live)",
        "the response headers from https://gw/api/models are over 64 KiB",
        "check that the base URL points at the gateway, not at something in front of it",
        live=True,
    ),
    Entry(
        "redirect-loop",
        "error",
        "any",
        "the endpoint redirects to its own URL, so no client ever gets an answer (pdnotes, like "
        "the clients' key handling, follows no redirect) (live)",
        "https://gw/api/responses redirects (307) to itself",
        "fix the gateway's or proxy's redirect rule (often http→https or a trailing slash), or "
        "use the URL the gateway really serves",
        live=True,
    ),
)

REGISTRY: dict[str, Entry] = {entry.id: entry for entry in _ENTRIES}


class _Fields(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def make(
    finding_id: str,
    client: FindingClient,
    message: str,
    *,
    severity: Severity | None = None,
    file: str | None = None,
    line: int | None = None,
    **fields: object,
) -> Finding:
    """A finding of a registered id, its fix filled from the registry's template."""
    entry = REGISTRY[finding_id]
    fix = entry.fix.format_map(_Fields(file=file or "the file", line=line, **fields))
    return Finding(
        id=finding_id,
        severity=severity or entry.severity,
        client=client,
        message=message,
        fix=fix,
        file=file,
        line=line,
    )


def markdown() -> str:
    """docs/findings.md: every id with its severity, client, when, example and fix."""
    lines = [
        "# Doctor findings",
        "",
        "Generated from `notes_cli/doctor/registry.py` "
        "(`python -m notes_cli.doctor.registry > docs/findings.md`). Ids are stable; "
        "`pdnotes doctor --json` reports them as `findings[].id`. In fixes, `<name>` stands "
        "for a value taken from your configuration. Severity is the default; a check may "
        "raise or lower it (noted under *when*).",
        "",
        "| id | severity | client | when | example | fix |",
        "|---|---|---|---|---|---|",
    ]
    for e in _ENTRIES:
        kind = f"{e.severity} (live)" if e.live else e.severity
        example = f"`` {e.example} ``" if "`" in e.example else f"`{e.example}`"
        fix = re.sub(r"{(\w+)}", r"<\1>", e.fix)
        cells = [f"`{e.id}`", kind, e.client, e.when, example, fix]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from notes_cli import render

    render.text(markdown())
