"""BEIR-format evaluation: nDCG@10, Recall@10/100 and MRR@10 for BM25-only, dense-only and hybrid.

The corpus goes through the product's own path (chunking, embedding, store, indexes); a document's
rank is the rank of its best chunk. ``run_questions`` serves the CLI ``eval`` and the Lab page alike.
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
@dataclass
class Question:
    """A test question and what should be found: keys ``doc:<doc_id>`` or ``chunk:<chunk_id>`` with a
    grade (1 = relevant; higher = more relevant, as BEIR qrels). Chunk keys make a chunk-level question."""

    qid: str
    text: str
    expected: dict[str, int]

    @property
    def level(self) -> str:
        return "chunk" if any(k.startswith("chunk:") for k in self.expected) else "doc"


def ranked_keys(hits, level: str) -> list[str]:
    """The run's ranking at the question's level: a document ranks where its best chunk ranks."""
    keys = [f"chunk:{h.chunk_id}" if level == "chunk" else f"doc:{h.doc_id}" for h in hits]
    return list(dict.fromkeys(keys))


def run_questions(engine, questions: list[Question], settings: RetrievalSettings, depth: int = 100, progress=None) -> dict:
    """Every question through the product's retrieval (``engine.retrieve``, the Chat's own path with
    these knobs) and scored: the Lab page and the CLI ``eval`` both call this.

    Metrics per question and their means: nDCG@10, MRR@10, Recall@10 and @100 over the ranking (as
    BEIR), and Recall@k *in context*: expected items among the first ``top_k`` hits that pass the
    relevance threshold, i.e. what the Chat would hand to the model. Deep rankings are fetched with
    ``top_k`` raised to 4 x depth; the in-context cut uses the knob's own ``top_k``."""
    deep = settings.replace(top_k=max(settings.top_k, 4 * depth))
    rows, latencies, stages = [], [], {}
    for n, q in enumerate(questions):
        if progress:
            progress(q.text, n / max(1, len(questions)))
        t = time.perf_counter()
        retrieval = engine.retrieve(q.text, deep)
        latencies.append((time.perf_counter() - t) * 1000)
        for stage, ms in retrieval.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
        ranked = ranked_keys(retrieval.hits, q.level)[:depth]
        context = ranked_keys([h for h in retrieval.hits if h.trace.get("passed_threshold")][: settings.top_k], q.level)
        found = {key: ranked.index(key) + 1 if key in ranked else None for key in q.expected}
        first = min((r for r in found.values() if r), default=None)
        rows.append({
            "qid": q.qid, "question": q.text, "level": q.level, "expected": found,
            "in_context": [k for k in q.expected if k in context],
            "outranked_by": ranked[: (first or 11) - 1][:10],  # what came before the first expected item
            "nDCG@10": ndcg_at_k(ranked, q.expected), "MRR@10": mrr_at_k(ranked, q.expected),
            "Recall@10": recall_at_k(ranked, q.expected, 10), "Recall@100": recall_at_k(ranked, q.expected, 100),
            "Recall@k": len(set(context) & set(q.expected)) / len(q.expected) if q.expected else 0.0,
            "latency_ms": latencies[-1], "warnings": retrieval.warnings,
        })
    names = ("nDCG@10", "MRR@10", "Recall@k", "Recall@10", "Recall@100")
    metrics = {m: float(np.mean([r[m] for r in rows])) if rows else 0.0 for m in names}
    metrics |= {"p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95), "questions": len(rows), "k": settings.top_k}
    metrics |= {f"{stage}_ms": float(np.mean(v)) for stage, v in stages.items()}  # mean per stage
    return {"metrics": metrics, "questions": rows}


def percentile(values: list[float], p: float) -> float:
    return float(np.percentile(values, p)) if values else 0.0


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


def beir_questions(beir: BeirSet, doc_map: dict[str, str]) -> list[Question]:
    """BEIR qrels in the library's terms: corpus ids become the ids of the ingested documents."""
    by_cid = {cid: doc_id for doc_id, cid in doc_map.items()}
    return [Question(qid, text, {f"doc:{by_cid.get(cid, 'missing-' + cid)}": grade for cid, grade in beir.qrels.get(qid, {}).items()})
            for qid, text in beir.queries.items() if beir.qrels.get(qid)]


def evaluate(engine, beir: BeirSet, base: RetrievalSettings | None = None, modes: list[str] | None = None, progress=None) -> dict[str, dict[str, float]]:
    questions = beir_questions(beir, ingest_corpus(engine, beir, progress))
    base = base or RetrievalSettings()
    return {mode: run_questions(engine, questions, base.replace(**MODES[mode]))["metrics"] for mode in modes or list(MODES)}


PIPELINE_VARIANTS = {
    "plain": {"query_expansion": False, "rerank": False},
    "expansion": {"query_expansion": True, "rerank": False},
    "rerank": {"query_expansion": False, "rerank": True},
    "expansion+rerank": {"query_expansion": True, "rerank": True},
}


def evaluate_pipeline(engine, beir: BeirSet, variants: list[str], base: RetrievalSettings | None = None, progress=None,
                      rerank_candidates: int = 10) -> dict[str, dict[str, float]]:
    """The LLM steps on and off. With rerank only the reranked candidates are returned (at least 10,
    enough for the @10 metrics), so Recall@100 is left out."""
    questions = beir_questions(beir, ingest_corpus(engine, beir, progress))
    base = (base or RetrievalSettings()).replace(rerank_candidates=rerank_candidates, rerank_top_n=rerank_candidates)
    results = {}
    for name in variants:
        run = run_questions(engine, questions, base.replace(**PIPELINE_VARIANTS[name]), progress=progress)
        results[name] = {k: v for k, v in run["metrics"].items() if k != "Recall@100"}
    return results
