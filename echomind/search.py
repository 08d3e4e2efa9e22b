"""Hybrid search: dense + sparse per query, fused by weighted RRF, with a trace for every hit.

If the embedder fails at query time the search degrades to BM25 only and says so in its result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .index.dense import DenseIndex
from .index.fusion import rrf_ceiling, weighted_rrf
from .index.sparse import SparseIndex
from .providers import Embedder
from .settings import RetrievalSettings
from .store import Store


@dataclass
class Hit:
    rowid: int
    chunk_id: str
    doc_id: str
    text: str
    source: dict[str, Any]
    score: float  # fused RRF divided by its ceiling: 1.0 = ranked first by every list
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchResult:
    hits: list[Hit]
    queries: list[str]
    mode: str  # "hybrid" | "bm25-only" | "dense-only"
    warnings: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    candidates: int = 0
    query_vectors: Any = None  # (n_queries, dim) when the embedder answered


def hybrid_search(
    store: Store,
    dense: DenseIndex | None,
    sparse: SparseIndex,
    embedder: Embedder | None,
    queries: list[str],
    settings: RetrievalSettings,
    allowed: set[int] | None = None,
) -> SearchResult:
    timings: dict[str, float] = {}
    warnings: list[str] = []
    k = settings.k_per_query
    dense_weight, sparse_weight = settings.dense_weight, settings.sparse_weight

    t = time.perf_counter()
    sparse_lists = [sparse.search(q, k, allowed) for q in queries] if sparse_weight > 0 else []
    timings["sparse"] = (time.perf_counter() - t) * 1000

    dense_lists: list = []
    vectors = None
    if dense_weight > 0:
        t = time.perf_counter()
        try:
            if embedder is None or dense is None:
                raise RuntimeError("no embedding model is loaded")
            vectors = embedder.embed(queries)
            timings["embed"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            dense_lists = dense.search(vectors, k, allowed)
            timings["dense"] = (time.perf_counter() - t) * 1000
        except Exception as exc:  # any embedder failure: keep answering from BM25
            warnings.append(f"Semantic search is unavailable ({exc}); results come from keyword search (BM25) only.")
            dense_lists, vectors = [], None
            sparse_weight = sparse_weight or 1.0
            if not sparse_lists:
                sparse_lists = [sparse.search(q, k, allowed) for q in queries]
    mode = "hybrid" if dense_lists and sparse_lists else ("dense-only" if dense_lists else "bm25-only")

    t = time.perf_counter()
    fused = weighted_rrf(dense_lists, sparse_lists, dense_weight if dense_lists else 0.0, sparse_weight if sparse_lists else 0.0, settings.rrf_k)
    ceiling = rrf_ceiling(len(queries), dense_weight if dense_lists else 0.0, sparse_weight if sparse_lists else 0.0, settings.rrf_k) or 1.0
    top = fused[: settings.top_k]
    rows = store.chunks_by_rowid([h.rowid for h in top])
    hits = []
    for h in top:
        row = rows.get(h.rowid)
        if row is None:  # deleted between search and fetch
            continue
        trace = {
            "queries": sorted(h.queries),
            "dense_rank": h.dense_rank,
            "dense_score": h.dense_score,
            "sparse_rank": h.sparse_rank,
            "sparse_score": h.sparse_score,
            "rrf": h.rrf,
        }
        hits.append(Hit(h.rowid, row["chunk_id"], row["doc_id"], row["text"], row["source"], h.rrf / ceiling, trace))
    timings["fuse"] = (time.perf_counter() - t) * 1000
    return SearchResult(hits, list(queries), mode, warnings, timings, candidates=len(fused), query_vectors=vectors)
