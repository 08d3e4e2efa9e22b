"""Sentence splitting and grouping (seed 2.5), on character spans so every chunk knows where it starts.

A span is ``(start, end)`` into the clean text. Grouping never splits a sentence; the only exception
is a single "sentence" longer than the chunk maximum (a 5 MB line with no punctuation), which is cut at
whitespace so no chunk exceeds its maximum.
"""

from __future__ import annotations

import re

Span = tuple[int, int]
SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n\n+")
PARAGRAPH_BOUNDARY = re.compile(r"\n\s*\n+")


def _split(text: str, boundary: re.Pattern, start: int, end: int) -> list[Span]:
    spans: list[Span] = []
    pos = start
    for m in boundary.finditer(text, start, end):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, end))
    return [s for s in (_strip(text, a, b) for a, b in spans) if s[1] > s[0]]


def _strip(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentence_spans(text: str, start: int = 0, end: int | None = None, hard_max: int | None = None) -> list[Span]:
    spans = _split(text, SENTENCE_BOUNDARY, start, len(text) if end is None else end)
    return cut_long(text, spans, hard_max) if hard_max else spans


def paragraph_spans(text: str) -> list[Span]:
    return _split(text, PARAGRAPH_BOUNDARY, 0, len(text))


def cut_long(text: str, spans: list[Span], hard_max: int) -> list[Span]:
    out: list[Span] = []
    for start, end in spans:
        while end - start > hard_max:
            cut = max(text.rfind(ws, start + 1, start + hard_max) for ws in " \n\t")  # the last word boundary
            if cut <= start:
                cut = start + hard_max
            out.append(_strip(text, start, cut))
            start = _strip(text, cut, end)[0]
        if end > start:
            out.append((start, end))
    return out


def _size(spans: list[Span], joiner: int) -> int:
    return sum(e - s for s, e in spans) + joiner * max(0, len(spans) - 1)


def group_spans(spans: list[Span], target_min: int, target_max: int, overlap: int = 0, joiner: int = 1) -> list[list[Span]]:
    """Add sentences until the next would exceed ``target_max``; carry the last ``overlap`` sentences
    into the next group (fewer if they would not fit). A short tail is merged back when it fits."""
    groups: list[list[Span]] = []
    buf: list[Span] = []
    fresh = False  # does buf hold a sentence not already emitted?
    for span in spans:
        length = span[1] - span[0]
        if buf and _size(buf, joiner) + joiner + length > target_max:
            groups.append(buf)
            carry = buf[-overlap:] if overlap else []
            carry = carry[-(len(buf) - 1):] if len(buf) > 1 else []  # never repeat a whole group
            while carry and _size(carry, joiner) + joiner + length > target_max:
                carry = carry[1:]
            buf = list(carry)
        buf.append(span)
        fresh = True
    if buf and fresh:
        groups.append(buf)
    if len(groups) >= 2 and _size(groups[-1], joiner) < target_min:
        merged = groups[-2] + [s for s in groups[-1] if s not in groups[-2]]
        if _size(merged, joiner) <= target_max:
            groups[-2:] = [merged]
    return groups
