"""Tables inside documents (DOCX, PPTX, Markdown) become TABLE chunks of whole rows with the header row on
top of every chunk; a DOCX python-docx cannot lay out is still indexed from its XML, never refused with a
library's exception text. Generated files (python-docx, python-pptx) plus the real ones in ../shared/data."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import docx
import pptx
import pytest
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from pptx.exc import InvalidXmlError
from pptx.util import Inches

from echomind.chunking import chunk_segments
from echomind.chunking.models import DocType
from echomind.errors import CorruptFile
from echomind.parsing import Segment, parse_bytes

from conftest import doc

HEADER = "Station | Rainfall mm | Sunshine hours | Remark"
STATIONS = ["Aberdeen", "Bergen", "Cusco", "Dakar", "Esbjerg", "Fairbanks", "Galway", "Hobart", "Iquitos", "Jaipur",
            "Kourou", "Lhasa", "Mombasa", "Nuuk", "Ouagadougou", "Punta Arenas", "Quito", "Reykjavik", "Suva", "Timbuktu",
            "Ushuaia", "Valdivia", "Windhoek", "Xining", "Yakutsk", "Zanzibar", "Arica", "Bamako", "Cayenne", "Darwin"]


def rows() -> list[list[str]]:
    return [[name, f"{100 + 37 * i}", f"{1200 + 11 * i}", f"measured at the {name} field station since {1950 + i}"] for i, name in enumerate(STATIONS)]


def row_lines() -> list[str]:
    return [" | ".join(r) for r in rows()]


def table_chunks(chunks):
    return [c for c in chunks if c.table is not None]


def assert_whole_rows_under_header(chunks, header: str, lines: list[str]) -> None:
    """Every chunk of the table starts with the header; every row is in exactly one chunk, whole."""
    assert chunks, "no TABLE chunk"
    for chunk in chunks:
        first, *body = chunk.text.split("\n")
        assert first == header
        assert body and all(line in lines for line in body), f"a partial or foreign row in {chunk.text!r}"
    for line in lines:
        assert sum(line in c.text.split("\n")[1:] for c in chunks) == 1, line


def make_docx(table_rows: list[list[str]] = None) -> bytes:
    document = docx.Document()
    document.add_heading("Climate stations", 1)
    document.add_paragraph("The stations below report rainfall and sunshine every month to the network office.")
    document.add_paragraph("Table 1: Annual rainfall and sunshine by station", style="Caption")
    grid = [HEADER.split(" | ")] + (table_rows or rows())
    table = document.add_table(rows=len(grid), cols=4)
    for r, values in enumerate(grid):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    document.add_paragraph("Readings after 2020 are provisional and will be revised by the network office.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_pptx() -> bytes:
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Network overview"
    first.placeholders[1].text = "Thirty stations on six continents."
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Station figures"
    grid = [HEADER.split(" | ")] + rows()
    table = slide.shapes.add_table(len(grid), 4, Inches(0.5), Inches(1.5), Inches(9), Inches(5)).table
    for r, values in enumerate(grid):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_markdown() -> bytes:
    lines = ["# Climate stations", "", "The stations below report to the network office.", "", "## Figures", "",
             "Table 1: Annual rainfall and sunshine by station", "", "| " + HEADER + " |", "|---|---:|---:|:---|"]
    lines += ["| " + line + " |" for line in row_lines()]
    lines += ["", "Readings after 2020 are provisional.", "", "```", "| code | not | a | table |", "|---|---|---|---|", "| 1 | 2 | 3 | 4 |", "```"]
    return "\n".join(lines).encode()


def chunked(data: bytes, name: str):
    parsed = parse_bytes(data, name)
    return parsed, chunk_segments(parsed.segments, "d", parsed.tabular)


def test_docx_table_rows_are_whole_under_their_header_with_caption():
    parsed, result = chunked(make_docx(), "stations.docx")
    chunks = table_chunks(result.chunks)
    assert len(chunks) >= 3  # 30 rows of ~75 characters do not fit one 800-character chunk
    assert_whole_rows_under_header(chunks, HEADER, row_lines())
    assert all(c.doc_type is DocType.TABLE for c in chunks)
    assert {c.section for c in chunks} == {"Climate stations > Table 1: Annual rainfall and sunshine by station"}
    covered = [n for c in chunks for n in range(c.row, (c.row_end or c.row) + 1)]
    assert covered == list(range(1, len(STATIONS) + 1))  # row ranges tile the table
    prose = " ".join(c.text for c in result.chunks if c.table is None)
    assert "report rainfall and sunshine" in prose and "provisional" in prose and "Aberdeen" not in prose
    assert max(len(c.text) for c in chunks) <= 800


def test_pptx_table_rows_are_whole_under_their_header_on_their_slide():
    _, result = chunked(make_pptx(), "stations.pptx")
    chunks = table_chunks(result.chunks)
    assert len(chunks) >= 3
    assert_whole_rows_under_header(chunks, HEADER, row_lines())
    assert {(c.slide, c.section) for c in chunks} == {(2, "Station figures")}
    assert any("Thirty stations" in c.text and c.slide == 1 for c in result.chunks)


def test_markdown_pipe_table_rows_are_whole_under_their_header():
    _, result = chunked(make_markdown(), "stations.md")
    chunks = table_chunks(result.chunks)
    assert len(chunks) >= 3
    assert_whole_rows_under_header(chunks, HEADER, row_lines())
    assert {c.section for c in chunks} == {"Climate stations > Figures > Table 1: Annual rainfall and sunshine by station"}
    code = [c.text for c in result.chunks if "| code |" in c.text]
    assert code and all(c.table is None for c in result.chunks if "| code |" in c.text)  # fenced code is not a table


def test_real_docx_tables_keep_merged_cells_once_per_row():
    _, result = chunked(doc("docx_tables.docx"), "docx_tables.docx")
    texts = [c.text for c in table_chunks(result.chunks)]
    assert texts[0] == "Header Col 1 | Header Col 2\nLorem ipsum | A link example"
    # 3x3 table: "a" spans two rows, "b" and "e" two columns, "d" two rows: each once per row it covers
    assert texts[-1] == "a | b\na | c | d\ne | d"


def test_real_pptx_table_rows_under_header():
    _, result = chunked(doc("pptx_table.pptx"), "pptx_table.pptx")
    (chunk,) = table_chunks(result.chunks)
    assert chunk.text.split("\n") == ["Column 1 | Column 2 | Column 3", "Red | Green | Blue", "Purple | Orange | Yellow", "Tangerine | Pink | Aqua"]
    assert (chunk.slide, chunk.section, chunk.row, chunk.row_end) == (1, "A Slide with a Table", 1, 3)


def test_a_row_longer_than_the_maximum_is_its_own_chunk_never_cut():
    long_remark = " ".join(["an unusually long remark about instruments"] * 25)  # ~1,075 characters
    table = rows()[:6]
    table[3][3] = long_remark
    _, result = chunked(make_docx(table), "long.docx")
    chunks = table_chunks(result.chunks)
    lines = [" | ".join(r) for r in table]
    assert_whole_rows_under_header(chunks, HEADER, lines)
    (alone,) = [c for c in chunks if long_remark in c.text]
    assert alone.text == HEADER + "\n" + lines[3]


def test_a_table_used_for_page_layout_is_chunked_as_prose():
    """Cells holding paragraphs are not records: no header repeated over them, chunks of normal size."""
    letter = [[" ".join([f"Clause {i} of the agreement sets out the duties of the tenant in plain words."] * 12), "", "", ""] for i in range(4)]
    _, result = chunked(make_docx(letter), "letter.docx")
    assert table_chunks(result.chunks) == []
    assert max(len(c.text) for c in result.chunks) <= 800
    assert all(any(f"Clause {i} of" in c.text for c in result.chunks) for i in range(4))


def test_chunker_relies_only_on_segment_fields():
    """How a PDF parser hands over table rows: page and section set, rows numbered by their order."""
    header = "Item | 2024 | 2023"
    segs = [Segment(text="Consolidated statement of income, in thousands.", page=3, section="Income")]
    segs += [Segment(text=f"Line item {i} | {1000 + i} | {900 + i}", page=3 if i < 20 else 4, section="Income", table=1, header=header) for i in range(40)]
    segs += [Segment(text="Notes follow on the next page.", page=4, section="Income")]
    result = chunk_segments(segs, "p")
    chunks = table_chunks(result.chunks)
    assert_whole_rows_under_header(chunks, header, [s.text for s in segs[1:-1]])
    covered = [n for c in chunks for n in range(c.row, (c.row_end or c.row) + 1)]
    assert covered == list(range(1, 41))  # rows numbered by their place in the table when the parser gives none
    for c in chunks:  # each chunk's pages are those of its first and last row (rows 0-19 on page 3)
        assert (c.page, c.page_end or c.page) == (3 if c.row <= 20 else 4, 3 if (c.row_end or c.row) <= 20 else 4)
    assert [c.text for c in result.chunks if c.table is None] == ["Consolidated statement of income, in thousands.", "Notes follow on the next page."]


def test_redaction_still_runs_on_every_row_and_the_header():
    header = "Name | Contact"
    segs = [Segment(text=f"Person {i} | person{i}@example.org", table=1, header=header) for i in range(3)]
    result = chunk_segments(segs, "r")
    (chunk,) = result.chunks
    assert chunk.text.startswith(header + "\n") and "@example.org" not in chunk.text and chunk.text.count("[REDACTED_EMAIL]") == 3
    assert sum(result.redactions.values()) == 3
    kept = chunk_segments(segs, "r", redact_pii=False).chunks[0]
    assert "person2@example.org" in kept.text


def test_search_for_a_row_label_returns_that_row_with_its_header(engine):
    for name, data in (("stations.docx", make_docx()), ("stations.pptx", make_pptx()), ("stations.md", make_markdown())):
        assert engine.ingest_bytes(name, data).status == "indexed"
    for label in ("Ouagadougou", "Punta Arenas", "Yakutsk"):
        line = next(line for line in row_lines() if line.startswith(label))
        hits = engine.search(f"rainfall at {label}").hits
        best = {}  # each file's best-ranked chunk
        for hit in hits:
            best.setdefault(hit.source["filename"], hit)
        assert hits[0] in best.values() and set(best) == {"stations.docx", "stations.pptx", "stations.md"}
        for hit in best.values():  # in every file, the chunk holding the row comes first, header on top
            assert hit.text.startswith(HEADER + "\n") and line in hit.text.split("\n"), (label, hit.text)
            assert hit.source["doc_type"] == "TABLE" and hit.source["table"] == 1
            assert hit.source["row"] <= STATIONS.index(label) + 1 <= hit.source.get("row_end", hit.source["row"])


# ---------------------------------------------------------------- malformed DOCX: text kept, no raw errors

RAW_ERROR = re.compile(r"ValueError|KeyError|XMLSyntaxError|grid_offset|Traceback|Error:")


def malformed_merge_docx() -> bytes:
    """A vertical merge that points nowhere: row 0's first cell spans two grid columns, so there is no
    cell at grid offset 1 for row 1's "continue" cell to merge with (python-docx: ValueError)."""
    document = docx.Document()
    document.add_heading("Quarterly figures", 1)
    document.add_paragraph("Regional sales before the table.")
    table = document.add_table(rows=3, cols=3)
    for r, values in enumerate([["Region", "Q1", "Q2"], ["Northumberland", "120", "130"], ["Southampton", "90", "95"]]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    first_row = table.rows[0]._tr
    span = OxmlElement("w:gridSpan")
    span.set(qn("w:val"), "2")
    first_row.tc_lst[0].get_or_add_tcPr().append(span)
    first_row.remove(first_row.tc_lst[1])
    table.rows[1]._tr.tc_lst[1].get_or_add_tcPr().append(OxmlElement("w:vMerge"))
    document.add_paragraph("Closing remarks after the table.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def rewrite_part(data: bytes, part: str, change) -> bytes:
    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            target.writestr(info.filename, change(content) if info.filename == part else content)
    return out.getvalue()


def test_python_docx_really_fails_on_the_malformed_table():
    table = docx.Document(io.BytesIO(malformed_merge_docx())).tables[0]
    with pytest.raises(ValueError, match="grid_offset"):
        [row.cells for row in table.rows]


def test_malformed_merged_cells_are_indexed_from_the_xml_with_a_warning(engine):
    result = engine.ingest_bytes("merged.docx", malformed_merge_docx())
    assert result.status == "indexed"
    assert result.warnings and "could not be read" in result.warnings[0] and not RAW_ERROR.search(" ".join(result.warnings))
    texts = [c["text"] for c in engine.document_chunks(result.doc_id)]
    assert any(t.startswith("Region | Q2\n") and "Northumberland | 120 | 130" in t for t in texts)
    assert any("Regional sales before the table." in t for t in texts) and any("Closing remarks" in t for t in texts)
    top = engine.search("Southampton sales").hits[0]
    assert top.doc_id == result.doc_id and "Southampton | 90 | 95" in top.text


def test_a_docx_python_docx_cannot_open_falls_back_to_its_text_runs():
    damaged = rewrite_part(malformed_merge_docx(), "word/styles.xml", lambda content: content[:200])  # cut mid-tag
    parsed = parse_bytes(damaged, "styles.docx")
    assert parsed.warnings and "plain paragraphs" in parsed.warnings[0] and not RAW_ERROR.search(parsed.warnings[0])
    lines = parsed.text.split("\n")
    assert lines[:3] == ["Quarterly figures", "Regional sales before the table.", "Region"]  # w:p order, w:t text
    assert "Northumberland" in lines and lines[-1] == "Closing remarks after the table."


def test_damaged_office_files_get_specific_messages_not_library_errors():
    broken = rewrite_part(malformed_merge_docx(), "word/document.xml", lambda content: content[:300])
    with pytest.raises(CorruptFile, match="not a readable Word document") as raised:
        parse_bytes(broken, "broken.docx")
    assert not RAW_ERROR.search(str(raised.value))
    deck = rewrite_part(make_pptx(), "ppt/slides/slide2.xml", lambda content: content[:200])
    with pytest.raises(CorruptFile, match="not a readable PowerPoint file") as raised:
        parse_bytes(deck, "broken.pptx")
    assert not RAW_ERROR.search(str(raised.value))


def test_a_pptx_table_python_pptx_cannot_read_keeps_its_rows_with_a_warning():
    bad = rewrite_part(make_pptx(), "ppt/slides/slide2.xml", lambda content: content.replace(b"<a:tc>", b'<a:tc hMerge="maybe">', 1))
    with pytest.raises(InvalidXmlError):  # python-pptx itself cannot read that merge flag
        [cell.is_spanned for row in pptx.Presentation(io.BytesIO(bad)).slides[1].shapes[1].table.rows for cell in row.cells]
    parsed, result = chunked(bad, "bad.pptx")
    assert parsed.warnings and "slide 2" in parsed.warnings[0] and not RAW_ERROR.search(parsed.warnings[0])
    assert_whole_rows_under_header(table_chunks(result.chunks), HEADER, row_lines())


def test_a_real_markdown_file_with_tables():
    """The project's README (pipe tables of figures): every table chunk is whole rows under its header."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_bytes()
    parsed, result = chunked(readme, "README.md")
    tables = {s.table: (s.header, []) for s in parsed.segments if s.table is not None}
    for s in parsed.segments:
        if s.table is not None:
            tables[s.table][1].append(s.text)
    assert len(tables) >= 2 and all(header for header, _ in tables.values())
    for number, (header, lines) in tables.items():
        assert_whole_rows_under_header([c for c in result.chunks if c.table == number], header, lines)
    assert not any(re.search(r"\|\s*-{3,}", c.text) for c in result.chunks)  # no delimiter row left in any chunk


def test_markdown_caption_in_bold_and_pandoc_style():
    text = "# Costs\n\n**Travel per trip**\n\n| Trip | Cost |\n|---|---|\n| Oslo | 420 |\n\n| Item | Qty |\n|---|---|\n| Pens | 12 |\n\nTable: Office supplies\n"
    parsed = parse_bytes(text.encode(), "costs.md")
    assert [(s.table, s.section, s.header, s.text) for s in parsed.segments if s.table] == [
        (1, "Costs > Travel per trip", "Trip | Cost", "Oslo | 420"), (2, "Costs > Office supplies", "Item | Qty", "Pens | 12")]


def test_a_docx_whose_only_text_is_in_a_content_control_is_not_called_empty():
    document = docx.Document()
    sdt = OxmlElement("w:sdt")
    content = OxmlElement("w:sdtContent")
    paragraph = OxmlElement("w:p")
    run = OxmlElement("w:r")
    text = OxmlElement("w:t")
    text.text = "Signed by the tenant on arrival"
    run.append(text), paragraph.append(run), content.append(paragraph), sdt.append(content)
    document.element.body.insert(0, sdt)
    out = io.BytesIO()
    document.save(out)
    parsed = parse_bytes(out.getvalue(), "form.docx")
    assert parsed.text == "Signed by the tenant on arrival" and "content controls" in parsed.warnings[0]
