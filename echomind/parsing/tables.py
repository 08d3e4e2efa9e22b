"""Tables: CSV and XLSX through pandas, one record per row as ``column: value`` lines, sheet and row kept;
and ``table_segments``, which turns the rows of a table inside a document (DOCX, PPTX, Markdown, PDF)
into one segment per row that carries the table's number and header, so the chunker keeps rows whole."""

from __future__ import annotations

import csv
import io
import re
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import CorruptFile, EmptyDocument, FileTooLarge
from .models import ParsedDocument, Segment
from .text import decode_text

if TYPE_CHECKING:  # pandas is imported where CSV/XLSX are read, not for a DOCX's table rows
    import pandas as pd


def _too_many_rows(filename: str, max_rows: int) -> FileTooLarge:
    return FileTooLarge(f"'{filename}' has more than {max_rows:,} rows, the limit per file (each row becomes a searchable record); "
                        "split it or raise the limit in Settings.")


def parse_csv(data: bytes, filename: str, max_rows: int = 100_000) -> ParsedDocument:
    import pandas as pd

    text = decode_text(data, filename)
    try:
        dialect = csv.Sniffer().sniff(text[:65536], delimiters=",;\t|")
        sep = dialect.delimiter
    except csv.Error:
        sep = "\t" if filename.lower().endswith(".tsv") else ","
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, on_bad_lines="warn", nrows=max_rows + 1)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CorruptFile(f"'{filename}' is not a well-formed CSV file: {_csv_reason(exc)}; nothing was stored.") from None
    if len(frame) > max_rows:
        raise _too_many_rows(filename, max_rows)
    segments = _rows(frame, sheet=None)
    if not segments:
        raise EmptyDocument(f"'{filename}' has a header but no rows with values.")
    return ParsedDocument(filetype="csv", segments=segments, metadata={"rows": len(frame), "columns": list(map(str, frame.columns))}, tabular=True)


def _csv_reason(exc: Exception) -> str:
    """What went wrong, in the user's terms rather than the CSV reader's."""
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
    if fields:
        expected, line, saw = fields.groups()
        return f"line {line} has {saw} fields where the first rows have {expected}"
    if isinstance(exc, UnicodeDecodeError):
        return "it mixes text encodings"
    return "it has no columns" if "No columns" in str(exc) else "its rows could not be split into columns"


def parse_xlsx(data: bytes, filename: str, max_rows: int = 100_000) -> ParsedDocument:
    import pandas as pd

    try:
        sheets = pd.read_excel(io.BytesIO(data), sheet_name=None, dtype=str, keep_default_na=False, engine="openpyxl", nrows=max_rows + 1)
    except (ValueError, KeyError, OSError) as exc:
        raise CorruptFile(f"'{filename}' is not a readable Excel workbook: its sheets are missing or damaged; nothing was stored.") from None
    if sum(len(frame) for frame in sheets.values()) > max_rows:
        raise _too_many_rows(filename, max_rows)
    segments: list[Segment] = []
    for name, frame in sheets.items():
        segments.extend(_rows(frame, sheet=str(name)))
    if not segments:
        raise EmptyDocument(f"'{filename}' has no cells with values.")
    return ParsedDocument(filetype="xlsx", segments=segments, metadata={"sheets": list(map(str, sheets))}, tabular=True)


def _rows(frame: pd.DataFrame, sheet: str | None) -> list[Segment]:
    columns = [str(c).strip() for c in frame.columns]
    segments = []
    for number, values in enumerate(frame.itertuples(index=False, name=None), start=1):
        lines = [f"{col}: {str(val).strip()}" for col, val in zip(columns, values) if str(val).strip()]
        if lines:
            segments.append(Segment(text="\n".join(lines), sheet=sheet, row=number))
    return segments


LAYOUT_ROW_CHARS = 800  # rows typically longer than a chunk are prose laid out in a table, not records
MAX_HEADER_CHARS = 300


def row_text(cells: Sequence[str]) -> str:
    """A row as one line, cells joined by `` | ``; whitespace inside a cell is folded, empty trailing
    cells are dropped but inner ones kept, so a value stays under its column."""
    values = [" ".join(str(c).split()) for c in cells]
    while values and not values[-1]:
        values.pop()
    return " | ".join(values)


def table_segments(rows: Sequence[Sequence[str]], table: int, section: str | None = None, header_rows: int = 1,
                   **position: Any) -> list[Segment]:
    """One segment per body row of a document's table. The first ``header_rows`` rows are the header: they
    are not rows of their own but ride along in ``Segment.header`` and are repeated at the top of every
    chunk of the table. ``row`` counts body rows from 1; ``position`` is page/slide for every row.
    A table whose typical row is longer than a chunk is page layout, not data: it comes back as one plain
    segment, chunked by sentences like the text around it."""
    lines = [row_text(r) for r in rows]
    filled = sorted(len(line) for line in lines if line.replace("|", "").strip())
    if filled and filled[len(filled) // 2] > LAYOUT_ROW_CHARS:  # a table used for page layout: its cells are prose
        return [Segment(text="\n".join(line for line in lines if line.replace("|", "").strip()), section=section, **position)]
    header = " / ".join(h for h in lines[:header_rows] if h.replace("|", "").strip()) or None
    body = lines[header_rows:] if len(lines) > header_rows else lines  # a lone row is a row, not a header
    if body is lines or (header and len(header) > MAX_HEADER_CHARS):  # that long, the first row is content
        body, header = lines, None
    segments = [Segment(text=line, section=section, table=table, header=header, row=number, **position)
                for number, line in enumerate(body, start=1) if line.replace("|", "").strip()]
    if not segments and header:  # only the header row holds text: it is the table's one row
        segments = [Segment(text=header, section=section, table=table, row=1, **position)]
    return segments


def caption_section(section: str | None, caption: str | None) -> str | None:
    """A table's section: its caption under the heading it sits in (either alone when there is one)."""
    caption = " ".join(caption.split())[:200] if caption else None
    if section and caption and caption != section:
        return f"{section} > {caption}"
    return caption or section
