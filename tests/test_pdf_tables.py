"""PDF tables on the two shared 10-Q filings: a statement's row arrives as one segment under the column
headers that name its periods, no figure of the page text is lost or doubled, and a search for the row
label returns a chunk holding the row and its header (issue 11, item 4)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from echomind.parsing import pdf_tables
from echomind.parsing.pdf import parse_pdf

from conftest import SHARED

FILINGS = SHARED / "filings"
AAPL, NVDA = "2023 Q3 AAPL.pdf", "2022 Q3 NVDA.pdf"

# (filing, page, row text as read from the PDF, words every column header must hold in order)
ROWS = [
    (AAPL, 4, "Total net sales | 81,797 | 82,959 | 293,787 | 304,182",
     ["Three Months Ended July 1, 2023", "Three Months Ended June 25, 2022", "Nine Months Ended July 1, 2023", "Nine Months Ended June 25, 2022"]),
    (AAPL, 4, "Net sales: Products | $ 60,584 | $ 63,355 | $ 230,901 | $ 245,241",
     ["Three Months Ended July 1, 2023", "Three Months Ended June 25, 2022", "Nine Months Ended July 1, 2023", "Nine Months Ended June 25, 2022"]),
    (AAPL, 21, "Percentage of total net sales | 9 % | 8 % | 8 % | 6 %",  # "%" figures end a few points right of the "$" ones
     ["Three Months Ended July 1, 2023", "Three Months Ended June 25, 2022", "Nine Months Ended July 1, 2023", "Nine Months Ended June 25, 2022"]),
    (NVDA, 3, "Revenue | $ 5,931 | $ 7,103 | $ 20,923 | $ 19,271",
     ["Three Months Ended October 30, 2022", "Three Months Ended October 31, 2021", "Nine Months Ended October 30, 2022", "Nine Months Ended October 31, 2021"]),
    (NVDA, 3, "Net income per share: Diluted | $ 0.27 | $ 0.97 | $ 1.17 | $ 2.67",
     ["Three Months Ended October 30, 2022", "Three Months Ended October 31, 2021", "Nine Months Ended October 30, 2022", "Nine Months Ended October 31, 2021"]),
    (NVDA, 5, "Total assets | $ 40,488 | $ 44,187", ["October 30, 2022", "January 30, 2022"]),
]

FIGURE = re.compile(r"\(?\d{1,3}(?:,\d{3})+(?:\.\d+)?\)?|\d+\.\d+")


@pytest.fixture(scope="module")
def parsed() -> dict:
    return {name: parse_pdf((FILINGS / name).read_bytes(), name) for name in (AAPL, NVDA)}


@pytest.mark.parametrize("name,page,row,columns", ROWS, ids=[r[2].split(" |")[0] for r in ROWS])
def test_a_statement_row_arrives_with_the_headers_naming_its_periods(parsed, name, page, row, columns):
    matches = [s for s in parsed[name].segments if s.text == row]
    assert matches, f"{row!r} is not a segment of {name}"
    segment = matches[0]
    assert segment.page == page and segment.table is not None
    heads = [h.strip() for h in segment.header.split("|")]
    assert heads[-len(columns):] == columns  # one heading per figure, in the order of the figures
    assert len(row.split("|")) - 1 == len(columns)


def test_the_statements_keep_their_titles_as_captions(parsed):
    captions = {s.section for s in parsed[AAPL].segments if s.table is not None}
    assert "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)" in captions
    assert "CONDENSED CONSOLIDATED BALANCE SHEETS" in {s.section for s in parsed[NVDA].segments if s.table is not None}


@pytest.mark.parametrize("name", [AAPL, NVDA])
def test_no_figure_or_word_of_the_page_text_is_lost_or_doubled(parsed, name):
    """The rows and the text left around them hold exactly the words of pypdf's page text: the same
    multiset of figures and of words, page by page (header text is metadata, not counted)."""
    import pypdf

    reader = pypdf.PdfReader(FILINGS / name)
    document = parsed[name]
    tables = {s.page for s in document.segments if s.table is not None}
    assert len(tables) >= 10  # the statements and the notes' tables were found
    for number in tables:
        original = reader.pages[number - 1].extract_text().translate(pdf_tables._LIGATURES)
        now = " ".join(s.text for s in document.segments if s.page == number)
        assert Counter(FIGURE.findall(now)) == Counter(FIGURE.findall(original)), f"page {number}"
        # a heading ("Net sales:") is repeated before the rows it introduces; nothing else is added
        words = Counter(now.replace("|", " ").split())
        words.subtract(Counter(original.replace("|", " ").split()))  # the AAPL footer has its own "|"
        assert all(n >= 0 for n in words.values()), f"page {number}: words lost {[w for w, n in words.items() if n < 0][:5]}"


def test_prose_pages_are_left_as_pypdf_read_them(parsed):
    """A page without figures in columns stays one segment, unchanged (and is never laid out)."""
    document = parsed[NVDA]
    prose = [s for s in document.segments if s.page == 39]
    assert len(prose) == 1 and prose[0].table is None
    assert not pdf_tables.looks_tabular(prose[0].text)


def test_unsure_rows_stay_in_the_page_text():
    """A row whose line pypdf printed differently is not taken out: the text keeps it, no row is made."""
    line = pdf_tables._Line([pdf_tables._Word("Revenue", 19, 55, 0, 9), pdf_tables._Word("5,931", 332, 355, 0, 9)])
    table = pdf_tables._Table([pdf_tables._Row([line], "Revenue", ["5,931"])], "Q3", None)
    assert pdf_tables._splice("Intro\nRevenue 5,931 x\nEnd", [table], 1, 1) is None
    split = pdf_tables._splice("Intro\nRevenue   5,931\nEnd", [table], 1, 1)
    assert [(s.text, s.table) for s in split.segments] == [("Intro", None), ("Revenue | 5,931", 1), ("End", None)]


def test_a_search_for_a_row_label_returns_the_row_under_its_headers(engine):
    """Through the real engine (parse in the worker, redaction, chunking, MiniLM, FAISS + BM25); one
    filing keeps the test short, the NVDA rows are checked at the parser above."""
    engine.ingest_bytes(AAPL, (FILINGS / AAPL).read_bytes())
    periods = "Three Months Ended July 1, 2023 | Three Months Ended June 25, 2022"
    for query, row in [
        ("Total net sales", "Total net sales | 81,797 | 82,959 | 293,787 | 304,182"),
        ("Provision for income taxes", "Provision for income taxes | 2,852 | 3,624 | 12,699 | 15,364"),
    ]:
        hits = engine.search(query).hits[:5]
        chunk = next((h.text for h in hits if row in h.text), None)
        assert chunk is not None, f"{query!r}: the row is not in the top 5: {[h.text[:80] for h in hits]}"
        assert chunk.index(periods) < chunk.index(row)  # the header is at the top of the chunk
