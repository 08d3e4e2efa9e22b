"""Plain text and Markdown: decode without mojibake, keep front-matter and heading structure."""

from __future__ import annotations

import re

import yaml
from charset_normalizer import from_bytes

from ..errors import EmptyDocument, NoExtractableText, UnsupportedFileType
from .models import ParsedDocument, Segment

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def decode_text(data: bytes, filename: str) -> str:
    """UTF-8 first (with or without BOM); otherwise let charset-normalizer pick the encoding."""
    for encoding in ("utf-8-sig",):
        try:
            return _normalise(data.decode(encoding))
        except UnicodeDecodeError:
            pass
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _normalise(data.decode("utf-16"))
    matches = list(from_bytes(data))
    if not matches:
        raise UnsupportedFileType(f"'{filename}' is not readable text in any encoding we recognise.")
    # On short texts several single-byte encodings decode with no "chaos"; Windows-1252 is then by far
    # the most likely (cp1250 would turn "crème" into "crčme").
    calm = [m for m in matches if m.chaos <= matches[0].chaos + 0.01]
    western = [m for m in calm if m.encoding in ("cp1252", "latin_1", "iso8859_15")]
    return _normalise(data.decode("cp1252", errors="replace") if western else str(matches[0]))


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


_ENCODED_RUN = re.compile(r"[A-Za-z0-9+/=_\-]{80,}")


def check_readable(text: str, filename: str) -> None:
    """Base64, hex dumps and minified blobs are text to a decoder but not to a reader (or to search):
    when unbroken runs of 80+ such characters make up most of it, it is refused instead of indexed."""
    sample = text[: 2**20]
    encoded = sum(len(m) for m in _ENCODED_RUN.findall(sample))
    if sample and encoded / len(sample) > 0.5:
        raise NoExtractableText(f"'{filename}' looks like encoded or binary data (e.g. base64), not readable text; nothing was indexed.")


def parse_text(data: bytes, filename: str) -> ParsedDocument:
    text = decode_text(data, filename).strip()
    if not text:
        raise EmptyDocument(f"'{filename}' contains only whitespace: there is no text to index.")
    check_readable(text, filename)
    return ParsedDocument(filetype="txt", segments=[Segment(text=text)])


def parse_markdown(data: bytes, filename: str) -> ParsedDocument:
    """Front-matter becomes document metadata; each heading becomes the section of the text under it."""
    text = decode_text(data, filename)
    check_readable(text, filename)
    metadata: dict = {}
    match = _FRONT_MATTER.match(text)
    if match:
        try:
            loaded = yaml.safe_load(match.group(1))
            if isinstance(loaded, dict):
                metadata = {str(k): _plain(v) for k, v in loaded.items()}
                text = text[match.end():]
        except yaml.YAMLError:
            pass  # not front-matter after all: keep it as text
    segments: list[Segment] = []
    path: list[str] = []
    start, section = 0, None
    for heading in _HEADING.finditer(text):
        _append(segments, text[start:heading.start()], section)
        level = len(heading.group(1))
        path = path[: level - 1] + [heading.group(2).strip()]
        section = " > ".join(path)
        start = heading.start()
    _append(segments, text[start:], section)
    if not segments:
        raise EmptyDocument(f"'{filename}' has no text besides its front-matter.")
    if "tags" in metadata and isinstance(metadata["tags"], str):
        metadata["tags"] = [t.strip() for t in re.split(r"[,\s]+", metadata["tags"]) if t.strip()]
    return ParsedDocument(filetype="md", segments=segments, metadata=metadata)


def _append(segments: list[Segment], text: str, section: str | None) -> None:
    text = text.strip()
    if text:
        segments.append(Segment(text=text, section=section))


def _plain(value):
    """YAML dates and other objects become JSON-safe values."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)
