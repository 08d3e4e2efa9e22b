"""Follow-up questions rewritten to stand alone before retrieval ("and what does it cost?")."""

from __future__ import annotations

import re

from . import prompts
from .providers.llm import LLM, complete

FOLLOWUP = re.compile(r"\b(it|its|it's|that|this|those|these|they|them|their|there|he|she|him|her|one|ones|same|also|too|else|more|former|latter)\b|^(and|but|or|so|what about|how about)\b", re.I)


def looks_like_followup(question: str) -> bool:
    return len(question.split()) <= 12 and bool(FOLLOWUP.search(question))


def condense(question: str, history: list[dict[str, str]], summary: str, llm: LLM | None, timeout_s: float) -> str:
    """A follow-up rewritten to stand alone. The model's rewrite is used when it is plausible; without a
    model (or when it writes nonsense) the previous question's content words are appended, which is
    what retrieval needs: "and what does it cost?" after "tell me about the LinnSequencer" searches
    for the LinnSequencer's cost."""
    earlier = []  # the user's recent questions back to the one that named the topic
    for m in reversed(history):
        if m["role"] == "user":
            earlier.insert(0, m["content"])
            if not looks_like_followup(m["content"]):
                break
    last_user = " ".join(earlier)
    if not last_user or not looks_like_followup(question):
        return question
    if llm is not None:
        turns = "\n".join(f"{m['role'].capitalize()}: {m['content'][:300]}" for m in history[-4:])
        try:
            rewritten = prompts.parse_condensed(complete(llm, [{"role": "user", "content": prompts.CONDENSE.format(history=turns, question=question)}],
                                                         max_tokens=60, timeout_s=timeout_s), question)
        except Exception:
            rewritten = None
        # accept only a rewrite that keeps the question's words and adds the earlier topic
        if rewritten and prompts.content_words(rewritten) & prompts.content_words(last_user) and not looks_like_followup(rewritten):
            return rewritten
    missing = [w for w in re.findall(r"[^\W_]+", last_user) if prompts.content_words(w) and not prompts.content_words(w) & prompts.content_words(question)]
    return f"{question} ({' '.join(dict.fromkeys(missing))})" if missing else question
