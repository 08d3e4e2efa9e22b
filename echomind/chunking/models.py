"""The Chunk model (seed 2.6) plus where the chunk came from: page, slide, sheet and row."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


def with_context(context: str | None, text: str) -> str:
    if not context or text.startswith(context):
        return text
    return f"{context}\n{text}"


class DocType(str, Enum):
    FAQ = "FAQ"
    BOOK = "BOOK"
    SENSITIVE = "SENSITIVE"
    USER = "USER"
    TABLE = "TABLE"  # ours: rows of a CSV/XLSX, or of a table inside a document, are records and are never split


class Sensitivity(str, Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


@dataclass
class Chunk:
    doc_id: str
    chunk_id: str
    text: str
    doc_type: DocType
    sensitivity_level: Sensitivity
    redacted: bool
    chunk_index: int
    is_parent: bool = False
    parent_chunk_id: str | None = None
    section: str | None = None
    page: int | None = None
    page_end: int | None = None
    slide: int | None = None
    sheet: str | None = None
    row: int | None = None
    row_end: int | None = None
    table: int | None = None  # the number of the table inside the document whose rows this chunk holds
    context: str | None = None  # "Document title > Section": indexed with the chunk, not shown as its text

    @property
    def index_text(self) -> str:
        """What the embedder and BM25 see: a chunk cut from the middle of a document still carries
        the document's title and its section heading (contextual chunk headers)."""
        return with_context(self.context, self.text)

    def to_source_dict(self, filename: str, filetype: str) -> dict[str, Any]:
        """What is stored in chunks.source_json and returned with every hit."""
        source: dict[str, Any] = {
            "doc_id": self.doc_id,
            "chunk_id": self.chunk_id,
            "filename": filename,
            "filetype": filetype,
            "chunk_index": self.chunk_index,
            "doc_type": self.doc_type.value,
            "section": self.section,
            "sensitivity_level": self.sensitivity_level.value,
            "redacted": self.redacted,
            "is_parent": self.is_parent,
        }
        if self.parent_chunk_id:
            source["parent_chunk_id"] = self.parent_chunk_id
        if self.context:
            source["context"] = self.context
        for key in ("page", "page_end", "slide", "sheet", "row", "row_end", "table"):
            value = getattr(self, key)
            if value is not None:
                source[key] = value
        return source
