"""DOCX and PPTX/PPTM to text: paragraphs, tables (one segment per row), headers/footers, shapes, groups,
charts and notes. When python-docx or python-pptx cannot make sense of a part (a malformed merged-cell
table, a damaged slide), its text is still read from the XML runs and a warning says the layout was lost;
a library's exception text is never the user's message."""

from __future__ import annotations

import io
import re
import zipfile
from typing import Iterable, Iterator

import docx
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from ..errors import CorruptFile, EchoMindError
from .models import ParsedDocument, Segment
from .tables import caption_section, row_text, table_segments

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_CAPTION_TEXT = re.compile(r"^(?:table|tab\.)\s*(?:\d+|[IVX]+)\b", re.I)
_TRS = etree.XPath("./w:tr | ./w:sdt/w:sdtContent/w:tr", namespaces={"w": W})
_TCS = etree.XPath("./w:tc | ./w:sdt/w:sdtContent/w:tc", namespaces={"w": W})
_A_TRS = etree.XPath(".//a:tbl/a:tr", namespaces={"a": A})
_A_TCS = etree.XPath("./a:tc", namespaces={"a": A})
_XML = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)


def _library_failure(exc: BaseException) -> bool:
    """A parsing library's own failure (to be handled here), not ours or the machine's."""
    return isinstance(exc, Exception) and not isinstance(exc, (EchoMindError, MemoryError))


# --------------------------------------------------------------------------------------------- DOCX


def parse_docx(data: bytes, filename: str) -> ParsedDocument:
    """python-docx for structure (headings, tables, headers); the raw text runs when it cannot cope."""
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        if not _library_failure(exc):
            raise
        return _docx_from_xml(data, filename, "its structure could not be read")
    try:
        parsed = _docx_structured(document, filename)
    except Exception as exc:
        if not _library_failure(exc):
            raise
        return _docx_from_xml(data, filename, "its layout could not be read")
    if not any(s.text.strip() for s in parsed.segments):  # all its words in content controls or text boxes
        fallback = _docx_from_xml(data, filename, "its text sits only in content controls or text boxes")
        if fallback.segments:
            return fallback
    return parsed


def _docx_structured(document, filename: str) -> ParsedDocument:
    segments: list[Segment] = []
    warnings: list[str] = []
    section: str | None = None
    blocks = list(document.iter_inner_content())
    tables = 0
    for n, block in enumerate(blocks):
        if isinstance(block, Paragraph):
            text = block.text.strip()
            if not text:
                continue
            style = _style(block)
            if style.startswith("Heading") or style == "Title":
                section = text[:200]
            segments.append(Segment(text=text, section=section))
            continue
        tables += 1
        caption = _caption(blocks, n)
        try:
            rows, header_rows = _table_cells(block), _header_rows(block)
        except Exception as exc:
            if not _library_failure(exc):
                raise
            warnings.append(f"'{filename}': the merged cells of table {tables} could not be read (its layout is malformed); "
                            "its rows are indexed with the text each cell holds.")
            rows, header_rows = _xml_table_cells(block._tbl), 1
        segments.extend(table_segments(rows, tables, caption_section(section, caption), header_rows))
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
    return ParsedDocument(filetype="docx", segments=segments, metadata=meta, warnings=warnings)


def _style(paragraph: Paragraph) -> str:
    return (paragraph.style.name if paragraph.style is not None else "") or ""


def _caption(blocks: list, n: int) -> str | None:
    """The table's caption: a "Caption"-styled paragraph (or one reading "Table 3 ...") just before it,
    or a "Caption"-styled one just after it."""
    before = next((b for b in reversed(blocks[:n]) if not (isinstance(b, Paragraph) and not b.text.strip())), None)
    if isinstance(before, Paragraph) and (_style(before) == "Caption" or _CAPTION_TEXT.match(before.text.strip())):
        return before.text.strip()
    after = next((b for b in blocks[n + 1:] if not (isinstance(b, Paragraph) and not b.text.strip())), None)
    if isinstance(after, Paragraph) and _style(after) == "Caption":
        return after.text.strip()
    return None


def _table_cells(table: Table) -> list[list[str]]:
    """Each row's cells. A horizontally merged cell is returned by python-docx once per grid column it
    spans: it is kept once. A vertically merged cell is given in every row it covers, since a row is
    read as a record. A nested table's rows are folded into its cell."""
    rows = []
    for row in table.rows:
        cells, previous = [], None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            parts = [p.text.strip() for p in cell.paragraphs if p.text.strip()]
            parts += ["; ".join(row_text(r) for r in _table_cells(nested) if row_text(r)) for nested in cell.tables]
            cells.append(" ".join(p for p in parts if p))
        rows.append(cells)
    return rows


def _header_rows(table: Table) -> int:
    """Rows marked "repeat as header row" in Word are the header; otherwise the first row is."""
    count = 0
    for row in table.rows:
        tr_pr = row._tr.trPr
        flag = tr_pr.find(qn("w:tblHeader")) if tr_pr is not None else None
        if flag is None or flag.get(qn("w:val"), "true").lower() in ("0", "false", "off"):
            break
        count += 1
    return count or 1


def _paragraph_texts(blocks: Iterable) -> Iterator[str]:
    for block in blocks:
        if isinstance(block, Paragraph):
            if block.text.strip():
                yield block.text.strip()
        else:
            try:
                rows = _table_cells(block)
            except Exception as exc:
                if not _library_failure(exc):
                    raise
                rows = _xml_table_cells(block._tbl)  # a malformed table in a header: its text, unmerged
            yield from (line for line in map(row_text, rows) if line)


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


def _docx_from_xml(data: bytes, filename: str, reason: str) -> ParsedDocument:
    """Last resort: the text runs (w:t) of the main document part, one line per paragraph (w:p), in
    document order. Headings, tables and headers are lost, the words are not."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            root = etree.fromstring(archive.read(_main_part(archive)), _XML)
    except (KeyError, zipfile.BadZipFile, etree.XMLSyntaxError, ValueError):
        raise CorruptFile(f"'{filename}' is not a readable Word document: its main text part is missing or damaged; nothing was stored.") from None
    lines = _xml_paragraphs(root)
    warning = f"'{filename}': {reason} (a damaged or unusual Word file); its text was indexed as plain paragraphs, without headings or tables."
    return ParsedDocument(filetype="docx", segments=[Segment(text="\n".join(lines))] if lines else [], warnings=[warning])


def _main_part(archive: zipfile.ZipFile) -> str:
    """The document part named by the package relationships (word/document.xml in practice)."""
    try:
        rels = etree.fromstring(archive.read("_rels/.rels"), _XML)
        for rel in rels:
            if str(rel.get("Type", "")).endswith("/officeDocument"):
                return str(rel.get("Target")).lstrip("/")
    except (KeyError, etree.XMLSyntaxError):
        pass
    return "word/document.xml"


def _xml_table_cells(tbl) -> list[list[str]]:
    """A table's rows read from its XML alone: each w:tc's text runs, no merge resolution (a cell that
    continues a vertical merge is empty). Used when python-docx cannot lay the table out."""
    return [[" ".join(_xml_paragraphs(tc)) for tc in _TCS(row)] for row in _TRS(tbl)]


def _xml_paragraphs(root, namespace: str = W) -> list[str]:
    """Text of each paragraph under ``root`` in document order. Text of a paragraph nested in another
    (a text box) belongs to the inner one; the fallback copy of alternate content is skipped."""
    p_tag, t_tag = f"{{{namespace}}}p", f"{{{namespace}}}t"
    texts: dict = {}
    for t in root.iter(t_tag):
        if any(a.tag == MC_FALLBACK for a in t.iterancestors()):
            continue
        paragraph = next(t.iterancestors(p_tag), None)
        texts.setdefault(paragraph, []).append(t.text or "")
    lines = (" ".join("".join(texts.get(p, [])).split()) for p in root.iter(p_tag))
    return [line for line in lines if line]


# --------------------------------------------------------------------------------------------- PPTX


def parse_pptx(data: bytes, filename: str, filetype: str = "pptx") -> ParsedDocument:
    """Slide by slide; a slide python-pptx cannot read keeps its text runs, a deck it cannot open is refused."""
    try:
        deck = Presentation(io.BytesIO(data))
        slides = list(deck.slides)
    except Exception as exc:
        if not _library_failure(exc):
            raise
        raise CorruptFile(f"'{filename}' is not a readable PowerPoint file: its presentation or slide parts are missing or damaged; "
                          "nothing was stored.") from None
    segments: list[Segment] = []
    warnings: list[str] = []
    tables = _TableCounter()
    for number, slide in enumerate(slides, start=1):
        mark = tables.value
        unmerged: list[int] = []
        try:
            segments.extend(_slide_segments(slide, number, tables, unmerged))
            if unmerged:
                warnings.append(f"'{filename}': the merged cells of a table on slide {number} could not be read (its layout is malformed); "
                                "its rows are indexed with the text each cell holds.")
        except Exception as exc:
            if not _library_failure(exc):
                raise
            tables.value = mark
            warnings.append(f"'{filename}': the layout of slide {number} could not be read; its text is indexed as plain lines.")
            lines = _xml_paragraphs(slide._element, A)
            if lines:
                segments.append(Segment(text="\n".join(lines), slide=number))
    return ParsedDocument(filetype=filetype, segments=segments, metadata={"slides": len(slides)}, warnings=warnings)


class _TableCounter:
    """The deck's running table number (rolled back when a slide falls back to plain text)."""

    def __init__(self) -> None:
        self.value = 0

    def next(self) -> int:
        self.value += 1
        return self.value


def _slide_segments(slide, number: int, tables: _TableCounter, unmerged: list[int]) -> list[Segment]:
    """The slide's text as one segment per stretch between tables, each table as one segment per row."""
    title = None
    if slide.shapes.title is not None and slide.shapes.title.has_text_frame:
        title = slide.shapes.title.text_frame.text.strip() or None
    segments: list[Segment] = []
    lines: list[str] = []

    def flush() -> None:
        text = "\n".join(line for line in lines if line.strip()).replace("\x0b", "\n")  # soft line breaks
        if text.strip():
            segments.append(Segment(text=text, slide=number, section=title))
        lines.clear()

    for item in _shape_items(slide.shapes, unmerged):
        if isinstance(item, str):
            lines.append(item)
        else:
            flush()
            segments.extend(table_segments(item, tables.next(), title, slide=number))
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = slide.notes_slide.notes_text_frame.text.strip()
        if notes:
            lines.append(f"Notes: {notes}")
    flush()
    return segments


def _shape_items(shapes, unmerged: list[int]) -> Iterator[str | list[list[str]]]:
    """Text lines of the shapes in order; a table comes as its rows of cells (read from its XML, merges
    ignored, when python-pptx cannot lay it out: ``unmerged`` then records it)."""
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shape_items(shape.shapes, unmerged)
            continue
        if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            text = shape.text_frame.text.strip()
            if text:
                yield text
        if getattr(shape, "has_table", False) and shape.has_table:
            try:
                rows = _pptx_table_cells(shape.table)
            except Exception as exc:
                if not _library_failure(exc):
                    raise
                unmerged.append(1)
                rows = [[" ".join(_xml_paragraphs(tc, A)) for tc in _A_TCS(tr)] for tr in _A_TRS(shape._element)]
            if any(any(c.strip() for c in row) for row in rows):
                yield rows
        if getattr(shape, "has_chart", False) and shape.has_chart:
            yield from _chart_texts(shape.chart)


def _pptx_table_cells(table) -> list[list[str]]:
    """Rows of cells: a horizontally merged cell once, a vertically merged one in every row it covers."""
    rows: list[list[str]] = []
    above: dict[int, str] = {}
    for row in table.rows:
        cells = []
        for col, cell in enumerate(row.cells):
            tc = cell._tc
            if tc.hMerge:
                continue
            text = above.get(col, "") if tc.vMerge else cell.text.replace("\x0b", " ").strip()
            above[col] = text
            cells.append(text)
        rows.append(cells)
    return rows


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
