"""CSV and XLSX through pandas: one record per row as ``column: value`` lines, sheet and row kept."""

from __future__ import annotations

import csv
import io

import pandas as pd

from ..errors import CorruptFile, EmptyDocument, FileTooLarge
from .models import ParsedDocument, Segment
from .text import decode_text


def _too_many_rows(filename: str, max_rows: int) -> FileTooLarge:
    return FileTooLarge(f"'{filename}' has more than {max_rows:,} rows, the limit per file (each row becomes a searchable record); "
                        "split it or raise the limit in Settings.")


def parse_csv(data: bytes, filename: str, max_rows: int = 100_000) -> ParsedDocument:
    text = decode_text(data, filename)
    try:
        dialect = csv.Sniffer().sniff(text[:65536], delimiters=",;\t|")
        sep = dialect.delimiter
    except csv.Error:
        sep = "\t" if filename.lower().endswith(".tsv") else ","
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, on_bad_lines="warn", nrows=max_rows + 1)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CorruptFile(f"'{filename}' is not a well-formed CSV file ({exc}).") from exc
    if len(frame) > max_rows:
        raise _too_many_rows(filename, max_rows)
    segments = _rows(frame, sheet=None)
    if not segments:
        raise EmptyDocument(f"'{filename}' has a header but no rows with values.")
    return ParsedDocument(filetype="csv", segments=segments, metadata={"rows": len(frame), "columns": list(map(str, frame.columns))}, tabular=True)


def parse_xlsx(data: bytes, filename: str, max_rows: int = 100_000) -> ParsedDocument:
    try:
        sheets = pd.read_excel(io.BytesIO(data), sheet_name=None, dtype=str, keep_default_na=False, engine="openpyxl", nrows=max_rows + 1)
    except (ValueError, KeyError, OSError) as exc:
        raise CorruptFile(f"'{filename}' is not a readable Excel workbook ({exc}).") from exc
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
