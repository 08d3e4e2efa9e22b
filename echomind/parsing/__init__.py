"""File bytes to text with positions. ``parse_bytes`` is the one entry point; ``ParserProcess`` runs it
in a worker bounded in time and memory so a hostile file cannot hang or exhaust the app."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import EmptyDocument, FileTooLarge, UnsafeArchive
from .models import ParsedDocument, Segment
from .sniff import sniff

__all__ = ["Limits", "ParsedDocument", "Segment", "parse_bytes", "sniff"]


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 200 * 1024 * 1024
    max_uncompressed_bytes: int = 1024 * 1024 * 1024
    max_compression_ratio: int = 200
    max_archive_members: int = 10_000
    max_table_rows: int = 100_000  # CSV/XLSX rows per file; more is refused while reading, not after
    max_ocr_pages: int = 500  # pages (or TIFF frames) read with OCR per file, a few seconds each


def parse_bytes(data: bytes, filename: str, password: str | None = None, limits: Limits = Limits(),
                progress: Callable[[int, int], None] | None = None) -> ParsedDocument:
    """``progress(done, total)`` is called per page read with OCR (the only slow part of parsing)."""
    document = _dispatch(data, filename, password, limits, progress)
    if not document.text.strip():
        raise EmptyDocument(f"'{filename}' is a valid {document.filetype.upper()} file but contains no text to index.")
    return document


def _dispatch(data: bytes, filename: str, password: str | None, limits: Limits, progress) -> ParsedDocument:
    check_size(len(data), filename, limits)
    kind = sniff(data, filename)
    if kind in ("docx", "pptx", "pptm", "xlsx"):
        check_archive(data, filename, limits)
    if kind == "pdf":
        from .pdf import parse_pdf

        return parse_pdf(data, filename, password, progress, limits.max_ocr_pages)
    if kind in ("png", "jpeg", "tiff"):
        from .images import parse_image

        return parse_image(data, filename, kind, progress, limits.max_ocr_pages)
    if kind == "docx":
        from .office import parse_docx

        return parse_docx(data, filename)
    if kind in ("pptx", "pptm"):
        from .office import parse_pptx

        return parse_pptx(data, filename, kind)
    if kind == "xlsx":
        from .tables import parse_xlsx

        return parse_xlsx(data, filename, limits.max_table_rows)
    if kind == "csv":
        from .tables import parse_csv

        return parse_csv(data, filename, limits.max_table_rows)
    from .text import parse_markdown, parse_text

    return parse_markdown(data, filename) if kind == "md" else parse_text(data, filename)


def check_size(size: int, filename: str, limits: Limits) -> None:
    if size > limits.max_bytes:
        raise FileTooLarge(
            f"'{filename}' is {size / 2**20:.0f} MB; the upload limit is {limits.max_bytes / 2**20:.0f} MB "
            "(change it in Settings)."
        )


def check_archive(data: bytes, filename: str, limits: Limits) -> None:
    """Office files are ZIP archives: refuse ones that would expand past our bounds (zip bombs)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
    if len(infos) > limits.max_archive_members:
        raise UnsafeArchive(f"'{filename}' holds {len(infos)} parts, more than the {limits.max_archive_members} a real document has; refused as a possible zip bomb.")
    expanded = sum(i.file_size for i in infos)
    packed = max(1, sum(i.compress_size for i in infos))
    if expanded > limits.max_uncompressed_bytes:
        raise UnsafeArchive(
            f"'{filename}' would expand to {expanded / 2**20:.0f} MB (limit {limits.max_uncompressed_bytes / 2**20:.0f} MB); "
            "refused as a possible zip bomb."
        )
    if expanded > 20 * 2**20 and expanded / packed > limits.max_compression_ratio:
        raise UnsafeArchive(
            f"'{filename}' is compressed {expanded / packed:.0f}:1 (limit {limits.max_compression_ratio}:1); "
            "refused as a possible zip bomb."
        )
