"""Embeddings from an OpenAI-compatible server (``/v1/embeddings``) with batching, retries and
word-boundary truncation, like the Ollama embedder. llama.cpp's server answers here only when started
with ``--embedding true``."""

from __future__ import annotations

import time

import numpy as np
import openai

from ..errors import EmbedderError
from . import truncate_words
from .openai_llm import NO_KEY, OpenAICompatibleLLM, resolve_api_key, retry_after_s


class OpenAICompatibleEmbedder:
    def __init__(self, base_url: str, api_key: str = "", model: str = "", max_chars: int = 2000, batch_size: int = 32,
                 retries: int = 3, backoff_s: float = 0.5, timeout_s: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self._key = resolve_api_key(api_key)
        self.client = openai.OpenAI(base_url=self.base_url, api_key=self._key or NO_KEY, timeout=timeout_s, max_retries=0)
        self.model, self.max_chars, self.batch_size = model, max_chars, batch_size
        self.retries, self.backoff_s = retries, backoff_s
        self._dim: int | None = None

    @property
    def id(self) -> str:
        """Stored with the vectors, so a different model re-embeds instead of mixing vectors."""
        return f"openai:{OpenAICompatibleLLM._short(self._model())}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _model(self) -> str:
        """The configured model, or the server's first one (llama.cpp and LM Studio serve one at a time)."""
        if not self.model:
            try:
                models = sorted(m.id for m in self.client.models.list() if m.id)
            except Exception as exc:  # noqa: BLE001 - said in words below
                raise EmbedderError(f"The embedding server is not reachable at {self.base_url} ({type(exc).__name__}); start it or "
                                    f"choose another embedding model in Settings.") from exc
            if not models:
                raise EmbedderError(f"The embedding server at {self.base_url} lists no models; name one in Settings.")
            self.model = models[0]
        return self.model

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors: list[list[float]] = []
        start = 0
        while start < len(texts):  # batch_size may drop to 1 on the way (see _call)
            batch = [truncate_words(t, self.max_chars) for t in texts[start : start + self.batch_size]]
            vectors.extend(self._call(batch))
            start += len(batch)
        if not vectors:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        array = np.asarray(vectors, dtype=np.float32)
        self._dim = array.shape[1]
        return array

    def _call(self, batch: list[str]) -> list[list[float]]:
        try:
            return self._request(batch)
        except EmbedderError as exc:
            if len(batch) == 1 or not isinstance(exc.__cause__, openai.InternalServerError):
                raise
        # llama-cpp-python's server (0.3.16) fails whole batches of a generative model with a 500 but
        # embeds one text at a time: so do that from now on.
        self.batch_size = 1
        return [vector for text in batch for vector in self._request([text])]

    @staticmethod
    def _pooled(embedding) -> list[float]:
        """A server that does not pool (llama.cpp with a generative model) sends one vector per token: their mean."""
        array = np.asarray(embedding, dtype=np.float32)
        return (array.mean(axis=0) if array.ndim == 2 else array).tolist()

    def _request(self, batch: list[str]) -> list[list[float]]:
        model = self._model()
        last: Exception | None = None
        for attempt in range(self.retries):
            try:
                response = self.client.embeddings.create(model=model, input=batch)
                data = sorted(response.data, key=lambda d: d.index)  # the API allows any order
                if len(data) != len(batch):
                    raise EmbedderError(f"The embedding server returned {len(data)} vectors for {len(batch)} texts")
                return [self._pooled(d.embedding) for d in data]
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise EmbedderError(f"The embedding server at {self.base_url} refused the API key ({exc.status_code}); "
                                    f"check the API key in Settings or OPENAI_API_KEY.") from exc
            except (openai.BadRequestError, openai.NotFoundError) as exc:  # retrying cannot help
                raise EmbedderError(f"The embedding server at {self.base_url} cannot embed with '{model}' ({exc.status_code}); "
                                    f"start it with embeddings on (llama.cpp: --embedding true) or pick another model.") from exc
            except Exception as exc:  # connection refused, timeouts, 429, 5xx: retry with backoff
                last = exc
                if isinstance(exc, openai.InternalServerError) and len(batch) > 1:
                    break  # maybe the batch itself: _call tries its texts one by one
                hint = retry_after_s(exc.response.headers) if isinstance(exc, openai.RateLimitError) else None
                if attempt < self.retries - 1:
                    time.sleep(min(hint, 30.0) if hint is not None else self.backoff_s * (2**attempt))
        reason = "not reachable" if isinstance(last, openai.APIConnectionError) else f"{type(last).__name__}"
        raise EmbedderError(f"The embedding server at {self.base_url} ({model}) failed after {self.retries} tries: {reason}.") from last
