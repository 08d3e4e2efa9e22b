"""Chat turns answered in a background thread, so a page can show progress, offer Stop, and rerun for any
reason (a click elsewhere, a second browser tab) without ever leaving a question unanswered.

The page polls a ``RunningTurn``: its stage ("Searching your documents", "Reading 5 passages",
"Writing the answer"), the text so far, and whether it is done. The answer is stored by the turn
itself when it ends, stopped or failed."""

from __future__ import annotations

import threading
import time
from typing import Callable

from .answer import Answer
from .errors import EchoMindError

Starter = Callable[[Callable[[str], None]], Answer]
OnFailure = Callable[[str], None]


class RunningTurn:
    def __init__(self, chat_id: str, question: str, start: Starter, on_failure: OnFailure):
        self.chat_id = chat_id
        self.question = question
        self.stage = "Starting"
        self.text = ""
        self.error: str | None = None
        self.answer: Answer | None = None
        self.started = time.monotonic()
        self.done = threading.Event()
        self._stop = threading.Event()
        self._start, self._on_failure = start, on_failure
        self._thread = threading.Thread(target=self._run, name=f"turn-{chat_id}", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stop(self) -> None:
        """End the answer after its current piece; the text so far is stored, marked as stopped."""
        self._stop.set()
        if self.answer is not None:
            self.answer.stop()

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)

    def _stage(self, stage: str) -> None:
        self.stage = stage

    def _run(self) -> None:
        try:
            self.answer = self._start(self._stage)
            if self._stop.is_set():
                self.answer.stop()
            for piece in self.answer.stream():
                self.text += piece
            self.error = self.answer.error
        except EchoMindError as exc:  # before the answer could start: store a reply that says why
            self.error = str(exc)
            self._on_failure(f"⚠️ {exc} Your question is saved; try again or switch the model in Settings.")
        except Exception as exc:  # noqa: BLE001 - never leave the question without a reply
            self.error = f"{type(exc).__name__}: {exc}"
            self._on_failure("⚠️ Something went wrong while answering; your question is saved. Try again.")
        finally:
            self.stage = "Done"
            self.done.set()


class TurnBoard:
    """At most one running turn per chat; finished turns are forgotten when a new one starts."""

    def __init__(self) -> None:
        self._turns: dict[str, RunningTurn] = {}
        self._lock = threading.Lock()

    def start(self, chat_id: str, question: str, start: Starter, on_failure: OnFailure) -> RunningTurn:
        with self._lock:
            current = self._turns.get(chat_id)
            if current is not None and current.running:
                raise Busy("This chat is still answering the previous question; wait for it or press Stop.")
            turn = RunningTurn(chat_id, question, start, on_failure)
            self._turns[chat_id] = turn
            return turn

    def get(self, chat_id: str) -> RunningTurn | None:
        return self._turns.get(chat_id)


class Busy(EchoMindError):
    """A chat already has a turn running."""
