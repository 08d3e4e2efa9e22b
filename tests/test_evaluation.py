"""Metrics by hand, and the CLI ``eval`` end to end on a SciFact subset written in BEIR format."""

from __future__ import annotations

import json
import math

import pytest

from conftest import SCIFACT
from echomind.__main__ import main
from echomind.evaluation import load_beir, mrr_at_k, ndcg_at_k, recall_at_k


def test_metrics_by_hand():
    relevant = {"a": 1, "b": 2}
    ranked = ["x", "b", "y", "a"]
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(ranked, relevant) == pytest.approx(dcg / idcg)
    assert recall_at_k(ranked, relevant, 2) == 0.5 and recall_at_k(ranked, relevant, 10) == 1.0
    assert mrr_at_k(ranked, relevant) == 0.5 and mrr_at_k(["x"], relevant) == 0.0


def test_load_scifact_matches_the_official_sizes():
    beir = load_beir(SCIFACT)
    assert len(beir.corpus) == 5183 and len(beir.queries) == 300 and sum(len(v) for v in beir.qrels.values()) == 339


def write_subset(subset, queries: int = 30, corpus: int = 300):
    """The first ``queries`` SciFact test queries, their judged documents and distractors, in BEIR format."""
    beir = load_beir(SCIFACT)
    qids = list(beir.queries)[:queries]
    wanted = {d for q in qids for d in beir.qrels[q]}
    corpus_ids = list(wanted) + [d for d in beir.corpus if d not in wanted][: corpus - len(wanted)]
    (subset / "qrels").mkdir(parents=True)
    with open(subset / "corpus.jsonl", "w") as f:
        for d in corpus_ids:
            f.write(json.dumps({"_id": d, **beir.corpus[d]}) + "\n")
    with open(subset / "queries.jsonl", "w") as f:
        for q in qids:
            f.write(json.dumps({"_id": q, "text": beir.queries[q]}) + "\n")
    with open(subset / "qrels" / "test.tsv", "w") as f:
        f.write("query-id\tcorpus-id\tscore\r\n")
        for q in qids:
            for d, s in beir.qrels[q].items():
                f.write(f"{q}\t{d}\t{s}\r\n")
    return subset


def test_cli_eval_on_a_scifact_subset(tmp_path, capsys):
    subset = write_subset(tmp_path / "scifact-mini")
    out = tmp_path / "figures.json"
    assert main(["eval", str(subset), "--store", str(tmp_path / "store"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    first_line = printed.splitlines()[0]
    assert "nDCG@10" in printed and "hybrid" in printed and "dense 0.6 / sparse 0.4" in printed
    figures = json.loads(out.read_text())
    assert set(figures) == {"bm25", "dense", "hybrid"}
    for mode, m in figures.items():
        assert 0.5 < m["nDCG@10"] <= 1 and m["Recall@100"] >= m["Recall@10"], (mode, m)
    assert figures["hybrid"]["nDCG@10"] >= min(figures["bm25"]["nDCG@10"], figures["dense"]["nDCG@10"])
    # the saved store is reused: a second run ingests nothing new and measures the same
    out2 = tmp_path / "again.json"
    assert main(["eval", str(subset), "--store", str(tmp_path / "store"), "--modes", "bm25", "--json", str(out2)]) == 0
    again = json.loads(out2.read_text())["bm25"]
    assert {k: v for k, v in again.items() if "ms" not in k} == {k: v for k, v in figures["bm25"].items() if "ms" not in k}
    assert capsys.readouterr().out.splitlines()[0] == first_line  # same documents -> same chunks
