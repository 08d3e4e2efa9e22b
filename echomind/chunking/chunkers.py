"""The chunking strategies (seed 2.4). Each returns pieces: spans of the clean text grouped into chunk
texts; the pipeline turns them into Chunk objects with ids and positions."""

from __future__ import annotations

from dataclasses import dataclass, field

from .detect import question_lines
from .sentences import Span, cut_long, group_spans, paragraph_spans, sentence_spans

MAX_FAQ_CHARS = 8000
PARENT_MIN, PARENT_MAX = 2000, 3500
CHILD_MIN, CHILD_MAX, CHILD_OVERLAP_SENTENCES = 400, 700, 2
SENSITIVE_MIN, SENSITIVE_MAX = 225, 450
USER_MIN, USER_MAX, USER_OVERLAP_SENTENCES = 400, 800, 1


@dataclass
class Piece:
    start: int
    end: int
    text: str
    is_parent: bool = False
    children: list["Piece"] = field(default_factory=list)

    def shifted(self, offset: int) -> "Piece":
        """The same piece, positioned in the enclosing text."""
        return Piece(self.start + offset, self.end + offset, self.text, self.is_parent, [c.shifted(offset) for c in self.children])


def _join(text: str, spans: list[Span], sep: str = " ", squash: bool = True) -> str:
    parts = (text[s:e] for s, e in spans)
    if squash:  # PDF line breaks inside a sentence are layout, not meaning
        parts = (" ".join(p.split()) for p in parts)
    return sep.join(parts)


def _pieces(text: str, groups: list[list[Span]], sep: str = " ", squash: bool = True) -> list[Piece]:
    return [Piece(g[0][0], g[-1][1], _join(text, g, sep, squash)) for g in groups if g]


def chunk_sentences(text: str, target_min: int, target_max: int, overlap: int) -> list[Piece]:
    """USER and SENSITIVE: sentences grouped to size with a sentence overlap."""
    spans = sentence_spans(text, hard_max=target_max)
    return _pieces(text, group_spans(spans, target_min, target_max, overlap))


def chunk_unstructured(text: str) -> list[Piece]:
    return chunk_sentences(text, USER_MIN, USER_MAX, USER_OVERLAP_SENTENCES)


def chunk_sensitive(text: str) -> list[Piece]:
    return chunk_sentences(text, SENSITIVE_MIN, SENSITIVE_MAX, 0)


def chunk_rows(text: str, rows: list[Span], target_min: int = USER_MIN, target_max: int = USER_MAX) -> list[Piece]:
    """Tables: each row is a record; rows are grouped, never split (unless one row alone is too long)."""
    rows = cut_long(text, rows, target_max)
    return _pieces(text, group_spans(rows, target_min, target_max, 0, joiner=2), sep="\n\n", squash=False)


def chunk_table(text: str, rows: list[Span], header: str | None, target_min: int = USER_MIN, target_max: int = USER_MAX) -> list[Piece]:
    """A table inside a document: its rows (one line each) grouped to the CSV sizes with the header row
    counted in, every piece starting with the header. A row is never split: one longer than the maximum
    is a piece of its own; only a row past MAX_FAQ_CHARS (no table a person reads has one) is cut at
    word boundaries so no chunk grows without bound, each part still under the header."""
    prefix = f"{header}\n" if header else ""
    rows = cut_long(text, rows, MAX_FAQ_CHARS)
    groups = group_spans(rows, max(0, target_min - len(prefix)), target_max - len(prefix), 0, joiner=1)
    return [Piece(g[0][0], g[-1][1], prefix + _join(text, g, sep="\n", squash=False)) for g in groups if g]


def chunk_faq(text: str) -> list[Piece]:
    """One chunk per Q&A pair. A pair longer than MAX_FAQ_CHARS is continued in further chunks that
    repeat the question, so no answer text is ever separated from its question."""
    starts = [m.start() for m in question_lines(text)]
    pieces: list[Piece] = []
    if not starts or starts[0] > 0:
        pieces.extend(_intro(text, 0, starts[0] if starts else len(text)))
    for a, b in zip(starts, starts[1:] + [len(text)]):
        block = text[a:b].strip()
        if not block:
            continue
        if len(block) <= MAX_FAQ_CHARS:
            pieces.append(Piece(a, b, block))
            continue
        q_end = text.find("\n", a, b)
        q_end = b if q_end == -1 else q_end
        question = " ".join(text[a:q_end].split())
        room = MAX_FAQ_CHARS - len(question) - 1
        for n, group in enumerate(group_spans(sentence_spans(text, q_end, b, hard_max=room), 1, room)):
            pieces.append(Piece(a if n == 0 else group[0][0], group[-1][1], question + "\n" + _join(text, group)))
    return pieces


def _intro(text: str, a: int, b: int) -> list[Piece]:
    groups = group_spans(sentence_spans(text, a, b, hard_max=USER_MAX), USER_MIN, USER_MAX, USER_OVERLAP_SENTENCES)
    return _pieces(text, groups)


def chunk_long_form(text: str) -> list[Piece]:
    """BOOK: parents of 2,000-3,500 chars built from paragraphs, each with children of 400-700 chars
    that overlap by two sentences. Only children are embedded; parents give context at answer time."""
    paragraphs = cut_long(text, paragraph_spans(text), PARENT_MAX)
    parents = group_spans(paragraphs, PARENT_MIN, PARENT_MAX, 0, joiner=2)
    out: list[Piece] = []
    for group in parents:
        parent = Piece(group[0][0], group[-1][1], _join(text, group, sep="\n\n"), is_parent=True)
        child_spans: list[Span] = []
        for start, end in group:
            child_spans.extend(sentence_spans(text, start, end, hard_max=CHILD_MAX))
        parent.children = _pieces(text, group_spans(child_spans, CHILD_MIN, CHILD_MAX, CHILD_OVERLAP_SENTENCES))
        out.append(parent)
    return out
