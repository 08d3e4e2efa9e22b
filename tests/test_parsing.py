"""Parsing real files: text with positions, or a specific rejection."""

from __future__ import annotations

import io
import zipfile

import pandas as pd
import pytest

from conftest import doc
from echomind.errors import (CorruptFile, EmptyDocument, FileTooLarge, NoExtractableText, ParseTimeout, PasswordRequired,
                             UnsafeArchive, UnsupportedFileType)
from echomind.parsing import Limits, parse_bytes
from echomind.parsing.sandbox import ParserProcess


def test_pdf_pages_are_kept():
    parsed = parse_bytes(doc("pdf_multi-column-2p.pdf"), "paper.pdf")
    assert [s.page for s in parsed.segments] == [1, 2]
    assert "Dense Passage Retrieval" in parsed.segments[0].text


def test_pdf_text_matches_ground_truth():
    parsed = parse_bytes(doc("pdf_crazyones.pdf"), "crazy.pdf")
    truth = doc("groundtruth_crazyones.txt").decode("utf-8")
    assert " ".join(parsed.text.split()) == " ".join(truth.split()).replace("ﬁ", "fi").replace("ﬀ", "ff")
    assert "misfits" in parsed.text  # ligatures unfolded for search


@pytest.mark.parametrize("name,password", [
    ("pdf_enc_encrypted-file.pdf", "test"),
    ("pdf_enc_libreoffice-writer-password.pdf", "openpassword"),
    ("pdf_enc_crazyones-aes256.pdf", "password"),
])
def test_encrypted_pdf_needs_and_accepts_password(name, password):
    with pytest.raises(PasswordRequired) as info:
        parse_bytes(doc(name), name)
    assert "password" in str(info.value).lower() and not info.value.wrong_password
    with pytest.raises(PasswordRequired) as info:
        parse_bytes(doc(name), name, password="qwerty")
    assert info.value.wrong_password and "wrong" in str(info.value)
    assert parse_bytes(doc(name), name, password=password).text.strip()


def test_empty_user_password_pdfs_open_without_asking():
    assert "Deep" in parse_bytes(doc("pdf_copy-protected.pdf"), "p.pdf").text
    assert "encryption test" in parse_bytes(doc("pdf_enc_r2-owner-password.pdf"), "p.pdf").text


def test_blank_pdf_is_rejected_with_a_clear_message():
    with pytest.raises(NoExtractableText, match=r"no text that could be read: its 1 page\(s\) have no text layer and OCR found no words"):
        parse_bytes(doc("pdf_bad_no-contents.pdf"), "blank.pdf")


def _pdf_with_big_array(elements: int) -> bytes:
    """A valid one-page PDF whose page dictionary holds an array of ``elements`` numbers (real filings
    carry arrays this long: page trees, annotations, widths)."""
    content = b"BT /F1 24 Tf 72 720 Td (Quarterly revenue grew in every region) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> /PieceInfo << /EchoMind << /Private ["
        + b" ".join(b"0" for _ in range(elements)) + b"] >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_no_pypdf_limit_refuses_a_valid_pdf():
    import dataclasses

    import pypdf
    from pypdf.errors import LimitReachedError

    from echomind.parsing.pdf import raised_limits

    data = _pdf_with_big_array(pypdf.Configuration().array_maximum_element_count + 1)
    with pytest.raises(LimitReachedError):  # pypdf's defaults refuse this valid file ...
        pypdf.PdfReader(io.BytesIO(data)).pages[0].extract_text()
    parsed = parse_bytes(data, "filing.pdf")  # ... we read it
    assert parsed.segments[0].page == 1 and "Quarterly revenue grew in every region" in parsed.text
    numeric = {f.name for f in dataclasses.fields(pypdf.Configuration) if type(f.default) is int}
    assert "array_maximum_element_count" in numeric and set(raised_limits()) == numeric
    assert min(raised_limits().values()) > 10**15


def test_malformed_pdfs_are_named_damaged():
    with pytest.raises(CorruptFile, match="not a readable PDF"):
        parse_bytes(doc("pdf_bad_invalid.pdf"), "bad.pdf")
    with pytest.raises(CorruptFile, match="damaged PDF"):
        parse_bytes(doc("pdf_unreadable-metadata.pdf"), "bad.pdf")


def test_docx_paragraphs_tables_headers_footers():
    text = parse_bytes(doc("docx_hdrftr.docx"), "h.docx").text
    assert "Header: First header para" in text and "Footer:" in text
    tables = parse_bytes(doc("docx_tables.docx"), "t.docx")
    rows = [s for s in tables.segments if s.table == 1]  # one segment per body row, the header row rides along
    assert [(s.text, s.header) for s in rows] == [("Lorem ipsum | A link example", "Header Col 1 | Header Col 2")]
    with pytest.raises(EmptyDocument, match="contains no text"):
        parse_bytes(doc("docx_pydocx-nested-tables.docx"), "n.docx")


def test_pptx_slides_tables_charts_notes():
    table = parse_bytes(doc("pptx_table.pptx"), "t.pptx")
    rows = [s for s in table.segments if s.table == 1]
    assert table.segments[0].slide == 1 and [s.slide for s in rows] == [1, 1, 1]
    assert rows[0].text == "Red | Green | Blue" and {s.header for s in rows} == {"Column 1 | Column 2 | Column 3"}
    assert table.segments[0].section == "A Slide with a Table"
    assert "Notes: Notes" in parse_bytes(doc("pptx_pypptx-notes.pptx"), "n.pptx").text
    chart = parse_bytes(doc("pptx_pypptx-charts.pptx"), "c.pptx").text
    assert "Categories: Category 1" in chart and "Series" in chart
    macro = parse_bytes(doc("pptm_pypptx-macro.pptm"), "m.pptm")
    assert macro.filetype == "pptm" and [s.slide for s in macro.segments][:2] == [1, 2] and "\x0b" not in macro.text


@pytest.mark.parametrize("name,expected", [
    ("doc_legacy-duplicate-paragraphs.doc", "legacy Word 97-2003"),
    ("odt_fake.odt", "OpenDocument"),
])
def test_unsupported_formats_are_named(name, expected):
    with pytest.raises(UnsupportedFileType, match=expected):
        parse_bytes(doc(name), name)


def test_content_is_sniffed_not_the_extension():
    pdf_as_txt = parse_bytes(doc("pdf_crazyones.pdf"), "notes.txt")
    assert pdf_as_txt.filetype == "pdf"
    with pytest.raises(CorruptFile, match="looks like a PNG image but cannot be decoded"):  # images are read (OCR)
        parse_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "photo.pdf")
    with pytest.raises(UnsupportedFileType, match="x-executable|binary"):
        parse_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 200, "program.txt")


def test_text_encodings_without_mojibake():
    text = "Café crème, naïve façade — 10 € por niño"
    assert parse_bytes(text.encode("cp1252"), "menu.txt").text == text.replace("—", "—")
    assert parse_bytes(text.encode("utf-16"), "menu.txt").text == text
    assert parse_bytes(("\ufeff" + text).encode("utf-8"), "menu.txt").text == text
    with pytest.raises(EmptyDocument):
        parse_bytes(b"   \n\t  ", "blank.txt")
    with pytest.raises(EmptyDocument):
        parse_bytes(b"", "empty.txt")


def test_markdown_front_matter_and_sections():
    md = b"---\ntitle: Trip notes\ntags: [travel, japan]\n---\n# Japan\nIntro text.\n## Kyoto\nTemples and gardens.\n## Tokyo\nTrains.\n"
    parsed = parse_bytes(md, "trip.md")
    assert parsed.metadata == {"title": "Trip notes", "tags": ["travel", "japan"]}
    sections = {s.section: s.text for s in parsed.segments}
    assert "Temples and gardens." in sections["Japan > Kyoto"] and "Trains." in sections["Japan > Tokyo"]


def test_csv_and_xlsx_one_record_per_row():
    csv_bytes = "name;city;price\nAda;London;12,50\nLinus;Helsinki;\n".encode("latin-1")
    parsed = parse_bytes(csv_bytes, "people.csv")
    assert parsed.tabular and [s.row for s in parsed.segments] == [1, 2]
    assert parsed.segments[0].text == "name: Ada\ncity: London\nprice: 12,50"
    assert parsed.segments[1].text == "name: Linus\ncity: Helsinki"
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        pd.DataFrame({"sku": ["A1", "B2"], "stock": [3, 0]}).to_excel(writer, sheet_name="Stock", index=False)
        pd.DataFrame({"q": ["Q3"], "revenue": [1.5]}).to_excel(writer, sheet_name="Sales", index=False)
    book = parse_bytes(buffer.getvalue(), "inventory.xlsx")
    assert [(s.sheet, s.row) for s in book.segments] == [("Stock", 1), ("Stock", 2), ("Sales", 1)]
    assert book.segments[1].text == "sku: B2\nstock: 0"


def _zip_bomb(inner: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(inner, "<w:document/>")
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/media/bomb.bin", b"\x00" * (300 * 2**20))
    return buffer.getvalue()


def test_zip_bomb_docx_is_refused_before_parsing():
    data = _zip_bomb("word/document.xml")
    assert len(data) < 2 * 2**20
    with pytest.raises(UnsafeArchive, match="zip bomb"):
        parse_bytes(data, "report.docx", limits=Limits(max_uncompressed_bytes=200 * 2**20))
    with pytest.raises(UnsafeArchive, match="compressed"):
        parse_bytes(data, "report.docx")


def test_size_cap():
    with pytest.raises(FileTooLarge, match="upload limit is 1 MB"):
        parse_bytes(b"x" * (2 * 2**20), "big.txt", limits=Limits(max_bytes=2**20))


def test_worker_process_times_out_and_recovers():
    worker = ParserProcess(timeout_s=0.01)
    try:
        with pytest.raises(ParseTimeout, match="took longer"):
            worker.parse(doc("pdf_GeoBase_UML.pdf"), "slow.pdf")
        worker.timeout_s = 60
        assert worker.parse(doc("pdf_crazyones.pdf"), "ok.pdf").segments[0].page == 1
        with pytest.raises(PasswordRequired):  # engine errors cross the process boundary intact
            worker.parse(doc("pdf_enc_encrypted-file.pdf"), "enc.pdf")
    finally:
        worker.close()
