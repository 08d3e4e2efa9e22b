"""Decide what a file really is from its bytes; the extension is only a hint for text flavours."""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

import filetype as _filetype

from ..errors import EmptyDocument, UnsupportedFileType

OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
TEXT_FLAVOURS = {".md": "md", ".markdown": "md", ".csv": "csv", ".tsv": "csv"}
LEGACY_NAMES = {  # suffix -> (what it is, what to save it as)
    ".doc": ("a legacy Word 97-2003 document (.doc)", "DOCX"),
    ".xls": ("a legacy Excel 97-2003 workbook (.xls)", "XLSX"),
    ".ppt": ("a legacy PowerPoint 97-2003 presentation (.ppt)", "PPTX"),
}
SUPPORTED = "PDF, DOCX, PPTX, PPTM, TXT, MD, CSV, XLSX, or PNG/JPEG/TIFF images"
# Images read with OCR, by their magic bytes (the name does not matter).
IMAGE_MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"II*\x00", "tiff"), (b"MM\x00*", "tiff"))


def sniff(data: bytes, filename: str) -> str:
    """Return one of pdf, docx, pptx, pptm, xlsx, txt, md, csv, png, jpeg, tiff; raise with a message naming the content."""
    suffix = PurePath(filename).suffix.lower()
    if not data or not data.strip():
        raise EmptyDocument(f"'{filename}' is empty: there is no text to index.")
    head = data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    for magic, kind in IMAGE_MAGIC:
        if data.startswith(magic):
            return kind
    if data.startswith(b"PK\x03\x04"):
        return _sniff_zip(data, filename)
    if data.startswith(OLE2_MAGIC):
        what, target = LEGACY_NAMES.get(suffix, ("a legacy Microsoft Office 97-2003 file (OLE2 format)", "DOCX, XLSX or PPTX"))
        raise UnsupportedFileType(f"'{filename}' is {what}, which EchoMind cannot read. Save it as {target} (or PDF) and upload again.")
    if _looks_binary(data):
        kind = _filetype.guess(data)
        what = f"{kind.mime} data (.{kind.extension})" if kind else "binary data, not text"
        raise UnsupportedFileType(f"'{filename}' contains {what}, whatever its name says. EchoMind reads {SUPPORTED}.")
    return TEXT_FLAVOURS.get(suffix, "txt")


def _looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with BOM is text
        return False
    if b"\x00" in sample:
        return True
    kind = _filetype.guess(sample)
    return kind is not None and not kind.mime.startswith("text/")


def _sniff_zip(data: bytes, filename: str) -> str:
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except zipfile.BadZipFile as exc:
        raise UnsupportedFileType(f"'{filename}' looks like a ZIP-based file (DOCX, PPTX, XLSX) but the archive is damaged or cut off; "
                                  "save it again from its application. Nothing was stored.") from exc
    if "word/document.xml" in names:
        return "docx"
    if "ppt/presentation.xml" in names:
        return "pptm" if any(n.startswith("ppt/vbaProject") for n in names) or filename.lower().endswith(".pptm") else "pptx"
    if "xl/workbook.xml" in names:
        return "xlsx"
    if "mimetype" in names:
        raise UnsupportedFileType(f"'{filename}' is an OpenDocument file (.odt/.ods/.odp). Save it as DOCX, XLSX or PPTX (or PDF) and upload again.")
    raise UnsupportedFileType(f"'{filename}' is a ZIP archive, not a document. Unpack it and upload the files inside ({SUPPORTED}).")
