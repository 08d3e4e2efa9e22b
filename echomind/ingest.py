"""Ingestion: bytes or text -> parse (bounded worker) -> chunk -> embed -> one SQLite transaction ->
the derived indexes. Mixed into Engine; it uses the engine's store, parser, embedder and indexes."""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .chunking import chunk_segments
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


def document_title(parsed: ParsedDocument, meta: dict[str, Any]) -> str | None:
    """A title worth repeating on every chunk: given, from front-matter or core properties, else none.
    PDF producers often write junk titles ("Microsoft Word - x.docx", "untitled"), which are skipped."""
    title = str(meta.get("title") or parsed.metadata.get("title") or "").strip()
    if not title or len(title) > 200 or re.search(r"(?i)^(untitled|microsoft \w+ - |document\d*$)|\.(docx?|pdf|pptx?)$", title):
        return None
    return title


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
        parsed = self.parser.parse(data, filename, password, self.limits)
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
        meta = {k: v for k, v in json.loads(doc["meta_json"]).items() if k != "warnings"}
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
            chunked = [chunk_segments(p.segments, d, p.tabular, title=document_title(p, m), redact_pii=self.config.redact_pii) for (_, p, _, _, m), d in zip(prepared, doc_ids)]
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
        chunked = chunk_segments(parsed.segments, doc_id, parsed.tabular, title=document_title(parsed, meta), redact_pii=self.config.redact_pii)
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

