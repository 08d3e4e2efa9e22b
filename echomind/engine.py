"""The facade the UI and CLI call: ingest, delete, search, documents, index upkeep.

Writes go through one lock (a single writer path); the slow parts (parsing in a worker process,
embedding) run outside it. SQLite commits first, then the in-memory indexes follow, so a crash
at any point leaves SQLite whole and the indexes rebuildable.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any, Callable

import numpy as np

from .answer import Answer, start_turn, updated_summary
from .chats import ChatLog
from .errors import NotFound
from .ingest import IngestMixin, IngestResult, safe_filename  # noqa: F401 (re-exported)
from .index.dense import DenseIndex
from .index.sparse import SparseIndex
from .lab import Lab
from .parsing import Limits
from .parsing.sandbox import ParserProcess
from .prompts import TAGS as TAGS_PROMPT
from .prompts import keyword_tags, parse_tags, quoted
from .providers import Embedder, make_embedder
from .providers.llm import LLM, complete, make_llm
from .retrieval import Retrieval, retrieve
from .search import SearchResult, hybrid_search
from .settings import AppConfig, RetrievalSettings
from .store import Store
from .transcripts import TranscriptBook
from .turns import Busy, RunningTurn, TurnBoard

Progress = Callable[[str, float], None]


class Engine(IngestMixin):
    def __init__(self, config: AppConfig | None = None, embedder: Embedder | None = None, llm: "LLM | None | str" = "from-config"):
        self.config = config or AppConfig()
        self._llm = llm  # "from-config": chosen lazily by make_llm on first use
        self.config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.config.index_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.files_dir = self.config.data_dir / "files"
        self.files_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.store = Store(self.config.db_path)
        self.embedder = embedder or make_embedder(self.config)
        self.parser = ParserProcess(self.config.parse_timeout_s, self.config.parse_memory_mb)
        self.limits = self._limits()
        self._write = threading.RLock()
        self.notices: list[str] = []
        if self.config.data_dir.stat().st_mode & 0o077:
            self.notices.append(f"{self.config.data_dir} can be read by other users of this computer; `chmod 700` it to keep your documents private.")
        self._reembed_if_model_changed()
        self._remove_orphan_files()
        self._saved_generation: tuple[int, int] | None = None  # of the index files on disk
        self.dense, self.sparse = self._load_or_rebuild()
        self.chats = ChatLog(self.store)
        self.transcripts = TranscriptBook(self)
        self.lab = Lab(self)
        self.turns = TurnBoard()
        atexit.register(self.close)

    def _limits(self) -> Limits:
        return Limits(max_bytes=self.config.max_upload_mb * 2**20, max_uncompressed_bytes=self.config.max_uncompressed_mb * 2**20,
                      max_compression_ratio=self.config.max_compression_ratio, max_table_rows=self.config.max_table_rows)

    def reconfigure(self) -> None:
        """Apply a changed config (Settings page): limits and the LLM; an embedder change needs a new Engine."""
        self.limits = self._limits()
        self._llm = "from-config"

    # -- language model and answers -------------------------------------------------------------
    @property
    def llm(self) -> "LLM | None":
        if isinstance(self._llm, str):
            self._llm = make_llm(self.config)
        return self._llm

    def use_llm(self, backend: str | None = None, llm: "LLM | None | str" = "from-config") -> "LLM | None":
        """Switch backends (Settings page): a given instance, or what the config (or ``backend``) selects."""
        if backend is not None:
            self.config.llm_backend = backend
        self._llm = llm
        return self.llm

    def retrieve(self, question: str, settings: RetrievalSettings | None = None, chat_id: str | None = None) -> Retrieval:
        history, summary = [], ""
        if chat_id:
            history = [{"role": m["role"], "content": m["content"], "meta": m["meta"]} for m in self.chats.messages(chat_id, limit=10)]
            summary = self.chats.get(chat_id)["conversation_summary"]
        return retrieve(self, question, settings or RetrievalSettings(), self.llm, history, summary, self.config.llm_timeout_s)

    def ask(self, chat_id: str, message: str, settings: RetrievalSettings | None = None, status: Callable[[str], None] | None = None) -> Answer:
        """Start a turn: the user's message is stored at once; iterate ``answer.stream()`` for the text.
        ``status`` hears each stage as it starts (searching, reading N passages, writing)."""
        return start_turn(self, chat_id, message, settings or RetrievalSettings(), self.llm, status)

    def start_turn(self, chat_id: str, message: str, settings: RetrievalSettings | None = None) -> RunningTurn:
        """Answer in the background: the user's message is stored before this returns, the answer when
        the turn ends (or is stopped, or fails). Poll ``running_turn(chat_id)`` for its stage and text."""
        self.chats.get(chat_id)
        current = self.turns.get(chat_id)
        if current is not None and current.running:
            raise Busy("This chat is still answering the previous question; wait for it or press Stop.")
        self.chats.add_message(chat_id, "user", message)
        settings = settings or RetrievalSettings()

        def begin(status: Callable[[str], None]) -> Answer:
            return start_turn(self, chat_id, message, settings, self.llm, status, question_stored=True)

        def failed(reply: str) -> None:
            self.chats.add_message(chat_id, "assistant", reply, {"path": "error", "error": reply})

        return self.turns.start(chat_id, message, begin, failed)

    def answerer_label(self) -> str:
        """What answers in the Chat, in words (with "auto", what auto chose)."""
        llm = self.llm
        name = llm.name if llm is not None else "extractive answers (cited sentences from your documents, no LLM)"
        if llm is not None and getattr(llm, "local_small", False):
            name += " choosing among cited sentences"
        return f"auto → {name}" if self.config.llm_backend == "auto" else name

    def counts(self) -> dict[str, int]:
        return self.store.counts()

    def running_turn(self, chat_id: str) -> RunningTurn | None:
        """The chat's latest background turn (running or just finished), if any."""
        return self.turns.get(chat_id)

    def update_summary(self, chat_id: str, question: str, answer: str) -> str:
        summary = updated_summary(self.llm, self.chats.get(chat_id)["conversation_summary"], question, answer, self.config.llm_timeout_s)
        self.chats.set_summary(chat_id, summary)
        return summary

    def suggest_tags(self, text: str) -> list[str]:
        """3-6 topic tags from the LLM, or the most frequent content words without one."""
        if self.llm is not None:
            try:
                tags = parse_tags(complete(self.llm, [{"role": "user", "content": TAGS_PROMPT.format(text=quoted(text[:3000]))}], max_tokens=40,
                                           timeout_s=self.config.llm_timeout_s))
                if len(tags) >= 3:
                    return tags[:6]
            except Exception:
                pass
        return keyword_tags(text)

    # -- derived indexes ------------------------------------------------------------------------
    @property
    def _dense_path(self):
        return self.config.index_dir / "dense.faiss"

    @property
    def _sparse_path(self):
        return self.config.index_dir / f"sparse-{self.config.bm25_variant}.pkl"

    def _load_or_rebuild(self) -> tuple[DenseIndex, SparseIndex]:
        generation = self.store.generation
        dense = sparse = None
        try:
            candidate = DenseIndex.load(self._dense_path)
            if candidate.generation == generation and candidate.dim == self.embedder.dim:
                dense = candidate
        except (OSError, ValueError, KeyError, RuntimeError):
            pass
        try:
            candidate = SparseIndex.load(self._sparse_path)
            if candidate.generation == generation and candidate.variant_name == self.config.bm25_variant:
                sparse = candidate
        except (OSError, ValueError, KeyError, EOFError, AttributeError, ImportError):
            pass
        self.index_source = "loaded" if dense is not None and sparse is not None else "rebuilt"
        if self.index_source == "loaded":
            self._saved_generation = (dense.generation, sparse.generation)
        if dense is None or sparse is None:
            rebuilt_dense, rebuilt_sparse = self._build_from_store(need_dense=dense is None, need_sparse=sparse is None)
            dense = dense or rebuilt_dense
            sparse = sparse or rebuilt_sparse
        return dense, sparse

    def _build_from_store(self, need_dense: bool = True, need_sparse: bool = True) -> tuple[DenseIndex | None, SparseIndex | None]:
        generation = self.store.generation
        dense = DenseIndex(self.embedder.dim) if need_dense else None
        sparse = SparseIndex(self.config.bm25_variant) if need_sparse else None
        for batch in self.store.iter_embedded():
            if sparse is not None:
                sparse.add([r for r, _, _ in batch], [t for _, t, _ in batch])
            if dense is not None:
                with_vec = [(r, v) for r, _, v in batch if v is not None]
                if with_vec:
                    dense.add([r for r, _ in with_vec], np.frombuffer(b"".join(v for _, v in with_vec), dtype=np.float32).reshape(len(with_vec), -1))
        for index in (dense, sparse):
            if index is not None:
                index.generation = generation
        return dense, sparse

    def rebuild_indexes(self) -> dict[str, int]:
        """Throw the derived indexes away and rebuild them from SQLite (the repair command)."""
        with self._write:
            self.dense, self.sparse = self._build_from_store()
            self._saved_generation = None
            self.save_indexes()
        return {"dense": len(self.dense), "sparse": len(self.sparse)}

    def save_indexes(self) -> bool:
        """Write the derived indexes if they changed since the last save (after a batch, on close):
        a start after a crash then loads them instead of rebuilding, unless writes came after."""
        with self._write:
            if self._saved_generation == (self.dense.generation, self.sparse.generation):
                return False
            self.dense.save(self._dense_path)
            self.sparse.save(self._sparse_path)
            self._saved_generation = (self.dense.generation, self.sparse.generation)
            return True

    def _reembed_if_model_changed(self) -> None:
        """Vectors from another model (or dimension) are never mixed: re-embed everything."""
        stored = self.store.get_meta("embedder")
        if stored == self.embedder.id:
            return
        if self.store.counts()["vectors"] and stored is not None:
            self.notices.append(f"Embedding model changed from {stored} to {self.embedder.id}: re-indexing all chunks.")
            for batch in self.store.iter_embedded(batch=256):
                vectors = self.embedder.embed([t for _, t, _ in batch])
                self.store.replace_vectors([(r, v) for (r, _, _), v in zip(batch, vectors)])
        self.store.set_meta("embedder", self.embedder.id)

    def delete_document(self, doc_id: str) -> None:
        with self._write:
            if self.store.get_document(doc_id) is None:
                raise NotFound(f"No document with id {doc_id}.")
            rowids = self.store.delete_document(doc_id)
            (self.files_dir / doc_id).unlink(missing_ok=True)
            self.dense.remove(rowids)
            self.sparse.remove(rowids)
            self.dense.generation = self.sparse.generation = self.store.generation

    # -- reading --------------------------------------------------------------------------------
    def search(self, queries: str | list[str], settings: RetrievalSettings | None = None) -> SearchResult:
        queries = [queries] if isinstance(queries, str) else list(queries)
        return hybrid_search(self.store, self.dense, self.sparse, self.embedder, queries, settings or RetrievalSettings())

    def documents(self) -> list[dict[str, Any]]:
        return self.store.list_documents()

    def document_chunks(self, doc_id: str) -> list[dict[str, Any]]:
        return self.store.document_chunks(doc_id)

    def check_consistency(self) -> dict[str, Any]:
        """Do SQLite, FAISS and BM25 hold exactly the same searchable chunk ids, and is every document whole?"""
        truth = {r for batch in self.store.iter_embedded() for r, _, _ in batch}
        dense_ids = self.dense.ids()
        sparse_ids = set(self.sparse.slot)
        partial = [d["filename"] for d in self.store.partial_documents()]
        return {
            "sqlite": len(truth), "faiss": len(dense_ids), "bm25": len(sparse_ids),
            "consistent": truth == dense_ids == sparse_ids and not partial,
            "missing_in_faiss": len(truth - dense_ids), "extra_in_faiss": len(dense_ids - truth),
            "missing_in_bm25": len(truth - sparse_ids), "extra_in_bm25": len(sparse_ids - truth),
            "partial_documents": partial,
        }

    def repair(self) -> dict[str, Any]:
        """Rebuild the indexes from SQLite; a document that is not whole is parsed again from its original."""
        for doc in self.store.partial_documents():
            try:
                self.reindex_document(doc["id"])
            except Exception as exc:  # noqa: BLE001 - reported, the document is kept as it is
                self.notices.append(f"Could not re-index '{doc['filename']}': {exc}")
        self.rebuild_indexes()
        return self.check_consistency()

    def close(self) -> None:
        if getattr(self, "_closed", False):
            return
        self._closed = True
        try:
            self.save_indexes()
        finally:
            self.parser.close()
            self.store.close()
