"""Providers behind small protocols. An embedder implements ``embed(texts) -> (n, dim) float32`` and
says who it is (``id``) so vectors from different models are never mixed."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..settings import AppConfig


class Embedder(Protocol):
    id: str  # model identity, e.g. "minilm-int8:384"
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


def make_embedder(config: AppConfig) -> Embedder:
    if config.embedder == "minilm-int8":
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    if config.embedder == "ollama":
        from .ollama_embed import OllamaEmbedder

        return OllamaEmbedder(config.ollama_host, config.ollama_embed_model, config.embed_max_chars, config.embed_batch_size)
    if config.embedder == "openai":
        from .openai_embed import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(config.openai_base_url, config.openai_api_key, config.openai_embed_model, config.embed_max_chars,
                                        config.embed_batch_size)
    raise ValueError(f"Unknown embedder {config.embedder!r}; choose 'minilm-int8', 'ollama' or 'openai'")


def truncate_words(text: str, max_chars: int) -> str:
    """Cut at a word boundary so the embed model never overflows (seed: EMBED_MAX_CHARS)."""
    if len(text) <= max_chars:
        return text
    cut = text.rfind(" ", 0, max_chars + 1)
    return text[: cut if cut > max_chars // 2 else max_chars]
