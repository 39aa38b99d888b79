"""The masking function (notes_cli.secrets) hides a secret by *where it sits*, whatever it looks
like: property tests place arbitrary key-alphabet secrets (28-char `tt-…`, hex, words) in each
credential position and check the secret never survives. Then the config writers' refusal of a
key in --base-url (issue 11.2) and doctor's key-in-file (11.4), symlinks into git repos included."""

from __future__ import annotations

import json
import os
import shutil
import string
import subprocess
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from notes_cli import secrets

# A key: 8-64 characters of what gateways issue (URL-safe, no quotes or spaces). Not an
# upper-case variable name (TAOTOKEN_API_KEY is shown on purpose) and not starting like a flag,
# a path or a `$VAR` (which a helper command shows on purpose).
KEY_ALPHABET = string.ascii_letters + string.digits + "-_."
keys = st.text(KEY_ALPHABET, min_size=8, max_size=64).filter(
    lambda s: not (s.isupper() and s.replace("_", "").isalnum()) and s[0] not in "-./~"
)
CREDENTIAL_QUERY_NAMES = ["api_key", "key", "token", "access_token", "apikey", "auth", "sig"]
query_names = st.sampled_from(CREDENTIAL_QUERY_NAMES) | st.text(
    string.ascii_lowercase + "_-", min_size=1, max_size=12
).filter(lambda n: n not in secrets.PUBLIC_QUERY_NAMES and not n.startswith("utm_"))
header_names = st.sampled_from(
    ["Authorization", "x-api-key", "api-key", "X-Auth", "cf-access-token", "X-Org"]
)
TT_KEY = "tt-qwertyuiopasdfghjklzxcvbn"  # 28 characters, no digits, no sk- prefix
fast = settings(max_examples=150, deadline=None)


@fast
@given(keys)
def test_mask_never_shows_the_key(key: str) -> None:
    assert key not in secrets.mask(key)


@fast
@given(keys, st.sampled_from(["{k}@gw", "user:{k}@gw", "{k}:x@gw:8443", "{k}:@gw"]))
def test_user_info_is_masked_whatever_it_holds(key: str, netloc: str) -> None:
    url = f"https://{netloc.format(k=key)}/api/v1"
    shown = secrets.mask_url(url)
    assert key not in shown
    assert shown.endswith("/api/v1") and "***@gw" in shown


@fast
@given(keys, query_names)
def test_query_values_are_masked_whatever_their_shape(key: str, name: str) -> None:
    public = "https://gw/api/responses?api-version=2024-06-01&"
    assume(key not in name + public)  # what is shown on purpose may not contain the key
    shown = secrets.mask_url(f"{public}{name}={key}")
    assert key not in shown
    assert "api-version=2024-06-01" in shown  # public parameters stay readable


@fast
@given(keys, header_names, st.sampled_from(["{k}", "Bearer {k}", "Basic {k}", "Token {k}"]))
def test_header_values_are_masked(key: str, name: str, form: str) -> None:
    value = form.format(k=key)
    assert key not in secrets.mask_header_value(name, value)
    assert key not in secrets.mask_header_block(f"X-Title: notes\n{name}: {value}")
    assert key in secrets.position_secrets(headers={name: value})


@fast
@given(
    keys,
    st.sampled_from(
        ["echo {k}", "echo '{k}'", 'printf "%s" {k}', "sh -c 'echo {k}'", "KEY={k} helper"]
    ),
)
def test_helper_command_arguments_are_masked(key: str, form: str) -> None:
    command = form.format(k=key)
    assert key not in secrets.mask_command(command)
    assert key in secrets.command_secrets(command)


def test_helper_command_keeps_what_is_not_a_key() -> None:
    assert secrets.mask_command("printenv GW_TOKEN") == "printenv GW_TOKEN"
    assert secrets.mask_command('echo "$GW_TOKEN"') == 'echo "$GW_TOKEN"'
    assert secrets.mask_command("cat ~/.config/gw/key") == "cat ~/.config/gw/key"


@fast
@given(keys, st.sampled_from(["ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "GW_SECRET", "pwd"]))
def test_credential_variables_are_masked(key: str, name: str) -> None:
    assert key not in secrets.mask_env_value(name, key)


@fast
@given(keys, st.text(max_size=40), st.text(max_size=40))
def test_scrub_removes_the_key_sent_from_any_text(key: str, before: str, after: str) -> None:
    body = f'{before}{{"error": {{"message": "bad key {key}"}}}}{after}{key}'
    assert key not in secrets.scrub(body, [key])


def test_scrub_masks_credential_shapes_without_a_known_key() -> None:
    body = (
        f'{{"message": "Incorrect API key provided: sk-live0123456789abcd", "api_key": '
        f'"{TT_KEY}9"}} Authorization: Bearer abcdefgh12345678 at https://u:p4ss@gw/x?key=zz'
    )
    shown = secrets.scrub(body)
    for secret in ("sk-live0123456789abcd", f"{TT_KEY}9", "abcdefgh12345678", "p4ss", "key=zz"):
        assert secret not in shown
    # What helps the user stays: model ids, paths, request ids.
    text = "model claude-3-5-sonnet-20241022 not found at /api/v1/chat/completions (req 1a2b)"
    assert secrets.scrub(text) == text


# --------------------------------------------------------------------------- 11.2 refusal


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["config", "codex", "--provider", "gw", "--model", "m", "--base-url",
          f"https://gw/api?api_key={TT_KEY}"], "--env-key"),
        (["config", "codex", "--provider", "gw", "--model", "m", "--base-url",
          f"https://gw/api?foo=1&sig={TT_KEY}"], "env_http_headers"),
        (["config", "codex", "--provider", "gw", "--model", "m", "--base-url",
          "https://gw/api?x=sk-abcdefgh12345678"], "--env-key"),
        (["config", "codex", "--provider", "gw", "--model", "m", "--base-url",
          f"https://{TT_KEY}@gw/api"], "--env-key"),
        (["config", "claude", "--base-url", f"https://user:{TT_KEY}@gw/api"], "--token-env"),
        (["config", "claude", "--base-url", f"user:{TT_KEY}@gw/api"], "https://"),
        # a key as a path segment or a `;param` is a key too
        (["config", "codex", "--provider", "gw", "--model", "m", "--base-url",
          f"https://gw/sk-{TT_KEY}/api"], "--env-key"),
        (["config", "claude", "--base-url", f"https://gw/api;key=sk-{TT_KEY}"], "--token-env"),
    ],
)  # fmt: skip
def test_a_key_in_the_base_url_is_refused(cli, isolated_home: Path, args, fix: str) -> None:
    for as_json in ([], ["--json"]):
        result = cli(*args, *as_json)
        assert result.exit_code == 2, result.stdout + result.stderr
        assert TT_KEY not in result.stdout + result.stderr
        assert fix in result.stderr
    written = [p for p in isolated_home.rglob("*") if p.is_file()]
    # only the file's lock (pdnotes' own, holding at most a pid) may exist; no config, no backup
    assert all(p.parent.name == "locks" and TT_KEY not in p.read_text() for p in written), written


def test_a_url_without_credentials_is_still_cleaned(cli, isolated_home: Path) -> None:
    result = cli(
        "config", "codex", "--provider", "gw", "--model", "m", "--json",
        "--base-url", "https://gw/api?api-version=2024-06-01&utm_source=x",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (
        'query_params = {api-version = "2024-06-01"}'
        in (isolated_home / ".codex" / "config.toml").read_text()
    )


def test_a_path_with_random_ids_but_no_key_is_written(cli, isolated_home: Path) -> None:
    # Cloudflare AI Gateway: /v1/{32-hex account id}/{gateway}/openai is not a key (and is
    # masked when shown, like any random run)
    for url in (
        "https://gateway.ai.cloudflare.com/v1/0123456789abcdef0123456789abcdef/gw/openai",
        "https://gw.example/key-value-gateway-service/v1",  # a name that starts like a key
    ):
        result = cli("config", "codex", "--provider", "cf", "--model", "m", "--base-url", url)
        assert result.exit_code == 0, result.stderr
        assert url in (isolated_home / ".codex" / "config.toml").read_text()


# --------------------------------------------------------------------------- 11.4 key-in-file


def _key_findings(cli, *extra: str) -> list[dict]:
    result = cli("doctor", "--offline", "--json", *extra)
    assert TT_KEY not in result.stdout + result.stderr
    return [f for f in result.json()["findings"] if f["id"] == "key-in-file"]


CODEX_LITERALS = {
    "http_headers Authorization": f'http_headers = {{ Authorization = "Bearer {TT_KEY}" }}',
    "http_headers x-api-key": f'http_headers = {{ "x-api-key" = "{TT_KEY}" }}',
    "query_params": f'query_params = {{ key = "{TT_KEY}" }}',
    "env_http_headers": f'env_http_headers = {{ "x-api-key" = "{TT_KEY}" }}',
    "experimental_bearer_token": f'experimental_bearer_token = "{TT_KEY}"',
    "user-info": None,
    "a path segment": None,
}


@pytest.mark.parametrize("where", list(CODEX_LITERALS))
def test_doctor_finds_each_literal_in_codex_config(cli, isolated_home: Path, where: str) -> None:
    line = CODEX_LITERALS[where]
    base = {
        "user-info": f"https://u:{TT_KEY}@gw/api",
        "a path segment": f"https://gw/sk-{TT_KEY}/v1",
    }
    base = base.get(where, "https://gw/api")
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        'model = "m"\nmodel_provider = "gw"\n\n[model_providers.gw]\nname = "gw"\n'
        f'base_url = "{base}"\nenv_key = "GW_KEY"\nwire_api = "responses"\n{line or ""}\n'
    )
    found = _key_findings(cli, "--client", "codex")
    assert len(found) == 1, found
    assert found[0]["line"] == (6 if line is None else 9)
    result = cli("doctor", "--offline", "--client", "codex")
    assert "env-http-header-unset" not in result.stdout  # a token is not a variable to export
    assert TT_KEY not in result.stdout + result.stderr


CLAUDE_LITERALS = {
    "apiKeyHelper echo": {"apiKeyHelper": f"echo {TT_KEY}"},
    "ANTHROPIC_CUSTOM_HEADERS": {"env": {"ANTHROPIC_CUSTOM_HEADERS": f"x-api-key: {TT_KEY}"}},
    "ANTHROPIC_AUTH_TOKEN": {"env": {"ANTHROPIC_AUTH_TOKEN": TT_KEY}},
    "ANTHROPIC_API_KEY": {"env": {"ANTHROPIC_API_KEY": TT_KEY}},
    "ANTHROPIC_BASE_URL user-info": {"env": {"ANTHROPIC_BASE_URL": f"https://{TT_KEY}@gw/a"}},
}


@pytest.mark.parametrize("where", list(CLAUDE_LITERALS))
def test_doctor_finds_each_literal_in_claude_settings(cli, isolated_home: Path, where: str) -> None:
    data = {"env": {"ANTHROPIC_BASE_URL": "https://gw/api"}}
    for key, value in CLAUDE_LITERALS[where].items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    settings_file = isolated_home / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps(data, indent=2))
    found = _key_findings(cli, "--client", "claude")
    assert len(found) == 1, found
    assert found[0]["severity"] == "warning" and found[0]["line"]


def test_a_helper_that_reads_a_variable_is_not_a_literal(cli, isolated_home: Path) -> None:
    settings_file = isolated_home / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps({"apiKeyHelper": 'echo "$GW_TOKEN"'}))
    assert _key_findings(cli, "--client", "claude") == []


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_settings_file_symlinked_into_a_tracked_repo_is_tracked(
    cli, isolated_home: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(json.dumps({"env": {"ANTHROPIC_AUTH_TOKEN": TT_KEY}}))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", target.name]):
        subprocess.run(["git", *args], cwd=dotfiles, check=True, env=env, timeout=10)
    (isolated_home / ".claude").mkdir()
    (isolated_home / ".claude" / "settings.json").symlink_to(target)

    found = _key_findings(cli, "--client", "claude")

    assert [f["severity"] for f in found] == ["error"]
    assert "git tracks" in found[0]["message"]


@pytest.mark.parametrize(
    "echo",
    [
        lambda k: f"bad key {k[:14]}\n{k[14:]}",  # wrapped over two lines
        lambda k: f"bad key {k[:-6]}...",  # cut short
        lambda k: "next=%2Fv1%3Fkey%3D" + __import__("urllib.parse").parse.quote(k, safe=""),
        lambda k: "Basic " + __import__("base64").b64encode(k.encode()).decode(),
        lambda k: '{"message": "bad key ' + k.replace("-", "\\u002d") + '"}',
        lambda k: "<p>" + k + "</p>",
    ],
    ids=["wrapped", "cut", "url-quoted", "base64", "json-escaped", "as-is-in-html"],
)
@pytest.mark.parametrize(
    "key",
    ["sk-test-SECRETSECRETSECRET1234", "AKIAIOSFODNN7EXAMPLEKEY", "Zm9vYmFy+c2VjcmV0/a2V5cw=="],
)
def test_a_known_key_echoed_in_another_form_or_in_pieces_is_masked(echo, key: str) -> None:
    text = echo(key)
    shown = secrets.scrub(text, [key])
    for start in range(len(key) - 11):  # no 12 characters of it in a row
        assert key[start : start + 12] not in shown, (text, shown)
    assert __import__("urllib.parse").parse.quote(key, safe="") not in shown


def test_a_diff_masks_a_short_secret_only_where_it_stands_alone(tmp_path: Path) -> None:
    # a one-character credential header value masked every `o` of the diff ("m…del")
    from notes_cli.clients.plan import WritePlan

    new = 'model = "gpt-o"\nhttp_headers = { "x-api-key" = "o" }\n'
    plan = WritePlan("codex", tmp_path / "config.toml", None, new, "http://x", redact=("o",))
    diff = plan.diff()
    assert '+model = "gpt-o"' in diff  # words holding the letter keep it
    assert '"x-api-key" = "…"' in diff  # the value itself is masked
