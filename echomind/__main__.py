"""Command line: python -m echomind ingest|search|ask|eval|eval-answers|bench|pii|check."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from .errors import EchoMindError
from .settings import AppConfig, RetrievalSettings


def _engine(args):
    from .engine import Engine

    config = AppConfig.load(Path(args.data_dir) if getattr(args, "data_dir", None) else None)  # the user's saved settings
    if getattr(args, "bm25", None):
        config.bm25_variant = args.bm25
    return Engine(config)


def cmd_ingest(args) -> int:
    engine = _engine(args)
    failed = 0
    for path in map(Path, args.files):
        try:
            r = engine.ingest_bytes(path.name, path.read_bytes(), password=args.password)
            print(f"{r.status:9s} {path.name}: {r.chunks} chunks ({r.doc_type}, {r.sensitivity}) {r.message}")
        except EchoMindError as exc:
            failed += 1
            print(f"rejected  {path.name}: {exc}")
    engine.close()
    return 1 if failed else 0


def cmd_search(args) -> int:
    engine = _engine(args)
    result = engine.search(args.query, RetrievalSettings(top_k=args.top_k))
    print(f"mode: {result.mode}  " + "  ".join(f"{k} {v:.1f} ms" for k, v in result.timings_ms.items()))
    for w in result.warnings:
        print("warning:", w)
    for i, hit in enumerate(result.hits, 1):
        where = ", ".join(f"{k} {hit.source[k]}" for k in ("page", "slide", "sheet", "row") if k in hit.source)
        print(f"[{i}] {hit.score:.3f} {hit.source['filename']} {where} dense#{hit.trace['dense_rank']} bm25#{hit.trace['sparse_rank']}")
        print("    " + hit.text[:200].replace("\n", " "))
    engine.close()
    return 0


def cmd_ask(args) -> int:
    """A cited answer from the library in the terminal: the Chat page's path and checks, streamed."""
    engine = _engine(args)
    if args.llm:
        engine.use_llm(args.llm)
    titled = {c["title"]: c["id"] for c in engine.chats.list()}
    chat = titled.get(args.chat) if args.chat else None
    if chat is None:
        chat = engine.chats.create(args.chat or " ".join(args.question.split())[:60])
    print(f"({engine.answerer_label()})", file=sys.stderr)
    answer = engine.ask(chat, args.question, RetrievalSettings(), status=lambda stage: print(f"{stage}...", file=sys.stderr, flush=True))
    for piece in answer.stream():
        print(piece, end="", flush=True)
    print()
    for notice in answer.notices:
        print(f"note: {notice}", file=sys.stderr)
    cited = [c for c in answer.citations if c.cited]
    if cited:
        print("\nSources:")
        for c in cited:
            where = ", ".join(f"{k} {v}" for k, v in c.position.items() if not k.endswith("_end"))
            print(f"[{c.number}] {c.filename}" + (f" ({where})" if where else "") + f" · relevance {c.relevance:.2f}")
    if answer.invalid_citations:
        print(f"warning: the answer cites {answer.invalid_citations}, which point to no source", file=sys.stderr)
    engine.close()
    return 1 if answer.error else 0


def cmd_eval(args) -> int:
    from .engine import Engine
    from .evaluation import evaluate, load_beir

    beir = load_beir(args.path, args.split)
    if args.limit:
        keep = dict(list(beir.queries.items())[: args.limit])
        beir.queries, beir.qrels = keep, {q: beir.qrels[q] for q in keep}
    data_dir = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="echomind-eval-"))
    engine = Engine(AppConfig(data_dir=data_dir, bm25_variant=args.bm25, llm_backend=args.llm))
    t = time.perf_counter()
    base = RetrievalSettings(dense_weight=args.dense_weight, sparse_weight=args.sparse_weight, k_per_query=args.k_per_query, top_k=args.top_k)
    if args.pipeline:
        return _eval_pipeline(args, engine, beir, base, t)
    results = evaluate(engine, beir, base, args.modes.split(","), progress=_progress)
    print(file=sys.stderr)
    counts = engine.store.counts()
    print(f"{beir.name} ({args.split}): {len(beir.queries)} queries, {len(beir.corpus)} documents -> {counts['searchable_chunks']} searchable chunks")
    print(f"settings: embedder {engine.embedder.id}; BM25 {args.bm25}; RRF K={base.rrf_k}, dense {base.dense_weight} / sparse {base.sparse_weight}; "
          f"k per query {base.k_per_query}; top-k {base.top_k}; document rank = best chunk; store {data_dir}")
    print(f"{'mode':8s} {'nDCG@10':>8s} {'R@k':>7s} {'R@10':>7s} {'R@100':>7s} {'MRR@10':>7s} {'p50 ms':>7s} {'p95 ms':>7s}")
    for mode, m in results.items():
        print(f"{mode:8s} {m['nDCG@10']:8.4f} {m['Recall@k']:7.4f} {m['Recall@10']:7.4f} {m['Recall@100']:7.4f} {m['MRR@10']:7.4f} {m['p50_ms']:7.1f} {m['p95_ms']:7.1f}")
    return _finish(args, engine, results, t)


def _progress(stage: str, fraction: float) -> None:
    print(f"\r  {'ingesting' if stage == 'ingest' else stage} {fraction:5.1%}   ", end="", file=sys.stderr, flush=True)


def _finish(args, engine, results: dict, started: float) -> int:
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    engine.close()
    return 0


def _eval_pipeline(args, engine, beir, base, started: float) -> int:
    from .evaluation import PIPELINE_VARIANTS, evaluate_pipeline

    variants = args.pipeline.split(",") if args.pipeline != "all" else list(PIPELINE_VARIANTS)
    results = evaluate_pipeline(engine, beir, variants, base, progress=_progress)
    print(file=sys.stderr)
    print(f"{beir.name} ({args.split}): {len(beir.queries)} queries through the full retrieval pipeline; LLM: {engine.llm.name if engine.llm else 'none'}")
    print(f"{'variant':18s} {'nDCG@10':>8s} {'R@10':>7s} {'MRR@10':>7s} {'p50 ms':>8s}  mean ms per stage")
    for name, m in results.items():
        stages = "  ".join(f"{k[:-3]} {v:.0f}" for k, v in m.items() if k.endswith("_ms") and k not in ("p50_ms", "p95_ms"))
        print(f"{name:18s} {m['nDCG@10']:8.4f} {m['Recall@10']:7.4f} {m['MRR@10']:7.4f} {m['p50_ms']:8.0f}  {stages}")
    return _finish(args, engine, results, started)


def cmd_eval_answers(args) -> int:
    from .answer_eval import ingest_answer_corpus, load_answer_set, run_answer_set
    from .engine import Engine

    answer_set = load_answer_set(args.path, args.limit, args.unanswerable, offset=args.offset)
    data_dir = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="echomind-answers-"))
    t = time.perf_counter()
    engine = Engine(AppConfig(data_dir=data_dir, llm_backend="none"))
    ingest_answer_corpus(engine, answer_set, progress=_progress)
    settings = RetrievalSettings()
    results = {}
    for backend in args.llm.split(","):
        engine.use_llm(backend)
        results[backend] = run_answer_set(engine, answer_set, settings, progress=_progress)
        results[backend]["backend"] = engine.llm.name if engine.llm else "extractive"
    print(file=sys.stderr)
    print(f"{answer_set.name}: {len(answer_set.questions)} questions (from #{args.offset}) + {len(answer_set.unanswerable)} unanswerable "
          f"(their articles left out); {engine.store.counts()['documents']} documents; default knobs")
    names = [("containment", "contain", ".3f"), ("f1", "F1", ".3f"), ("answered", "answered", ".3f"), ("cited", "cited", ".3f"),
             ("invalid_citations", "bad cite", "d"), ("unsupported", "unsupp.", "d"), ("refusals", "refusals", ".3f"),
             ("sentences", "sent.", ".2f"), ("chars", "chars", ".0f"), ("ttft_p50_ms", "TTFT p50", ".0f"), ("ttft_p95_ms", "TTFT p95", ".0f"),
             ("total_p50_ms", "total p50", ".0f")]
    print(f"{'backend':34s} " + " ".join(f"{label:>9s}" for _, label, _ in names))
    for backend, run in results.items():
        m = run["metrics"]
        print(f"{backend + ' (' + run['backend'] + ')':34.34s} " + " ".join(f"{m[key]:9{fmt}}" for key, _, fmt in names))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"total {time.perf_counter() - t:.0f} s")
    engine.close()
    return 0


def cmd_eval_followups(args) -> int:
    from .engine import Engine
    from .followup_eval import build_followup_library, compare_followups, format_report, load_followups

    pairs = load_followups(args.set)
    data_dir = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="echomind-followups-"))
    t = time.perf_counter()
    engine = Engine(AppConfig(data_dir=data_dir, llm_backend="none"))
    build_followup_library(engine, args.shared)
    results = compare_followups(engine, pairs)
    print(f"{len(pairs)} two-turn pairs; second-turn hit@5 with condensation on and off (no LLM, default knobs)")
    print(format_report(results))
    print(f"total {time.perf_counter() - t:.0f} s")
    engine.close()
    return 0


def cmd_bench(args) -> int:
    from .bench import run_bench

    return run_bench(args)


def cmd_pii(args) -> int:
    from .pii_eval import evaluate

    r = evaluate()
    print(f"PII redaction on the labelled set: {r['items']} PII items, {r['look_alikes']} look-alikes")
    print(f"recall {r['recall']:.3f}  precision {r['precision']:.3f}")
    for label, (hit, total) in sorted(r["per_label"].items()):
        print(f"  {label:6s} {hit}/{total}")
    print("missed:", r["missed"] or "none")
    print("wrongly redacted:", r["false_positives"] or "none")
    return 0


def cmd_check(args) -> int:
    engine = _engine(args)
    report = engine.check_consistency()
    print(json.dumps(report, indent=2))
    if not report["consistent"] and args.repair:
        print("rebuilding indexes from SQLite ...")
        report = engine.repair()
        print(json.dumps(report, indent=2), *engine.notices, sep="\n")
    engine.close()
    return 0 if report["consistent"] else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m echomind", description=__doc__)
    parser.add_argument("--data-dir", help="where the store lives (default: the per-user data directory)")
    parser.add_argument("--bm25", default="lucene", choices=["lucene", "seed"], help="BM25 variant")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ingest", help="add files to the store")
    p.add_argument("files", nargs="+")
    p.add_argument("--password")
    p.set_defaults(func=cmd_ingest)
    p = sub.add_parser("search", help="hybrid search, printing each hit's trace")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=5)
    p.set_defaults(func=cmd_search)
    p = sub.add_parser("ask", help="ask the library a question; streams a cited answer (the Chat's path and checks)")
    p.add_argument("question")
    p.add_argument("--chat", help="continue (or start) the chat with this title, so follow-ups work across calls")
    p.add_argument("--llm", choices=["auto", "ollama", "openai", "embedded", "none"], help="answer with this backend (default: the saved setting)")
    p.set_defaults(func=cmd_ask)
    p = sub.add_parser("eval", help="BEIR-format evaluation (nDCG@10, Recall@10/100, MRR@10)")
    p.add_argument("path")
    p.add_argument("--split", default="test")
    p.add_argument("--modes", default="bm25,dense,hybrid")
    p.add_argument("--store", help="keep the ingested corpus here and reuse it on the next run")
    p.add_argument("--limit", type=int, default=0, help="only the first N queries")
    p.add_argument("--dense-weight", type=float, default=0.6)
    p.add_argument("--k-per-query", type=int, default=400, help="candidates per ranked list (the Chat's default is 20)")
    p.add_argument("--top-k", type=int, default=5, help="chunks in context, for Recall@k")
    p.add_argument("--sparse-weight", type=float, default=0.4)
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--pipeline", help="compare the full pipeline: plain,expansion,rerank,expansion+rerank or all (uses the LLM)")
    p.add_argument("--llm", default="none", choices=["auto", "ollama", "openai", "embedded", "none"], help="LLM for --pipeline")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("eval-answers", help="answer quality against gold answers (containment, F1, citations, unsupported claims, refusals, TTFT)")
    p.add_argument("path", help="a BEIR-format set with answers.jsonl, e.g. ../shared/data/qa/squad-dev-even")
    p.add_argument("--llm", default="none,embedded", help="backends to compare, comma-separated: none, embedded, ollama, openai, auto")
    p.add_argument("--limit", type=int, default=300, help="answerable questions (the first N)")
    p.add_argument("--offset", type=int, default=0, help="skip this many questions first (tune on others than you report)")
    p.add_argument("--unanswerable", type=int, default=50, help="questions whose article is left out of the library")
    p.add_argument("--store", help="keep the ingested library here and reuse it")
    p.add_argument("--json", help="also write figures and every answer to this file")
    p.set_defaults(func=cmd_eval_answers)
    p = sub.add_parser("eval-followups", help="second-turn retrieval hit@5 of two-turn follow-ups, condensation on vs off")
    p.add_argument("--set", default=str(Path(__file__).resolve().parents[1] / "tests" / "data" / "followups.jsonl"))
    p.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"), help="the shared data directory")
    p.add_argument("--store", help="keep the library here and reuse it")
    p.set_defaults(func=cmd_eval_followups)
    p = sub.add_parser("bench", help="ingestion throughput, retrieval latency at 10k/100k chunks, start-up, memory")
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--skip-answers", action="store_true", help="skip the embedded-LLM answer timings")
    p.add_argument("--inputs", action="store_true", help="only: hostile and huge inputs, with outcome, time and memory")
    p.add_argument("--json", help="also write the figures to this file")
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("pii", help="precision and recall of PII redaction on the labelled set")
    p.set_defaults(func=cmd_pii)
    p = sub.add_parser("check", help="check that SQLite, FAISS and BM25 agree; --repair rebuilds from SQLite")
    p.add_argument("--repair", action="store_true")
    p.set_defaults(func=cmd_check)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except EchoMindError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
