"""PDF pages to text with pypdf; page numbers are kept for citations."""

from __future__ import annotations

import io
import re

import pypdf
from pypdf.errors import FileNotDecryptedError, LimitReachedError, PdfReadError

from ..errors import CorruptFile, NoExtractableText, PasswordRequired
from .models import ParsedDocument, Segment

# pypdf's defaults (75 MB per stream) reject some legitimate large filings; the parser already runs
# in a worker process bounded in memory and time, so those bounds protect us instead.
_RAISED_LIMITS = {
    name: 1_000_000_000
    for name in (
        "maximum_declared_stream_length",
        "array_based_stream_maximum_output_length",
        "lzw_maximum_output_length",
        "run_length_maximum_output_length",
        "zlib_maximum_output_length",
        "image_maximum_buffer_size",
        "stream_decoding_work_maximum_length",
    )
}
_WORDISH = re.compile(r"[^\W\d_]{2,}")
_MIN_TEXT_CHARS = 2
# Typographic ligatures (U+FB00-FB06) would hide "fi" in "misﬁts" from keyword search.
LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})


def parse_pdf(data: bytes, filename: str, password: str | None = None) -> ParsedDocument:
    with pypdf.apply_configuration(**_RAISED_LIMITS):
        reader = _open(data, filename, password)
        try:
            pages = reader.pages
            count = len(pages)
        except (PdfReadError, LimitReachedError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptFile(f"'{filename}' is a damaged PDF: its page tree cannot be read ({exc}). Re-export or print it to a new PDF and upload that.") from exc
        segments: list[Segment] = []
        warnings: list[str] = []
        for number in range(1, count + 1):
            try:
                text = pages[number - 1].extract_text() or ""
            except Exception as exc:  # pypdf raises many kinds on damaged pages; one bad page must not lose the rest
                warnings.append(f"page {number}: text could not be extracted ({type(exc).__name__})")
                continue
            text = _clean(text)
            if text.strip():
                segments.append(Segment(text=text, page=number))
        metadata = _metadata(reader, count)
    body = " ".join(s.text for s in segments)
    if len(body.strip()) < _MIN_TEXT_CHARS or not _WORDISH.search(body):
        raise NoExtractableText(
            f"'{filename}' has no extractable text (scanned?): its {count} page(s) look like images. "
            "Run OCR on it first (for example with OCRmyPDF) and upload the result."
        )
    return ParsedDocument(filetype="pdf", segments=segments, metadata=metadata, warnings=warnings)


def _open(data: bytes, filename: str, password: str | None) -> pypdf.PdfReader:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
    except (PdfReadError, LimitReachedError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise CorruptFile(f"'{filename}' is not a readable PDF ({exc}). It may be truncated or damaged.") from exc
    if not reader.is_encrypted:
        return reader
    try:
        if reader.decrypt("") or (password is not None and reader.decrypt(password)):
            return reader
    except (FileNotDecryptedError, NotImplementedError, PdfReadError) as exc:
        raise CorruptFile(f"'{filename}' is encrypted in a way that cannot be opened here ({exc}).") from exc
    if password:
        raise PasswordRequired(f"The password given for '{filename}' is wrong. Try again.", wrong_password=True)
    raise PasswordRequired(f"'{filename}' is password protected: a password is required to open it.")


def _clean(text: str) -> str:
    text = text.translate(LIGATURES).replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"[ \t]+\n", "\n", text).strip()


def _metadata(reader: pypdf.PdfReader, pages: int) -> dict:
    meta: dict = {"pages": pages}
    try:
        info = reader.metadata or {}
        for key, name in (("/Title", "title"), ("/Author", "author"), ("/Subject", "subject")):
            value = info.get(key)
            if value and str(value).strip():
                meta[name] = str(value).strip()
    except Exception:  # unreadable metadata must not reject a readable document
        pass
    return meta
