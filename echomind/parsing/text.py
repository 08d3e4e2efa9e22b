"""Plain text and Markdown: decode without mojibake, keep front-matter, heading structure and pipe tables."""

from __future__ import annotations

import itertools
import re
from typing import Iterator

import yaml
from charset_normalizer import from_bytes

from ..errors import EmptyDocument, NoExtractableText, UnsupportedFileType
from .models import ParsedDocument, Segment

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_DELIMITER_ROW = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(?:`{3,}|~{3,})")
_CAPTION = re.compile(r"^[ \t]*(?:[*_]{1,2}[ \t]*)?(?:table|tab\.)[ \t]*(?:[0-9]+|[IVXivx]+)?[ \t]*[:.\-]|^[ \t]*Table:"
                      r"|^[ \t]*(?:\*\*|__)[^*_\n]{3,200}(?:\*\*|__)[ \t]*$", re.I)  # "Table 2: ...", or a line in bold alone
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


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
    tables = itertools.count(1)
    for heading in _HEADING.finditer(text):
        _append(segments, text[start:heading.start()], section, tables)
        level = len(heading.group(1))
        path = path[: level - 1] + [heading.group(2).strip()]
        section = " > ".join(path)
        start = heading.start()
    _append(segments, text[start:], section, tables)
    if not segments:
        raise EmptyDocument(f"'{filename}' has no text besides its front-matter.")
    if "tags" in metadata and isinstance(metadata["tags"], str):
        metadata["tags"] = [t.strip() for t in re.split(r"[,\s]+", metadata["tags"]) if t.strip()]
    return ParsedDocument(filetype="md", segments=segments, metadata=metadata)


def _append(segments: list[Segment], text: str, section: str | None, tables: Iterator[int]) -> None:
    """The text under one heading: prose as one segment per stretch, each pipe table as one segment per row."""
    from .tables import caption_section, table_segments  # tables.py reads CSV through decode_text above

    blocks = list(markdown_blocks(text))
    for n, (prose, rows, caption) in enumerate(blocks):
        if rows is None:
            table_next = n + 1 < len(blocks) and blocks[n + 1][1] is not None
            if prose.strip() and not (table_next and _HEADING.fullmatch(prose.strip())):  # the heading is the rows' section
                segments.append(Segment(text=prose.strip(), section=section))
        else:
            segments.extend(table_segments(rows, next(tables), caption_section(section, caption)))


def split_cells(line: str) -> list[str]:
    """A GFM table line's cells: outer pipes optional, ``\\|`` is a pipe inside a cell (kept escaped)."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [cell.strip() for cell in _UNESCAPED_PIPE.split(line)]  # an escaped pipe stays escaped: not a column


def _is_table_start(lines: list[str], i: int) -> bool:
    """GFM: a header line with pipes, then a delimiter row (``|---|:--:|``) with as many cells."""
    if i + 1 >= len(lines) or "|" not in lines[i] or "|" not in lines[i + 1] or not _DELIMITER_ROW.match(lines[i + 1]):
        return False
    return len(split_cells(lines[i])) == len(split_cells(lines[i + 1]))


def markdown_blocks(text: str) -> Iterator[tuple[str, list[list[str]] | None, str | None]]:
    """Prose and pipe tables in order: ``(prose, None, None)`` or ``("", rows, caption)``. A table ends at
    a blank line or a line without a pipe; tables inside fenced code are code, not tables. The caption
    is a "Table 3: ..." or an all-bold line right before the table (or a pandoc "Table: ..." line right after it)."""
    lines = text.split("\n")
    prose_start, i, fenced = 0, 0, False
    while i < len(lines):
        if _FENCE.match(lines[i]):
            fenced = not fenced
        if fenced or not _is_table_start(lines, i):
            i += 1
            continue
        end = i + 2
        while end < len(lines) and lines[end].strip() and "|" in lines[end] and not _FENCE.match(lines[end]):
            end += 1
        caption = _caption_before(lines, prose_start, i) or _caption_after(lines, end)
        yield "\n".join(lines[prose_start:i]), None, None
        yield "", [split_cells(lines[i])] + [split_cells(line) for line in lines[i + 2:end]], caption
        prose_start = i = end
    yield "\n".join(lines[prose_start:]), None, None


def _caption_before(lines: list[str], lo: int, i: int) -> str | None:
    j = i - 1
    if j >= lo and not lines[j].strip():
        j -= 1  # one blank line between caption and table is allowed
    return _clean_caption(lines[j]) if j >= lo and _CAPTION.match(lines[j]) else None


def _caption_after(lines: list[str], end: int) -> str | None:
    j = end + 1 if end < len(lines) and not lines[end].strip() else end
    return _clean_caption(lines[j]) if j < len(lines) and re.match(r"^[ \t]*Table:", lines[j]) else None


def _clean_caption(line: str) -> str:
    text = re.sub(r"^[ \t]*Table:[ \t]*", "", line.strip())
    return text.replace("**", "").replace("__", "").strip(" *_") or line.strip()


def _plain(value):
    """YAML dates and other objects become JSON-safe values."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)
