"""Offline OCR: image -> text lines in reading order.

The models are RapidOCR's PP-OCRv4 detection and recognition ONNX files, shipped inside the
``rapidocr-onnxruntime`` wheel (Apache-2.0): nothing is downloaded, nothing leaves the machine. It runs
in the parser worker (sandbox.py), so a hostile image is bounded in memory and time like any file.
RapidOCR returns line boxes sorted top-to-bottom, which interleaves the lines of two columns; the
reading order here groups lines into blocks that share a column gutter and reads each column in turn.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import statistics
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

# Longest side, in pixels, an image is read at: PDF pages are rendered near 216 dpi (3x), which measured
# best on the shared linn scan (CER 2.2% at 3x, 5.5% at 2.5x, 3.1% at 4.2x); bigger uploads are reduced.
MAX_SIDE = 4000
# Text detection runs on a copy reduced to this side (boxes are mapped back and recognised at full size):
# detection at full size cost twice the time for the same boxes.
DETECT_SIDE = 1600
MIN_SCORE = 0.5  # recognitions below this confidence are noise (speckles, pictures)
# A scan's own text layer whose words are mostly not English words is garbage OCR: measured share of
# known words per page, 0.68 on pdf_scan_with-ocr-text.pdf, 0.97-1.0 on the Vicksburg OCR layer and on
# the filings; 20 words at least, so a caption is never judged.
GARBAGE_BELOW = 0.8
_MIN_WORDS = 20
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


@dataclass
class OcrResult:
    text: str  # lines in reading order, one per line; blocks of columns read one after the other
    lines: int
    seconds: float
    confidence: float  # mean recognition score of the kept lines, 0 when none


@dataclass
class _Box:
    x0: float
    y0: float
    x1: float
    y1: float
    text: str


@lru_cache(maxsize=1)
def _engine():
    """Load the models once per worker process (about 0.5 s)."""
    from rapidocr_onnxruntime import RapidOCR

    logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    threads = max(1, min(4, os.cpu_count() or 1))
    return RapidOCR(
        max_side_len=MAX_SIDE,
        det_limit_type="max",
        det_limit_side_len=DETECT_SIDE,
        intra_op_num_threads=threads,
        inter_op_num_threads=1,
        text_score=MIN_SCORE,
    )


def read_image(image: np.ndarray) -> OcrResult:
    """OCR one image (H x W x 3 BGR, or H x W grey, uint8) and return its text in reading order."""
    start = time.perf_counter()
    if image.ndim == 3 and image.shape[2] == 4:
        image = image[:, :, :3]
    result, _ = _engine()(np.ascontiguousarray(image))
    boxes, scores = [], []
    for points, text, score in result or []:
        text = text.strip()
        if not text or score < MIN_SCORE:
            continue
        pts = np.asarray(points, dtype=float)
        top, bottom = pts[:, 1].min(), pts[:, 1].max()
        trim = (bottom - top) * 0.2  # detection boxes are padded; without trimming, adjacent lines overlap
        boxes.append(_Box(pts[:, 0].min(), top + trim, pts[:, 0].max(), bottom - trim, text))
        scores.append(float(score))
    lines = reading_order(boxes)
    text = "\n".join(" ".join(b.text for b in line) for line in lines)
    return OcrResult(text=text, lines=len(lines), seconds=time.perf_counter() - start,
                     confidence=statistics.fmean(scores) if scores else 0.0)


LANGUAGES = ("en", "fr", "de", "es", "it", "pt", "nl")  # word lists shipped by pyspellchecker


@lru_cache(maxsize=len(LANGUAGES))
def _known_words(language: str) -> frozenset[str]:
    """A language's words (en: about 160,000) from pyspellchecker's word lists; only its data is read."""
    from importlib.resources import files

    data = (files("spellchecker") / "resources" / f"{language}.json.gz").read_bytes()
    return frozenset(json.loads(gzip.decompress(data)))


def known_word_share(text: str, language: str = "en") -> float:
    """Share of a text's words (two letters or more) found in a language's word list; 0 for no words."""
    words = [w.lower().replace("\u2019", "'") for w in _WORD.findall(text) if len(w) >= 2]
    if not words:
        return 0.0
    known = _known_words(language)
    return sum(w in known for w in words) / len(words)


def best_word_share(text: str) -> float:
    """The known-word share in the language that fits best (English first; the others are loaded only
    when English does not fit), so a French text layer is not taken for garbage."""
    best = 0.0
    for language in LANGUAGES:
        best = max(best, known_word_share(text, language))
        if best >= GARBAGE_BELOW:
            break
    return best


def is_garbage(text: str) -> bool:
    """A text layer that is mostly non-words in every language we have a word list for (a bad OCR
    layer under a scan). Fewer than 20 words are never judged."""
    words = [w for w in _WORD.findall(text) if len(w) >= 2]
    return len(words) >= _MIN_WORDS and best_word_share(text) < GARBAGE_BELOW


def reading_order(boxes: list[_Box]) -> list[list[_Box]]:
    """Group line boxes into lines, and lines into blocks that share a column gutter; a block's columns
    are read left to right, each top to bottom. A full-width line ends a block (a heading, a caption)."""
    if not boxes:
        return []
    gutter = statistics.median(b.y1 - b.y0 for b in boxes)  # a column gap is at least about a line high
    return _order(boxes, max(gutter, 1.0))


def _order(boxes: list[_Box], min_gap: float) -> list[list[_Box]]:
    blocks: list[tuple[list[tuple[float, float]], list[list[_Box]]]] = []  # (gutters, bands)
    for band in _bands(boxes):
        if blocks and blocks[-1][0]:
            kept = _keep_gutters(band, blocks[-1][0], min_gap)
            if kept:
                blocks[-1] = (kept, blocks[-1][1] + [band])
                continue
        gaps = _interior_gaps(band, min_gap)
        if gaps or not blocks or blocks[-1][0]:
            blocks.append((gaps, [band]))
        else:
            blocks[-1][1].append(band)
    lines: list[list[_Box]] = []
    for gutters, bands in blocks:
        if not gutters or len(bands) == 1:
            lines += [sorted(band, key=lambda b: b.x0) for band in bands]
            continue
        members = [b for band in bands for b in band]
        cuts = [(g0 + g1) / 2 for g0, g1 in gutters]
        columns: list[list[_Box]] = [[] for _ in range(len(cuts) + 1)]
        for b in members:
            columns[sum(1 for c in cuts if (b.x0 + b.x1) / 2 > c)].append(b)
        for column in columns:
            if len(column) < len(members):  # a column may hold columns of its own
                lines += _order(column, min_gap)
            else:
                lines += [sorted(band, key=lambda b: b.x0) for band in _bands(column)]
    return lines


def _bands(boxes: list[_Box]) -> list[list[_Box]]:
    """Boxes that overlap vertically form one band (one text line, or one row across columns)."""
    bands: list[list[_Box]] = []
    bottom = 0.0
    for b in sorted(boxes, key=lambda b: b.y0):
        if bands and b.y0 < bottom:
            bands[-1].append(b)
            bottom = max(bottom, b.y1)
        else:
            bands.append([b])
            bottom = b.y1
    return bands


def _interior_gaps(band: list[_Box], min_gap: float) -> list[tuple[float, float]]:
    """Horizontal gaps of at least ``min_gap`` between the boxes of a band: candidate column gutters."""
    gaps, end = [], None
    for b in sorted(band, key=lambda b: b.x0):
        if end is not None and b.x0 - end >= min_gap:
            gaps.append((end, b.x0))
        end = b.x1 if end is None else max(end, b.x1)
    return gaps


def _keep_gutters(band: list[_Box], gutters: list[tuple[float, float]], min_gap: float) -> list[tuple[float, float]]:
    """The gutters a new band leaves open (narrowed by its boxes); none left means the block ends."""
    kept = []
    for g0, g1 in gutters:
        for b in band:
            if b.x1 > g0 and b.x0 < g1:
                if b.x0 - g0 >= g1 - b.x1:
                    g1 = min(g1, b.x0)
                else:
                    g0 = max(g0, b.x1)
        if g1 - g0 >= min_gap:
            kept.append((g0, g1))
    return kept
