"""Background chat turns: stages as they happen, Stop, one turn per chat, and no question left
unanswered whatever happens (real engine, real embedder, real SQLite; a scripted model where its
timing must be controlled)."""

from __future__ import annotations

import time

import pytest

from echomind.errors import EchoMindError, LLMError
from echomind.turns import Busy
from scripted_llm import ScriptedLLM

MANUAL = (b"Aurora X2 espresso machine manual. The Aurora X2 costs 499 euros and heats up in 25 seconds. "
          b"Descale the Aurora X2 every two months with citric acid.")


class SlowLLM(ScriptedLLM):
    """Streams its reply one word every ``delay`` seconds, as a real model does."""

    def __init__(self, reply: str, delay: float):
        super().__init__(default=reply)
        self.delay = delay
        self.closed = False

    def stream(self, messages, max_tokens, temperature):
        try:
            for piece in super().stream(messages, max_tokens, temperature):
                time.sleep(self.delay)
                yield piece
        finally:
            self.closed = True


@pytest.fixture
def manual(make_engine):
    engine = make_engine(llm=None)
    engine.ingest_bytes("aurora.txt", MANUAL)
    return engine


def test_stages_are_reported_and_the_answer_is_stored(manual):
    chat = manual.chats.create()
    seen = []
    turn = manual.start_turn(chat, "How much does the Aurora X2 cost?")
    assert manual.chats.messages(chat)[-1]["content"] == "How much does the Aurora X2 cost?"  # stored before the answer starts
    while turn.running:
        seen.append(turn.stage)
        time.sleep(0.001)
    assert turn.wait(30) and "499 euros" in turn.text and turn.error is None
    stored = manual.chats.messages(chat)
    assert [m["role"] for m in stored] == ["user", "assistant"] and "499 euros" in stored[-1]["content"] and stored[-1]["content"].endswith("[1]")
    assert stored[-1]["meta"]["path"] == "rag" and stored[-1]["meta"]["refused"] is False
    assert turn.stage == "Done" and set(seen) <= {"Starting", "Searching your documents", "Reading 1 passage", "Writing the answer", "Done"}


def test_stop_keeps_what_was_written_and_frees_the_chat(manual):
    slow = SlowLLM("The Aurora X2 costs 499 euros [1]. " + "It is a fine machine. " * 40, delay=0.02)
    manual.use_llm(llm=slow)
    chat = manual.chats.create()
    turn = manual.start_turn(chat, "How much does the Aurora X2 cost?")
    with pytest.raises(Busy, match="still answering"):
        manual.start_turn(chat, "And how fast does it heat up?")
    assert len(manual.chats.messages(chat)) == 1  # the refused second question was not stored
    deadline = time.monotonic() + 30
    while "499" not in turn.text and time.monotonic() < deadline:
        time.sleep(0.01)
    turn.stop()
    assert turn.wait(30)
    stored = manual.chats.messages(chat)[-1]
    assert stored["role"] == "assistant" and stored["meta"]["stopped"] and stored["content"].endswith("*(stopped)*")
    assert "499 euros" in stored["content"] and stored["content"].count("fine machine") < 40
    assert slow.closed  # the model's stream was closed, not left running
    again = manual.start_turn(chat, "And how fast does it heat up?")
    assert again.wait(30) and len(manual.chats.messages(chat)) == 4


def test_a_failure_before_the_answer_still_gets_a_reply(manual, monkeypatch):
    chat = manual.chats.create()

    def broken(*args, **kwargs):
        raise LLMError("embedded:SmolLM2 failed: RuntimeError: out of memory")

    monkeypatch.setattr("echomind.engine.start_turn", broken)
    turn = manual.start_turn(chat, "How much does the Aurora X2 cost?")
    assert turn.wait(30) and "out of memory" in turn.error
    roles = [(m["role"], m["content"]) for m in manual.chats.messages(chat)]
    assert roles[0] == ("user", "How much does the Aurora X2 cost?") and roles[1][0] == "assistant"
    assert "Your question is saved" in roles[1][1]
    assert isinstance(Busy("x"), EchoMindError)


def test_turns_in_two_chats_run_side_by_side(manual):
    manual.use_llm(llm=SlowLLM("The Aurora X2 costs 499 euros [1].", delay=0.01))
    a, b = manual.chats.create(), manual.chats.create()
    first = manual.start_turn(a, "How much does the Aurora X2 cost?")
    second = manual.start_turn(b, "How often should I descale it?")
    assert first.wait(30) and second.wait(30)
    assert len(manual.chats.messages(a)) == 2 and len(manual.chats.messages(b)) == 2
