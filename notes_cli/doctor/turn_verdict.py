"""One verdict on a turn that returned, shared by doctor's stream probe and every smoke run, so
the two commands never judge the same answer differently (issue 36: doctor called a base
model's cut answer "ok" while smoke failed it and Codex exited 1 on it).

A turn that returned is still a problem when
- it ended at its token limit instead of stopping by itself (`model-did-not-stop`): a finish
  reason that says so, or the server's own count of output tokens at the limit; a base model,
  or a chat model served without its chat template, writes until any limit; with only reasoning
  so far (no answer text) the model was still thinking, a warning (its `reasoning` variant);
- it ended for another reason (a content filter, a refusal: `answer-not-completed`);
- it stopped by itself with no text (`answer-empty`).
The finding's fix names the client's own output cap (CLAUDE_CODE_MAX_OUTPUT_TOKENS,
QWEN_CODE_MAX_OUTPUT_TOKENS, a client's `output_cap_variant`; Codex has none).
"""

from __future__ import annotations

from notes_cli.doctor.findings import Finding, FindingClient
from notes_cli.doctor.registry import make
from notes_cli.gateway.results import StreamResult

# How each protocol says "cut at max_tokens": chat completions, Anthropic Messages, the
# Responses API's incomplete reason, Gemini.
LIMIT_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "MAX_TOKENS"})


def _cap_variant(client: str) -> str | None:
    """The fix variant naming the client's own output cap (`Client.output_cap_variant`)."""
    from notes_cli.clients import registry

    plugin = registry.get(client)
    return plugin.output_cap_variant if plugin else None


def turn_problem(
    client: FindingClient, result: StreamResult, max_tokens: int, *, secrets: tuple[str, ...] = ()
) -> Finding | None:
    """The finding a returned turn earns, or None when the model answered and stopped."""
    reason = result.finish_reason
    cut = not result.completed and reason in LIMIT_REASONS
    # llama-server's Responses API says `completed` for an answer cut at max_output_tokens:
    # the server's own count reaching the limit says it instead.
    at_limit = result.tokens_source == "usage" and 0 < max_tokens <= result.output_tokens
    if cut or at_limit:
        if not result.text.strip() and result.reasoning_chars:
            return make(
                "model-did-not-stop",
                client,
                f"the model was still reasoning at the {max_tokens}-token limit (finish reason "
                f"{reason}): no answer text yet",
                variant="reasoning",
                secrets=secrets,
            )
        return make(
            "model-did-not-stop",
            client,
            f"the model did not stop by itself: the answer ran to the {max_tokens}-token limit "
            f"({result.output_tokens} tokens, finish reason {reason or 'none'}"
            + (", reported as a natural stop" if not cut else "")
            + ")",
            variant=_cap_variant(client),
            secrets=secrets,
        )
    if not result.completed and not result.client_issues:  # (those name the cause themselves)
        return make(
            "answer-not-completed",
            client,
            f"the answer did not complete: finish reason {reason or 'none'}",
            secrets=secrets,
        )
    if not result.text.strip():
        said = f"finish reason {reason}" if reason else "a completion event"
        return make(
            "answer-empty",
            client,
            f"the model stopped ({said}) without writing any text"
            + (" (it only reasoned)" if result.reasoning_chars else ""),
            secrets=secrets,
        )
    return None
