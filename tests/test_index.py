"""The derived indexes against references: rank-bm25 for BM25, exact ids for FAISS and RRF."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from conftest import SCIFACT
from echomind.index.analyzers import english_tokens, seed_tokens
from echomind.index.dense import DenseIndex
from echomind.index.fusion import rrf_ceiling, weighted_rrf
from echomind.index.sparse import SparseIndex


@pytest.fixture(scope="module")
def scifact_docs() -> list[str]:
    docs = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            docs.append(row["title"] + " " + row["text"])
            if len(docs) == 400:
                break
    return docs


QUERIES = ["0-dimensional biomaterials show inductive properties", "vitamin D deficiency and cancer risk", "the the of"]


def test_seed_variant_equals_rank_bm25(scifact_docs):
    index = SparseIndex("seed")
    index.add(list(range(1000, 1000 + len(scifact_docs))), scifact_docs)
    reference = BM25Okapi([seed_tokens(d) for d in scifact_docs])
    for query in QUERIES[:2]:
        expected = reference.get_scores(seed_tokens(query))
        got = np.zeros(len(scifact_docs))
        for rowid, score in index.search(query, len(scifact_docs)):
            got[rowid - 1000] = score
        matched = expected != 0
        assert np.allclose(got[matched], expected[matched])
        assert [r - 1000 for r, _ in index.search(query, 10)] == list(np.argsort(-expected, kind="stable")[:10])


def test_incremental_adds_and_removes_equal_a_rebuild(scifact_docs):
    incremental = SparseIndex("lucene")
    for start in range(0, 300, 37):
        incremental.add(list(range(start, min(start + 37, 300))), scifact_docs[start:min(start + 37, 300)])
    incremental.remove(list(range(0, 300, 3)))
    incremental.add([500, 501], scifact_docs[300:302])
    rebuilt = SparseIndex("lucene")
    keep = [i for i in range(300) if i % 3]
    rebuilt.add(keep + [500, 501], [scifact_docs[i] for i in keep] + scifact_docs[300:302])
    for query in QUERIES:
        a, b = incremental.search(query, 50), rebuilt.search(query, 50)
        assert [r for r, _ in a] == [r for r, _ in b]
        assert np.allclose([s for _, s in a], [s for _, s in b])


def test_compaction_keeps_results(scifact_docs):
    index = SparseIndex("lucene")
    index.add(list(range(400)), scifact_docs)
    before = index.search(QUERIES[1], 20)
    dead = [r for r in range(400) if r not in {x for x, _ in before}][:300]
    index.remove(dead)  # > 30 % dead slots: postings are compacted
    assert len(index.alive) == 100 and len(index) == 100
    reference = SparseIndex("lucene")
    reference.add([r for r in range(400) if r not in set(dead)], [scifact_docs[r] for r in range(400) if r not in set(dead)])
    got, want = index.search(QUERIES[1], 20), reference.search(QUERIES[1], 20)
    assert [r for r, _ in got] == [r for r, _ in want] and np.allclose([s for _, s in got], [s for _, s in want])


def test_sparse_index_survives_save_and_load(tmp_path, scifact_docs):
    index = SparseIndex("lucene")
    index.add(list(range(50)), scifact_docs[:50])
    index.generation = 7
    index.save(tmp_path / "s.pkl")
    loaded = SparseIndex.load(tmp_path / "s.pkl")
    assert loaded.generation == 7 and loaded.search(QUERIES[1], 5) == index.search(QUERIES[1], 5)
    loaded.add([99], ["a zyxwv appears"])
    assert loaded.search("zyxwv", 5) == [(99, pytest.approx(loaded.search("zyxwv", 1)[0][1]))]


def test_english_analyzer_stems_and_drops_stopwords():
    assert english_tokens("The runners were running to Paris's museums") == ["runner", "were", "run", "pari", "museum"]
    assert english_tokens("Привет мир") == ["привет", "мир"]  # non-Latin text is searchable too
    assert seed_tokens("Привет мир") == []  # (the seed tokeniser drops it)


def test_dense_index_ids_deletions_and_cosine():
    index = DenseIndex(3)
    index.add([10, 20, 30], np.array([[1, 0, 0], [0, 2, 0], [1, 1, 0]], dtype=np.float32))
    (hits,) = index.search(np.array([[1, 0.1, 0]], dtype=np.float32), 3)
    assert [h[0] for h in hits] == [10, 30, 20] and hits[0][1] == pytest.approx(1 / np.sqrt(1.01), rel=1e-5)
    index.remove([10])
    (hits,) = index.search(np.array([[1, 0.1, 0]], dtype=np.float32), 3)
    assert [h[0] for h in hits] == [30, 20] and len(index) == 2
    with pytest.raises(ValueError, match="dimension"):
        index.add([40], np.ones((1, 4), dtype=np.float32))


def test_weighted_rrf_by_hand():
    dense = [[(1, 0.9), (2, 0.8), (3, 0.7)]]
    sparse = [[(3, 12.0), (4, 11.0)], [(3, 9.0), (1, 5.0)]]
    fused = weighted_rrf(dense, sparse, 0.6, 0.4, rrf_k=60)
    scores = {h.rowid: h.rrf for h in fused}
    assert scores[3] == pytest.approx(0.6 / 63 + 0.4 / 61 + 0.4 / 61)
    assert scores[1] == pytest.approx(0.6 / 61 + 0.4 / 62)
    assert scores[2] == pytest.approx(0.6 / 62) and scores[4] == pytest.approx(0.4 / 62)
    assert [h.rowid for h in fused] == [3, 1, 2, 4]
    three = fused[0]
    assert (three.dense_rank, three.sparse_rank, three.sparse_score, three.queries) == (3, 1, 12.0, {0, 1})
    assert rrf_ceiling(2, 0.6, 0.4) == pytest.approx(2 / 61)
