"""Image uploads (PNG, JPEG, TIFF) read with OCR: one segment per image, or per frame of a multi-page
TIFF (its ``page``), each marked in ``ocr_pages`` like OCR'd PDF pages."""

from __future__ import annotations

import io
import warnings as _warnings

import numpy as np
from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError

from ..errors import CorruptFile, NoExtractableText, UnsafeArchive
from . import ocr
from .models import ParsedDocument, Segment
from .pdf import Progress

MIN_SIDE = 1200  # small screenshots are enlarged so their letters reach the recogniser's line height
MAX_PIXELS = 200_000_000  # per frame; Pillow's own bomb check stops at 179 million by default


def parse_image(data: bytes, filename: str, kind: str, progress: Progress | None = None, max_pages: int = 500) -> ParsedDocument:
    try:
        with _warnings.catch_warnings():
            _warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            image.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise UnsafeArchive(f"'{filename}' declares an image too large to read safely; refused as a possible decompression bomb.") from exc
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise CorruptFile(f"'{filename}' looks like a {kind.upper()} image but cannot be decoded; it may be truncated or damaged.") from exc
    frames = getattr(image, "n_frames", 1)
    segments: list[Segment] = []
    seconds: dict[int, float] = {}
    empty: list[int] = []
    total = min(frames, max_pages)
    for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
        if number > max_pages:
            break
        if progress:
            progress(number - 1, total)
        if frame.width * frame.height > MAX_PIXELS:
            raise UnsafeArchive(f"'{filename}' has a {frame.width}x{frame.height} image, more pixels than EchoMind reads ({MAX_PIXELS:,}).")
        result = ocr.read_image(_prepare(frame))
        text = result.text.strip()
        if text:
            segments.append(Segment(text=text, page=number if frames > 1 else None))
            seconds[number] = round(result.seconds, 2)
        else:
            empty.append(number)
    if progress:
        progress(total, total)
    if not segments:
        raise NoExtractableText(f"'{filename}' is an image in which OCR found no text (a photo or drawing without words?).")
    warnings = ["read with OCR: text recognised from the image may contain errors."]
    if empty:
        warnings.append(f"{'frame' if len(empty) == 1 else 'frames'} {', '.join(map(str, empty))}: no text found, even with OCR.")
    if frames > max_pages:
        warnings.append(f"only the first {max_pages} of {frames} frames were read (the OCR page limit)")
    metadata = {"pages": frames, "ocr_pages": sorted(seconds), "ocr_seconds_per_page": seconds,
                "width": image.width, "height": image.height, "image_format": kind}
    return ParsedDocument(filetype="image", segments=segments, metadata=metadata, warnings=warnings)


def _prepare(frame: Image.Image) -> np.ndarray:
    """Upright (EXIF orientation), grey, between MIN_SIDE and ocr.MAX_SIDE on its longest side."""
    frame = ImageOps.exif_transpose(frame)
    if frame.mode in ("RGBA", "LA", "P"):  # transparent areas become white, not black
        rgba = frame.convert("RGBA")
        frame = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba)
    grey = frame.convert("L")
    longest = max(grey.size)
    if longest > ocr.MAX_SIDE or longest < MIN_SIDE:
        factor = (ocr.MAX_SIDE if longest > ocr.MAX_SIDE else MIN_SIDE) / longest
        grey = grey.resize((max(1, round(grey.width * factor)), max(1, round(grey.height * factor))), Image.LANCZOS)
    return np.asarray(grey, dtype=np.uint8)
