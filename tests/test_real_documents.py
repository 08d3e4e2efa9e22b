"""Every file in ../shared/data/docs goes through ingestion: indexed with text, or rejected with a
specific message. Prints the per-file outcome table."""

from __future__ import annotations

import pytest

from conftest import DOCS
from echomind.errors import CorruptFile, EchoMindError, EmptyDocument, NoExtractableText, PasswordRequired, UnsupportedFileType

PASSWORDS = {"pdf_enc_crazyones-aes256.pdf": "password", "pdf_enc_encrypted-file.pdf": "test",
             "pdf_enc_libreoffice-writer-password.pdf": "openpassword"}
REJECTED = {
    "doc_legacy-duplicate-paragraphs.doc": (UnsupportedFileType, "legacy Word"),
    "odt_fake.odt": (UnsupportedFileType, "OpenDocument"),
    "docx_pydocx-nested-tables.docx": (EmptyDocument, "no text"),
    "pdf_bad_invalid.pdf": (CorruptFile, "not a readable PDF"),
    "pdf_unreadable-metadata.pdf": (CorruptFile, "damaged PDF"),
    "pdf_bad_no-contents.pdf": (NoExtractableText, "no text that could be read"),  # a blank page: nothing to read
}
# Scans and image-only pages are read with OCR (they were refused as "scanned?" before): indexed, marked
# (GeoBase: its page 9 is a diagram image).
OCR_READ = {"pdf_GeoBase_UML.pdf", "pdf_bad_kcs-invalid-toc.pdf", "pdf_enc_doc_no_id.pdf", "pdf_scan_2400dpi-typewriter.pdf", "pdf_scan_c02-22-huckfinn.pdf",
            "pdf_scan_linn-2col.pdf", "pdf_scan_loremipsum-flat.pdf", "pdf_scan_skew.pdf", "pdf_scan_with-ocr-text.pdf"}


def test_every_real_document_is_indexed_or_rejected_specifically(engine, capsys):
    files = sorted(p for p in DOCS.iterdir() if p.name != "MANIFEST.tsv")
    assert len(files) == 49
    rows = []
    for path in files:
        data = path.read_bytes()
        before = engine.store.counts()
        try:
            result = engine.ingest_bytes(path.name, data)
            outcome = f"{result.status}: {result.chunks} chunks, {result.doc_type}, {result.sensitivity}"
            assert path.name not in REJECTED and path.name not in PASSWORDS, f"{path.name} should have been rejected"
            assert result.status == "indexed" and result.chunks >= 1
            assert any("read with OCR" in w for w in result.warnings) == (path.name in OCR_READ), (path.name, result.warnings)
        except EchoMindError as exc:
            assert engine.store.counts() == before, "a rejected file changed the store"
            outcome = f"rejected ({type(exc).__name__}): {exc}"
            if path.name in PASSWORDS:
                assert isinstance(exc, PasswordRequired)
                result = engine.ingest_bytes(path.name, data, password=PASSWORDS[path.name])
                assert result.status == "indexed" and result.chunks >= 1
                outcome += f" -> with password: {result.chunks} chunks"
            else:
                kind, words = REJECTED[path.name]
                assert isinstance(exc, kind) and words in str(exc), (path.name, exc)
        rows.append((path.name, outcome))
    with capsys.disabled():
        print("\n\nPer-file ingestion outcome (../shared/data/docs):")
        for name, outcome in rows:
            print(f"  {name:44s} {outcome[:150]}")
    indexed = [r for r in rows if not r[1].startswith("rejected") or "with password" in r[1]]
    assert len(indexed) == 49 - len(REJECTED)
    report = engine.check_consistency()
    assert report["consistent"] and report["sqlite"] == engine.store.counts()["searchable_chunks"]


@pytest.mark.parametrize("name,query", [
    ("pptx_pypptx-notes.pptx", "Notes"),
    ("docx_hdrftr.docx", "First header para"),
    ("pdf_habibi-arabic.pdf", "habibi"),
    ("pdf_scan_vicksburg-ocr.pdf", "siege of Vicksburg"),
])
def test_text_from_special_places_is_findable(engine, name, query):
    engine.ingest_bytes(name, (DOCS / name).read_bytes())
    assert engine.search(query).hits[0].source["filename"] == name
