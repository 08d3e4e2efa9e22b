"""Answers without a generative model: the sentences (or table rows) of the context that answer the
question, each quoted with its citation. Grounded by construction: nothing is written that is not
in a cited block.

A sentence is scored by what MiniLM (a sentence model) says of its meaning next to the question,
the share of the question's rare words it contains (IDF-weighted, from the library's own BM25
statistics), whether it holds the kind of thing the question asks for (a date for "when", a number
for "how many", a name for "who"), and the relevance of the hit it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from .index.analyzers import english_tokens

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(\[])|\n+")
YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
DATE = re.compile(r"\b(january|february|march|april|may|june|july|august|september|october|november|december|\d{1,2}/\d{1,2}/\d{2,4})\b", re.I)
NUMBER = re.compile(r"\d")
CAPITAL = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+")


class Embeds(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray: ...


class BlockLike(Protocol):
    number: int
    text: str

    @property
    def context(self) -> str | None: ...  # the document's title/section header, if any


@dataclass(frozen=True)
class Weights:
    """Measured on SQuAD dev questions outside the reported ones (see README, Answers)."""

    cosine: float = 1.0
    overlap: float = 0.6
    kind: float = 0.15
    prior: float = 0.25
    keep_ratio: float = 0.85  # further sentences must score at least this share of the best
    max_sentences: int = 3


@dataclass
class Candidate:
    text: str
    block: int
    order: int  # position in the context: earlier blocks rank higher
    context: str = ""  # the header of the chunk it came from: what "it" and "the game" refer to
    score: float = 0.0
    cosine: float = 0.0
    overlap: float = 0.0  # IDF-weighted share of the question's terms in this sentence
    kind: bool = False


def asked_kind(question: str) -> str | None:
    q = question.lower()
    if re.search(r"\b(when|what year|which year|what date|what day|how long ago|in what year|since when)\b", q):
        return "date"
    if re.search(r"\b(how (many|much|long|far|old|big|large|tall|high|often)|what (percentage|percent|number|amount|size|age)|how many)\b", q):
        return "number"
    if re.search(r"\b(who|whom|whose|which (person|company|team|group|organi[sz]ation))\b", q):
        return "name"
    if re.search(r"\bwhere\b", q):
        return "place"
    return None


def has_kind(sentence: str, kind: str | None, question_words: set[str]) -> bool:
    if kind == "date":
        return bool(YEAR.search(sentence) or DATE.search(sentence))
    if kind == "number":
        return bool(NUMBER.search(sentence))
    if kind in ("name", "place"):
        return any(w.lower() not in question_words for w in CAPITAL.findall(sentence))
    return False


def candidates(blocks: list[BlockLike], min_chars: int = 25) -> list[Candidate]:
    out = []
    for order, block in enumerate(blocks):
        for piece in SENTENCE.split(block.text):
            piece = piece.strip()
            if len(piece) >= min_chars and re.search(r"[^\W\d_]{3}", piece):
                out.append(Candidate(piece, block.number, order, block.context or ""))
    return out


def in_context(c: Candidate) -> str:
    """A sentence as its document frames it: the header says what its pronouns and short names mean."""
    return f"{c.context}: {c.text}" if c.context and c.context.lower() not in c.text.lower() else c.text


def score_candidates(question: str, found: list[Candidate], embedder: Embeds, term_weight: Callable[[str], float],
                     priors: dict[int, float], weights: Weights = Weights()) -> list[Candidate]:
    """Every candidate scored; returned best first."""
    if not found:
        return []
    vectors = embedder.embed([question] + [in_context(c) for c in found])
    vectors = vectors / np.maximum(1e-12, np.linalg.norm(vectors, axis=1, keepdims=True))
    cosines = vectors[1:] @ vectors[0]
    terms = set(english_tokens(question))
    mass = sum(term_weight(t) for t in terms) or 1.0
    kind = asked_kind(question)
    words = {w.lower() for w in re.findall(r"\w+", question)}
    for c, cos in zip(found, cosines):
        have = set(english_tokens(in_context(c)))
        overlap = sum(term_weight(t) for t in terms & have) / mass
        novel = bool(set(english_tokens(c.text)) - terms)
        c.cosine, c.overlap, c.kind = float(cos), overlap, has_kind(c.text, kind, words)
        c.score = (weights.cosine * float(cos) + weights.overlap * overlap + weights.kind * has_kind(c.text, kind, words)
                   + weights.prior * priors.get(c.block, 0.0)) * (1.0 if novel else 0.5)
    return sorted(found, key=lambda c: (-c.score, c.order))


# Does the best sentence answer at all? A logistic score over what the ranking measured: the sentence's
# meaning next to the question (cosine, in its document's frame), its share of the question's rare words,
# the relevance of its passage and of the best passage. Fitted on SQuAD dev questions (answerable ones
# whose answer was chosen vs questions whose article was left out), checked on other questions; rounded.
EVIDENCE_WEIGHTS = {"cosine": 4.7, "overlap": 3.3, "prior": 3.8, "best": 3.3}
EVIDENCE_BIAS = -6.0


def evidence(best: Candidate, prior: float, best_relevance: float) -> float:
    """In [0, 1]: how likely the best sentence answers the question (0.5 = as likely as not)."""
    z = (EVIDENCE_WEIGHTS["cosine"] * best.cosine + EVIDENCE_WEIGHTS["overlap"] * best.overlap + EVIDENCE_WEIGHTS["prior"] * prior
         + EVIDENCE_WEIGHTS["best"] * best_relevance + EVIDENCE_BIAS)
    return float(1.0 / (1.0 + np.exp(-z)))


def choose(ranked: list[Candidate], weights: Weights = Weights()) -> list[Candidate]:
    """The best sentence, and up to ``max_sentences - 1`` more that score close to it and say something else."""
    if not ranked:
        return []
    picked = [ranked[0]]
    for c in ranked[1:]:
        if len(picked) == weights.max_sentences or c.score < weights.keep_ratio * ranked[0].score:
            break
        if any(_similar(c.text, p.text) for p in picked):
            continue
        picked.append(c)
    return picked


def _similar(a: str, b: str, overlap: float = 0.7) -> bool:
    wa, wb = set(english_tokens(a)), set(english_tokens(b))
    return bool(wa and wb) and len(wa & wb) / min(len(wa), len(wb)) >= overlap


def render(picked: list[Candidate]) -> str:
    """One cited sentence per point, in the order they were chosen (best first)."""
    if len(picked) == 1:
        return f"{picked[0].text} [{picked[0].block}]"
    return "\n".join(f"- {c.text} [{c.block}]" for c in picked)
