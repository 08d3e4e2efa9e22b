"""Answer quality against gold answers: every question through the Chat's own path (``engine.ask``,
default knobs, a fresh chat each), scored on what the user reads.

Figures: gold containment (any gold string in the answer, case-insensitive), token F1 (SQuAD's
normalisation), answers with a valid citation, invalid citations, unsupported claims (numbers, dates,
amounts and names in no cited block), refusals on unanswerable questions (their article is left out
of the library), answer length, and time to first token / whole answer as the user waits for them.
"""

from __future__ import annotations

import json
import re
import string
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .evaluation import BeirSet, document_text, load_beir, percentile
from .grounding import unsupported_claims
from .settings import RetrievalSettings


@dataclass
class AnswerSet:
    """Questions with gold answers; ``unanswerable`` questions' articles are not in ``corpus``."""

    name: str
    corpus: dict[str, dict[str, str]]
    questions: list[tuple[str, str, list[str]]]  # (id, question, gold answers)
    unanswerable: list[tuple[str, str]] = field(default_factory=list)


def article_of(corpus_id: str) -> str:
    """SQuAD-style ids name the article: "Super_Bowl_50_12" -> "Super_Bowl_50"; other ids are their own article."""
    head, _, tail = corpus_id.rpartition("_")
    return head if head and tail.isdigit() else corpus_id


def load_answer_set(path: Path | str, limit: int = 300, unanswerable: int = 50, split: str = "test", offset: int = 0) -> AnswerSet:
    """The first ``limit`` questions (after ``offset``) whose article stays in the library, and
    ``unanswerable`` questions spread over articles left out, taken from the end of the corpus until
    they hold enough questions (none of the answerable questions' articles is ever left out)."""
    path = Path(path)
    beir: BeirSet = load_beir(path, split)
    gold = {}
    with open(path / "answers.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                gold[str(row["_id"])] = [a for a in row["answers"] if a.strip()]
    article = {qid: article_of(next(iter(rel))) for qid, rel in beir.qrels.items()}
    ordered = [qid for qid in beir.queries if qid in gold and qid in article]
    asked = ordered[offset: offset + limit]
    keep_articles = {article[q] for q in asked}
    articles = list(dict.fromkeys(article_of(cid) for cid in beir.corpus))
    left_out: list[str] = []
    pool: list[str] = []
    for name in reversed(articles):
        if len(pool) >= unanswerable or not unanswerable:
            break
        if name in keep_articles:
            continue
        left_out.append(name)
        pool.extend(q for q in ordered if article[q] == name)
    step = max(1, len(pool) // max(1, unanswerable))
    unanswered = pool[::step][:unanswerable]
    corpus = {cid: entry for cid, entry in beir.corpus.items() if article_of(cid) not in left_out}
    return AnswerSet(beir.name, corpus, [(q, beir.queries[q], gold[q]) for q in asked], [(q, beir.queries[q]) for q in unanswered])


def ingest_answer_corpus(engine, answer_set: AnswerSet, progress=None) -> None:
    items = [(f"{answer_set.name}-{cid}", document_text(e), {"beir_id": cid, "title": e.get("title") or None}) for cid, e in answer_set.corpus.items()]
    engine.ingest_texts(items, progress=progress)


# -- scoring ------------------------------------------------------------------------------------
def normalize(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def contains_gold(answer: str, golds: list[str]) -> bool:
    flat = normalize(answer)
    return any(normalize(g) and f" {normalize(g)} " in f" {flat} " for g in golds)


def token_f1(answer: str, golds: list[str]) -> float:
    best = 0.0
    said = normalize(answer).split()
    for g in golds:
        truth = normalize(g).split()
        common = Counter(said) & Counter(truth)
        same = sum(common.values())
        if same:
            p, r = same / len(said), same / len(truth)
            best = max(best, 2 * p * r / (p + r))
    return best


def sentence_count(text: str) -> int:
    body = re.sub(r"\[\d+\]", "", text)
    return len([s for s in re.split(r"(?<=[.!?])\s+|\n+", body) if len(s.strip()) > 3])


@dataclass
class TurnRecord:
    qid: str
    question: str
    text: str
    path: str
    backend: str
    refused: bool
    valid_citation: bool
    invalid_citations: int
    unsupported: list[str]
    ttft_ms: float
    total_ms: float
    golds: list[str] = field(default_factory=list)
    evidence: dict = field(default_factory=dict)


def ask_one(engine, qid: str, question: str, settings: RetrievalSettings) -> TurnRecord:
    """One question in a fresh chat, timed as the user waits: from sending to the first piece of text."""
    chat = engine.chats.create()
    t = time.perf_counter()
    answer = engine.ask(chat, question, settings)
    first = None
    for _ in answer.stream():
        if first is None:
            first = (time.perf_counter() - t) * 1000
    total = (time.perf_counter() - t) * 1000
    engine.chats.delete(chat)
    valid = any(c.cited for c in answer.citations)
    unsupported = unsupported_claims(answer.text, answer.blocks) if answer.path == "rag" else []
    return TurnRecord(qid, question, answer.text, answer.path, answer.backend, answer.refused, valid, len(answer.invalid_citations),
                      unsupported, first if first is not None else total, total, evidence=dict(answer.evidence))


def score(answered: list[TurnRecord], unanswerable: list[TurnRecord]) -> dict[str, float]:
    given = [r for r in answered if not r.refused]
    ttft = [r.ttft_ms for r in answered + unanswerable]
    total = [r.total_ms for r in answered + unanswerable]
    return {
        "questions": len(answered), "unanswerable": len(unanswerable),
        "containment": float(np.mean([contains_gold(r.text, r.golds) for r in answered])) if answered else 0.0,
        "f1": float(np.mean([token_f1(r.text, r.golds) for r in answered])) if answered else 0.0,
        "answered": len(given) / max(1, len(answered)),
        "cited": float(np.mean([r.valid_citation for r in given])) if given else 0.0,
        "invalid_citations": sum(r.invalid_citations for r in answered + unanswerable),
        "unsupported": sum(len(r.unsupported) for r in answered + unanswerable),
        "refusals": float(np.mean([r.refused for r in unanswerable])) if unanswerable else 0.0,
        "sentences": float(np.mean([sentence_count(r.text) for r in given])) if given else 0.0,
        "chars": float(np.mean([len(r.text) for r in given])) if given else 0.0,
        "ttft_p50_ms": percentile(ttft, 50), "ttft_p95_ms": percentile(ttft, 95), "total_p50_ms": percentile(total, 50),
    }


def run_answer_set(engine, answer_set: AnswerSet, settings: RetrievalSettings | None = None,
                   progress: Callable[[str, float], None] | None = None) -> dict:
    """Ask every question (answerable, then unanswerable) and score; returns figures and per-question records."""
    settings = settings or RetrievalSettings()
    answered, unanswerable = [], []
    total = len(answer_set.questions) + len(answer_set.unanswerable)
    for n, (qid, question, golds) in enumerate(answer_set.questions):
        if progress:
            progress("answering", n / max(1, total))
        record = ask_one(engine, qid, question, settings)
        record.golds = golds
        answered.append(record)
    for n, (qid, question) in enumerate(answer_set.unanswerable):
        if progress:
            progress("unanswerable", (len(answered) + n) / max(1, total))
        unanswerable.append(ask_one(engine, qid, question, settings))
    return {"metrics": score(answered, unanswerable), "answered": [r.__dict__ for r in answered], "unanswerable": [r.__dict__ for r in unanswerable]}
