"""``python -m echomind bench``: figures, not assertions. Ratios come from one run on one machine.

1. Ingestion: end-to-end chunks/s next to the embedder's own chunks/s on the same chunks (the ratio).
2. Hybrid retrieval latency p50/p95 (query embedding + FAISS + BM25 + RRF + SQLite fetch, no LLM) at
   each corpus size. Large corpora are filled with real SciFact chunk texts (replicated past the
   corpus size) and real vectors of a sample of them plus small noise: embedding 100k chunks would
   take an hour here and measures the embedder, not the index.
4. ``--inputs``: every hostile or huge input (zip bombs, 500 MB, 1M-row CSV, 2,000 pages, ...): outcome,
   time and memory.
3. Adding one document at each size (must not grow with the corpus), start-up with saved indexes
   versus a rebuild from SQLite, rank-bm25 next to our BM25, and peak memory.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from .chunking import chunk_segments
from .engine import Engine
from .evaluation import document_text, load_beir, percentile
from .parsing import Segment
from .settings import AppConfig, RetrievalSettings
from .store import utcnow

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"


def _scifact_chunks(limit_docs: int | None = None) -> tuple[list[str], list[str]]:
    beir = load_beir(SCIFACT)
    texts = []
    for i, entry in enumerate(beir.corpus.values()):
        if limit_docs and i >= limit_docs:
            break
        chunked = chunk_segments([Segment(document_text(entry))], "b")
        texts.extend(c.text for c in chunked.embed_chunks)
    return texts, list(beir.queries.values())


def bench_ingestion(embedder, docs: int = 120) -> dict:
    beir = load_beir(SCIFACT)
    items = [(f"doc-{cid}", document_text(e), {}) for cid, e in list(beir.corpus.items())[:docs]]
    chunk_texts = [c.index_text for _, text, _ in items for c in chunk_segments([Segment(text)], "x").embed_chunks]
    embedder.embed(chunk_texts[:8])  # warm up
    t = time.perf_counter()
    embedder.embed(chunk_texts)
    own = len(chunk_texts) / (time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(AppConfig(data_dir=Path(tmp)), embedder=embedder)
        t = time.perf_counter()
        results = engine.ingest_texts(items)
        e2e = sum(r.chunks for r in results) / (time.perf_counter() - t)
        engine.close()
    return {"documents": docs, "chunks": len(chunk_texts), "embedder_chunks_per_s": own, "ingest_chunks_per_s": e2e, "ratio": e2e / own}


def _fill(engine: Engine, texts: list[str], vectors: np.ndarray, target: int, rng: np.random.Generator) -> None:
    """Write chunks straight into SQLite (one document per 50 chunks), as ingestion would have."""
    from .chunking import Chunk, DocType, Sensitivity

    have = engine.store.counts()["searchable_chunks"]
    while have < target:
        n = min(50, target - have)
        doc_id = uuid.uuid4().hex[:16]
        chunks = [Chunk(doc_id, f"{doc_id}:{i}", texts[(have + i) % len(texts)] + ("" if have + i < len(texts) else f" (copy {(have + i) // len(texts)})"),
                        DocType.USER, Sensitivity.LOW, False, i) for i in range(n)]
        base = vectors[(have + np.arange(n)) % len(vectors)]
        noisy = base + rng.normal(0, 0.02, base.shape).astype(np.float32)
        doc = {"id": doc_id, "filename": f"bench-{doc_id}.txt", "filetype": "txt", "checksum": doc_id, "size_bytes": 0, "created_at": utcnow(),
               "doc_type": "USER", "sensitivity": "LOW", "redactions": 0, "meta_json": "{}"}
        with engine.store.atomic() as conn:
            engine.store.insert_document(conn, doc, chunks, noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
        have += n


def bench_size(embedder, size: int, texts: list[str], vectors: np.ndarray, queries: list[str], n_queries: int) -> dict:
    rng = np.random.default_rng(0)
    tmp = Path(tempfile.mkdtemp(prefix="echomind-bench-"))
    try:
        config = AppConfig(data_dir=tmp)
        engine = Engine(config, embedder=embedder)
        t = time.perf_counter()
        _fill(engine, texts, vectors, size, rng)
        fill_s = time.perf_counter() - t
        engine._closed = True  # drop the in-memory indexes without saving: the next open must rebuild
        engine.store.close()
        engine.parser.close()

        t = time.perf_counter()
        engine = Engine(config, embedder=embedder)
        rebuild_s = time.perf_counter() - t
        assert engine.index_source == "rebuilt"
        settings = RetrievalSettings()
        for q in queries[:5]:
            engine.search(q, settings)  # warm up
        latencies, sparse_ms, dense_ms, embed_ms = [], [], [], []
        for q in queries[:n_queries]:
            t = time.perf_counter()
            result = engine.search(q, settings)
            latencies.append((time.perf_counter() - t) * 1000)
            sparse_ms.append(result.timings_ms["sparse"])
            dense_ms.append(result.timings_ms["dense"])
            embed_ms.append(result.timings_ms["embed"])
        adds = []
        for i in range(5):
            t = time.perf_counter()
            engine.ingest_text(f"added-{i}.txt", f"A freshly added note number {i} about enzyme kinetics and protein folding in yeast.")
            adds.append((time.perf_counter() - t) * 1000)
        engine.close()
        t = time.perf_counter()
        engine = Engine(config, embedder=embedder)
        load_s = time.perf_counter() - t
        assert engine.index_source == "loaded"
        engine.close()

        from rank_bm25 import BM25Okapi

        from .index.analyzers import english_tokens

        corpus = [english_tokens(texts[i % len(texts)]) for i in range(size)]
        t = time.perf_counter()
        reference = BM25Okapi(corpus)
        rank_build_s = time.perf_counter() - t
        rank_ms = []
        for q in queries[:10]:
            t = time.perf_counter()
            reference.get_scores(english_tokens(q))
            rank_ms.append((time.perf_counter() - t) * 1000)
        del reference, corpus
        return {
            "chunks": size, "fill_s": fill_s, "queries": len(latencies),
            "hybrid_p50_ms": percentile(latencies, 50), "hybrid_p95_ms": percentile(latencies, 95),
            "embed_query_p50_ms": percentile(embed_ms, 50), "faiss_p50_ms": percentile(dense_ms, 50), "bm25_p50_ms": percentile(sparse_ms, 50),
            "rank_bm25_query_p50_ms": percentile(rank_ms, 50), "rank_bm25_build_s": rank_build_s,
            "add_one_doc_p50_ms": percentile(adds, 50), "startup_rebuild_s": rebuild_s, "startup_load_s": load_s,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


ANSWER_QUESTIONS = [
    ("linn.txt", "How many tracks does the LinnSequencer record?"),
    ("linn.txt", "Can the tempo be changed while a sequence plays?"),
    ("crazyones.pdf", "What does the text say about the crazy ones?"),
    ("dpr.pdf", "What does dense passage retrieval use to encode passages?"),
    ("dpr.pdf", "How is the retriever trained?"),
]


def bench_answers(embedder, docs_dir: Path) -> dict:
    """Whole turns, timed per stage: the default path (extractive answers), the embedded model choosing
    among cited sentences, and the embedded model with every LLM step on (expansion, rerank, compression)."""
    from .providers.llm import make_llm

    with tempfile.TemporaryDirectory() as tmp:
        config = AppConfig(data_dir=Path(tmp), llm_backend="embedded", llm_max_tokens=128, llm_context_tokens=4096)
        small = make_llm(config)
        engine = Engine(config, embedder=embedder, llm=None)
        for name, source in (("linn.txt", "groundtruth_linn.txt"), ("crazyones.pdf", "pdf_crazyones.pdf"), ("dpr.pdf", "pdf_multi-column-2p.pdf")):
            engine.ingest_bytes(name, (docs_dir / source).read_bytes())
        rows = {}
        for label, llm, settings in (("extractive", None, RetrievalSettings()), (f"{small.name} picks", small, RetrievalSettings()),
                                     ("+ all LLM steps", small, RetrievalSettings(query_expansion=True, rerank=True, rerank_candidates=8, compression=True))):
            engine.use_llm(llm=llm)
            chat = engine.chats.create("bench")
            stages: dict[str, list[float]] = {}
            for _, question in ANSWER_QUESTIONS:
                t = time.perf_counter()
                answer = engine.ask(chat, question, settings)
                prepare = (time.perf_counter() - t) * 1000
                answer.complete()
                total = (time.perf_counter() - t) * 1000
                timings = dict(answer.timings_ms) | {"ttft": prepare + answer.timings_ms["first_token"], "total": total}
                for k, v in timings.items():
                    stages.setdefault(k, []).append(v)
            rows[label] = {k: statistics.median(v) for k, v in stages.items()}
        engine.close()
    return {"llm": small.name, "questions": len(ANSWER_QUESTIONS), "median_ms": rows}


def _rss_mb() -> float:
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024


def bench_inputs(embedder) -> list[dict]:
    """Each hostile or huge input through a real engine: outcome, seconds, the parser worker's peak
    memory (a fresh worker per input) and this process's memory after it; the store must not change
    when an input is refused."""
    from .bench_inputs import hostile_inputs
    from .errors import EchoMindError

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(AppConfig(data_dir=Path(tmp)), embedder=embedder, llm=None)
        for name, make in hostile_inputs():
            data = make()
            before = (engine.store.counts(), engine.store.generation)
            engine.parser.close()
            t = time.perf_counter()
            try:
                result = engine.ingest_bytes(name, data)
                outcome = f"{result.status}: {result.chunks} chunks as '{result.filename[:40]}'"
            except EchoMindError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
                assert (engine.store.counts(), engine.store.generation) == before, f"{name} changed the store"
            rows.append({"input": name[:40], "mb": len(data) / 2**20, "seconds": time.perf_counter() - t,
                         "worker_peak_mb": engine.parser.peak_memory_mb(), "app_rss_mb": _rss_mb(), "outcome": outcome,
                         "consistent": engine.check_consistency()["consistent"]})
            del data
        engine.close()
    return rows


def print_inputs(rows: list[dict]) -> None:
    print(f"\n{'input':42s} {'MB':>7s} {'s':>6s} {'worker MB':>9s} {'app MB':>7s}  outcome")
    for r in rows:
        worker = f"{r['worker_peak_mb']:9.0f}" if r["worker_peak_mb"] else f"{'-':>9s}"
        print(f"{r['input']!r:42s} {r['mb']:7.1f} {r['seconds']:6.1f} {worker} {r['app_rss_mb']:7.0f}  {r['outcome'][:110]}")
    print("store and indexes consistent after every input:", all(r["consistent"] for r in rows))


def run_bench(args) -> int:
    from .providers.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    if args.inputs:
        rows = bench_inputs(embedder)
        print_inputs(rows)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2))
        return 0
    report: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                                "onnx_threads": os.cpu_count()}, "when": utcnow()}
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}")
    ing = bench_ingestion(embedder)
    report["ingestion"] = ing
    print(f"\ningestion ({ing['documents']} SciFact abstracts, {ing['chunks']} chunks)")
    print(f"  embedder alone   {ing['embedder_chunks_per_s']:7.1f} chunks/s")
    print(f"  end to end       {ing['ingest_chunks_per_s']:7.1f} chunks/s   ratio {ing['ratio']:.2f}")

    texts, queries = _scifact_chunks()
    sample = min(len(texts), 1000)
    t = time.perf_counter()
    vectors = embedder.embed(texts[:sample])
    print(f"\nreal vectors for {sample} of {len(texts)} SciFact chunk texts: {time.perf_counter() - t:.0f} s")
    report["retrieval"] = []
    header = f"{'chunks':>8s} {'p50 ms':>7s} {'p95 ms':>7s} {'embed':>6s} {'faiss':>6s} {'bm25':>6s} {'rank-bm25':>10s} {'add doc':>8s} {'rebuild s':>9s} {'load s':>7s}"
    print("\nhybrid retrieval (top_k 5, k per query 20, one query; no LLM)\n" + header)
    for size in (int(s) for s in args.sizes.split(",")):
        row = bench_size(embedder, size, texts, vectors, queries, args.queries)
        report["retrieval"].append(row)
        print(f"{row['chunks']:8d} {row['hybrid_p50_ms']:7.1f} {row['hybrid_p95_ms']:7.1f} {row['embed_query_p50_ms']:6.1f} {row['faiss_p50_ms']:6.1f} "
              f"{row['bm25_p50_ms']:6.1f} {row['rank_bm25_query_p50_ms']:10.1f} {row['add_one_doc_p50_ms']:8.1f} {row['startup_rebuild_s']:9.1f} {row['startup_load_s']:7.2f}")
    if not args.skip_answers:
        answers = bench_answers(embedder, SCIFACT.parents[1] / "docs")
        report["answers"] = answers
        order = ["ttft", "total", "condense", "expansion", "search", "boosts", "rerank", "context", "select", "first_token", "generation", "summary"]
        print(f"\nanswers: time to first token and each stage (median of {answers['questions']} questions, ms)")
        print(f"{'':42s}" + "".join(f"{k:>11s}" for k in order))
        for label, row in answers["median_ms"].items():
            print(f"{label:42.42s}" + "".join(f"{row.get(k, 0):11.0f}" for k in order))
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory (RSS) {report['peak_rss_mb']:.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0
