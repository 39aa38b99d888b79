"""What the mock engine answers, and how it counts tokens."""

from __future__ import annotations

import pytest

from notes_cli.engine.core.api import ChatMessage
from notes_cli.engine.core.responder import Knowledge, Responder
from notes_cli.engine.core.tokens import count_tokens, tokenize


def ask(
    text: str, *, seed: int = 0, max_tokens: int = 256, knowledge: Knowledge | None = None
) -> tuple[str, str]:
    messages = (ChatMessage("system", "You are a coding agent."), ChatMessage("user", text))
    tokens, finish = Responder(seed, knowledge).respond(messages, max_tokens)
    return "".join(tokens), finish


@pytest.mark.parametrize(
    ("prompt", "answer"),
    [
        ("say pong", "pong"),
        ("Say pong.", "pong"),
        ("repeat: hello world", "hello world"),
        ("Repeat this sentence: The KV cache moves over RDMA.", "The KV cache moves over RDMA."),
        ("Please echo: prefill is compute-bound", "prefill is compute-bound"),
        ('Reply with exactly "OK".', "OK"),
        ("say 'a quoted phrase'", "a quoted phrase"),
        ("重复：预填充是计算密集型的。", "预填充是计算密集型的。"),
        ("请重复这句话：“解码受带宽限制”", "解码受带宽限制"),
        ("<system-reminder>\nContext.\n</system-reminder>\nsay pong", "pong"),
        ("Some context first.\n\nsay pong", "pong"),
    ],
)
def test_repeats_what_it_is_asked_to_repeat(prompt: str, answer: str) -> None:
    assert ask(prompt) == (answer, "stop")


def test_user_messages_of_reminders_only_after_the_prompt_are_not_the_question() -> None:
    # Kimi Code appends two user messages holding only <system-reminder> blocks after the prompt
    reminder = "<system-reminder>\nToday is 2026-12-07.\n</system-reminder>"
    messages = [ChatMessage("user", "say pong"), ChatMessage("user", reminder)]
    tokens, _ = Responder(0).respond([*messages, ChatMessage("user", reminder)], 64)
    assert "".join(tokens) == "pong"


def test_default_answer_is_about_pd_serving_and_deterministic_for_a_seed() -> None:
    text, finish = ask("What does disaggregation buy me?")
    assert finish == "stop" and "mock" in text and "decode" in text.lower()
    assert ask("What does disaggregation buy me?") == (text, finish)
    answers = {ask(f"question {i}", seed=s)[0] for i in range(5) for s in (0, 1)}
    assert len(answers) > 1  # the seed and the prompt vary the answer


def test_chinese_prompt_gets_a_chinese_answer() -> None:
    text, _ = ask("请解释 PD 分离")
    assert "预填充" in text or "解码" in text


def test_max_tokens_cuts_the_answer_with_finish_length() -> None:
    full, _ = ask("Explain prefill and decode.")
    cut, finish = ask("Explain prefill and decode.", max_tokens=5)
    assert finish == "length" and count_tokens(cut) == 5 and full.startswith(cut)
    assert ask("say pong", max_tokens=0) == ("", "length")


def test_a_note_kit_prompt_is_answered_from_the_knowledge_base() -> None:
    seen: list[tuple[list[tuple[str, str]], int]] = []

    def fake_answer(messages: list[tuple[str, str]], seed: int = 0) -> str | None:
        seen.append((list(messages), seed))
        return "| stage | bottleneck |" if "table" in messages[-1][1] else None

    answer = ask("Make the comparison table", seed=7, knowledge=fake_answer)
    assert answer == ("| stage | bottleneck |", "stop")
    messages, seed = seen[-1]
    # it sees the whole conversation, each message with its role
    assert seed == 7 and any("coding agent" in text for _, text in messages)
    assert messages[-1] == ("user", "Make the comparison table")
    assert ask("say pong", knowledge=fake_answer) == ("pong", "stop")
    # without a knowledge base, the same request gets the generic answer
    assert ask("Make the comparison table")[0] != "| stage | bottleneck |"


def test_the_live_engine_answers_note_kits_from_the_notes_knowledge_base() -> None:
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.live.service import LiveEngineService
    from notes_cli.notes.knowledge import answer_messages

    assert LiveEngineService(EngineConfig()).responder.knowledge is answer_messages


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("say pong", 2),
        ("Hello, world!", 4),  # Hello , world !
        ("预填充和解码", 6),  # one per CJK character
        ("PD 分离 disaggregation", 4),
        ("x_y2 = 3.14;", 6),  # x_y2 = 3 . 14 ;
        ("   ", 0),
        ("", 0),
    ],
)
def test_token_counting_rule(text: str, count: int) -> None:
    assert count_tokens(text) == count


@pytest.mark.parametrize(
    "text", ["Hello, world!  ", "a\n\nb\n", "  lead", "预填充 PD-disagg。", "tab\there 🎉", ""]
)
def test_tokens_join_back_to_the_text(text: str) -> None:
    assert "".join(tokenize(text)) == text
