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
from .sanitize import document_sensitivity, redact


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


def table_blocks(segments: list[Segment]) -> list[tuple[int, int, tuple[int, str | None] | None]]:
    """Runs of consecutive segments ``(start, end, key)``: the rows of one table inside a document (key:
    its number and header row) or the text between tables (key None). Only the Segment fields count, so
    rows from any parser (DOCX, PPTX, Markdown, PDF) are grouped the same way."""
    blocks: list[list] = []
    for i, segment in enumerate(segments):
        key = (segment.table, segment.header) if segment.table is not None else None
        if blocks and blocks[-1][2] == key:
            blocks[-1][1] = i + 1
        else:
            blocks.append([i, i + 1, key])
    return [(a, b, key) for a, b, key in blocks]


def _detection_text(segments: list[Segment], blocks: list[tuple[int, int, tuple[int, str | None] | None]]) -> str:
    """The text the type heuristics read: a table counts as its header and rows on consecutive lines (as it
    read before rows became segments), so a table's rows are not taken for many short paragraphs."""
    parts: list[str] = []
    for a, b, key in blocks:
        if key is None:
            parts.extend(s.text for s in segments[a:b])
        else:
            parts.append("\n".join(([key[1]] if key[1] else []) + [s.text for s in segments[a:b]]))
    return "\n\n".join(parts)


def _document_pieces(segments: list[Segment], cleaned: list[str], starts: list[int], clean_text: str, blocks: list,
                     headers: dict, doc_type: DocType, row_size: tuple[int, int]) -> list[chunkers.Piece]:
    """Text between tables by the document's strategy (a chunk never spans two headings); each table's
    rows as whole-row pieces under its header, sized like CSV rows."""
    pieces: list[chunkers.Piece] = []
    for i, j, key in blocks:
        if key is not None:
            rows = [(starts[k], starts[k] + len(cleaned[k])) for k in range(i, j) if cleaned[k].strip()]
            pieces.extend(chunkers.chunk_table(clean_text, rows, headers[key], *row_size) if rows else [])
        elif doc_type is DocType.FAQ:
            a, b = starts[i], starts[j - 1] + len(cleaned[j - 1])
            pieces.extend(piece.shifted(a) for piece in chunkers.chunk_faq(clean_text[a:b]))
        else:
            strategy = {DocType.SENSITIVE: chunkers.chunk_sensitive, DocType.BOOK: chunkers.chunk_long_form}.get(doc_type, chunkers.chunk_unstructured)
            for a, b in section_runs(segments[i:j], cleaned[i:j], starts[i:j]):
                pieces.extend(piece.shifted(a) for piece in strategy(clean_text[a:b]))
    return pieces


def chunk_segments(segments: list[Segment], doc_id: str, tabular: bool = False, title: str | None = None, redact_pii: bool = True) -> ChunkedDocument:
    blocks = table_blocks(segments)
    raw = _detection_text(segments, blocks)
    doc_type = detect_document_type(raw)
    if tabular and doc_type is not DocType.SENSITIVE:
        doc_type = DocType.TABLE
    # Redact segment by segment so the clean text still maps back to pages, slides and rows.
    cleaned, counts = [], Counter()
    for segment in segments:
        clean, found = redact(segment.text) if redact_pii else (segment.text, Counter())
        cleaned.append(clean if tabular else _squash(clean))
        counts.update(found)
    headers: dict[tuple[int, str | None], str | None] = {}
    for _, _, key in blocks:  # a table's header row is redacted like its rows, and counted once
        if key is not None and key not in headers:
            clean, found = redact(key[1]) if redact_pii and key[1] else (key[1], Counter())
            headers[key] = " ".join(clean.split()) if clean else None
            counts.update(found)
    sensitivity = document_sensitivity(raw)  # about persons, whatever the redaction switch says
    clean_text = "\n\n".join(cleaned)
    starts, pos = [], 0
    for clean in cleaned:
        starts.append(pos)
        pos += len(clean) + 2

    row_size = (chunkers.SENSITIVE_MIN, chunkers.SENSITIVE_MAX) if doc_type is DocType.SENSITIVE else (chunkers.USER_MIN, chunkers.USER_MAX)
    if tabular:
        rows = [(s, s + len(c)) for s, c in zip(starts, cleaned) if c.strip()]
        pieces = chunkers.chunk_rows(clean_text, rows, *row_size)
    else:
        pieces = _document_pieces(segments, cleaned, starts, clean_text, blocks, headers, doc_type, row_size)

    # A table row's number: the parser's, else its place among the rows of its table.
    row_numbers = [s.row for s in segments]
    for i, j, key in blocks:
        if key is not None:
            for k in range(i, j):
                if row_numbers[k] is None:
                    row_numbers[k] = k - i + 1

    redacted = sum(counts.values()) > 0
    chunks: list[Chunk] = []

    def add(piece: chunkers.Piece, parent: str | None) -> Chunk:
        i = bisect.bisect_right(starts, piece.start) - 1
        j = bisect.bisect_right(starts, max(piece.start, piece.end - 1)) - 1
        first, last = segments[i], segments[j]
        in_table = first.table is not None and not tabular
        index = len(chunks)
        chunk = Chunk(
            doc_id=doc_id,
            chunk_id=f"{doc_id}:{index}",
            text=piece.text,
            doc_type=DocType.TABLE if in_table and doc_type is not DocType.SENSITIVE else doc_type,
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
            row=row_numbers[i],
            row_end=row_numbers[j] if row_numbers[j] != row_numbers[i] else None,
            table=first.table if in_table else None,
            context=" > ".join(dict.fromkeys(p for p in (title, first.section) if p)) or None,
        )
        chunks.append(chunk)
        return chunk

    for piece in pieces:
        head = add(piece, None)
        for child in piece.children:
            add(child, head.chunk_id)
    return ChunkedDocument(chunks=chunks, doc_type=doc_type, sensitivity=sensitivity, redactions=counts)
