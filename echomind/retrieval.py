"""Question -> standalone question -> query variants -> hybrid search -> filters and boosts -> rerank,
with a trace for every hit and the latency of every stage (seed 1.2).

Two numbers per hit, kept apart on purpose:
- ``rank_score`` orders the hits: fused RRF / its ceiling, times the recency and tag factors (or the
  reranker's score when rerank is on);
- ``relevance`` in [0, 1] is what the threshold tests: the reranker's 0-10 score / 10 when it scored
  the hit, else the embedder's cosine mapped through its calibration, else (BM25 only) the share of
  the question's terms the chunk contains. So the threshold means the same with rerank on or off.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from . import prompts
from .followups import condense
from .providers.llm import LLM, complete
from .search import Hit, hybrid_search
from .settings import TIME_WINDOWS, RetrievalSettings

# cosine -> relevance: measured for MiniLM on SciFact (relevant chunks: 5th percentile 0.44, median 0.65;
# best chunk for off-topic questions 0.17-0.42). Other models get a conservative default.
CALIBRATION = {"minilm-int8:384": (0.2, 0.8)}
DEFAULT_CALIBRATION = (0.35, 0.85)


def cosine_relevance(cosine: float, embedder_id: str) -> float:
    lo, hi = CALIBRATION.get(embedder_id, DEFAULT_CALIBRATION)
    return float(min(1.0, max(0.0, (cosine - lo) / (hi - lo))))


@dataclass
class Retrieval:
    question: str
    standalone: str
    queries: list[str]
    hits: list[Hit]  # final order, at most top_k (rerank_top_n with rerank)
    mode: str
    intent: str | None = None
    candidates: int = 0
    warnings: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def relevant(self) -> list[Hit]:
        return [h for h in self.hits if h.trace.get("passed_threshold")]

    @property
    def best_relevance(self) -> float:
        return max((h.trace.get("relevance", 0.0) for h in self.hits), default=0.0)


def expand(question: str, settings: RetrievalSettings, llm: LLM | None, timeout_s: float) -> tuple[list[str], str | None]:
    """Original + up to 3 variants (at most 4 queries)."""
    if not settings.query_expansion or llm is None:
        return [question], None
    intent = None
    if settings.intent_aware:
        try:
            intent = prompts.parse_intent(complete(llm, [{"role": "user", "content": prompts.CLASSIFY.format(question=question)}], max_tokens=5, timeout_s=timeout_s), question)
        except Exception:
            intent = prompts.guess_intent(question)
        prompt = prompts.INTENT_REWRITE[intent] + f"\n\nQuestion: {question}\nQueries:"
    else:
        prompt = prompts.EXPAND.format(question=question)
    try:
        variants = prompts.parse_queries(complete(llm, [{"role": "user", "content": prompt}], max_tokens=80, temperature=0.3, timeout_s=timeout_s), question, limit=3)
    except Exception:
        variants = []
    return [question] + variants, intent


# The date a document is about (meta_json doc_date, read at ingestion), else the day it was uploaded.
DOC_DATE_SQL = "COALESCE(json_extract(d.meta_json, '$.doc_date'), substr(d.created_at, 1, 10))"


def document_date(doc) -> str:
    """ISO date (or timestamp) that the time window, date filters and recency decay use for a document."""
    try:
        meta = json.loads(doc["meta_json"] or "{}")
    except (TypeError, ValueError):
        meta = {}
    return meta.get("doc_date") or doc["created_at"]


def allowed_rowids(store, settings: RetrievalSettings) -> set[int] | None:
    """Rowids that pass the document, source, file type, date and time-window filters (None: no filter).
    Dates are the document's own (a filing's period end), the upload day only when it has none."""
    clauses, params = [], []
    if settings.doc_ids:
        clauses.append(f"d.id IN ({','.join('?' * len(settings.doc_ids))})")
        params.extend(settings.doc_ids)
    if settings.source_type != "all":
        clauses.append("json_extract(d.meta_json, '$.type') IS " + ("'transcript'" if settings.source_type == "transcripts" else "NOT 'transcript'"))
    if settings.file_types:
        clauses.append(f"d.filetype IN ({','.join('?' * len(settings.file_types))})")
        params.extend(settings.file_types)
    if settings.date_from:
        clauses.append(f"{DOC_DATE_SQL} >= ?")
        params.append(settings.date_from)
    if settings.date_to:
        clauses.append(f"substr({DOC_DATE_SQL}, 1, 10) <= ?")
        params.append(settings.date_to)
    days = TIME_WINDOWS[settings.time_window]
    if days:  # a doc_date is a day: it is in the window if that day is not older than the cutoff's day
        cutoff = datetime.fromtimestamp(time.time() - days * 86400, timezone.utc)
        clauses.append("(CASE WHEN json_extract(d.meta_json, '$.doc_date') IS NOT NULL THEN json_extract(d.meta_json, '$.doc_date') >= ? ELSE d.created_at >= ? END)")
        params.extend([cutoff.date().isoformat(), cutoff.isoformat(timespec="seconds")])
    if not clauses:
        return None
    rows = store.query(f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.is_parent = 0 AND {' AND '.join(clauses)}", params)
    return {r[0] for r in rows}


def _age_days(created_at: str) -> float:
    try:
        then = datetime.fromisoformat(created_at)
        if then.tzinfo is None:
            then = then.replace(tzinfo=timezone.utc)
        return max(0.0, (datetime.now(timezone.utc) - then).total_seconds() / 86400)
    except (TypeError, ValueError):
        return 0.0


def retrieve(engine, question: str, settings: RetrievalSettings, llm: LLM | None = None, history: list[dict[str, str]] | None = None,
             summary: str = "", timeout_s: float = 60.0) -> Retrieval:
    timings: dict[str, float] = {}
    warnings: list[str] = []
    t = time.perf_counter()
    standalone = condense(question, history or [], summary, llm, timeout_s) if settings.condense_followups and history else question
    timings["condense"] = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    queries, intent = expand(standalone, settings, llm, timeout_s)
    timings["expansion"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    allowed = allowed_rowids(engine.store, settings)
    pool = max(settings.top_k * 4, settings.rerank_candidates if settings.rerank else 0, 30)
    found = hybrid_search(engine.store, engine.dense, engine.sparse, engine.embedder, queries, settings.replace(top_k=pool), allowed)
    warnings.extend(found.warnings)
    timings["search"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    hits = found.hits
    docs = {d: engine.store.get_document(d) for d in {h.doc_id for h in hits}}
    question_terms = prompts.content_words(standalone)
    vectors = engine.dense.vectors([h.rowid for h in hits]) if found.query_vectors is not None else {}
    qvec = found.query_vectors[0] / max(1e-12, float(np.linalg.norm(found.query_vectors[0]))) if found.query_vectors is not None else None
    for hit in hits:
        doc = docs.get(hit.doc_id)
        meta = json.loads(doc["meta_json"]) if doc is not None else {}
        trace = hit.trace
        trace["queries"] = [queries[i] for i in trace["queries"]]
        trace["fused"] = hit.score
        trace["is_transcript"] = meta.get("type") == "transcript"
        factor = 1.0
        if settings.recency_halflife_days > 0 and doc is not None:
            decay = max(settings.recency_floor, math.exp(-_age_days(document_date(doc)) / settings.recency_halflife_days))
            trace["recency"] = decay
            factor *= decay
        if settings.tag_boost > 0 and trace["is_transcript"] and meta.get("tags"):
            tag_terms = prompts.content_words(" ".join(meta["tags"]))
            overlap = len(question_terms & tag_terms)
            if overlap:
                trace["tag_boost"] = min(settings.tag_boost_cap, 1 + settings.tag_boost * overlap)
                factor *= trace["tag_boost"]
        trace["rank_score"] = hit.score * factor
        if qvec is not None and hit.rowid in vectors:
            trace["cosine"] = float(vectors[hit.rowid] @ qvec)
            trace["relevance"] = cosine_relevance(trace["cosine"], engine.embedder.id)
        else:
            trace["relevance"] = engine.sparse.coverage(standalone, hit.rowid)
    hits.sort(key=lambda h: -h.trace["rank_score"])
    if settings.prefer_authoritative:
        _prefer_authoritative(hits, settings.authoritative_margin)
    timings["boosts"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    if settings.rerank and llm is not None and hits:
        hits = _rerank(llm, standalone, hits, settings, warnings, timeout_s)
    else:
        hits = hits[: settings.top_k]
    timings["rerank"] = (time.perf_counter() - t) * 1000
    for hit in hits:
        hit.trace["final"] = hit.trace.get("rerank_score", hit.trace["rank_score"])
        hit.trace["passed_threshold"] = hit.trace["relevance"] >= settings.relevance_threshold
        hit.score = hit.trace["final"]
    return Retrieval(question, standalone, queries, hits, found.mode, intent, found.candidates, warnings, timings)


def _prefer_authoritative(hits: list[Hit], margin: float) -> None:
    """In near-ties, uploaded documents go before transcripts (seed step 7)."""
    for _ in range(len(hits)):
        moved = False
        for i in range(len(hits) - 1):
            a, b = hits[i], hits[i + 1]
            if a.trace["is_transcript"] and not b.trace["is_transcript"] and a.trace["rank_score"] - b.trace["rank_score"] <= margin:
                hits[i], hits[i + 1] = b, a
                b.trace["authoritative_moved_up"] = True
                moved = True
        if not moved:
            return


def _rerank(llm: LLM, question: str, hits: list[Hit], settings: RetrievalSettings, warnings: list[str], timeout_s: float) -> list[Hit]:
    """One batch call scores the top candidates 0-10; unreadable scores keep their fused order."""
    candidates = hits[: settings.rerank_candidates]
    passages = "\n\n".join(f"[{i}] {' '.join(h.text.split())[:500]}" for i, h in enumerate(candidates, 1))
    try:
        output = complete(llm, [{"role": "user", "content": prompts.RERANK.format(question=question, passages=prompts.quoted(passages))}],
                          max_tokens=8 * len(candidates) + 20, timeout_s=timeout_s)
        scores = prompts.parse_scores(output, len(candidates))
    except Exception as exc:
        warnings.append(f"Rerank failed ({exc}); the fused order is kept.")
        scores = [None] * len(candidates)
    if all(s is None for s in scores):
        warnings.append("The reranker's answer could not be read; the fused order is kept.")
        return candidates[: settings.rerank_top_n]
    for hit, score in zip(candidates, scores):
        if score is not None:
            hit.trace["rerank_score"] = score / 10
            hit.trace["relevance"] = score / 10
    order = sorted(range(len(candidates)), key=lambda i: (-(scores[i] if scores[i] is not None else -1), i))
    return [candidates[i] for i in order][: settings.rerank_top_n]
