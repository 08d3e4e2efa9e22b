"""SQLite, the single source of truth: documents, chunks (parents too), vectors, transcripts, chats.

FAISS and BM25 are derived from it. Every write that changes what is searchable bumps ``generation``
in the same transaction, so a derived index knows whether it is stale. One document is one
transaction: a crash mid-ingest leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .chunking import Chunk
from .chunking.models import with_context
from .private_files import open_private


def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


MIGRATIONS: list[tuple[str, str]] = [
    (
        "m001_initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,
            filename TEXT NOT NULL,
            filetype TEXT NOT NULL,
            checksum TEXT NOT NULL,
            size_bytes INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            doc_type TEXT NOT NULL,
            sensitivity TEXT NOT NULL,
            redactions INTEGER NOT NULL DEFAULT 0,
            meta_json TEXT NOT NULL DEFAULT '{}'
        );
        CREATE UNIQUE INDEX documents_checksum ON documents(checksum);
        CREATE INDEX documents_filename ON documents(filename);
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id TEXT NOT NULL UNIQUE,
            doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            chunk_index INTEGER NOT NULL,
            is_parent INTEGER NOT NULL,
            parent_chunk_id TEXT,
            text TEXT NOT NULL,
            context TEXT,
            source_json TEXT NOT NULL
        );
        CREATE INDEX chunks_doc ON chunks(doc_id, chunk_index);
        CREATE TABLE vectors (
            chunk_rowid INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
            vector BLOB NOT NULL
        );
        CREATE TABLE transcripts (
            id TEXT PRIMARY KEY,
            doc_id TEXT REFERENCES documents(id) ON DELETE SET NULL,
            raw_text TEXT NOT NULL,
            refined_text TEXT NOT NULL DEFAULT '',
            tags_json TEXT NOT NULL DEFAULT '[]',
            echotag TEXT,
            echodate TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE chats (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            conversation_summary TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL,
            meta_json TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX messages_chat ON messages(chat_id, id);
        INSERT INTO meta(key, value) VALUES ('generation', '0');
        """,
    ),
    (
        # how many chunks the document was committed with: a partial document is detectable
        "m002_chunk_count",
        "ALTER TABLE documents ADD COLUMN chunk_count INTEGER",
    ),
    (
        "m003_lab",
        """
        CREATE TABLE lab_sets (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'typed',
            created_at TEXT NOT NULL
        );
        CREATE TABLE lab_questions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            set_id TEXT NOT NULL REFERENCES lab_sets(id) ON DELETE CASCADE,
            qid TEXT NOT NULL,
            text TEXT NOT NULL,
            expected_json TEXT NOT NULL,
            labels_json TEXT NOT NULL DEFAULT '{}',
            UNIQUE(set_id, qid)
        );
        CREATE TABLE lab_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            set_id TEXT NOT NULL REFERENCES lab_sets(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            label TEXT NOT NULL,
            sweep TEXT,
            settings_json TEXT NOT NULL,
            metrics_json TEXT NOT NULL,
            questions_json TEXT NOT NULL
        );
        CREATE INDEX lab_runs_set ON lab_runs(set_id, id)
        """,
    ),
    (
        # Lab questions carry gold answers (or are marked unanswerable: a refusal is right); answer runs
        # are kept apart from retrieval runs, which compare and sweep read
        "m004_lab_answers",
        """
        ALTER TABLE lab_questions ADD COLUMN answers_json TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE lab_questions ADD COLUMN unanswerable INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE lab_answer_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            set_id TEXT NOT NULL REFERENCES lab_sets(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            label TEXT NOT NULL,
            answerer TEXT NOT NULL,
            settings_json TEXT NOT NULL,
            metrics_json TEXT NOT NULL,
            questions_json TEXT NOT NULL
        );
        CREATE INDEX lab_answer_runs_set ON lab_answer_runs(set_id, id)
        """,
    ),
]


_CHUNK_COLUMNS = "id, chunk_id, doc_id, text, source_json"


def _chunk(row: sqlite3.Row) -> dict[str, Any]:
    return {"rowid": row["id"], "chunk_id": row["chunk_id"], "doc_id": row["doc_id"], "text": row["text"], "source": json.loads(row["source_json"])}


class Store:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():
                open_private(self.path).close()  # SQLite gives its -wal and -shm files the database's mode
        self._lock = threading.RLock()
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        if str(path) != ":memory:":
            os.chmod(self.path, 0o600)  # also a database created by an older version
        self.migrate()

    # -- transactions -------------------------------------------------------------------------
    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rollback on any exception; nested calls use savepoints."""
        with self._lock:
            if self.conn.in_transaction:
                name = f"sp{threading.get_ident()}"
                self.conn.execute(f"SAVEPOINT {name}")
                try:
                    yield self.conn
                except BaseException:
                    self.conn.execute(f"ROLLBACK TO {name}")
                    self.conn.execute(f"RELEASE {name}")
                    raise
                self.conn.execute(f"RELEASE {name}")
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: tuple | list = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def migrate(self) -> list[str]:
        with self._lock:
            self.conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            done = {r[0] for r in self.conn.execute("SELECT name FROM _migrations")}
            applied = []
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                with self.atomic() as conn:
                    for statement in filter(str.strip, sql.split(";")):
                        conn.execute(statement)
                    conn.execute("INSERT INTO _migrations VALUES (?, ?)", (name, utcnow()))
                applied.append(name)
            return applied

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else default

    def set_meta(self, key: str, value: str) -> None:
        with self.atomic() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation", "0"))

    def _bump(self, conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")

    # -- documents ----------------------------------------------------------------------------
    def find_by_checksum(self, checksum: str) -> sqlite3.Row | None:
        rows = self.query("SELECT * FROM documents WHERE checksum = ?", (checksum,))
        return rows[0] if rows else None

    def find_by_filename(self, filename: str) -> list[sqlite3.Row]:
        return self.query("SELECT * FROM documents WHERE filename = ? ORDER BY created_at", (filename,))

    def get_document(self, doc_id: str) -> sqlite3.Row | None:
        rows = self.query("SELECT * FROM documents WHERE id = ?", (doc_id,))
        return rows[0] if rows else None

    def list_documents(self) -> list[dict[str, Any]]:
        rows = self.query(
            """SELECT d.*, COUNT(c.id) AS chunks, COALESCE(SUM(c.is_parent), 0) AS parents
               FROM documents d LEFT JOIN chunks c ON c.doc_id = d.id GROUP BY d.id ORDER BY d.created_at DESC, d.rowid DESC"""
        )
        return [dict(r) | {"meta": json.loads(r["meta_json"])} for r in rows]

    def insert_document(
        self, conn: sqlite3.Connection, doc: dict[str, Any], chunks: list[Chunk], vectors: np.ndarray | None, replaces: list[str] = ()
    ) -> dict[str, int]:
        """Inside ``atomic()``: the document, its chunks and the vectors of its non-parent chunks.
        Returns chunk_id -> rowid for the embedded chunks (the ids the derived indexes use)."""
        for old in replaces:
            self._delete(conn, old)
        conn.execute(
            """INSERT INTO documents(id, filename, filetype, checksum, size_bytes, created_at, doc_type, sensitivity, redactions, meta_json, chunk_count)
               VALUES (:id, :filename, :filetype, :checksum, :size_bytes, :created_at, :doc_type, :sensitivity, :redactions, :meta_json, :chunk_count)""",
            doc | {"chunk_count": len(chunks)},
        )
        rowids: dict[str, int] = {}
        embed = [c for c in chunks if not c.is_parent]
        if vectors is not None and len(vectors) != len(embed):
            raise ValueError(f"{len(embed)} chunks to embed but {len(vectors)} vectors")
        vi = 0
        for chunk in chunks:
            source = chunk.to_source_dict(doc["filename"], doc["filetype"])
            cur = conn.execute(
                "INSERT INTO chunks(chunk_id, doc_id, chunk_index, is_parent, parent_chunk_id, text, context, source_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (chunk.chunk_id, chunk.doc_id, chunk.chunk_index, int(chunk.is_parent), chunk.parent_chunk_id, chunk.text, chunk.context, json.dumps(source)),
            )
            if not chunk.is_parent:
                rowids[chunk.chunk_id] = cur.lastrowid
                if vectors is not None:
                    conn.execute("INSERT INTO vectors(chunk_rowid, vector) VALUES (?, ?)", (cur.lastrowid, np.asarray(vectors[vi], dtype=np.float32).tobytes()))
                vi += 1
        self._bump(conn)
        return rowids

    def embedded_rowids(self, doc_id: str, conn: sqlite3.Connection | None = None) -> list[int]:
        sql = "SELECT id FROM chunks WHERE doc_id = ? AND is_parent = 0"
        if conn is not None:
            return [r[0] for r in conn.execute(sql, (doc_id,))]
        return [r[0] for r in self.query(sql, (doc_id,))]

    def _delete(self, conn: sqlite3.Connection, doc_id: str) -> None:
        conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        self._bump(conn)

    def delete_document(self, doc_id: str) -> list[int]:
        """Returns the rowids that must leave the derived indexes."""
        with self.atomic() as conn:
            rowids = self.embedded_rowids(doc_id, conn)
            self._delete(conn, doc_id)
        return rowids

    def document_ids(self) -> set[str]:
        return {r[0] for r in self.query("SELECT id FROM documents")}

    def partial_documents(self) -> list[dict[str, Any]]:
        """Documents whose stored chunks differ from what was committed, or with a chunk lacking its vector."""
        rows = self.query(
            """SELECT d.id, d.filename, d.chunk_count,
                      (SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.id) AS stored,
                      (SELECT COUNT(*) FROM chunks c LEFT JOIN vectors v ON v.chunk_rowid = c.id
                        WHERE c.doc_id = d.id AND c.is_parent = 0 AND v.chunk_rowid IS NULL) AS without_vector
               FROM documents d"""
        )
        return [dict(r) for r in rows if (r["chunk_count"] is not None and r["chunk_count"] != r["stored"]) or r["stored"] == 0 or r["without_vector"]]

    # -- chunks and vectors ---------------------------------------------------------------------
    def chunks_by_rowid(self, rowids: list[int]) -> dict[int, dict[str, Any]]:
        if not rowids:
            return {}
        out: dict[int, dict[str, Any]] = {}
        for i in range(0, len(rowids), 900):
            part = rowids[i : i + 900]
            marks = ",".join("?" * len(part))
            for r in self.query(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", part):
                out[r["id"]] = _chunk(r)
        return out

    def chunk_by_id(self, chunk_id: str) -> dict[str, Any] | None:
        rows = self.query(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE chunk_id = ?", (chunk_id,))
        return _chunk(rows[0]) if rows else None

    def document_chunks(self, doc_id: str) -> list[dict[str, Any]]:
        return [_chunk(r) for r in self.query(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE doc_id = ? ORDER BY chunk_index", (doc_id,))]

    def iter_embedded(self, batch: int = 5000) -> Iterator[list[tuple[int, str, bytes | None]]]:
        """(rowid, index text, vector bytes or None) of every searchable chunk, in rowid order."""
        last = 0
        while True:
            rows = self.query(
                "SELECT c.id, c.context, c.text, v.vector FROM chunks c LEFT JOIN vectors v ON v.chunk_rowid = c.id WHERE c.is_parent = 0 AND c.id > ? ORDER BY c.id LIMIT ?",
                (last, batch),
            )
            if not rows:
                return
            yield [(r[0], with_context(r[1], r[2]), r[3]) for r in rows]
            last = rows[-1][0]

    def replace_vectors(self, items: list[tuple[int, np.ndarray]]) -> None:
        with self.atomic() as conn:
            conn.executemany(
                "INSERT INTO vectors(chunk_rowid, vector) VALUES (?, ?) ON CONFLICT(chunk_rowid) DO UPDATE SET vector = excluded.vector",
                [(rowid, np.asarray(v, dtype=np.float32).tobytes()) for rowid, v in items],
            )
            self._bump(conn)

    def counts(self) -> dict[str, int]:
        row = self.query(
            """SELECT (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM chunks),
                      (SELECT COUNT(*) FROM chunks WHERE is_parent = 0), (SELECT COUNT(*) FROM vectors)"""
        )[0]
        return {"documents": row[0], "chunks": row[1], "searchable_chunks": row[2], "vectors": row[3]}

    def close(self) -> None:
        with self._lock:
            self.conn.close()
