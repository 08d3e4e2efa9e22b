"""``chunk_document`` (seed 2.1): detect type -> sanitize -> chunk by strategy -> ids and positions."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field

from ..parsing.models import Segment
from . import chunkers
from .detect import detect_document_type
from .models import Chunk, DocType, Sensitivity
from .sanitize import redact, sensitivity_for, weak_pii_density


PARAGRAPHS = re.compile(r"\n\s*\n")


@dataclass
class ChunkedDocument:
    chunks: list[Chunk]
    doc_type: DocType
    sensitivity: Sensitivity
    redactions: Counter = field(default_factory=Counter)

    @property
    def embed_chunks(self) -> list[Chunk]:
        return [c for c in self.chunks if not c.is_parent]


def _squash(text: str) -> str:
    """One whitespace character between words (a line break stays a line break, so FAQ lines survive):
    sizes measured on spans are then the sizes of the chunk texts, which fold line breaks to spaces."""
    paragraphs = ("\n".join(" ".join(line.split()) for line in p.splitlines() if line.strip()) for p in PARAGRAPHS.split(text))
    return "\n\n".join(p for p in paragraphs if p)


def section_runs(segments: list[Segment], cleaned: list[str], starts: list[int], min_chars: int = chunkers.USER_MIN) -> list[tuple[int, int]]:
    """Offsets of runs of consecutive segments under one heading; a run too short to stand alone
    (a heading line, a one-line section) joins the run after it."""
    runs: list[list[int]] = []  # [start, end, section index]
    for i, (segment, clean) in enumerate(zip(segments, cleaned)):
        end = starts[i] + len(clean)
        if runs and segments[runs[-1][2]].section == segment.section:
            runs[-1][1] = end
        elif runs and runs[-1][1] - runs[-1][0] < min_chars:
            runs[-1][1], runs[-1][2] = end, i
        else:
            runs.append([starts[i], end, i])
    return [(a, b) for a, b, _ in runs]


def chunk_document(text: str, doc_id: str) -> list[Chunk]:
    """The seed's entry point: one text in, flat [P1, C1, C2, ..., P2, ...] or plain chunks out."""
    return chunk_segments([Segment(text=text)], doc_id).chunks


def chunk_segments(segments: list[Segment], doc_id: str, tabular: bool = False, title: str | None = None, redact_pii: bool = True) -> ChunkedDocument:
    raw = "\n\n".join(s.text for s in segments)
    doc_type = detect_document_type(raw)
    if tabular and doc_type is not DocType.SENSITIVE:
        doc_type = DocType.TABLE
    # Redact segment by segment so the clean text still maps back to pages, slides and rows.
    cleaned, counts = [], Counter()
    for segment in segments:
        clean, found = redact(segment.text) if redact_pii else (segment.text, Counter())
        cleaned.append(clean if tabular else _squash(clean))
        counts.update(found)
    sensitivity = sensitivity_for(sum(counts.values()), weak_pii_density(raw))
    clean_text = "\n\n".join(cleaned)
    starts, pos = [], 0
    for clean in cleaned:
        starts.append(pos)
        pos += len(clean) + 2

    if tabular:
        rows = [(s, s + len(c)) for s, c in zip(starts, cleaned) if c.strip()]
        size = (chunkers.SENSITIVE_MIN, chunkers.SENSITIVE_MAX) if doc_type is DocType.SENSITIVE else (chunkers.USER_MIN, chunkers.USER_MAX)
        pieces = chunkers.chunk_rows(clean_text, rows, *size)
    elif doc_type is DocType.FAQ:
        pieces = chunkers.chunk_faq(clean_text)
    else:
        strategy = {DocType.SENSITIVE: chunkers.chunk_sensitive, DocType.BOOK: chunkers.chunk_long_form}.get(doc_type, chunkers.chunk_unstructured)
        pieces = []
        for a, b in section_runs(segments, cleaned, starts):  # a chunk never spans two headings
            for piece in strategy(clean_text[a:b]):
                pieces.append(piece.shifted(a))

    redacted = sum(counts.values()) > 0
    chunks: list[Chunk] = []

    def add(piece: chunkers.Piece, parent: str | None) -> Chunk:
        first = segments[bisect.bisect_right(starts, piece.start) - 1]
        last = segments[bisect.bisect_right(starts, max(piece.start, piece.end - 1)) - 1]
        index = len(chunks)
        chunk = Chunk(
            doc_id=doc_id,
            chunk_id=f"{doc_id}:{index}",
            text=piece.text,
            doc_type=doc_type,
            sensitivity_level=sensitivity,
            redacted=redacted and "[REDACTED_" in piece.text,
            chunk_index=index,
            is_parent=piece.is_parent,
            parent_chunk_id=parent,
            section=first.section,
            page=first.page,
            page_end=last.page if last.page != first.page else None,
            slide=first.slide,
            sheet=first.sheet,
            row=first.row,
            row_end=last.row if last.row != first.row else None,
            context=" > ".join(dict.fromkeys(p for p in (title, first.section) if p)) or None,
        )
        chunks.append(chunk)
        return chunk

    for piece in pieces:
        head = add(piece, None)
        for child in piece.children:
            add(child, head.chunk_id)
    return ChunkedDocument(chunks=chunks, doc_type=doc_type, sensitivity=sensitivity, redactions=counts)
