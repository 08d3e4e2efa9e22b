"""Shared fixtures: the real documents, the real offline embedding model, real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest

from echomind.engine import Engine
from echomind.settings import AppConfig

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DOCS = SHARED / "docs"
SCIFACT = SHARED / "beir" / "scifact"


def doc(name: str) -> bytes:
    return (DOCS / name).read_bytes()


@pytest.fixture(scope="session")
def embedder():
    from echomind.providers.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture
def make_engine(tmp_path, embedder):
    """Engines over a real SQLite file in a temp dir; reopening the same dir is a restart."""
    engines = []

    def make(data_dir: Path | None = None, emb=None, llm=None, **config) -> Engine:
        """No LLM unless a test gives one: the embedded model is exercised by its own tests."""
        engine = Engine(AppConfig(data_dir=data_dir or tmp_path / "data", **config), embedder=emb or embedder, llm=llm)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def engine(make_engine) -> Engine:
    return make_engine()
