"""The seed's chunker (Part 2): detect.py, sanitize.py, sentences.py, chunkers.py, pipeline.py, models.py."""

from .detect import detect_document_type
from .models import Chunk, DocType, Sensitivity
from .pipeline import ChunkedDocument, chunk_document, chunk_segments
from .sanitize import sanitize_text

__all__ = ["Chunk", "ChunkedDocument", "DocType", "Sensitivity", "chunk_document", "chunk_segments", "detect_document_type", "sanitize_text"]
