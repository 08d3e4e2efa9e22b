"""The Retrieval Lab's engine side: test sets from typed questions, the inspector and BEIR files;
runs with metrics per question; compare; sweep; export and import (JSON and CSV) round trips."""

from __future__ import annotations

import json

import pytest

from echomind.errors import EchoMindError
from echomind.evaluation import Question, run_questions
from echomind.lab import apply_knob
from echomind.settings import RetrievalSettings

from conftest import SCIFACT, doc


@pytest.fixture
def library(engine):
    engine.ingest_bytes("handbook.docx", doc("docx_handbook-1p.docx"))
    engine.ingest_bytes("crazyones.pdf", doc("pdf_crazyones.pdf"))
    engine.ingest_text("aurora.txt", "The Aurora X2 espresso machine costs 499 euros and has a 15 bar pump.")
    engine.ingest_text("kettle.txt", "The Boreal kettle boils a litre of water in three minutes and costs 39 euros.")
    return engine


def chunk_key(engine, filename: str) -> str:
    doc_id = next(d["id"] for d in engine.documents() if d["filename"] == filename)
    return "chunk:" + next(c["chunk_id"] for c in engine.document_chunks(doc_id))


def test_metrics_per_question_by_hand(library):
    """The run's figures for one question are the textbook ones for the ranking it shows."""
    aurora = chunk_key(library, "aurora.txt")
    result = run_questions(library, [Question("q1", "How much does the espresso machine cost?", {aurora: 1})], RetrievalSettings())
    row = result["questions"][0]
    rank = row["expected"][aurora]
    assert rank == 1 and row["MRR@10"] == 1.0 and row["nDCG@10"] == 1.0 and row["Recall@k"] == 1.0
    assert row["outranked_by"] == [] and result["metrics"]["questions"] == 1
    # the threshold gates what reaches the context: at 1.0 nothing passes, so Recall@k drops, the ranking does not
    gated = run_questions(library, [Question("q1", "How much does the espresso machine cost?", {aurora: 1})], RetrievalSettings(relevance_threshold=1.0))
    assert gated["questions"][0]["Recall@k"] == 0.0 and gated["questions"][0]["MRR@10"] == 1.0


def test_sets_runs_compare_and_sweep(library):
    lab = library.lab
    set_id = lab.create_set("Shop")
    aurora, kettle = chunk_key(library, "aurora.txt"), chunk_key(library, "kettle.txt")
    lab.add_question(set_id, "How much does the espresso machine cost?", {aurora: 1})
    lab.add_question(set_id, "How quickly does the kettle boil water?", {kettle: 1})
    # from the inspector: the same question again merges its expected chunks
    lab.add_question(set_id, "How  much does the espresso machine cost?", {kettle: 1})
    rows = lab.question_rows(set_id)
    assert len(rows) == 2 and set(rows[0]["expected"]) == {aurora, kettle}
    assert lab.label(rows[0]["labels"][aurora]) == "aurora.txt · chunk 0"

    a = lab.run(set_id, RetrievalSettings(relevance_threshold=0.0))
    b = lab.run(set_id, RetrievalSettings(relevance_threshold=0.0, dense_weight=0.0, sparse_weight=1.0, top_k=1))
    assert a["metrics"]["questions"] == 2 and a["label"] == "relevance_threshold=0.0" and "top_k=1" in b["label"]
    assert [r["id"] for r in lab.runs(set_id)] == [a["id"], b["id"]]
    diff = lab.compare(a["id"], b["id"])
    assert {s["knob"] for s in diff["settings"]} == {"dense_weight", "sparse_weight", "top_k"}
    recall_k = next(m for m in diff["metrics"] if m["metric"] == "Recall@k")
    assert recall_k["B - A"] == pytest.approx(recall_k["B"] - recall_k["A"]) and recall_k["B"] < recall_k["A"]

    runs = lab.sweep(set_id, RetrievalSettings(relevance_threshold=0.0), "top_k", [1, 2, 5])
    assert [r["settings"]["top_k"] for r in runs] == [1, 2, 5] and len({r["sweep"] for r in runs}) == 1
    recalls = [r["metrics"]["Recall@k"] for r in runs]
    assert recalls == sorted(recalls) and recalls[0] < recalls[-1]
    assert list(lab.sweeps(set_id).values())[0][0]["id"] == runs[0]["id"]
    assert apply_knob(RetrievalSettings(), "dense_share", 0.25).sparse_weight == 0.75
    assert apply_knob(RetrievalSettings(), "rerank", "true").rerank is True
    with pytest.raises(EchoMindError, match="cannot be swept"):
        lab.sweep(set_id, RetrievalSettings(), "persona", [1])


def test_export_and_import_round_trip(library, make_engine, tmp_path):
    lab = library.lab
    set_id = lab.create_set("Shop")
    lab.add_question(set_id, "How much does the espresso machine cost?", {chunk_key(library, "aurora.txt"): 2})
    lab.add_question(set_id, "Who are the crazy ones?", {"doc:" + next(d["id"] for d in library.documents() if d["filename"] == "crazyones.pdf"): 1})
    run = lab.run(set_id, RetrievalSettings())
    exported = lab.export_json(set_id)

    again = lab.import_json(exported)
    assert lab.question_rows(again) == lab.question_rows(set_id)
    assert lab.runs(again)[0]["metrics"] == run["metrics"]

    # another library with the same files: keys are matched by file name and chunk number
    other = make_engine(data_dir=tmp_path / "other")
    other.ingest_text("aurora.txt", "The Aurora X2 espresso machine costs 499 euros and has a 15 bar pump.")
    other.ingest_bytes("crazyones.pdf", doc("pdf_crazyones.pdf"))
    moved = other.lab.import_json(exported)
    rerun = other.lab.run(moved, RetrievalSettings())
    assert rerun["metrics"]["MRR@10"] == run["metrics"]["MRR@10"] == 1.0

    csv_text = lab.export_questions_csv(set_id)
    assert csv_text.splitlines()[0] == "qid,question,expected,grades,expected_labels"
    from_csv = lab.import_questions_csv("From CSV", csv_text.encode())
    assert [q["expected"] for q in lab.question_rows(from_csv)] == [q["expected"] for q in lab.question_rows(set_id)]
    assert "How much does the espresso machine cost?" in lab.export_run_csv(run["id"])
    with pytest.raises(EchoMindError, match="needs the columns"):
        lab.import_questions_csv("bad", b"a,b\n1,2\n")
    with pytest.raises(EchoMindError, match="Not an EchoMind Lab export"):
        lab.import_json(b"{}")
    with pytest.raises(EchoMindError, match="no questions yet"):
        lab.run(lab.create_set("Empty"), RetrievalSettings())


def test_beir_import_gives_the_cli_figures(engine, tmp_path, capsys):
    """A SciFact subset imported into the Lab and run with the knobs the CLI uses gives its figures."""
    from echomind.__main__ import main
    from test_evaluation import write_subset

    subset = write_subset(tmp_path / "scifact-mini", queries=15, corpus=150)
    set_id = engine.lab.import_beir("scifact-mini", *[(subset / n).read_bytes() for n in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")])
    assert len(engine.lab.questions(set_id)) == 15 and engine.lab.get_set(set_id)["source"] == "beir"
    page = engine.lab.run(set_id, RetrievalSettings())["metrics"]
    out = tmp_path / "cli.json"
    assert main(["eval", str(subset), "--modes", "hybrid", "--k-per-query", "20", "--store", str(tmp_path / "cli"), "--json", str(out)]) == 0
    cli = json.loads(out.read_text())["hybrid"]
    for metric in ("nDCG@10", "MRR@10", "Recall@k", "Recall@10", "Recall@100"):
        assert page[metric] == pytest.approx(cli[metric]), metric
    assert 0.5 < page["nDCG@10"] <= 1
