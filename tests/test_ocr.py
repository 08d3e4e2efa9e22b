"""Offline OCR on real scans: character error rate against ground truth, garbage OCR layers replaced,
image-only pages inside mixed PDFs, image uploads, progress through the worker, and no OCR (no cost)
for documents with a good text layer."""

from __future__ import annotations

import io
import time

import numpy as np
import pypdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from conftest import DOCS, SHARED, doc
from echomind.parsing import parse_bytes, sniff
from echomind.parsing.ocr import _Box, is_garbage, reading_order
from echomind.parsing.sandbox import ParserProcess



def _levenshtein(a: str, b: str) -> int:
    """Edit distance, one numpy row at a time (insertions via a running minimum)."""
    codes = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    index = np.arange(len(b) + 1)
    previous = index.copy()
    for i, ch in enumerate(a, 1):
        row = np.empty(len(b) + 1, dtype=np.int64)
        row[0] = i
        row[1:] = np.minimum(previous[1:] + 1, previous[:-1] + (codes != ord(ch)))
        previous = np.minimum.accumulate(row - index) + index
    return int(previous[-1])


def _normalise(text: str) -> str:
    """Typographic dashes and quotes as ASCII, whitespace collapsed: CER counts letters, not typography."""
    table = str.maketrans({"\u2014": "-", "\u2013": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\ufb01": "fi"})
    return " ".join(text.translate(table).split())


def cer(hypothesis: str, reference: str) -> float:
    hypothesis, reference = _normalise(hypothesis), _normalise(reference)
    return _levenshtein(hypothesis, reference) / len(reference)


def test_levenshtein_is_right():
    assert [_levenshtein(a, b) for a, b in (("kitten", "sitting"), ("", "abc"), ("abc", ""), ("flaw", "lawn"))] == [3, 3, 3, 2]


def test_scanned_two_column_page_cer_under_5_percent(capsys):
    start = time.perf_counter()
    parsed = parse_bytes(doc("pdf_scan_linn-2col.pdf"), "linn.pdf")
    seconds = time.perf_counter() - start
    rate = cer(parsed.text, doc("groundtruth_linn.txt").decode("utf-8"))
    with capsys.disabled():
        print(f"\nlinn scan: CER {rate:.2%}, {seconds:.1f} s for 1 page")
    assert rate <= 0.05
    assert parsed.metadata["ocr_pages"] == [1] and parsed.segments[0].page == 1
    assert any("page 1 read with OCR" in w for w in parsed.warnings)
    # the columns are read one after the other, not line by line across the page
    text = " ".join(parsed.text.split())
    assert text.index("To record a sequence") < text.index("sustain pedal") < text.index("simply use LOCATE")


def test_garbage_ocr_layer_is_detected_and_replaced():
    layer = pypdf.PdfReader(DOCS / "pdf_scan_with-ocr-text.pdf").pages[0].extract_text()
    good_layer = pypdf.PdfReader(DOCS / "pdf_scan_vicksburg-ocr.pdf").pages[0].extract_text()
    assert is_garbage(layer) and not is_garbage(good_layer)
    parsed = parse_bytes(doc("pdf_scan_with-ocr-text.pdf"), "memo.pdf")
    assert parsed.metadata["ocr_pages"] == [1]
    assert any("mostly not words and was replaced" in w for w in parsed.warnings)
    assert "interested to know" in parsed.text and "knot that" in layer and "knot that" not in parsed.text
    kept = parse_bytes(doc("pdf_scan_vicksburg-ocr.pdf"), "vicksburg.pdf")  # a good OCR layer is kept as is
    assert "ocr_pages" not in kept.metadata and "THE   SIEGE   OF  VICKSBURG" in kept.text


def test_reading_order_reads_columns_in_turn():
    def box(x0, y0, x1, text):
        return _Box(x0, y0, x1, y0 + 10, text)

    boxes = [box(0, 0, 300, "Title across the page"),
             box(0, 20, 140, "left one"), box(160, 20, 300, "right one"),
             box(0, 35, 140, "left two"), box(160, 35, 300, "right two"),
             box(0, 50, 90, "left three"),
             box(0, 70, 300, "Footer across the page")]
    lines = [" ".join(b.text for b in line) for line in reading_order(boxes)]
    assert lines == ["Title across the page", "left one", "left two", "left three", "right one", "right two", "Footer across the page"]


def _text_image(lines: list[str], size=(1400, 500)) -> Image.Image:
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=48)
    for i, line in enumerate(lines):
        draw.text((60, 60 + 110 * i), line, fill=0, font=font)
    return image


def test_image_only_page_inside_a_mixed_pdf_is_read_and_marked():
    scanned = io.BytesIO()
    _text_image(["Warehouse inventory audit", "Forklift batteries replaced"]).save(scanned, "PDF", resolution=150)
    writer = pypdf.PdfWriter()
    writer.append(io.BytesIO(doc("pdf_crazyones.pdf")))
    writer.append(scanned)
    mixed = io.BytesIO()
    writer.write(mixed)
    calls = []
    worker = ParserProcess(timeout_s=120)
    try:
        parsed = worker.parse(mixed.getvalue(), "mixed.pdf", progress=lambda done, total: calls.append((done, total)))
    finally:
        worker.close()
    assert [s.page for s in parsed.segments] == [1, 2]
    assert "Heres to the crazy ones" in parsed.segments[0].text  # the text layer, untouched
    assert "Warehouse inventory audit" in parsed.segments[1].text and "Forklift batteries replaced" in parsed.segments[1].text
    assert parsed.metadata["ocr_pages"] == [2] and parsed.metadata["ocr_seconds_per_page"][2] > 0
    assert calls == [(0, 1), (1, 1)]  # per-page progress crossed the worker boundary


@pytest.mark.parametrize("fmt,kind", [("PNG", "png"), ("JPEG", "jpeg")])
def test_image_uploads_are_sniffed_and_read(fmt, kind):
    buffer = io.BytesIO()
    _text_image(["Invoice number 4711", "Payment due in thirty days"]).save(buffer, fmt)
    data = buffer.getvalue()
    assert sniff(data, "upload.bin") == kind  # by content, whatever the name
    parsed = parse_bytes(data, "upload.bin")
    assert parsed.filetype == "image" and parsed.metadata["image_format"] == kind
    assert "Invoice number 4711" in parsed.text and "Payment due in thirty days" in parsed.text
    assert parsed.metadata["ocr_pages"] == [1] and any("read with OCR" in w for w in parsed.warnings)


def test_multi_page_tiff_gives_one_segment_per_frame():
    first, second, blank = _text_image(["Minutes of the board"]), _text_image(["Budget approved unanimously"]), Image.new("L", (800, 400), 255)
    buffer = io.BytesIO()
    first.save(buffer, "TIFF", save_all=True, append_images=[blank, second])
    parsed = parse_bytes(buffer.getvalue(), "minutes.tif")
    assert parsed.metadata["image_format"] == "tiff" and parsed.metadata["pages"] == 3
    assert [(s.page, s.text) for s in parsed.segments] == [(1, "Minutes of the board"), (3, "Budget approved unanimously")]
    assert any("frame 2: no text found" in w for w in parsed.warnings)


def test_filings_with_a_text_layer_are_not_ocrd():
    for path in sorted((SHARED / "filings").glob("*.pdf")):
        parsed = parse_bytes(path.read_bytes(), path.name)
        assert "ocr_pages" not in parsed.metadata and not any("OCR" in w for w in parsed.warnings), path.name
