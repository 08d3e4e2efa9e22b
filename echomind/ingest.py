"""Ingestion: bytes or text -> parse (bounded worker) -> chunk -> embed -> one SQLite transaction ->
the derived indexes. Mixed into Engine; it uses the engine's store, parser, embedder and indexes."""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable

import numpy as np

from .chunking import chunk_segments
from .chunking.sanitize import redact
from .errors import FileTooLarge, NotFound
from .parsing import ParsedDocument, Segment, check_size
from .private_files import write_private
from .store import utcnow

Progress = Callable[[str, float], None]


@dataclass
class IngestResult:
    status: str  # "indexed" | "replaced" | "duplicate"
    doc_id: str
    filename: str
    filetype: str = ""
    doc_type: str = ""
    sensitivity: str = ""
    chunks: int = 0
    parents: int = 0
    redactions: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    message: str = ""


# -- document identity: file name as words, a meaningful title, the document's own date -------------
# Every chunk is indexed with one header line, "2022 Q3 NVDA · NVIDIA CORPORATION Form 10-Q · October 30, 2022",
# so a chunk cut from the middle of a filing still says whose it is and which period it covers.

MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_DATE = re.compile(
    rf"(?P<md>\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d{{2}}\b)"  # July 1, 2023
    rf"|(?P<dm>\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\s+(?:19|20)\d{{2}}\b)"  # 1 July 2023
    r"|(?P<iso>\b(?:19|20)\d{2}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])\b)",  # 2023-07-01
    re.I,
)
_PERIOD = re.compile(r"(?i)\b(?:period|quarter|year|months|weeks)\s+ended\s*:?\s*$|\bas\s+of\s*:?\s*$")
_COMPACT_DATE = re.compile(r"(?<!\d)((?:19|20)\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?!\d)")
_QUARTER = re.compile(r"(?i)(?<![A-Za-z0-9])(?:((?:19|20)\d{2})[\s_.-]*Q([1-4])|Q([1-4])[\s_.-]*((?:19|20)\d{2}))(?![0-9])")
_QUARTER_END = {1: (3, 31), 2: (6, 30), 3: (9, 30), 4: (12, 31)}
_SEC_FORM = re.compile(r"\bFORM\s+(10-QT?|10-KT?|8-K|20-F|40-F|6-K|S-1|S-4|DEF 14A)\b", re.I)
_SEC_NAME = re.compile(r"(?i)^\(?exact name of (?:the )?registrant")
_JUNK_TITLE = re.compile(
    r"(?i)^(untitled|microsoft \w+ - |document\d*$|slide \d+$|page \d+$|title$|none$|unknown$|model$|(?:binder|book|presentation)\d*$"
    r"|(?:microsoft )?(?:word|powerpoint|excel) (?:document|presentation|worksheet)$)"
    r"|[«»^*<>{}|~]|:$"  # OCR debris, a form label
    r"|\.(docx?|pdf|pptx?|pptm|xlsx?|csv|txt|md|rtf|odt|html?)$"
    r"|^[\W\d_]*$"  # only digits and punctuation: EDGAR accession numbers (0000320193-23-000077), ids
)
HEADER_SEPARATOR = " · "
DERIVED_META = ("warnings", "doc_title", "doc_date", "doc_date_source")  # recomputed when a document is re-indexed


def filename_words(filename: str) -> str:
    """'2023 Q1 NVDA.pdf' -> '2023 Q1 NVDA'; 'annual_reportFinal-v2.docx' -> 'annual report Final v2'.
    Long digit or hex runs are ids, not words, and are dropped ('transcript_3f9a2c1d' -> 'transcript')."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", filename)
    stem = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[a-z]{2})(?=\d)", " ", stem)
    words = [w for w in re.split(r"[\s_.\-+()\[\]{},;]+", stem) if w]
    keep = [w for w in words if not (re.fullmatch(r"\d{5,}", w) and not _COMPACT_DATE.fullmatch(w))
            and not (len(w) >= 8 and re.fullmatch(r"[0-9a-f]+", w, re.I) and re.search(r"\d", w) and re.search(r"[a-f]", w, re.I))]
    return " ".join(keep)


def meaningful_title(value: Any, filename: str = "") -> str | None:
    """A title worth repeating on every chunk, or None for what producers write instead: accession
    numbers, 'untitled', 'Microsoft Word - x.docx', the file name again."""
    title = " ".join(str(value or "").split())
    if not title or len(title) > 200 or len(title) < 3 or _JUNK_TITLE.search(title):
        return None
    if filename and title.lower() in {filename.lower(), filename_words(filename).lower(), filename.rsplit(".", 1)[0].lower()}:
        return None
    return title


def first_page_text(parsed: ParsedDocument, limit: int = 4000) -> str:
    """Page 1 of a PDF, slide 1 of a deck, else the opening of the text: where a document states what it is."""
    segments = parsed.segments
    if segments and segments[0].page is not None:
        segments = [s for s in segments if s.page == segments[0].page]
    elif segments and segments[0].slide is not None:
        segments = [s for s in segments if s.slide == segments[0].slide]
    text = ""
    for s in segments:
        text += s.text + "\n"
        if len(text) >= limit:
            break
    return text[:limit]


def _title_from_text(parsed: ParsedDocument, filename: str) -> str | None:
    """An SEC filing names its registrant above '(Exact name of registrant ...)' and its form in
    capitals; other documents: the first heading (DOCX/Markdown) or the first line that reads like one."""
    text = first_page_text(parsed)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line]
    form = _SEC_FORM.search(text[:1500])
    for i, line in enumerate(lines):
        if _SEC_NAME.match(line) and i > 0:
            name = meaningful_title(lines[i - 1], filename)
            if name and not re.search(r"(?i)file number|\d{3}-\d{4}", name):
                return f"{name} Form {form.group(1).upper()}" if form else name
    headings = [s.text for s in parsed.segments[:20] if s.section and " ".join(s.text.split()) == s.section]
    for candidate in headings + lines[:6]:
        if len(candidate) <= 150 and len(re.findall(r"[A-Za-z]{2,}", candidate)) >= 2 \
                and sum(c.isalpha() for c in candidate) >= 0.6 * len(candidate.replace(" ", "")) \
                and not _DATE.fullmatch(candidate.strip()) and not (candidate.endswith(".") and len(candidate.split()) > 8) and not re.match(r"(?i)(arxiv|doi|https?:|www\.|copyright|©|page \d|header:|footer:|notes:)", candidate):
            return meaningful_title(candidate, filename)
    return None


def document_title(parsed: ParsedDocument, meta: dict[str, Any], filename: str = "") -> str | None:
    """Given, from front-matter or core properties, else what the first page says the document is."""
    for value in (meta.get("title"), parsed.metadata.get("title")):
        title = meaningful_title(value, filename)
        if title:
            return title
    return None if parsed.tabular else _title_from_text(parsed, filename)


def _date(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def parse_date(text: str) -> str | None:
    """One date written as people and producers write it -> ISO 'YYYY-MM-DD' (None if it is not one)."""
    text = str(text or "").strip()
    pdf = re.match(r"^D:((?:19|20)\d{2})(\d{2})(\d{2})", text)  # PDF CreationDate: D:20230804060209-04'00'
    if pdf:
        return _date(*map(int, pdf.groups()))
    iso = re.match(r"^((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})", text)
    if iso:
        return _date(*map(int, iso.groups()))
    found = _DATE.search(text)
    return _match_date(found) if found else None


def _match_date(found: re.Match) -> str | None:
    words = re.findall(r"[A-Za-z]+|\d+", found.group(0))
    if found.group("iso"):
        y, m, d = map(int, re.findall(r"\d+", found.group(0)))
        return _date(y, m, d)
    month = MONTHS.get(next(w for w in words if w[0].isalpha() and w.lower()[:3] in MONTHS).lower()[:3])
    numbers = [int(w) for w in words if w.isdigit()]
    day, year = (numbers[0], numbers[1]) if found.group("md") or found.group("dm") else (None, None)
    return _date(year, month, day) if day and year else None


def _quarter_end(year: str, quarter: str) -> str:
    month, day = _QUARTER_END[int(quarter)]
    return date(int(year), month, day).isoformat()


def document_date(parsed: ParsedDocument, meta: dict[str, Any], filename: str) -> tuple[str, str] | None:
    """The date the document is about, and where it was read. The document's own statement wins over
    the file's properties: a filing says 'for the quarterly period ended July 1, 2023' on page 1, a
    producer's CreationDate is when the PDF was written (weeks later, or years for a scan), and a
    quarter in a file name may be a fiscal quarter ('2023 Q3 AAPL' is the quarter ended July 1, 2023).
    Order: front-matter or given 'date' > 'period ended' / 'as of' on the first page > a date in the
    file name > a quarter in the file name (its last day) > the first date on the first page >
    creation date in the file's properties. None: the upload time stands in."""
    for source, label in ((parsed.metadata, "front-matter" if parsed.filetype == "md" else "document properties"), (meta, "given")):
        found = parse_date(source.get("date")) if source.get("date") else None
        if found:
            return found, label
    first = first_page_text(parsed)
    dates = list(_DATE.finditer(first))
    for found in dates:
        if _PERIOD.search(first[max(0, found.start() - 40) : found.start()]) and _match_date(found):
            return _match_date(found), "first page (period)"
    stem = filename.rsplit(".", 1)[0]
    named = _DATE.search(stem.replace("_", " "))
    compact = _COMPACT_DATE.search(stem)
    if named and _match_date(named):
        return _match_date(named), "file name"
    if compact and _date(*map(int, compact.groups())):
        return _date(*map(int, compact.groups())), "file name"
    quarter = _QUARTER.search(stem)
    if quarter:
        year, q = (quarter.group(1), quarter.group(2)) if quarter.group(1) else (quarter.group(4), quarter.group(3))
        return _quarter_end(year, q), "file name (quarter end)"
    for found in dates:
        if _match_date(found):
            return _match_date(found), "first page"
    for key in ("created", "creation_date", "modified"):
        found = parse_date(parsed.metadata.get(key)) if parsed.metadata.get(key) else None
        if found:
            return found, "file properties"
    return None


def identity_header(filename: str, title: str | None, doc_date: str | None) -> str:
    """'2022 Q3 NVDA · NVIDIA CORPORATION Form 10-Q · October 30, 2022': what every chunk is indexed
    with. The date is written in words, as questions and documents write it ("quarter ended October
    30, 2022"), so BM25 and the embedder both match it; meta_json keeps it as ISO."""
    spoken = ""
    if doc_date:
        day = date.fromisoformat(doc_date)
        spoken = f"{day:%B} {day.day}, {day.year}"
    parts = [filename_words(filename), title or "", spoken]
    return HEADER_SEPARATOR.join(dict.fromkeys(p for p in parts if p))


def identify(parsed: ParsedDocument, meta: dict[str, Any], filename: str, redact_pii: bool, infer: bool = True) -> tuple[str, dict[str, Any]]:
    """The header line for the chunker and what goes into the document's meta_json. A title read from
    the text is redacted like the text itself (it is indexed and shown as the chunk's context).
    ``infer=False`` (texts added by name: corpora, transcripts): their names are labels we made up and
    their first dates say nothing about them, so only the title and date given with them are used."""
    if not infer:
        title = meaningful_title(meta.get("title"))
        given = parse_date(str(meta["date"])) if meta.get("date") else None
        return identity_header("", title, given), {"doc_title": title} | ({"doc_date": given, "doc_date_source": "given"} if given else {})
    title = document_title(parsed, meta, filename)
    if title and redact_pii and title not in (meta.get("title"), parsed.metadata.get("title")):
        title = redact(title)[0]
    dated = document_date(parsed, meta, filename)
    info: dict[str, Any] = {"doc_title": title}
    if dated:
        info["doc_date"], info["doc_date_source"] = dated
    return identity_header(filename, title, dated[0] if dated else None), info


def safe_filename(name: str) -> str:
    """Keep the base name only, without control characters, at most 255 characters."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = re.sub(r"[\x00-\x1f\x7f]", "", base).strip().lstrip(".") or "untitled"
    if len(base) > 255:
        stem, dot, ext = base.rpartition(".")
        base = (stem[: 250 - len(ext)] + dot + ext) if dot and len(ext) <= 10 else base[:255]
    return base


class IngestMixin:
    # -- ingestion ------------------------------------------------------------------------------
    def ingest_bytes(self, filename: str, data: bytes, password: str | None = None, progress: Progress | None = None,
                     meta: dict[str, Any] | None = None, reindex: bool = False) -> IngestResult:
        """``reindex``: parse and index again even though the same bytes are stored (replaces them)."""
        progress = progress or (lambda stage, fraction: None)
        filename = safe_filename(filename)
        check_size(len(data), filename, self.limits)  # before hashing or copying a huge upload
        checksum = hashlib.sha256(data).hexdigest()
        existing = self.store.find_by_checksum(checksum)
        if existing is not None and not reindex:
            return self._duplicate(filename, existing)
        timings: dict[str, float] = {}
        t = time.perf_counter()
        progress("parse", 0.0)
        parsed = self.parser.parse(data, filename, password, self.limits, progress=lambda done, total: progress("parse", done / max(1, total)))  # OCR pages
        timings["parse"] = time.perf_counter() - t
        meta = dict(meta or {})
        if existing is not None:
            meta.setdefault("created_at", existing["created_at"])
        return self._ingest_parsed(filename, parsed, checksum, data, progress, timings, meta, replace_checksum=reindex)

    def _keep_original(self, doc_id: str, data: bytes) -> None:
        """The uploaded file itself, owner-only, so a document can be re-indexed later. Written before
        the document's transaction: a committed document always has its original; a file left by a
        crash before the commit belongs to no document and is removed at the next start."""
        write_private(self.files_dir / doc_id, data)

    def _remove_orphan_files(self) -> int:
        """Originals (and half-written temp files) that no committed document owns."""
        owned = self.store.document_ids()
        orphans = [p for p in self.files_dir.iterdir() if p.name not in owned]
        for path in orphans:
            path.unlink(missing_ok=True)
        return len(orphans)

    def reindex_document(self, doc_id: str, password: str | None = None) -> IngestResult:
        """Parse, chunk and embed a stored document again (after a chunker or model change)."""
        doc = self.store.get_document(doc_id)
        if doc is None:
            raise NotFound(f"No document with id {doc_id}.")
        path = self.files_dir / doc_id
        if not path.exists():
            raise NotFound(f"The original of '{doc['filename']}' is not stored, so it cannot be re-indexed; upload it again.")
        meta = {k: v for k, v in json.loads(doc["meta_json"]).items() if k not in DERIVED_META}
        if doc["filetype"] == "text":  # added as text (transcripts, notes)
            item = (doc["filename"], path.read_text("utf-8"), meta | {"created_at": doc["created_at"]})
            result = self.ingest_texts([item], reindex=True)[0]
        else:
            result = self.ingest_bytes(doc["filename"], path.read_bytes(), password=password, reindex=True)
        return result  # the replaced document's original went with it

    def ingest_text(self, filename: str, text: str, meta: dict[str, Any] | None = None) -> IngestResult:
        """Text that is already text (transcripts, notes): no parsing, same pipeline."""
        return self.ingest_texts([(filename, text, meta or {})])[0]

    def ingest_texts(self, items: list[tuple[str, str, dict[str, Any]]], progress: Progress | None = None, batch_docs: int = 64,
                     reindex: bool = False) -> list[IngestResult]:
        """Many texts at once (a corpus, an import): embedding runs over large batches across documents,
        still one transaction per document. Entries already stored are skipped as duplicates."""
        results: list[IngestResult] = []
        for start in range(0, len(items), batch_docs):
            if progress:
                progress("ingest", start / max(1, len(items)))
            prepared = []
            for filename, text, meta in items[start : start + batch_docs]:
                data = text.encode("utf-8")
                # a transcript that repeats a document's text is still its own record
                checksum = hashlib.sha256(f"{meta.get('type', '')}\x00".encode() + data if meta.get("type") else data).hexdigest()
                existing = self.store.find_by_checksum(checksum)
                if existing is not None and not reindex:
                    results.append(self._duplicate(filename, existing))
                    continue
                prepared.append((safe_filename(filename), ParsedDocument("text", [Segment(text=text.strip())]), checksum, data, dict(meta)))
            doc_ids = [uuid.uuid4().hex[:16] for _ in prepared]
            chunked = []
            for (name, parsed, _, _, meta), doc_id in zip(prepared, doc_ids):
                header, identity = identify(parsed, meta, name, self.config.redact_pii, infer=False)
                meta.update(identity)
                chunked.append(chunk_segments(parsed.segments, doc_id, parsed.tabular, title=header, redact_pii=self.config.redact_pii))
            for (name, *_), chunks in zip(prepared, chunked):
                self._check_chunk_count(name, len(chunks.embed_chunks))
            texts = [c.index_text for doc in chunked for c in doc.embed_chunks]
            vectors = self.embedder.embed(texts) if texts else np.zeros((0, self.embedder.dim), dtype=np.float32)
            offset = 0
            for (filename, parsed, checksum, data, meta), doc_id, chunks in zip(prepared, doc_ids, chunked):
                n = len(chunks.embed_chunks)
                results.append(self._commit(doc_id, filename, parsed, chunks, vectors[offset : offset + n], checksum, data, meta, {}, reindex))
                offset += n
        return results

    def _duplicate(self, filename: str, existing) -> IngestResult:
        return IngestResult("duplicate", existing["id"], filename, existing["filetype"], existing["doc_type"], existing["sensitivity"],
                            message=f"'{filename}' is identical to '{existing['filename']}', already indexed on {existing['created_at'][:10]}; nothing was added.")

    def _ingest_parsed(self, filename: str, parsed: ParsedDocument, checksum: str, data: bytes, progress: Progress,
                       timings: dict[str, float], meta: dict[str, Any], replace_checksum: bool = False) -> IngestResult:
        doc_id = uuid.uuid4().hex[:16]
        t = time.perf_counter()
        progress("chunk", 0.0)
        header, identity = identify(parsed, meta, filename, self.config.redact_pii)
        meta.update(identity)
        chunked = chunk_segments(parsed.segments, doc_id, parsed.tabular, title=header, redact_pii=self.config.redact_pii)
        timings["chunk"] = time.perf_counter() - t
        self._check_chunk_count(filename, len(chunked.embed_chunks))

        t = time.perf_counter()
        embed = chunked.embed_chunks
        parts = []
        step = max(1, self.config.embed_batch_size)
        for start in range(0, len(embed), step):
            progress("embed", start / max(1, len(embed)))
            parts.append(self.embedder.embed([c.index_text for c in embed[start : start + step]]))
        vectors = np.concatenate(parts) if parts else np.zeros((0, self.embedder.dim), dtype=np.float32)
        timings["embed"] = time.perf_counter() - t

        progress("index", 0.0)
        result = self._commit(doc_id, filename, parsed, chunked, vectors, checksum, data, meta, timings, replace_checksum)
        progress("done", 1.0)
        return result

    def _check_chunk_count(self, filename: str, count: int) -> None:
        limit = self.config.max_chunks_per_document
        if count > limit:
            raise FileTooLarge(f"'{filename}' would make {count:,} searchable chunks, more than the {limit:,} allowed per document "
                               "(embedding them would take a long time); split it or raise the limit in Settings.")

    def _commit(self, doc_id: str, filename: str, parsed: ParsedDocument, chunked, vectors: np.ndarray, checksum: str, data: bytes,
                meta: dict[str, Any], timings: dict[str, float], replace_checksum: bool = False) -> IngestResult:
        """One transaction for the document (replacing an older version of the same name, or with
        ``replace_checksum`` the same bytes being re-indexed); then the derived indexes follow."""
        t = time.perf_counter()
        embed = chunked.embed_chunks
        doc = {
            "id": doc_id, "filename": filename, "filetype": parsed.filetype, "checksum": checksum, "size_bytes": len(data),
            "created_at": meta.pop("created_at", None) or utcnow(), "doc_type": chunked.doc_type.value,
            "sensitivity": chunked.sensitivity.value, "redactions": sum(chunked.redactions.values()),
            "meta_json": json.dumps({**parsed.metadata, **meta, "warnings": parsed.warnings}),
        }
        with self._write:
            same = self.store.find_by_checksum(checksum)
            if same is not None and not replace_checksum:  # another session won the race
                return self._duplicate(filename, same)
            old = list(dict.fromkeys([r["id"] for r in self.store.find_by_filename(filename)] + ([same["id"]] if same is not None else [])))
            old_rowids = [rid for d in old for rid in self.store.embedded_rowids(d)]
            self._keep_original(doc_id, data)
            try:
                with self.store.atomic() as conn:
                    rowids = self.store.insert_document(conn, doc, chunked.chunks, vectors, replaces=old)
            except BaseException:
                (self.files_dir / doc_id).unlink(missing_ok=True)
                raise
            for replaced in old:
                (self.files_dir / replaced).unlink(missing_ok=True)
            generation = self.store.generation
            ids = [rowids[c.chunk_id] for c in embed]
            self.dense.remove(old_rowids)
            self.sparse.remove(old_rowids)
            self.dense.add(ids, vectors)
            self.sparse.add(ids, [c.index_text for c in embed])
            self.dense.generation = self.sparse.generation = generation
        timings["index"] = time.perf_counter() - t
        return IngestResult(
            "replaced" if old else "indexed", doc_id, filename, parsed.filetype, chunked.doc_type.value, chunked.sensitivity.value,
            chunks=len(embed), parents=len(chunked.chunks) - len(embed), redactions=dict(chunked.redactions),
            warnings=list(parsed.warnings), seconds=timings,
            message=f"Replaced the earlier version of '{filename}'." if old else "",
        )

