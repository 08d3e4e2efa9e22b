"""DOCX and PPTX/PPTM to text: paragraphs, tables, headers/footers, shapes, groups, charts and notes."""

from __future__ import annotations

import io
from typing import Iterable, Iterator

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from .models import ParsedDocument, Segment


def parse_docx(data: bytes, filename: str) -> ParsedDocument:
    document = docx.Document(io.BytesIO(data))
    segments: list[Segment] = []
    section: str | None = None
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = block.text.strip()
            if not text:
                continue
            style = (block.style.name if block.style is not None else "") or ""
            if style.startswith("Heading") or style == "Title":
                section = text[:200]
            segments.append(Segment(text=text, section=section))
        else:
            rows = list(_table_rows(block))
            if rows:
                segments.append(Segment(text="\n".join(rows), section=section))
    for label, parts in (("Header", _headers(document)), ("Footer", _footers(document))):
        lines = list(dict.fromkeys(p for p in parts if p))  # same header on every section: once
        if lines:
            segments.append(Segment(text=f"{label}: " + "\n".join(lines), section=label))
    meta = {}
    core = document.core_properties
    if core.title:
        meta["title"] = core.title
    if core.author:
        meta["author"] = core.author
    return ParsedDocument(filetype="docx", segments=segments, metadata=meta)


def _table_rows(table: Table) -> Iterator[str]:
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:  # a merged cell is returned once per grid column it spans
                continue
            seen.add(id(cell._tc))
            text = " ".join(p.text.strip() for p in cell.paragraphs if p.text.strip())
            if text:
                cells.append(text)
            for nested in cell.tables:
                yield from _table_rows(nested)
        if cells:
            yield " | ".join(cells)


def _paragraph_texts(blocks: Iterable) -> Iterator[str]:
    for block in blocks:
        if isinstance(block, Paragraph):
            if block.text.strip():
                yield block.text.strip()
        else:
            yield from _table_rows(block)


def _headers(document) -> Iterator[str]:
    for section in document.sections:
        for part in (section.first_page_header, section.header, section.even_page_header):
            if not part.is_linked_to_previous or part is section.header:
                yield from _paragraph_texts(part.iter_inner_content())


def _footers(document) -> Iterator[str]:
    for section in document.sections:
        for part in (section.first_page_footer, section.footer, section.even_page_footer):
            if not part.is_linked_to_previous or part is section.footer:
                yield from _paragraph_texts(part.iter_inner_content())


def parse_pptx(data: bytes, filename: str, filetype: str = "pptx") -> ParsedDocument:
    deck = Presentation(io.BytesIO(data))
    segments: list[Segment] = []
    for number, slide in enumerate(deck.slides, start=1):
        title = None
        if slide.shapes.title is not None and slide.shapes.title.has_text_frame:
            title = slide.shapes.title.text_frame.text.strip() or None
        lines = list(_shape_texts(slide.shapes))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                lines.append(f"Notes: {notes}")
        text = "\n".join(line for line in lines if line.strip()).replace("\x0b", "\n")  # soft line breaks
        if text.strip():
            segments.append(Segment(text=text, slide=number, section=title))
    return ParsedDocument(filetype=filetype, segments=segments, metadata={"slides": len(deck.slides)})


def _shape_texts(shapes) -> Iterator[str]:
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shape_texts(shape.shapes)
            continue
        if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            text = shape.text_frame.text.strip()
            if text:
                yield text
        if getattr(shape, "has_table", False) and shape.has_table:
            for row in shape.table.rows:
                cells = [c.text.strip() for c in row.cells if c.text.strip()]
                if cells:
                    yield " | ".join(cells)
        if getattr(shape, "has_chart", False) and shape.has_chart:
            yield from _chart_texts(shape.chart)


def _chart_texts(chart) -> Iterator[str]:
    """A chart's words live only in its XML: title, categories and series names."""
    if chart.has_title and chart.chart_title.has_text_frame:
        title = chart.chart_title.text_frame.text.strip()
        if title:
            yield f"Chart: {title}"
    try:
        plot = chart.plots[0]
        categories = [str(c) for c in plot.categories if str(c).strip()]
        if categories:
            yield "Categories: " + ", ".join(categories)
        for series in plot.series:
            values = ", ".join(f"{v:g}" if isinstance(v, (int, float)) else str(v) for v in series.values if v is not None)
            yield f"Series {series.name}: {values}" if values else f"Series {series.name}"
    except (IndexError, KeyError, ValueError, AttributeError):
        return
