"""Settings as validated dataclasses: a bad or unknown value fails early with a readable message.

``AppConfig`` is where things live and which providers run; ``RetrievalSettings`` holds every knob
the sidebar shows, with the seed's defaults, and is passed to the engine per call.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def default_data_dir() -> Path:
    """Per-user data directory (XDG on Linux); ECHOMIND_DATA_DIR overrides it."""
    env = os.environ.get("ECHOMIND_DATA_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "echomind"


def _from_dict(cls: type, values: dict[str, Any]):
    names = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ValueError(f"Unknown {cls.__name__} option(s): {', '.join(unknown)}. Allowed: {', '.join(sorted(names))}")
    return cls(**values)


@dataclass
class AppConfig:
    data_dir: Path = field(default_factory=default_data_dir)
    embedder: str = "minilm-int8"  # or "ollama"
    ollama_host: str = field(default_factory=lambda: os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434"))
    ollama_embed_model: str = "nomic-embed-text"
    embed_max_chars: int = 2000
    embed_batch_size: int = 32
    max_upload_mb: int = 200
    max_uncompressed_mb: int = 1024  # zip-based office files: total expanded size
    max_compression_ratio: int = 200  # zip-based office files: expanded / compressed
    parse_timeout_s: float = 120.0
    parse_memory_mb: int = 6144
    bm25_variant: str = "lucene"  # see echomind.index.sparse.VARIANTS

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).expanduser()
        if self.embedder not in ("minilm-int8", "ollama"):
            raise ValueError(f"embedder must be 'minilm-int8' or 'ollama', not {self.embedder!r}")
        for name in ("embed_max_chars", "embed_batch_size", "max_upload_mb", "max_uncompressed_mb"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "AppConfig":
        return _from_dict(cls, values)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "echomind.sqlite3"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"


@dataclass
class RetrievalSettings:
    """Every retrieval knob. Defaults are the seed's (RRF_K 60, dense 0.6 / sparse 0.4)."""

    top_k: int = 5
    k_per_query: int = 20
    rrf_k: int = 60
    dense_weight: float = 0.6
    sparse_weight: float = 0.4

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.k_per_query < 1:
            raise ValueError("top_k and k_per_query must be at least 1")
        if self.dense_weight < 0 or self.sparse_weight < 0 or self.dense_weight + self.sparse_weight == 0:
            raise ValueError("dense_weight and sparse_weight must be >= 0 and not both 0")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "RetrievalSettings":
        return _from_dict(cls, values)

    def replace(self, **changes: Any) -> "RetrievalSettings":
        return dataclasses.replace(self, **changes)
