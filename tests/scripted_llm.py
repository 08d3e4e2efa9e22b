"""A scripted LLM for tests that must control the model's output: replies are matched to prompts by
a substring rule (or taken from a queue), and every call is recorded."""

from __future__ import annotations

from typing import Callable, Iterator


class ScriptedLLM:
    def __init__(self, rules: list[tuple[str, str | Callable[[str], str]]] | None = None, default: str = "", context_tokens: int = 2048):
        self.rules = list(rules or [])
        self.default = default
        self.calls: list[list[dict]] = []
        self.name = "scripted"
        self.context_tokens = context_tokens
        self.fail_with: Exception | None = None

    def stream(self, messages: list[dict], max_tokens: int, temperature: float) -> Iterator[str]:
        self.calls.append(messages)
        if self.fail_with is not None:
            raise self.fail_with
        prompt = "\n".join(m["content"] for m in messages)
        reply = self.default
        for needle, answer in self.rules:
            if needle in prompt:
                reply = answer(prompt) if callable(answer) else answer
                break
        for word in reply.split(" "):
            yield word + " "

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def prompts_containing(self, needle: str) -> list[str]:
        return ["\n".join(m["content"] for m in call) for call in self.calls if needle in "\n".join(m["content"] for m in call)]
