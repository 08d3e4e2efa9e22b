"""Generated hostile and huge inputs for `bench --inputs` and the bad-input tests: real files of their
kind (a hand-written PDF, OOXML-shaped zip bombs, CSVs, prose), not mocks."""

from __future__ import annotations

import base64
import io
import os
import random
import sys
import zipfile
from typing import Callable

WORDS = ("the report describes how the river flooded the valley in spring and how the town rebuilt its bridge "
         "with help from volunteers who carried stone and timber for many weeks").split()


def prose(n_chars: int, seed: int = 0, sep: str = " ") -> str:
    rng = random.Random(seed)
    out, size = [], 0
    while size < n_chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
        out.append(sentence)
        size += len(sentence) + 1
    return sep.join(out)[:n_chars]


def pdf_with_pages(pages: int, text_per_page: str = "Page {n}: the quarterly figures for region {n} are in this section.") -> bytes:
    """A valid PDF with one line of text per page (Helvetica), written by hand with a correct xref."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    pages_id = len(objects) + 1 + 2 * pages  # placeholder, fixed below
    kids = []
    for n in range(1, pages + 1):
        line = text_per_page.format(n=n).replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 11 Tf 72 720 Td ({line}) Tj ET".encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
                        % (pages_id, font, content)))
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), pages)) == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (i, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
    out.write(b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref))
    return out.getvalue()


OOXML_MAIN = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "xlsx": "xl/workbook.xml"}


def zip_bomb(kind: str, expanded_mb: int = 300) -> bytes:
    """An OOXML-looking archive whose main part expands to ``expanded_mb`` MB of zeros."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
        with z.open(OOXML_MAIN[kind], "w", force_zip64=True) as member:
            block = b"\0" * 2**20
            for _ in range(expanded_mb):
                member.write(block)
    return out.getvalue()


def csv_rows(rows: int) -> bytes:
    lines = ["id,city,amount,note"]
    lines += [f"{i},City {i % 977},{i * 7 % 10000}.{i % 100:02d},order {i} shipped" for i in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def hostile_inputs() -> list[tuple[str, Callable[[], bytes]]]:
    """(file name, bytes factory) for every hostile or huge input the bench times."""
    return [
        ("bomb.docx", lambda: zip_bomb("docx")), ("bomb.pptx", lambda: zip_bomb("pptx")), ("bomb.xlsx", lambda: zip_bomb("xlsx")),
        ("upload-500mb.pdf", lambda: b"%PDF-1.7\n" + bytes(500 * 2**20)),
        ("program.txt", lambda: open(sys.executable, "rb").read()[:2_000_000]), ("noise.pdf", lambda: os.urandom(300_000)),
        ("empty.txt", lambda: b""), ("blank.md", lambda: b" \n\t\n"), ("latin1.txt", lambda: "Crème brûlée à Noël. ".encode("cp1252") * 50),
        ("../../traversal.txt", lambda: b"Path traversal attempt in the name."), ("bell\x07\x1b.txt", lambda: b"Control characters in the name."),
        ("n" * 300 + ".txt", lambda: b"A very long name."), ("base64.txt", lambda: base64.b64encode(os.urandom(3 * 2**20))),
        ("one-line-5mb.txt", lambda: prose(5 * 2**20).encode()), ("rows-1m.csv", lambda: csv_rows(1_000_000)),
        ("pages-2000.pdf", lambda: pdf_with_pages(2000)),
    ]
