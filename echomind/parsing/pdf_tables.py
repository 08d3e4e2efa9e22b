"""Tables in PDF text pages (financial statements, schedules) as one segment per row under its column
headers, so a search for a row label finds the row with the periods its figures belong to.

Filings set their statements as *text-aligned* tables: no ruling lines, figures right-aligned in columns,
spanning headers ("Three Months Ended") centred over two columns. pdfplumber's own table finder
(``vertical_strategy="text"``) was measured on the two shared 10-Q filings and rejected: it cuts header
words at its column edges ("Thr | ee Mont | hs Ended", "Octob | er 30,") and moves a "$" into the cell
before it ("680 $"). So pdfplumber gives the words with their coordinates (it groups characters into words
reliably) and this module builds the table: figure columns are right edges shared by figures on several
lines, a row is a line ending in figures in those columns, the header is the lines above the first row
that sit over the columns, each header phrase going to every column it spans.

Text is never lost or doubled: a row is emitted only when its line is found in the page's pypdf text,
and exactly those lines are taken out of the page text; everything else stays where it was."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

from .models import Segment

# A figure as printed in a statement: 60,584  (265)  1.27  12%  —  (with "$" or "%" as separate words).
_FIGURE = re.compile(r"^\(?[-−–]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?\)?%?$|^[—–-]{1,3}$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_ATTACHED = {"$", "%", ")", "%)"}
_COLUMN_TOLERANCE = 3.0  # points: right edges of one column's figures
_MIN_COLUMN_FIGURES = 3  # figures sharing a right edge before it counts as a column
_MIN_ROWS = 3  # figure rows before a run of lines counts as a table
_MAX_GAP_LINES = 3  # label-only lines allowed between two figure rows of one table
_MAX_HEADER_LINES = 5
_CAPTION_LOOKBACK = 3
_CAPTION_WORDS = 12
_TRAILING_FIGURES = re.compile(r"(?:\s+\(?\$?[-−–]?\d[\d,]*(?:\.\d+)?%?\)?|\s+[—–-]{1,3}|\s+\$)\s*$")


@dataclass
class _Word:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float


@dataclass
class _Line:
    words: list[_Word]

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return self.words[-1].x1

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def key(self) -> str:
        return _key(self.text)


@dataclass
class _Row:
    lines: list[_Line]  # the physical lines (a wrapped label, then the line with the figures)
    label: str
    cells: list[str]  # one per column of the table, "" where the row has no figure


@dataclass
class _Table:
    rows: list[_Row]
    header: str | None
    caption: str | None


@dataclass
class PageTables:
    """A page's text with its tables' rows taken out, as ordered segments."""

    segments: list[Segment] = field(default_factory=list)
    tables: int = 0


def looks_tabular(text: str, min_lines: int = 4) -> bool:
    """Cheap test on the pypdf text: enough lines end in two or more figures to be worth laying out."""
    count = 0
    for line in text.splitlines():
        tail = line.rstrip()
        figures = 0
        while figures < 2:
            match = _TRAILING_FIGURES.search(tail)
            if not match:
                break
            figures += match.group().strip() != "$"
            tail = tail[: match.start()]
        count += figures >= 2
        if count >= min_lines:
            return True
    return False


def open_pdf(data: bytes, password: str | None):
    """pdfplumber's document, or None when it cannot open what pypdf could (tables are then not laid out)."""
    import pdfplumber

    try:
        return pdfplumber.open(io.BytesIO(data), password=password or "")
    except Exception:  # pdfminer raises many kinds; the page text from pypdf is kept as it is
        return None


def split_page(pdf, number: int, text: str, first_table: int) -> PageTables | None:
    """The page's segments with its tables as rows (tables numbered from ``first_table``), or None when
    no table was found or its words could not be read (the caller keeps the page's text unchanged)."""
    try:
        page = pdf.pages[number - 1]
        words = page.extract_words(keep_blank_chars=False, use_text_flow=False)
    except Exception:  # a page pdfminer cannot lay out: keep pypdf's text
        return None
    tables = find_tables(_lines(words))
    if not tables:
        return None
    return _splice(text, tables, number, first_table)


def _lines(raw_words: list[dict]) -> list[_Line]:
    """Words grouped into lines by their vertical position, each line read left to right."""
    words = [_Word(w["text"].translate(_LIGATURES), w["x0"], w["x1"], w["top"], w["bottom"]) for w in raw_words if w["text"].strip()]
    words.sort(key=lambda w: (w.top, w.x0))
    lines: list[list[_Word]] = []
    for word in words:
        if lines:
            last = lines[-1]
            height = max(1.0, last[0].bottom - last[0].top)
            if abs(word.top - last[0].top) <= height * 0.4:
                last.append(word)
                continue
        lines.append([word])
    return [_Line(sorted(line, key=lambda w: w.x0)) for line in lines]


def _trailing_figures(line: _Line, columns: list[float] | None) -> list[list[_Word]]:
    """The figures at the end of a line, left to right, each with its "$", "(" or "%" words. With
    ``columns``, a figure counts only if its right edge is on a column (so "due 2026" stays in a label)."""
    words = line.words
    cells: list[list[_Word]] = []
    i = len(words) - 1
    while i >= 0:
        suffix: list[_Word] = []
        if words[i].text in _ATTACHED and i > 0 and _FIGURE.match(words[i - 1].text) and words[i - 1].text not in _ATTACHED:
            suffix, i = [words[i]], i - 1  # a "%" or ")" printed apart from its figure
        word = words[i]
        if not _FIGURE.match(word.text) or word.text in _ATTACHED:
            break
        cell = [word] + suffix
        if columns is not None and _column_of(_edge(cell), columns) is None:
            break
        j = i - 1
        while j >= 0 and words[j].text in ("$", "(", "$("):
            cell.insert(0, words[j])
            j -= 1
        cells.insert(0, cell)
        i = j
    return cells


def _edge(cell: list[_Word]) -> float:
    """Where a cell ends: figures are right-aligned, so this is its column."""
    return cell[-1].x1


def _column_of(x1: float, columns: list[float]) -> int | None:
    for index, edge in enumerate(columns):
        if abs(x1 - edge) <= _COLUMN_TOLERANCE:
            return index
    return None


def _columns(lines: list[_Line]) -> list[float]:
    """Right edges shared by at least three trailing figures of the page's lines (numbers are
    right-aligned in statements), left to right."""
    edges: list[float] = []
    for line in lines:
        cells = _trailing_figures(line, None)
        if len(cells) >= 2 or (cells and line.words[0] is not cells[0][0]):
            edges.extend(_edge(cell) for cell in cells)
    edges.sort()
    clusters: list[list[float]] = []
    for edge in edges:
        if clusters and edge - clusters[-1][-1] <= _COLUMN_TOLERANCE:
            clusters[-1].append(edge)
        else:
            clusters.append([edge])
    return [sum(c) / len(c) for c in clusters if len(c) >= _MIN_COLUMN_FIGURES]


def _is_year_line(line: _Line) -> bool:
    return all(_YEAR.match(w.text) for w in line.words)


def find_tables(lines: list[_Line]) -> list[_Table]:
    """Runs of lines ending in figures on shared columns, each with its header and caption."""
    columns = _columns(lines)
    if len(columns) < 1:
        return []
    figure_cells: list[list[list[_Word]] | None] = []
    for line in lines:
        cells = _trailing_figures(line, columns)
        label_words = line.words[: len(line.words) - sum(len(c) for c in cells)]
        row = cells and label_words and not _is_year_line(line)
        figure_cells.append(cells if row else None)
    tables: list[_Table] = []
    i = 0
    while i < len(lines):
        if figure_cells[i] is None:
            i += 1
            continue
        start, end, gap, j = i, i, 0, i + 1
        while j < len(lines) and gap <= _MAX_GAP_LINES:
            if figure_cells[j] is not None:
                end, gap = j, 0
            elif lines[j].x1 >= min(columns) - 5 or _is_year_line(lines[j]):
                break  # a line reaching into the figure columns: a new header or prose
            else:
                gap += 1
            j += 1
        body = range(start, end + 1)
        if sum(figure_cells[k] is not None for k in body) >= _MIN_ROWS:
            table = _build(lines, figure_cells, start, end, columns)
            if table:
                tables.append(table)
        i = end + 1
    return tables


def _build(lines: list[_Line], figure_cells, start: int, end: int, all_columns: list[float]) -> _Table | None:
    used = sorted({_column_of(_edge(c), all_columns) for k in range(start, end + 1) if figure_cells[k] for c in figure_cells[k]})
    columns = _merge_interleaved([all_columns[u] for u in used], [figure_cells[k] for k in range(start, end + 1) if figure_cells[k]])
    spans: list[list[float]] = [[edge, edge] for edge in columns]
    for k in range(start, end + 1):
        for cell in figure_cells[k] or []:
            index = _nearest(_edge(cell), columns)
            spans[index] = [min(spans[index][0], cell[0].x0), max(spans[index][1], _edge(cell))]
    label_right = spans[0][0]
    start = _headings_above(lines, figure_cells, start, min(columns), label_right)
    header_start = start
    while header_start > 0 and start - header_start < _MAX_HEADER_LINES:
        above = lines[header_start - 1]
        if figure_cells[header_start - 1] is not None or not (_is_note(above) or _heads_columns(above, label_right)):
            break
        header_start -= 1
    while header_start < start and _is_note(lines[header_start]) and not any(
            not _is_note(line) for line in lines[header_start:start]):
        header_start += 1  # notes alone are no header: they stay text above the table
    header = _header(lines[header_start:start], spans)
    caption = _caption(lines[max(0, header_start - _CAPTION_LOOKBACK):header_start])
    rows: list[_Row] = []
    pending: list[_Line] = []  # label-only lines waiting for the figures they introduce or wrap into
    group: tuple[str, float] | None = None  # a heading ("Net sales:") and its indentation
    for k in range(start, end + 1):
        line = lines[k]
        cells = figure_cells[k]
        if cells is None:
            if line.x1 >= label_right * 0.6 and not line.text.rstrip().endswith(":"):
                pending.append(line)  # a long label wrapped onto the next line
                continue
            for wrapped in pending:
                rows.append(_Row([wrapped], wrapped.text, [""] * len(columns)))
            pending = []
            rows.append(_Row([line], line.text, [""] * len(columns)))
            group = (line.text, line.x0)
            continue
        count = sum(len(c) for c in cells)
        label = " ".join([p.text for p in pending] + [" ".join(w.text for w in line.words[: len(line.words) - count])])
        if group and (line.x0 <= group[1] + 2 or label.lower().startswith("total")):
            group = None  # a total closes its group and names itself; so does a line back at the heading's margin
        if group:
            label = f"{group[0]} {label}"
        row_cells = [""] * len(columns)
        for cell in cells:
            index = _nearest(_edge(cell), columns)  # two cells in one column stay together, never dropped
            row_cells[index] = " ".join(filter(None, [row_cells[index], " ".join(w.text for w in cell)]))
        rows.append(_Row(pending + [line], label, row_cells))
        pending = []
    for wrapped in pending:
        rows.append(_Row([wrapped], wrapped.text, [""] * len(columns)))
    return _Table(rows, header, caption) if rows else None


def _merge_interleaved(columns: list[float], rows: list[list[list[_Word]]]) -> list[float]:
    """Two close edges that no row fills both of are one column printed two ways ("$ 7,442" and "9 %"
    end a few points apart): a cell then goes to the column whose edge is nearest."""
    while len(columns) > 1:
        filled = [{_nearest(_edge(c), columns) for c in cells} for cells in rows]
        widest = max(b - a for a, b in zip(columns, columns[1:]))
        pairs = [i for i in range(len(columns) - 1)
                 if columns[i + 1] - columns[i] < widest / 2 and not any(i in f and i + 1 in f for f in filled)]
        if not pairs:
            break
        i = pairs[0]
        columns = columns[:i] + [columns[i + 1]] + columns[i + 2:]
    return columns


def _nearest(x1: float, columns: list[float]) -> int:
    return min(range(len(columns)), key=lambda i: abs(columns[i] - x1))


def _over_columns(line: _Line, label_right: float) -> bool:
    """A header line sits over the figure columns (a centred spanning heading may start a little left)."""
    return line.x0 >= label_right - 40


def _heads_columns(line: _Line, label_right: float) -> bool:
    """A header line: over the columns, or the label column's heading ("Periods") apart from headings
    over the columns on the same line."""
    if _over_columns(line, label_right):
        return True
    phrases = _phrases(line)
    return len(phrases) >= 2 and phrases[0][-1].x1 < label_right - 40 and phrases[1][0].x0 >= label_right - 40


def _is_note(line: _Line) -> bool:
    """"(In millions, except per share data)", "(Unaudited)": a note under the title, not a heading."""
    text = line.text.strip()
    return text.startswith("(") and text.endswith(")") and len(_phrases(line)) == 1


def _headings_above(lines: list[_Line], figure_cells, start: int, first_column: float, label_right: float) -> int:
    """Move a table's start up over the row headings right above its first figure row ("Net sales:"),
    when the column header is right above them."""
    k = start
    while k > 0 and start - k < 2:
        above = lines[k - 1]
        if figure_cells[k - 1] is not None or above.x1 >= first_column - 5 or _heads_columns(above, label_right):
            break
        k -= 1
    if k < start and k > 0 and _heads_columns(lines[k - 1], label_right) and not _is_note(lines[k - 1]):
        return k
    return start


def _header(lines: list[_Line], spans: list[list[float]]) -> str | None:
    """Each column's header words top to bottom; a phrase spanning two columns ("Three Months Ended")
    heads both. Words left of the columns ("(In millions)") head the label column."""
    heads: list[list[str]] = [[] for _ in spans]
    label_head: list[str] = []
    for line in lines:
        if _is_note(line):  # "(In millions)" qualifies every figure: it heads the label column
            label_head.append(line.text)
            continue
        for phrase in _phrases(line):
            a, b = phrase[0].x0, phrase[-1].x1
            text = " ".join(w.text for w in phrase)
            hits = [i for i, (lo, hi) in enumerate(spans) if min(b, hi) - max(a, lo) > 0.25 * min(b - a, hi - lo)]
            if not hits and b < spans[0][0] - 20:
                label_head.append(text)
                continue
            if not hits:
                centre = (a + b) / 2
                hits = [min(range(len(spans)), key=lambda i: abs((spans[i][0] + spans[i][1]) / 2 - centre))]
            for i in hits:
                heads[i].append(text)
    columns = [" ".join(h) for h in heads]
    if not any(columns):
        return None
    return " | ".join(([" ".join(label_head)] if label_head else []) + columns)


def _phrases(line: _Line) -> list[list[_Word]]:
    """A line's words split where the gap is wider than a space: the separate column headings."""
    phrases: list[list[_Word]] = [[line.words[0]]]
    for word in line.words[1:]:
        previous = phrases[-1][-1]
        if word.x0 - previous.x1 > 0.8 * max(1.0, previous.bottom - previous.top):
            phrases.append([word])
        else:
            phrases[-1].append(word)
    return phrases


def _caption(lines: list[_Line]) -> str | None:
    """The table's title: the nearest line above its header that is not a parenthetical note."""
    for line in reversed(lines):
        text = line.text.strip()
        if text and not text.startswith("(") and not _trailing_figures(line, None):
            # a title, not the tail of a sentence that introduces the table
            return text if text[0].isupper() and len(text.split()) <= _CAPTION_WORDS else None
    return None


def _key(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _splice(text: str, tables: list[_Table], page: int, first_table: int) -> PageTables | None:
    """Replace each found row's lines in the pypdf text by the row; rows whose lines pypdf printed
    differently stay in the text, so nothing is lost or doubled."""
    page_lines = text.split("\n")
    keys = [_key(line) for line in page_lines]
    replaced: dict[int, Segment | None] = {}  # pypdf line index -> the row segment (first line) or None
    cursor = 0
    number = first_table
    emitted = 0
    for table in tables:
        header_rows = 0
        for row in table.rows:
            found = _find(keys, [ln.key for ln in row.lines], cursor, replaced)
            if found is None:
                continue
            cursor = found[-1] + 1
            cells = " | ".join(row.cells)
            segment = Segment(text=f"{row.label} | {cells}" if any(row.cells) else row.label, page=page,
                              table=number, header=table.header, section=table.caption)
            replaced[found[0]] = segment
            for index in found[1:]:
                replaced[index] = None
            header_rows += 1
        if header_rows:
            number += 1
            emitted += 1
    if not emitted:
        return None
    result = PageTables(tables=emitted)
    text_run: list[str] = []
    for index, line in enumerate(page_lines):
        if index not in replaced:
            text_run.append(line)
            continue
        if "\n".join(text_run).strip():
            result.segments.append(Segment(text="\n".join(text_run).strip(), page=page))
        text_run = []
        if replaced[index] is not None:
            result.segments.append(replaced[index])
    if "\n".join(text_run).strip():
        result.segments.append(Segment(text="\n".join(text_run).strip(), page=page))
    return result


def _find(keys: list[str], wanted: list[str], cursor: int, taken: dict) -> list[int] | None:
    """Indexes of consecutive page lines equal to ``wanted`` (whitespace ignored), searched from the
    cursor on; a single line may also be found as two wrapped halves joined."""
    for start in range(cursor, len(keys)):
        if start in taken:
            continue
        if keys[start: start + len(wanted)] == wanted and not any(k in taken for k in range(start, start + len(wanted))):
            return list(range(start, start + len(wanted)))
    joined = "".join(wanted)
    for start in range(cursor, len(keys)):
        for stop in range(start + 1, min(start + 4, len(keys)) + 1):
            if "".join(keys[start:stop]) == joined and not any(k in taken for k in range(start, stop)):
                return list(range(start, stop))
    return None


_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})


def page_segments(data: bytes, password: str | None, texts: dict[int, str], skip: set[int] | frozenset = frozenset()) -> list[Segment]:
    """Every page's text as segments in page order: one per page, except that a page with a table
    (not read with OCR, and tabular by ``looks_tabular``) gives its text around the table plus one
    segment per row. Only pages that look tabular are laid out with pdfplumber: it is several times
    slower than pypdf, so prose pages keep pypdf's text untouched."""
    wanted = [n for n in sorted(texts) if n not in skip and texts[n].strip() and looks_tabular(texts[n])]
    found: dict[int, list[Segment]] = {}
    if wanted:
        pdf = open_pdf(data, password)
        if pdf is not None:
            table = 1
            try:
                for number in wanted:
                    split = split_page(pdf, number, texts[number], table)
                    if split is not None:
                        found[number] = split.segments
                        table += split.tables
            finally:
                pdf.close()
    segments: list[Segment] = []
    for number in sorted(texts):
        if number in found:
            segments.extend(found[number])
        elif texts[number].strip():
            segments.append(Segment(text=texts[number], page=number))
    return segments
