"""What a parser returns: the document's text as ordered segments that remember where they came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Segment:
    """A run of text with its position: page for PDFs, slide for decks, sheet/row for tables,
    section for Markdown and DOCX headings. Citations are built from these."""

    text: str
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    row: int | None = None
    section: str | None = None
    # A row of a table inside a document (DOCX, PPTX, Markdown, PDF): rows of one table share ``table``
    # (its number in the document) and ``header`` (the header row as text), so the chunker can keep rows
    # whole and repeat the header at the top of every chunk; a caption goes in ``section``.
    table: int | None = None
    header: str | None = None

    def position(self) -> dict[str, Any]:
        return {k: v for k, v in (("page", self.page), ("slide", self.slide), ("sheet", self.sheet), ("row", self.row)) if v is not None}


@dataclass
class ParsedDocument:
    filetype: str  # pdf | docx | pptx | pptm | txt | md | csv | xlsx
    segments: list[Segment]
    metadata: dict[str, Any] = field(default_factory=dict)
    tabular: bool = False  # rows are records: never split one
    warnings: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.segments)

    @property
    def char_count(self) -> int:
        return sum(len(s.text) for s in self.segments)
