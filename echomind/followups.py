"""Follow-up questions rewritten to stand alone before retrieval ("and what does it cost?", "How much?",
"When?", "What about 2022?").

In a chat with history, a question is condensed when it leans on the conversation: it names its topic
with a pronoun, starts like a continuation ("and", "what about"), or is too short to carry a topic of
its own (a few content words). The topic comes from the last turn that found documents, never from a
turn that found nothing (its words led nowhere)."""

from __future__ import annotations

import re
from typing import Any

from . import prompts
from .providers.llm import LLM, complete

FOLLOWUP = re.compile(
    r"\b(it|its|it's|that|this|those|these|they|them|their|there|he|she|him|her|his|hers|one|ones|same|also|too|else|more|former|latter)\b"
    r"|^(and|but|or|so|then|what about|how about|why not|what else|and what|same for|also)\b", re.I)
SHORT_CONTENT_WORDS = 3  # "How much?", "When was the last one?", "Who funded the study?"
# Words that ask but name no topic: not counted when judging whether a question carries its own topic
ASKING_WORDS = frozenset(prompts.content_words(
    "what which who whom whose where when why how was were is are am be been being did do does done had has have having can could "
    "would should will shall may might must so other else any some many much"))


def looks_like_followup(question: str) -> bool:
    """Leans on the conversation: a pronoun or continuation word in a short question, or, naming nothing
    (no capitalised word after the first), too few content words to carry a topic."""
    words = question.split()
    if len(words) <= 12 and FOLLOWUP.search(question):
        return True
    if any(w[:1].isupper() for w in words[1:]):  # "What is the capital of Peru?" names its own topic
        return False
    return len(prompts.content_words(question) - ASKING_WORDS) <= SHORT_CONTENT_WORDS


def topic_question(history: list[dict[str, Any]]) -> str:
    """The standalone question of the last turn that found documents (its answer's meta says so); for a
    history without meta, the last user question that did not itself lean on an earlier one."""
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        meta = m.get("meta") or {}
        if m["role"] == "assistant" and meta.get("path") == "rag" and not meta.get("refused"):
            if meta.get("standalone"):
                return meta["standalone"]
            earlier = [h for h in history[:i] if h["role"] == "user"]
            return earlier[-1]["content"] if earlier else ""
    if any((m.get("meta") or {}).get("path") for m in history):
        return ""  # every earlier turn failed: nothing to borrow
    earlier = []
    for m in reversed(history):
        if m["role"] == "user":
            earlier.insert(0, m["content"])
            if not looks_like_followup(m["content"]):
                break
    return " ".join(earlier)


def condense(question: str, history: list[dict[str, Any]], summary: str, llm: LLM | None, timeout_s: float) -> str:
    """A follow-up rewritten to stand alone. A model's rewrite is used when it is plausible (keeps the
    topic, stands alone); otherwise the topic question's content words are appended, which is what
    retrieval needs: "How much?" after "What did NVIDIA pay to end the Arm deal?" searches for both."""
    topic = topic_question(history)
    if not topic or not looks_like_followup(question):
        return question
    if llm is not None and not getattr(llm, "local_small", False):
        turns = "\n".join(f"{m['role'].capitalize()}: {m['content'][:300]}" for m in history[-4:])
        try:
            rewritten = prompts.parse_condensed(complete(llm, [{"role": "user", "content": prompts.CONDENSE.format(history=turns, question=question)}],
                                                         max_tokens=60, timeout_s=timeout_s), question)
        except Exception:  # noqa: BLE001 - a failed rewrite falls back to the heuristic below
            rewritten = None
        if rewritten and prompts.content_words(rewritten) & prompts.content_words(topic) and not looks_like_followup(rewritten):
            return rewritten
    own = prompts.content_words(question)
    missing = [w for w in re.findall(r"[^\W_]+", topic) if prompts.content_words(w) and not prompts.content_words(w) & own]
    return f"{question} ({' '.join(dict.fromkeys(missing))})" if missing else question
