"""PDF pages to text with pypdf; page numbers are kept for citations. Pages without a usable text layer
(scans, image-only pages in mixed PDFs, garbage OCR layers) are rendered with pypdfium2 and read with
OCR (ocr.py); the document's metadata lists them in ``ocr_pages`` so citations can say so."""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Callable

import pypdf
from pypdf.errors import FileNotDecryptedError, LimitReachedError, PdfReadError

from ..errors import CorruptFile, NoExtractableText, PasswordRequired
from .models import ParsedDocument
from .pdf_tables import page_segments

Progress = Callable[[int, int], None]  # (pages read with OCR so far, pages to read with OCR)


def raised_limits() -> dict[str, int]:
    """Every numeric pypdf limit, raised out of reach. pypdf's defaults (100,000 array elements, 75 MB
    streams, ...) refused legitimate filings as damaged; the parser runs in a worker process bounded in
    memory and time (sandbox.py), which protects us instead. Read from the installed pypdf, so a limit
    added by a later release is raised too."""
    return {
        f.name: 2**62
        for f in dataclasses.fields(pypdf.Configuration)
        if isinstance(f.default, int) and not isinstance(f.default, bool)
    }


_WORDISH = re.compile(r"[^\W\d_]{2,}")
_MIN_TEXT_CHARS = 2
# A text layer with fewer letters than this on a page that carries a picture is read with OCR instead.
_LAYER_LETTERS = 100
_PICTURE_SHARE = 0.10  # of the page area covered by images, for a page with little text to be OCR'd
_SCAN_SHARE = 0.50  # a page this covered by an image is a scan: its text layer is checked for garbage
RENDER_SCALE = 3.0  # 216 dpi; see ocr.py for the measurement
# Typographic ligatures (U+FB00-FB06) would hide "fi" in "misﬁts" from keyword search.
LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})


def parse_pdf(data: bytes, filename: str, password: str | None = None, progress: Progress | None = None,
              max_ocr_pages: int = 500) -> ParsedDocument:
    with pypdf.apply_configuration(**raised_limits()):
        reader = _open(data, filename, password)
        try:
            pages = reader.pages
            count = len(pages)
        except RecursionError as exc:
            raise CorruptFile(f"'{filename}' is a damaged PDF: its page tree loops or is nested too deeply to be read. Re-export or print it to a new PDF and upload that.") from exc
        except (PdfReadError, LimitReachedError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptFile(f"'{filename}' is a damaged PDF: its page tree cannot be read. Re-export or print it to a new PDF and upload that.") from exc
        texts: dict[int, str] = {}
        pictures: set[int] = set()
        warnings: list[str] = []
        for number in range(1, count + 1):
            try:
                page = pages[number - 1]
                texts[number] = _clean(page.extract_text() or "")
                if _has_image(page):
                    pictures.add(number)
            except Exception as exc:  # pypdf raises many kinds on damaged pages; one bad page must not lose the rest
                warnings.append(f"page {number}: text could not be extracted ({type(exc).__name__})")
                texts[number] = ""
        metadata = _metadata(reader, count)
    ocr_pages, no_text = _ocr(data, filename, password, texts, pictures, warnings, progress, max_ocr_pages)
    segments = page_segments(data, password, texts, skip=set(ocr_pages))  # tables on text pages: one segment per row
    if ocr_pages:
        metadata["ocr_pages"] = sorted(ocr_pages)
        metadata["ocr_seconds_per_page"] = {n: round(s, 2) for n, s in sorted(ocr_pages.items())}
        warnings.append(f"{_pages(ocr_pages)} read with OCR: text recognised from the page image may contain errors.")
    if no_text:
        warnings.append(f"{_pages(no_text)}: no text (blank, or pictures in which OCR found no words).")
    body = " ".join(s.text for s in segments)
    if len(body.strip()) < _MIN_TEXT_CHARS or not _WORDISH.search(body):
        raise NoExtractableText(
            f"'{filename}' has no text that could be read: its {count} page(s) have no text layer and OCR "
            "found no words on them (blank pages, or pictures without text)."
        )
    return ParsedDocument(filetype="pdf", segments=segments, metadata=metadata, warnings=warnings)


def _ocr(data: bytes, filename: str, password: str | None, texts: dict[int, str], pictures: set[int],
         warnings: list[str], progress: Progress | None, max_pages: int) -> tuple[dict[int, float], list[int]]:
    """Read with OCR the pages whose text layer is missing, thin under a picture, or garbage over a scan;
    replace the layer when OCR found more (or, for garbage, more real words). Returns the pages whose text
    now comes from OCR (with seconds each) and the pages where no text was found at all."""
    suspects = [n for n, t in texts.items() if _letters(t) < _LAYER_LETTERS or n in pictures]
    if not suspects:
        return {}, []
    import pypdfium2 as pdfium

    from . import ocr

    try:
        document = pdfium.PdfDocument(data, password=password or None)
    except pdfium.PdfiumError:
        warnings.append("pages without a text layer could not be rendered for OCR")
        return {}, [n for n in suspects if not texts[n].strip()]
    plan: dict[int, str] = {}
    for number in suspects:
        page = document[number - 1]
        share, objects = _picture_share(page)
        letters = _letters(texts[number])
        if letters < _LAYER_LETTERS and (share >= _PICTURE_SHARE or (letters == 0 and objects)):
            plan[number] = "thin"
        elif share >= _SCAN_SHARE and ocr.is_garbage(texts[number]):
            plan[number] = "garbage"
    read: dict[int, float] = {}
    garbage_replaced: list[int] = []
    for done, number in enumerate(sorted(plan)[:max_pages]):
        if progress:
            progress(done, min(len(plan), max_pages))
        page = document[number - 1]
        width, height = page.get_size()
        scale = min(RENDER_SCALE, ocr.MAX_SIDE / max(width, height, 1.0))
        image = page.render(scale=scale, grayscale=True).to_numpy()
        result = ocr.read_image(image)
        text = _clean(result.text)
        if plan[number] == "garbage":  # replaced unless OCR found far less, or clearly fewer words
            better = (_letters(text) >= _letters(texts[number]) / 2
                      and ocr.best_word_share(text) >= ocr.best_word_share(texts[number]) - 0.15)
        else:
            better = _letters(text) > _letters(texts[number])
        if better:
            texts[number] = text
            read[number] = result.seconds
            if plan[number] == "garbage":
                garbage_replaced.append(number)
    if progress and plan:
        progress(min(len(plan), max_pages), min(len(plan), max_pages))
    if len(plan) > max_pages:
        warnings.append(f"only the first {max_pages} of {len(plan)} pages needing OCR were read (the OCR page limit)")
    if garbage_replaced:
        warnings.append(f"{_pages(garbage_replaced)}: the document's own OCR text was mostly not words and was replaced by fresh OCR.")
    document.close()
    return read, [n for n in sorted(texts) if not texts[n].strip()]


def _picture_share(page) -> tuple[float, bool]:
    """Share of the page covered by images, and whether the page draws anything at all."""
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    area = max(width * height, 1.0)
    covered, anything = 0.0, False
    for obj in page.get_objects(max_depth=4):
        anything = True
        if obj.type != pdfium_c.FPDF_PAGEOBJ_IMAGE:
            continue
        left, bottom, right, top = obj.get_bounds()
        covered += max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
    return min(covered / area, 1.0), anything


def _has_image(page: pypdf.PageObject) -> bool:
    """Whether the page's resources (or a form's inside them) name an image; cheap, nothing is decoded."""
    def images_in(resources, depth: int) -> bool:
        xobjects = (resources or {}).get("/XObject") or {}
        for ref in xobjects.values():
            obj = ref.get_object()
            if obj.get("/Subtype") == "/Image":
                return True
            if obj.get("/Subtype") == "/Form" and depth < 2 and images_in(obj.get("/Resources"), depth + 1):
                return True
        return False

    try:
        return images_in(page.get("/Resources"), 0)
    except Exception:  # a damaged resource dictionary: let the page-size check decide
        return True


def _letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def _pages(numbers) -> str:
    numbers = sorted(numbers)
    return f"page {numbers[0]}" if len(numbers) == 1 else "pages " + ", ".join(str(n) for n in numbers)


def _open(data: bytes, filename: str, password: str | None) -> pypdf.PdfReader:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
    except (PdfReadError, LimitReachedError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise CorruptFile(f"'{filename}' is not a readable PDF: its structure is broken. It may be truncated or damaged.") from exc
    if not reader.is_encrypted:
        return reader
    try:
        if reader.decrypt("") or (password is not None and reader.decrypt(password)):
            return reader
    except (FileNotDecryptedError, NotImplementedError, PdfReadError) as exc:
        raise CorruptFile(f"'{filename}' is encrypted with a method that cannot be opened here. Save an unencrypted copy and upload that.") from exc
    if password:
        raise PasswordRequired(f"The password given for '{filename}' is wrong. Try again.", wrong_password=True)
    raise PasswordRequired(f"'{filename}' is password protected: a password is required to open it.")


def _clean(text: str) -> str:
    text = text.translate(LIGATURES).replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"[ \t]+\n", "\n", text).strip()


def _metadata(reader: pypdf.PdfReader, pages: int) -> dict:
    meta: dict = {"pages": pages}
    try:
        info = reader.metadata or {}
        for key, name in (("/Title", "title"), ("/Author", "author"), ("/Subject", "subject")):
            value = info.get(key)
            if value and str(value).strip():
                meta[name] = str(value).strip()
    except Exception:  # unreadable metadata must not reject a readable document
        pass
    return meta
