"""The support check every answer passes (seed 002's post-check): a sentence may state a number, date,
amount or name only if a block it cites contains it. Sentences that fail are removed; an answer left
without a valid citation falls back to the cited passages. Extractive answers pass by construction
(they quote cited sentences); model answers are checked sentence by sentence as they stream."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Protocol

CITATION = re.compile(r"\[(\d{1,3})\]")
NUMBER = re.compile(r"(?<![\w.])[$€£¥]?\d[\d,.]*(?:\s?%|\s?(?:million|billion|trillion|thousand))?", re.I)
NAME = re.compile(r"\b[A-Z][\w'’-]*[A-Za-z0-9](?:\s+(?:of|de|von|van|the|and|&)?\s*[A-Z][\w'’-]*[A-Za-z0-9])*")
# Capitalised words that are not names (a sentence may start with them, or they are ordinary words)
NOT_NAMES = {
    "i", "a", "an", "the", "this", "that", "these", "those", "it", "its", "he", "she", "they", "we", "you", "there", "here", "in", "on",
    "at", "by", "for", "from", "to", "of", "and", "or", "but", "if", "when", "while", "as", "with", "after", "before", "during", "according",
    "yes", "no", "however", "also", "both", "each", "all", "some", "most", "many", "one", "two", "three", "based", "source", "sources",
    "from your documents", "answer", "note", "context", "document", "documents", "block", "blocks", "passage", "passages", "none",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "q1", "q2", "q3", "q4",
}
# A sentence ends after its punctuation and the citations that follow it ("... 499 euros. [1]"), before
# the next sentence starts; a line break always ends one.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(-])|(?<=\])\s+(?=[A-Z0-9\"'“(-])|\n+")


class HasText(Protocol):
    number: int
    text: str


def _flat(text: str) -> str:
    return " ".join(text.replace(",", "").split()).lower()


def numbers_in(sentence: str) -> list[str]:
    out = []
    for m in NUMBER.finditer(CITATION.sub(" ", sentence)):
        value = m.group(0).strip().rstrip(".,")
        if re.fullmatch(r"[$€£¥]?\d", value):  # single digits ("2 of them") are not claims worth checking
            continue
        out.append(value)
    return out


def names_in(sentence: str) -> list[str]:
    """Capitalised words that are not the sentence's first word and not ordinary words."""
    body = CITATION.sub(" ", sentence).strip()
    out = []
    for m in NAME.finditer(body):
        words = m.group(0).split()
        if m.start() == 0 or body[:m.start()].rstrip().endswith((":", "-", "•", "*")):
            words = words[1:]  # a sentence's first word is capitalised anyway
        words = [w for w in words if w.lower() not in NOT_NAMES and not w.isdigit()]
        if words:
            out.append(" ".join(words))
    return out


def claims_in(sentence: str) -> list[str]:
    return numbers_in(sentence) + names_in(sentence)


def _present(claim: str, flat_sources: str) -> bool:
    if any(ch.isdigit() for ch in claim):
        core = re.sub(r"[$€£¥%]|\s?(million|billion|trillion|thousand)$", "", claim.replace(",", ""), flags=re.I).strip()
        return bool(core) and re.search(rf"(?<![\d.]){re.escape(core.lower())}(?![\d])", flat_sources) is not None
    return all(word.lower().strip("'’") in flat_sources for word in claim.split())


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s and s.strip()]


@dataclass
class SentenceCheck:
    sentence: str
    cited: list[int]
    unsupported: list[str] = field(default_factory=list)

    @property
    def supported(self) -> bool:
        return not self.unsupported


def check_sentence(sentence: str, blocks: dict[int, str], answer_citations: Iterable[int] = ()) -> SentenceCheck:
    """A sentence's claims against the blocks it cites (or, if it cites none, the blocks the answer cites)."""
    cited = [int(n) for n in CITATION.findall(sentence)]
    sources = [blocks[n] for n in (cited or list(answer_citations)) if n in blocks]
    flat = _flat(" ".join(sources))
    missing = [c for c in claims_in(sentence) if not _present(c, flat)]
    return SentenceCheck(sentence, cited, missing)


def unsupported_claims(answer: str, blocks: list[HasText]) -> list[str]:
    """Every claim in the answer that no cited block contains (the benchmark's count)."""
    by_number = {b.number: b.text for b in blocks}
    cited_anywhere = [int(n) for n in CITATION.findall(answer)]
    out = []
    for sentence in split_sentences(answer):
        out.extend(check_sentence(sentence, by_number, cited_anywhere).unsupported)
    return out


def checked_stream(pieces: Iterable[str], blocks: list[HasText], removed: list[SentenceCheck]) -> Iterator[str]:
    """Model text, passed on a sentence at a time once its claims are found in the blocks it cites;
    a sentence that fails is dropped and recorded in ``removed``."""
    by_number = {b.number: b.text for b in blocks}
    buffer = ""
    for piece in pieces:
        buffer += piece
        parts = SENTENCE_END.split(buffer)
        if len(parts) < 2:
            continue
        # keep the separator that ended each finished sentence
        done_text = buffer[: len(buffer) - len(parts[-1])]
        buffer = parts[-1]
        for sentence in split_sentences(done_text):
            verdict = check_sentence(sentence, by_number, [int(n) for n in CITATION.findall(sentence)])
            if verdict.supported:
                yield sentence + " "
            else:
                removed.append(verdict)
    if buffer.strip():
        verdict = check_sentence(buffer.strip(), by_number)
        if verdict.supported:
            yield buffer.strip()
        else:
            removed.append(verdict)
