"""Embeddings from an Ollama server (``/api/embed``) with batching, retries and word-boundary truncation."""

from __future__ import annotations

import time

import numpy as np

from ..errors import EmbedderError
from . import truncate_words


class OllamaEmbedder:
    def __init__(self, host: str, model: str = "nomic-embed-text", max_chars: int = 2000, batch_size: int = 32,
                 retries: int = 3, backoff_s: float = 0.5, timeout_s: float = 60.0):
        import ollama

        self.client = ollama.Client(host=host, timeout=timeout_s)
        self.model = model
        self.max_chars = max_chars
        self.batch_size = batch_size
        self.retries = retries
        self.backoff_s = backoff_s
        self._dim: int | None = None
        self.id = f"ollama:{model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [truncate_words(t, self.max_chars) for t in texts[start : start + self.batch_size]]
            vectors.extend(self._call(batch))
        if not vectors:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        array = np.asarray(vectors, dtype=np.float32)
        self._dim = array.shape[1]
        return array

    def _call(self, batch: list[str]) -> list[list[float]]:
        last: Exception | None = None
        for attempt in range(self.retries):
            try:
                response = self.client.embed(model=self.model, input=batch)
                embeddings = list(response.embeddings)
                if len(embeddings) != len(batch):
                    raise EmbedderError(f"Ollama returned {len(embeddings)} vectors for {len(batch)} texts")
                return embeddings
            except Exception as exc:  # connection refused, timeouts, 5xx: retry with backoff
                last = exc
                time.sleep(self.backoff_s * (2**attempt))
        raise EmbedderError(f"The Ollama embedder ({self.model}) failed after {self.retries} tries: {last}") from last
