"""Every hostile or huge input gets a specific message and leaves the store exactly as it was; the big
legitimate ones are indexed whole. Real files throughout (generated ones in ``hostile_files``)."""

from __future__ import annotations

import base64
import os
import sys

import pytest

from echomind.bench_inputs import csv_rows, pdf_with_pages, prose, zip_bomb
from echomind.errors import EmptyDocument, FileTooLarge, NoExtractableText, UnsafeArchive, UnsupportedFileType
from echomind.settings import RetrievalSettings

from conftest import doc


def snapshot(engine) -> tuple:
    """What 'the store is unchanged' means: rows, generation, the kept originals and the indexes."""
    return (engine.store.counts(), engine.store.generation, sorted(p.name for p in engine.files_dir.iterdir()),
            len(engine.dense), len(engine.sparse), sorted(d["id"] for d in engine.documents()))


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {kind: zip_bomb(kind) for kind in ("docx", "pptx", "xlsx")}


REFUSED = [
    # name, bytes factory, error, words the message must contain
    ("report.docx", lambda b: b["docx"], UnsafeArchive, "zip bomb"),
    ("slides.pptx", lambda b: b["pptx"], UnsafeArchive, "zip bomb"),
    ("sheet.xlsx", lambda b: b["xlsx"], UnsafeArchive, "zip bomb"),
    ("huge.pdf", lambda b: b"%PDF-1.7\n" + bytes(500 * 2**20), FileTooLarge, "500 MB; the upload limit is 200 MB"),
    ("program.txt", lambda b: open(sys.executable, "rb").read()[:2_000_000], UnsupportedFileType, "x-executable"),
    ("program.pdf", lambda b: open(sys.executable, "rb").read()[:2_000_000], UnsupportedFileType, "x-executable"),
    ("noise.txt", lambda b: os.urandom(300_000), UnsupportedFileType, "binary data, not text"),
    ("noise.pdf", lambda b: os.urandom(300_000), UnsupportedFileType, "binary data, not text"),
    ("empty.txt", lambda b: b"", EmptyDocument, "empty"),
    ("empty.pdf", lambda b: b"", EmptyDocument, "empty"),
    ("empty.docx", lambda b: b"", EmptyDocument, "empty"),
    ("blank.txt", lambda b: b" \n\t\r\n   \n", EmptyDocument, "no text"),
    ("blank.md", lambda b: "\u00a0 \n\n".encode(), EmptyDocument, "no text"),
    ("header-only.csv", lambda b: b"name,amount\n", EmptyDocument, "no rows"),
    ("blob.txt", lambda b: base64.b64encode(os.urandom(3 * 2**20)), NoExtractableText, "encoded or binary data"),
    ("orders.csv", lambda b: csv_rows(1_000_000), FileTooLarge, "more than 100,000 rows"),
]


@pytest.mark.parametrize("name,make,error,words", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_with_a_specific_message_and_the_store_unchanged(engine, bombs, name, make, error, words):
    engine.ingest_bytes("keep.docx", doc("docx_handbook-1p.docx"))
    before = snapshot(engine)
    with pytest.raises(error) as caught:
        engine.ingest_bytes(name, make(bombs))
    assert name in str(caught.value) and words in str(caught.value)
    assert snapshot(engine) == before
    assert engine.check_consistency()["consistent"]


def test_too_many_chunks_is_refused_before_embedding(make_engine):
    engine = make_engine(max_chunks_per_document=1000)
    before = snapshot(engine)
    with pytest.raises(FileTooLarge, match=r"would make [\d,]+ searchable chunks, more than the 1,000"):
        engine.ingest_bytes("one-line.txt", prose(5 * 2**20).encode())
    assert snapshot(engine) == before


def test_five_megabyte_single_line_is_chunked_whole_within_sizes(engine):
    """The chunker splits a line with no breaks at sentence ends; nothing is lost or oversized."""
    from echomind.chunking import chunk_segments

    text = prose(5 * 2**20)
    parsed = engine.parser.parse(text.encode(), "one-line.txt", None, engine.limits)
    chunked = chunk_segments(parsed.segments, "d", parsed.tabular)
    assert len(chunked.embed_chunks) > 5000
    assert max(len(c.text) for c in chunked.embed_chunks) <= 3500
    words = set(text.split())
    assert words == {w for c in chunked.embed_chunks for w in c.text.split()}


def test_two_thousand_page_pdf_is_indexed_with_every_page(engine):
    result = engine.ingest_bytes("book.pdf", pdf_with_pages(2000))
    assert result.status == "indexed"
    pages = set()
    for chunk in engine.document_chunks(result.doc_id):
        pages.update(range(chunk["source"]["page"], (chunk["source"].get("page_end") or chunk["source"]["page"]) + 1))
    assert pages == set(range(1, 2001))
    hit = engine.search("figures for region 1999", RetrievalSettings(top_k=3)).hits[0]
    assert "region 1999" in hit.text


def test_other_encodings_are_read_not_garbled(engine):
    cases = {"latin.txt": ("Le crème brûlée coûte cher à Noël.", "cp1252"), "wide.txt": ("Grüße aus Köln, crème brûlée.", "utf-16"),
             "japanese.txt": ("東京は日本の首都です。大阪は大きい都市です。", "shift_jis")}
    for name, (text, encoding) in cases.items():
        result = engine.ingest_bytes(name, text.encode(encoding))
        assert engine.document_chunks(result.doc_id)[0]["text"] == text


@pytest.mark.parametrize("raw,stored", [("../../etc/x.txt", "x.txt"), ("..\\..\\win.txt", "win.txt"), ("bell\x07\x1b[31m.txt", "bell[31m.txt"),
                                        ("a" * 300 + ".txt", "a" * 247 + ".txt")])
def test_hostile_filenames_are_stored_safely(engine, tmp_path, raw, stored):
    result = engine.ingest_bytes(raw, f"Notes kept under the name {len(raw)}.".encode())
    assert result.filename == stored and engine.documents()[0]["filename"] == stored
    assert {p.name for p in engine.files_dir.iterdir()} == {result.doc_id}  # the original is kept under its id only
    assert not (tmp_path.parent / "x.txt").exists() and not (tmp_path / "etc").exists()
