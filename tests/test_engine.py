"""The engine end to end on real files, the real model and a real SQLite file, across restarts."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from conftest import doc
from echomind.engine import safe_filename
from echomind.errors import NotFound
from echomind.settings import RetrievalSettings
from echomind.store import Store


def test_ingest_search_cite_duplicate_replace_delete(make_engine):
    engine = make_engine()
    first = engine.ingest_bytes("dpr.pdf", doc("pdf_multi-column-2p.pdf"))
    assert first.status == "indexed" and first.chunks >= 10 and first.filetype == "pdf"
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    result = engine.search("How many tracks does the MIDI sequence recorder have?")
    assert result.mode == "hybrid" and result.hits[0].source["filename"] == "linn.txt"
    result = engine.search("dual encoder passage retrieval", RetrievalSettings(top_k=3))
    top = result.hits[0]
    assert top.source["filename"] == "dpr.pdf" and top.source["page"] in (1, 2)
    assert top.trace["dense_rank"] is not None and top.trace["sparse_rank"] is not None and 0 < top.score <= 1

    again = engine.ingest_bytes("copy of dpr.pdf", doc("pdf_multi-column-2p.pdf"))
    assert again.status == "duplicate" and again.doc_id == first.doc_id and "identical to 'dpr.pdf'" in again.message
    assert engine.store.counts()["documents"] == 2

    replaced = engine.ingest_bytes("dpr.pdf", doc("pdf_latex-multicolumn.pdf"))  # same name, new content
    assert replaced.status == "replaced" and engine.store.get_document(first.doc_id) is None
    assert all(h.doc_id != first.doc_id for h in engine.search("dual encoder passage retrieval").hits)
    assert engine.check_consistency()["consistent"]

    engine.delete_document(replaced.doc_id)
    assert all(h.source["filename"] != "dpr.pdf" for h in engine.search("lorem ipsum two column", RetrievalSettings(top_k=20)).hits)
    report = engine.check_consistency()
    assert report["consistent"] and report["sqlite"] == engine.store.counts()["searchable_chunks"] > 0
    with pytest.raises(NotFound):
        engine.delete_document(first.doc_id)


def test_restart_loads_saved_indexes_and_rebuilds_stale_ones(tmp_path, make_engine):
    data = tmp_path / "store"
    engine = make_engine(data)
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    engine.close()
    engine = make_engine(data)
    assert engine.index_source == "loaded" and engine.check_consistency()["consistent"]

    # a crash after a commit but before the indexes were saved: the files on disk are a generation behind
    engine.ingest_bytes("crazy.pdf", doc("pdf_crazyones.pdf"))
    engine._closed = True
    engine.store.close()
    engine.parser.close()
    engine = make_engine(data)
    assert engine.index_source == "rebuilt" and engine.check_consistency()["consistent"]
    assert engine.search("misfits rebels troublemakers").hits[0].source["filename"] == "crazy.pdf"

    # someone changes SQLite behind our back: generation differs -> rebuild, deleted chunks are gone
    engine.close()
    store = Store(data / "echomind.sqlite3")
    doc_id = store.find_by_filename("crazy.pdf")[0]["id"]
    store.delete_document(doc_id)
    store.close()
    engine = make_engine(data)
    assert engine.index_source == "rebuilt" and engine.check_consistency()["consistent"]
    assert all(h.source["filename"] != "crazy.pdf" for h in engine.search("misfits rebels troublemakers").hits)


class HalfMiniLM:
    """Another real embedding model for the test: MiniLM's first 128 dimensions (a different id and dim)."""

    id = "minilm-int8-first128:128"
    dim = 128

    def __init__(self, inner):
        self.inner = inner

    def embed(self, texts):
        vectors = self.inner.embed(texts)[:, :128]
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_changing_the_embedder_reembeds_instead_of_mixing(tmp_path, make_engine, embedder):
    data = tmp_path / "store"
    engine = make_engine(data)
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    engine.close()
    engine = make_engine(data, emb=HalfMiniLM(embedder))
    assert any("re-indexing" in n for n in engine.notices)
    conn = sqlite3.connect(data / "echomind.sqlite3")
    sizes = {len(r[0]) for r in conn.execute("SELECT vector FROM vectors")}
    conn.close()
    assert sizes == {128 * 4} and engine.dense.dim == 128
    assert engine.search("MIDI sequence recorder tracks").hits[0].source["filename"] == "linn.txt"
    assert engine.check_consistency()["consistent"]


class FailingAtQueryTime:
    def __init__(self, inner):
        self.inner, self.id, self.dim, self.fail = inner, inner.id, inner.dim, False

    def embed(self, texts):
        if self.fail:
            raise ConnectionError("embedding server unreachable")
        return self.inner.embed(texts)


def test_embedder_failure_at_query_time_falls_back_to_bm25(make_engine, embedder):
    flaky = FailingAtQueryTime(embedder)
    engine = make_engine(emb=flaky)
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    flaky.fail = True
    result = engine.search("MIDI sequence recorder")
    assert result.mode == "bm25-only" and "keyword search (BM25) only" in result.warnings[0]
    assert result.hits and result.hits[0].trace["dense_rank"] is None and result.hits[0].trace["sparse_rank"] == 1


@pytest.mark.parametrize("raw,expected", [
    ("../../etc/passwd", "passwd"),
    ("C:\\Users\\me\\report.pdf", "report.pdf"),
    ("evil\x00name\x1b.txt", "evilname.txt"),
    ("", "untitled"),
])
def test_safe_filenames(raw, expected):
    assert safe_filename(raw) == expected


def test_very_long_filename_keeps_its_extension():
    name = safe_filename("a" * 400 + ".pdf")
    assert len(name) <= 255 and name.endswith(".pdf")


def test_text_ingest_and_tabular_positions(engine):
    engine.ingest_bytes("stock.csv", b"sku,item,stock\nA1,red kettle,3\nB2,blue teapot,0\nC3,green mug,12\n")
    hit = engine.search("blue teapot stock").hits[0]
    assert hit.source["filename"] == "stock.csv" and hit.source["row"] == 1 and "sku: B2" in hit.text
    note = engine.ingest_text("note-1", "Ideas for the garden: plant tomatoes in April and basil in May.", {"type": "note"})
    assert note.status == "indexed"
    assert engine.search("when to plant basil").hits[0].doc_id == note.doc_id


def test_chunks_carry_their_document_title_and_section_into_the_index(engine):
    body = " ".join(f"Paragraph sentence {i} describes soil, water and light in general terms." for i in range(40))
    md = f"---\ntitle: Greenhouse handbook\n---\n# Watering\n{body}\n\n# Tomatoes\nPinch the side shoots every week.\n".encode()
    engine.ingest_bytes("handbook.md", md)
    chunks = [c for c in engine.document_chunks(engine.documents()[0]["id"])]
    last = chunks[-1]
    assert last["source"]["context"] == "handbook · Greenhouse handbook > Tomatoes" and last["text"] == "# Tomatoes Pinch the side shoots every week."
    middle = chunks[len(chunks) // 2]
    assert middle["source"]["context"] == "handbook · Greenhouse handbook > Watering" and "Greenhouse" not in middle["text"]
    hit = engine.search("greenhouse handbook watering", RetrievalSettings(top_k=1)).hits[0]
    assert hit.source["section"] == "Watering"  # found through its header, though its text names neither


def test_reindex_keeps_the_document_and_its_date(engine):
    first = engine.ingest_bytes("dpr.pdf", doc("pdf_multi-column-2p.pdf"))
    created = engine.store.get_document(first.doc_id)["created_at"]
    again = engine.reindex_document(first.doc_id)
    assert again.status == "replaced" and engine.store.counts()["documents"] == 1
    assert engine.store.get_document(again.doc_id)["created_at"] == created
    assert (engine.files_dir / again.doc_id).exists() and not (engine.files_dir / first.doc_id).exists()
    note = engine.ingest_text("note.txt", "Plant basil in May and tomatoes in April.", {"type": "note"})
    renote = engine.reindex_document(note.doc_id)
    assert renote.status == "replaced" and engine.search("when to plant basil").hits[0].doc_id == renote.doc_id
    engine.delete_document(renote.doc_id)
    assert not (engine.files_dir / renote.doc_id).exists() and engine.check_consistency()["consistent"]
