"""SQLite as the truth: schema migrations, atomic writes checked by reopening the file."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from echomind.chunking import chunk_document
from echomind.store import MIGRATIONS, Store, utcnow


def schema(path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return {(r[0], r[1]) for r in conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}
    finally:
        conn.close()


def test_migrations_create_the_exact_schema_and_rerun_is_a_no_op(tmp_path):
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    assert store.migrate() == []
    store.close()
    assert schema(path) == {
        ("table", "_migrations"), ("table", "meta"), ("table", "documents"), ("table", "chunks"), ("table", "vectors"),
        ("table", "transcripts"), ("table", "chats"), ("table", "messages"),
        ("index", "documents_checksum"), ("index", "documents_filename"), ("index", "chunks_doc"), ("index", "messages_chat"),
        ("table", "lab_sets"), ("table", "lab_questions"), ("table", "lab_runs"), ("index", "lab_runs_set"),
        ("table", "lab_answer_runs"), ("index", "lab_answer_runs_set"),
    }
    again = Store(path)
    assert again.migrate() == [] and [r[0] for r in again.query("SELECT name FROM _migrations")] == [m[0] for m in MIGRATIONS]
    assert (path.stat().st_mode & 0o777) == 0o600  # owner-only
    again.close()


def _doc(doc_id: str, checksum: str) -> dict:
    return {"id": doc_id, "filename": f"{doc_id}.txt", "filetype": "txt", "checksum": checksum, "size_bytes": 10,
            "created_at": utcnow(), "doc_type": "USER", "sensitivity": "LOW", "redactions": 0, "meta_json": "{}"}


TEXT = " ".join(f"Sentence {i} talks about a topic of its own." for i in range(60))


def test_a_document_is_one_transaction(tmp_path):
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    chunks = chunk_document(TEXT, "d1")
    vectors = np.ones((len(chunks), 4), dtype=np.float32)
    generation = store.generation
    with store.atomic() as conn:
        store.insert_document(conn, _doc("d1", "c1"), chunks, vectors)
    assert store.generation == generation + 1
    with pytest.raises(RuntimeError):
        with store.atomic() as conn:
            store.insert_document(conn, _doc("d2", "c2"), chunk_document(TEXT, "d2"), vectors)
            raise RuntimeError("crash after the rows were written")
    with pytest.raises(ValueError, match="vectors"):  # a mismatch is caught before commit
        with store.atomic() as conn:
            store.insert_document(conn, _doc("d3", "c3"), chunk_document(TEXT, "d3"), vectors[:1])
    store.close()
    fresh = sqlite3.connect(path)  # what a restarted process would see
    assert [r[0] for r in fresh.execute("SELECT id FROM documents")] == ["d1"]
    assert fresh.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == len(chunks)
    assert fresh.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == len(chunks)
    assert fresh.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0] == str(generation + 1)
    fresh.close()


def test_nested_atomic_rolls_back_only_the_inner_block(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    with store.atomic() as conn:
        conn.execute("INSERT INTO meta VALUES ('outer', '1')")
        with pytest.raises(KeyError):
            with store.atomic() as inner:
                inner.execute("INSERT INTO meta VALUES ('inner', '1')")
                raise KeyError
    assert store.get_meta("outer") == "1" and store.get_meta("inner") is None
    store.close()


def test_deleting_a_document_cascades_to_chunks_and_vectors(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    chunks = chunk_document(TEXT, "d1")
    with store.atomic() as conn:
        rowids = store.insert_document(conn, _doc("d1", "c1"), chunks, np.ones((len(chunks), 4), dtype=np.float32))
    assert sorted(store.delete_document("d1")) == sorted(rowids.values())
    assert store.counts() == {"documents": 0, "chunks": 0, "searchable_chunks": 0, "vectors": 0}
    store.close()
