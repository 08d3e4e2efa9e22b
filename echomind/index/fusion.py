"""Weighted reciprocal rank fusion (seed 1.2 step 3), keeping for every chunk why it ranked.

score(chunk) = sum over dense lists of w_dense / (K + rank) + sum over sparse lists of w_sparse / (K + rank),
ranks starting at 1, K = 60. RRF needs no score normalisation, so cosine and BM25 mix safely.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Ranked = list[tuple[int, float]]  # (rowid, score), best first


@dataclass
class Fused:
    rowid: int
    rrf: float = 0.0
    dense_rank: int | None = None  # best rank over the query variants
    dense_score: float | None = None
    sparse_rank: int | None = None
    sparse_score: float | None = None
    queries: set[int] = field(default_factory=set)  # indexes of the query variants that found it


def weighted_rrf(dense: list[Ranked], sparse: list[Ranked], dense_weight: float, sparse_weight: float, rrf_k: int = 60) -> list[Fused]:
    fused: dict[int, Fused] = {}
    for kind, lists, weight in (("dense", dense, dense_weight), ("sparse", sparse, sparse_weight)):
        for q, ranked in enumerate(lists):
            for rank, (rowid, score) in enumerate(ranked, start=1):
                hit = fused.setdefault(rowid, Fused(rowid))
                hit.rrf += weight / (rrf_k + rank)
                hit.queries.add(q)
                best = getattr(hit, f"{kind}_rank")
                if best is None or rank < best:
                    setattr(hit, f"{kind}_rank", rank)
                    setattr(hit, f"{kind}_score", score)
    return sorted(fused.values(), key=lambda h: (-h.rrf, h.rowid))


def rrf_ceiling(n_queries: int, dense_weight: float, sparse_weight: float, rrf_k: int = 60) -> float:
    """The score of a chunk ranked first everywhere: fused scores are divided by it to lie in [0, 1]."""
    return n_queries * (dense_weight + sparse_weight) / (rrf_k + 1)
