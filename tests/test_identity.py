"""Document identity: the file name as words, a meaningful title and the document's own date are
indexed with every chunk, stored in meta_json, and used by the date filters, the time window and the
recency decay (the upload time only when a document has no date of its own)."""

from __future__ import annotations

import json
from datetime import date

import pytest

from conftest import SHARED, doc
from echomind.ingest import document_date, filename_words, identify, meaningful_title, parse_date
from echomind.parsing import ParsedDocument, Segment, parse_bytes
from echomind.retrieval import allowed_rowids
from echomind.settings import RetrievalSettings

FILINGS = SHARED / "filings"


@pytest.mark.parametrize("name, words", [
    ("2023 Q1 NVDA.pdf", "2023 Q1 NVDA"),
    ("annual_reportFinal-v2.docx", "annual report Final v2"),
    ("myHTMLParser.md", "my HTML Parser"),
    ("transcript_3f9a2c1d7e", "transcript"),  # an id is not a word
    ("minutes_20230701.txt", "minutes 20230701"),  # a date is kept
])
def test_file_names_become_words(name, words):
    assert filename_words(name) == words


@pytest.mark.parametrize("title", ["0000320193-23-000077", "untitled", "Microsoft Word - x.docx", "2023 Q1 NVDA.pdf", "2023 Q1 NVDA",
                                   "Word Document", "Binder1.pdf", "", "  "])
def test_producer_junk_is_not_a_title(title):
    assert meaningful_title(title, "2023 Q1 NVDA.pdf") is None


def test_dates_as_written():
    assert parse_date("D:20230804060209-04'00'") == "2023-08-04"
    assert parse_date("July 1, 2023") == parse_date("1 July 2023") == parse_date("2023-07-01") == "2023-07-01"
    assert parse_date("Sept. 30, 2022") == "2022-09-30"
    assert parse_date("February 30, 2023") is None and parse_date("version 2.3.1") is None


def _doc(text: str, filetype: str = "pdf", **metadata) -> ParsedDocument:
    return ParsedDocument(filetype, [Segment(text=text, page=1), Segment(text="Later page, dated March 3, 2001.", page=2)], metadata=metadata)


def test_the_documents_own_statement_wins_over_file_name_and_properties():
    page = "FORM 10-Q\nFor the quarterly period ended July 1, 2023\nFiled August 4, 2023"
    # the file name says calendar Q3 (ends 2023-09-30), the producer wrote the PDF on 2023-08-04:
    # the period the filing covers is what the first page states
    assert document_date(_doc(page, created="D:20230804060209"), {}, "2023 Q3 AAPL.pdf") == ("2023-07-01", "first page (period)")
    assert document_date(_doc("Quarterly report"), {}, "2023 Q3 AAPL.pdf") == ("2023-09-30", "file name (quarter end)")
    assert document_date(_doc("Quarterly report"), {}, "Q1-2024 results.pdf") == ("2024-03-31", "file name (quarter end)")
    assert document_date(_doc("Board minutes"), {}, "minutes_2021-05-17.pdf") == ("2021-05-17", "file name")
    assert document_date(_doc("Letter\nBoston, 12 March 2019\nDear Sir"), {}, "letter.pdf") == ("2019-03-12", "first page")
    assert document_date(_doc("No date here", created="D:20200102"), {}, "x.pdf") == ("2020-01-02", "file properties")
    assert document_date(_doc("No date here"), {}, "x.pdf") is None  # the upload time stands in
    markdown = parse_bytes(b"---\ntitle: Plan\ndate: 2022-11-05\n---\n# Plan\nMeet on July 1, 2023.\n", "plan.md")
    assert document_date(markdown, {}, "plan.md") == ("2022-11-05", "front-matter")


def test_real_filing_gets_company_form_and_period_not_its_accession_number():
    parsed = parse_bytes((FILINGS / "2023 Q3 AAPL.pdf").read_bytes(), "2023 Q3 AAPL.pdf")
    assert parsed.metadata["title"] == "0000320193-23-000077"  # what EDGAR put in the PDF
    header, info = identify(parsed, {}, "2023 Q3 AAPL.pdf", redact_pii=True)
    assert header == "2023 Q3 AAPL · Apple Inc. Form 10-Q · July 1, 2023"
    assert info == {"doc_title": "Apple Inc. Form 10-Q", "doc_date": "2023-07-01", "doc_date_source": "first page (period)"}


def test_header_is_indexed_and_stored_and_dates_filter(engine):
    """A chunk is found by its file name and period though its text names neither; the date filters,
    the time window and the recency decay use the document's own date."""
    body = " ".join(f"Sentence {i} discusses revenue, margins and operating costs in general terms." for i in range(30))
    old = engine.ingest_bytes("2019 Q2 ACME.md", f"---\ntitle: Acme quarterly review\n---\n# Results\n{body}\n".encode())
    crazy = engine.ingest_bytes("crazy.pdf", doc("pdf_crazyones.pdf"))  # page 1 is dated 1998-10-14
    plain = engine.ingest_text("note.txt", "Plant basil in May and tomatoes in April.")
    stored = {d["id"]: d["meta"] for d in engine.documents()}
    assert stored[old.doc_id]["doc_date"] == "2019-06-30" and stored[old.doc_id]["doc_date_source"] == "file name (quarter end)"
    assert stored[old.doc_id]["doc_title"] == "Acme quarterly review" and "doc_date" not in stored[plain.doc_id]
    assert stored[crazy.doc_id]["doc_date"] == "1998-10-14" and stored[crazy.doc_id]["doc_title"] == "The Crazy Ones"
    chunks = engine.document_chunks(old.doc_id)
    middle = chunks[len(chunks) // 2]
    assert middle["source"]["context"] == "2019 Q2 ACME · Acme quarterly review · June 30, 2019 > Results"
    assert "ACME" not in middle["text"] and "2019" not in middle["text"]
    hits = engine.search("ACME June 30, 2019 operating costs", RetrievalSettings(top_k=3)).hits
    assert hits and all(h.doc_id == old.doc_id for h in hits)

    def docs(**knobs) -> set[str]:
        rows = allowed_rowids(engine.store, RetrievalSettings(**knobs))
        return {engine.store.chunks_by_rowid([r])[r]["doc_id"] for r in rows} if rows is not None else {"all"}

    today = date.today()
    assert docs() == {"all"}
    assert docs(date_to="2019-12-31") == {old.doc_id, crazy.doc_id}
    assert docs(date_from="2019-06-30", date_to="2019-06-30") == {old.doc_id}
    assert docs(date_from=today.isoformat()) == {plain.doc_id}  # no date of its own: the upload day
    assert docs(time_window="1w") == docs(time_window="24h") == {plain.doc_id}  # all uploaded today; two dated long ago
    assert docs(file_types=("md",)) == {old.doc_id} and docs(file_types=("text", "pdf")) == {plain.doc_id, crazy.doc_id}

    retrieval = engine.retrieve("operating costs and margins", RetrievalSettings(recency_halflife_days=365, recency_floor=0.0, top_k=10))
    by_doc = {h.doc_id: h.trace["recency"] for h in retrieval.hits}
    assert by_doc[old.doc_id] < 0.01  # six years old by its own date, though uploaded a moment ago

    engine.reindex_document(old.doc_id)  # the derived identity is recomputed, not taken as "given"
    again = next(d["meta"] for d in engine.documents() if d["filename"] == "2019 Q2 ACME.md")
    assert again["doc_date_source"] == "file name (quarter end)"


def test_bad_date_filters_are_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        RetrievalSettings(date_from="last July")
    with pytest.raises(ValueError, match="after date_to"):
        RetrievalSettings(date_from="2024-01-01", date_to="2023-01-01")
    assert RetrievalSettings(file_types=("PDF", ".docx")).file_types == ("pdf", "docx")
    assert json.loads(json.dumps(RetrievalSettings(date_from=date(2023, 1, 1)).date_from)) == "2023-01-01"


def test_a_title_read_from_the_text_is_redacted_like_the_text():
    parsed = ParsedDocument("pdf", [Segment(text="Call Jane at jane.doe@example.com today\nBody.", page=1)], metadata={"title": "0000320193-23-000077"})
    header, info = identify(parsed, {}, "memo.pdf", redact_pii=True)
    assert "jane.doe@example.com" not in header and "[REDACTED_EMAIL]" in info["doc_title"]
    assert "jane.doe@example.com" in identify(parsed, {}, "memo.pdf", redact_pii=False)[0]  # redaction switched off
