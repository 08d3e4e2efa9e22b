"""The Ollama embedder through the real ``ollama`` client, against a server speaking Ollama's wire protocol."""

from __future__ import annotations

import socket

import pytest

from conftest import doc
from echomind.errors import EmbedderError
from echomind.providers.ollama_embed import OllamaEmbedder
from ollama_server import FakeOllama


def test_batches_and_truncates_at_word_boundaries():
    with FakeOllama() as server:
        embedder = OllamaEmbedder(server.host, max_chars=40, batch_size=2)
        texts = ["short text", "a much longer text that goes on well past the forty character limit here", "three", "four", "five"]
        vectors = embedder.embed(texts)
    assert vectors.shape == (5, 64) and embedder.dim == 64
    embeds = [r for r in server.requests if r["path"] == "/api/embed"]
    assert [len(r["input"]) for r in embeds] == [2, 2, 1] and all(r["model"] == "nomic-embed-text" for r in embeds)
    sent = embeds[0]["input"][1]
    assert len(sent) <= 40 and texts[1].startswith(sent) and texts[1][len(sent)] == " "


def test_retries_with_backoff_then_succeeds():
    with FakeOllama(fail_first=2) as server:
        embedder = OllamaEmbedder(server.host, backoff_s=0.01)
        assert embedder.embed(["hello world"]).shape == (1, 64)
    assert len(server.requests) == 3


def test_server_down_gives_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    embedder = OllamaEmbedder(f"http://127.0.0.1:{port}", retries=2, backoff_s=0.01, timeout_s=2)
    with pytest.raises(EmbedderError, match="failed after 2 tries"):
        embedder.embed(["anything"])


def test_engine_on_the_ollama_embedder(make_engine):
    with FakeOllama() as server:
        engine = make_engine(emb=OllamaEmbedder(server.host))
        assert engine.embedder.id == "ollama:nomic-embed-text"
        engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
        result = engine.search("MIDI sequence recorder")
        assert result.mode == "hybrid" and result.hits[0].source["filename"] == "linn.txt"
        assert result.hits[0].trace["dense_rank"] is not None
