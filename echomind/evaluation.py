"""BEIR-format evaluation: nDCG@10, Recall@10/100 and MRR@10 for BM25-only, dense-only and hybrid.

The corpus goes through the product's own path (chunking, embedding, store, indexes); a document's
rank is the rank of its best chunk. The same code serves the CLI ``eval`` and, later, the Lab page.
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .settings import RetrievalSettings

Qrels = dict[str, dict[str, int]]


@dataclass
class BeirSet:
    name: str
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: Qrels


def load_beir(path: Path | str, split: str = "test") -> BeirSet:
    path = Path(path)
    corpus = {}
    with open(path / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                corpus[str(row["_id"])] = {"title": row.get("title", ""), "text": row.get("text", "")}
    qrels: Qrels = {}
    with open(path / "qrels" / f"{split}.tsv", encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        next(reader, None)
        for row in reader:
            if len(row) >= 3 and int(row[2]) > 0:
                qrels.setdefault(row[0].strip(), {})[row[1].strip()] = int(row[2])
    queries = {}
    with open(path / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if str(row["_id"]) in qrels:
                    queries[str(row["_id"])] = row["text"]
    return BeirSet(path.name, corpus, queries, qrels)


def document_text(entry: dict[str, str]) -> str:
    return f"{entry['title']}\n\n{entry['text']}".strip() if entry.get("title") else entry["text"]


# -- metrics (the standard definitions, as in pytrec_eval / BEIR) ------------------------------------
def ndcg_at_k(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if d in relevant:
            return 1.0 / (i + 1)
    return 0.0


def score_run(run: dict[str, list[str]], qrels: Qrels) -> dict[str, float]:
    rows = [(ndcg_at_k(run.get(q, []), rel), recall_at_k(run.get(q, []), rel, 10), recall_at_k(run.get(q, []), rel, 100), mrr_at_k(run.get(q, []), rel))
            for q, rel in qrels.items()]
    means = np.mean(np.array(rows), axis=0) if rows else np.zeros(4)
    return {"nDCG@10": float(means[0]), "Recall@10": float(means[1]), "Recall@100": float(means[2]), "MRR@10": float(means[3])}


# -- running --------------------------------------------------------------------------------------
MODES = {
    "bm25": {"dense_weight": 0.0, "sparse_weight": 1.0},
    "dense": {"dense_weight": 1.0, "sparse_weight": 0.0},
    "hybrid": {},
}


def ingest_corpus(engine, beir: BeirSet, progress=None) -> dict[str, str]:
    """Ingest every corpus entry as one document; returns doc_id -> corpus id. Re-running skips entries
    already stored (their checksum matches), so a saved evaluation store is reused."""
    items = [(f"{beir.name}-{cid}", document_text(entry), {"beir_id": cid, "title": entry.get("title") or None}) for cid, entry in beir.corpus.items()]
    engine.ingest_texts(items, progress=progress)
    mapping = {}
    for doc in engine.documents():
        if "beir_id" in doc["meta"]:
            mapping[doc["id"]] = doc["meta"]["beir_id"]
    return mapping


def run_queries(engine, beir: BeirSet, doc_map: dict[str, str], settings: RetrievalSettings, depth: int = 100) -> tuple[dict[str, list[str]], list[float]]:
    run: dict[str, list[str]] = {}
    latencies = []
    for qid, text in beir.queries.items():
        t = time.perf_counter()
        result = engine.search(text, settings)
        latencies.append((time.perf_counter() - t) * 1000)
        ranked: list[str] = []
        seen = set()
        for hit in result.hits:
            cid = doc_map.get(hit.doc_id)
            if cid is not None and cid not in seen:
                seen.add(cid)
                ranked.append(cid)
                if len(ranked) >= depth:
                    break
        run[qid] = ranked
    return run, latencies


def evaluate(engine, beir: BeirSet, base: RetrievalSettings | None = None, modes: list[str] | None = None, progress=None) -> dict[str, dict[str, float]]:
    doc_map = ingest_corpus(engine, beir, progress)
    base = base or RetrievalSettings()
    base = base.replace(top_k=max(base.top_k, 400), k_per_query=max(base.k_per_query, 400))
    results = {}
    for mode in modes or list(MODES):
        settings = base.replace(**MODES[mode])
        run, latencies = run_queries(engine, beir, doc_map, settings)
        results[mode] = score_run(run, beir.qrels) | {"p50_ms": float(np.percentile(latencies, 50)), "p95_ms": float(np.percentile(latencies, 95))}
    return results


PIPELINE_VARIANTS = {
    "plain": {"query_expansion": False, "rerank": False},
    "expansion": {"query_expansion": True, "rerank": False},
    "rerank": {"query_expansion": False, "rerank": True},
    "expansion+rerank": {"query_expansion": True, "rerank": True},
}


def evaluate_pipeline(engine, beir: BeirSet, variants: list[str], base: RetrievalSettings | None = None, progress=None,
                      rerank_candidates: int = 10) -> dict[str, dict[str, float]]:
    """The full retrieval pipeline (LLM expansion and rerank included) per variant: nDCG@10, R@10,
    MRR@10 and the mean latency of each stage. With rerank only the reranked candidates are returned
    (at least 10, enough for the @10 metrics); Recall@100 is left out."""
    doc_map = ingest_corpus(engine, beir, progress)
    base = (base or RetrievalSettings()).replace(top_k=100, k_per_query=100, rerank_candidates=rerank_candidates,
                                                 rerank_top_n=rerank_candidates, relevance_threshold=0.0)
    results = {}
    for name in variants:
        settings = base.replace(**PIPELINE_VARIANTS[name])
        run: dict[str, list[str]] = {}
        stages: dict[str, list[float]] = {}
        totals = []
        for n, (qid, text) in enumerate(beir.queries.items()):
            if progress:
                progress(f"variant {name}", n / len(beir.queries))
            t = time.perf_counter()
            retrieval = engine.retrieve(text, settings)
            totals.append((time.perf_counter() - t) * 1000)
            for stage, ms in retrieval.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
            ranked = list(dict.fromkeys(doc_map[h.doc_id] for h in retrieval.hits if h.doc_id in doc_map))
            run[qid] = ranked
        scores = score_run(run, beir.qrels)
        results[name] = {k: v for k, v in scores.items() if k != "Recall@100"} | {"p50_ms": float(np.percentile(totals, 50))} | {
            f"{stage}_ms": float(np.mean(v)) for stage, v in stages.items()}
    return results
