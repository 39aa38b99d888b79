"""Cleaning a pasted base URL: whatever tracking parameters, endpoint suffix or fragment were
pasted after the API root, the cleaned URL is that root and the other parameters survive."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notes_cli.clients.endpoint import join_url
from notes_cli.clients.urls import OPENAI_ENDPOINT_SUFFIXES, appended_root, clean_base_url
from notes_cli.errors import UsageError

# Drawn from plain alphabets, no regex and no filter: each example costs microseconds to make,
# so hypothesis' too-slow health check (a wall clock) cannot trip on a loaded machine. A first
# letter other than v, r, c, m keeps a segment from being an endpoint word (v1, responses,
# chat, completions, messages); one other than u keeps a parameter from being utm_*.
_segment = st.builds(
    str.__add__, st.sampled_from("abdefghijklnopqstuwxyz"), st.text("abz09-", max_size=8)
)
_roots = st.builds(
    lambda scheme, host, parts: f"{scheme}://{host}" + "".join(f"/{p}" for p in parts),
    st.sampled_from(["http", "https"]),
    st.sampled_from(["gw.example", "127.0.0.1:8000", "api.example.com"]),
    st.lists(_segment, max_size=3),
)
_param = st.builds(str.__add__, st.sampled_from("abkqx"), st.text("az0_", max_size=6))


@given(
    root=_roots,
    suffix=st.sampled_from(["", "/", *OPENAI_ENDPOINT_SUFFIXES]),
    utm=st.dictionaries(
        st.sampled_from(["utm_source", "utm_medium", "utm_campaign"]),
        st.text("abc", min_size=1, max_size=4),
        max_size=3,
    ),
    kept=st.dictionaries(_param, st.text("xyz0", min_size=1, max_size=4), max_size=2),
    fragment=st.sampled_from(["", "#docs"]),
)
def test_cleaning_recovers_the_root_and_keeps_other_parameters(
    root: str, suffix: str, utm: dict[str, str], kept: dict[str, str], fragment: str
) -> None:
    query = urlencode({**kept, **utm})
    pasted = root + suffix + (f"?{query}" if query else "") + fragment

    cleaned = clean_base_url(pasted, suffixes=OPENAI_ENDPOINT_SUFFIXES)

    assert cleaned.base_url == root
    assert cleaned.query_params == kept
    assert join_url(cleaned.base_url, "/responses", cleaned.query_params).startswith(
        root + "/responses"
    )
    changed = bool(utm or kept or fragment or suffix.strip("/"))
    assert bool(cleaned.notes) == changed


@pytest.mark.parametrize(
    ("pasted", "strip_v1", "root"),
    [
        ("https://taotoken.net/api/v1", True, "https://taotoken.net/api"),
        ("https://taotoken.net/api/v1", False, "https://taotoken.net/api/v1"),
        ("https://api.openai.com/v1/chat/completions", False, "https://api.openai.com/v1"),
    ],
)
def test_v1_is_stripped_only_when_the_gateway_forbids_it(pasted, strip_v1, root) -> None:
    cleaned = clean_base_url(pasted, suffixes=OPENAI_ENDPOINT_SUFFIXES, strip_v1=strip_v1)
    assert cleaned.base_url == root


@pytest.mark.parametrize("pasted", ["taotoken.net/api", "ftp://x/api", "", "https://"])
def test_urls_without_http_scheme_are_refused(pasted: str) -> None:
    with pytest.raises(UsageError):
        clean_base_url(pasted, suffixes=OPENAI_ENDPOINT_SUFFIXES)


def root_for(url: str, policy: str = "any", messages: bool = False) -> str:
    cleaned = appended_root(
        url, policy=policy, client="Pi", after="its path", credential_fix="x", messages=messages
    )
    return cleaned.base_url


@pytest.mark.parametrize(
    ("url", "policy", "messages", "root"),
    [
        ("https://gw.example/v1/chat/completions", "any", False, "https://gw.example/v1"),
        ("https://gw.example", "required", False, "https://gw.example/v1"),  # /v1 added
        ("https://gw.example/v1", "forbidden", False, "https://gw.example"),
        ("https://gw.example/anthropic/v1/messages", "required", True, "https://gw.example/anthropic"),
    ],
)  # fmt: skip
def test_a_root_the_client_appends_to_follows_the_gateways_v1_rule(
    url: str, policy: str, messages: bool, root: str
) -> None:
    assert root_for(url, policy, messages) == root


def test_a_client_that_cannot_send_query_parameters_refuses_them_by_name() -> None:
    with pytest.raises(UsageError) as refused:
        root_for("https://gw.example/v1?api-version=2024")
    assert "Pi cannot send query parameters (api-version) after its path" in refused.value.message
