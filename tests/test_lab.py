"""The Retrieval Lab's engine side: test sets from typed questions, the inspector and BEIR files;
runs with metrics per question; compare; sweep; export and import (JSON and CSV) round trips."""

from __future__ import annotations

import csv
import io
import json

import pytest

from echomind.answer_eval import AnswerSet, article_of, run_answer_set
from echomind.errors import EchoMindError
from echomind.evaluation import Question, document_text, load_beir, run_questions
from echomind.lab import apply_knob
from echomind.lab_answers import clean_answers
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


# -- gold answers and answer runs ------------------------------------------------------------------
SQUAD = SCIFACT.parents[1] / "qa" / "squad-dev-even"
PARAGRAPHS = [f"Super_Bowl_50_{i}" for i in range(4)]


@pytest.fixture(scope="module")
def squad():
    """A few SQuAD paragraphs, their questions with gold answers, and a question from an article left out."""
    beir = load_beir(SQUAD)
    gold = {}
    with open(SQUAD / "answers.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            gold[row["_id"]] = row["answers"]
    on = [q for q, rel in beir.qrels.items() if next(iter(rel)) in PARAGRAPHS]
    asked = [on[i] for i in (0, 1, 2, 5, 8)]  # 5 and 8: the same words, two SQuAD questions (as eval-answers asks them)
    assert beir.queries[asked[3]] == beir.queries[asked[4]] and asked[3] != asked[4]
    left_out = next(q for q, rel in beir.qrels.items() if article_of(next(iter(rel))) == "Normans")
    return beir, gold, asked, left_out


def squad_set(engine, squad) -> str:
    beir, gold, asked, left_out = squad
    engine.ingest_texts([(f"squad-{p}", document_text(beir.corpus[p]), {"beir_id": p}) for p in PARAGRAPHS])
    set_id = engine.lab.create_set("Super Bowl answers")
    for qid in asked:
        engine.lab.add_question(set_id, beir.queries[qid], {}, qid=qid, answers=gold[qid])
    engine.lab.add_question(set_id, beir.queries[left_out], {}, qid=left_out, unanswerable=True)
    return set_id


TIMINGS = ("ttft_p50_ms", "ttft_p95_ms", "total_p50_ms")


def test_answer_run_gives_the_benchmarks_figures(engine, squad):
    """The Lab's Answers run and ``answer_eval.run_answer_set`` (what ``eval-answers`` runs) agree on the same questions."""
    beir, gold, asked, left_out = squad
    set_id = squad_set(engine, squad)
    assert [q["qid"] for q in engine.lab.gold_questions(set_id)] == [*asked, left_out]
    run = engine.lab.answer_run(set_id, RetrievalSettings())
    answer_set = AnswerSet("squad", {}, [(q, beir.queries[q], gold[q]) for q in asked], [(left_out, beir.queries[left_out])])
    cli = run_answer_set(engine, answer_set, RetrievalSettings())
    assert {k: v for k, v in run["metrics"].items() if k not in TIMINGS} == {k: v for k, v in cli["metrics"].items() if k not in TIMINGS}
    assert run["metrics"]["questions"] == 5 and run["metrics"]["unanswerable"] == 1
    assert run["metrics"]["containment"] >= 0.4 and run["metrics"]["cited"] == 1.0  # extractive answers quote the paragraphs
    rows = run["questions"]
    assert [r["answer"] for r in rows] == [r["text"] for r in cli["answered"] + cli["unanswerable"]]
    assert sum(r["contains_gold"] for r in rows[:5]) == round(run["metrics"]["containment"] * 5)
    assert rows[-1]["unanswerable"] and rows[-1]["contains_gold"] is None and rows[-1]["refused"] == (run["metrics"]["refusals"] == 1.0)
    assert all(r["ttft_ms"] > 0 for r in rows) and "extractive" in run["answerer"]
    assert run["settings"]["top_k"] == RetrievalSettings().top_k
    assert not engine.chats.list()  # every question was asked in a fresh chat, removed afterwards

    limited = engine.lab.answer_run(set_id, RetrievalSettings(relevance_threshold=0.0), limit=2)
    assert limited["metrics"]["questions"] == 2 and limited["metrics"]["unanswerable"] == 0 and "relevance_threshold=0.0" in limited["label"]
    assert [r["id"] for r in engine.lab.answer_runs(set_id)] == [run["id"], limited["id"]]
    assert engine.lab.runs(set_id) == []  # answer runs are not retrieval runs (compare and sweep read those)
    with pytest.raises(EchoMindError, match="no document or chunk|No question in this set names"):
        engine.lab.run(set_id, RetrievalSettings())
    with pytest.raises(EchoMindError, match="at least one question"):
        engine.lab.answer_run(set_id, RetrievalSettings(), limit=0)
    with pytest.raises(EchoMindError, match="No question in this set has gold answers"):
        engine.lab.answer_run(engine.lab.create_set("Empty"), RetrievalSettings())
    table = list(csv.DictReader(io.StringIO(engine.lab.export_answer_run_csv(run["id"]))))
    assert [r["answer"] for r in table] == [r["answer"] for r in rows] and table[-1]["contains_gold"] == "" and table[-1]["unanswerable"] == "1"
    engine.lab.delete_answer_run(limited["id"])
    assert [r["id"] for r in engine.lab.answer_runs(set_id)] == [run["id"]]


def test_gold_answers_are_edited_checked_and_survive_export(engine, make_engine, squad, tmp_path):
    beir, gold, asked, left_out = squad
    set_id = squad_set(engine, squad)
    lab = engine.lab
    lab.set_gold(set_id, asked[0], "Denver Broncos\n\n  the  Broncos \nDenver Broncos\n")
    row = next(r for r in lab.question_rows(set_id) if r["qid"] == asked[0])
    assert row["answers"] == ["Denver Broncos", "the Broncos"] and not row["unanswerable"]
    before = lab.question_rows(set_id)
    with pytest.raises(EchoMindError, match="has no gold answers"):
        lab.set_gold(set_id, asked[0], ["Denver Broncos"], unanswerable=True)
    with pytest.raises(EchoMindError, match="at most 500"):
        lab.set_gold(set_id, asked[0], ["x" * 501])
    with pytest.raises(EchoMindError, match="list of strings"):
        lab.set_gold(set_id, asked[0], [3])
    assert lab.question_rows(set_id) == before  # refused edits leave the set as it was
    kettle = engine.ingest_text("kettle.txt", "The Boreal kettle boils a litre of water in three minutes.")
    lab.add_question(set_id, "How fast does the kettle boil?", {f"doc:{kettle.doc_id}": 1})
    with pytest.raises(EchoMindError, match="cannot also name documents"):
        lab.set_gold(set_id, lab.question_rows(set_id)[-1]["qid"], [], unanswerable=True)

    run = lab.answer_run(set_id, RetrievalSettings(), limit=2)
    exported = lab.export_json(set_id)
    again = lab.import_json(exported)
    assert lab.question_rows(again) == lab.question_rows(set_id)
    assert [q["unanswerable"] for q in lab.question_rows(again)] == [False] * 5 + [True, False]
    assert lab.answer_runs(again)[0]["metrics"] == run["metrics"] and lab.get_answer_run(lab.answer_runs(again)[0]["id"])["questions"] == run["questions"]

    # a bad question in an export is named, and nothing of the export is stored
    payload = json.loads(exported)
    payload["questions"][1]["answers"] = ["Carolina"]
    payload["questions"][1]["unanswerable"] = True
    sets = len(lab.sets())
    with pytest.raises(EchoMindError, match="Question 2 of the export: .*Nothing was imported"):
        lab.import_json(json.dumps(payload))
    assert len(lab.sets()) == sets

    # exported before m004: no answers in the file, questions come back without them
    old = json.loads(exported)
    for q in old["questions"]:
        q.pop("answers"), q.pop("unanswerable")
    old["questions"] = [q for q in old["questions"] if q["expected"]]
    old.pop("answer_runs")
    legacy = lab.import_json(json.dumps(old))
    assert [(q["answers"], q["unanswerable"]) for q in lab.question_rows(legacy)] == [([], False)]


def test_beir_import_reads_answers_jsonl_beside_the_corpus(engine, squad, tmp_path):
    """A SQuAD subset in BEIR format with answers.jsonl: gold answers on its questions; a question whose
    paragraph is not in the corpus is unanswerable; a bad answers line is named and nothing is stored."""
    beir, gold, asked, left_out = squad
    root = tmp_path / "squad-mini"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": p, **beir.corpus[p]}) + "\n" for p in PARAGRAPHS))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": beir.queries[q]}) + "\n" for q in [*asked, left_out]))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{next(iter(beir.qrels[q]))}\t1\n" for q in [*asked, left_out]))
    (root / "answers.jsonl").write_text("not json\n")
    with pytest.raises(EchoMindError, match="answers.jsonl line 1"):
        engine.lab.import_beir_dir(root)
    assert engine.lab.sets() == [] and engine.documents() == []

    (root / "answers.jsonl").write_text("".join(json.dumps({"_id": q, "answers": gold[q]}) + "\n" for q in [*asked, left_out]))
    set_id = engine.lab.import_beir_dir(root)
    rows = {r["qid"]: r for r in engine.lab.question_rows(set_id)}
    assert engine.lab.get_set(set_id)["name"] == "squad-mini" and len(engine.documents()) == len(PARAGRAPHS)
    assert all(rows[q]["answers"] == clean_answers(gold[q]) and rows[q]["expected"] and not rows[q]["unanswerable"] for q in asked)
    assert rows[left_out]["unanswerable"] and rows[left_out]["answers"] == [] and rows[left_out]["expected"] == {}
    run = engine.lab.answer_run(set_id, RetrievalSettings(), limit=3)
    assert run["metrics"]["questions"] == 3 and run["metrics"]["containment"] > 0
    assert engine.lab.run(set_id, RetrievalSettings())["metrics"]["questions"] == len(asked)  # the unanswerable one has nothing to find

    (root / "answers.jsonl").unlink()  # without answers.jsonl: the retrieval set as before
    plain = engine.lab.import_beir_dir(root, name="plain")
    assert all(r["answers"] == [] and not r["unanswerable"] for r in engine.lab.question_rows(plain))
    with pytest.raises(EchoMindError, match="not a BEIR folder"):
        engine.lab.import_beir_dir(tmp_path / "nowhere")


def test_a_lab_from_before_answers_migrates_and_keeps_its_questions(tmp_path):
    """A database made by m001-m003 gets m004: its questions stay, with no gold answers."""
    import sqlite3

    from echomind import store as store_module

    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    for name, sql in store_module.MIGRATIONS[:3]:
        conn.executescript(sql)
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.executemany("INSERT INTO _migrations VALUES (?, 'then')", [(m[0],) for m in store_module.MIGRATIONS[:3]])
    conn.execute("INSERT INTO lab_sets VALUES ('s1', 'Old', 'typed', 'then')")
    conn.execute("INSERT INTO lab_questions(set_id, qid, text, expected_json) VALUES ('s1', 'q1', 'Old question?', '{\"doc:x\": 1}')")
    conn.commit()
    conn.close()
    store = store_module.Store(path)
    assert [r[0] for r in store.query("SELECT name FROM _migrations")][-1] == "m004_lab_answers"
    row = store.query("SELECT text, expected_json, answers_json, unanswerable FROM lab_questions")[0]
    assert tuple(row) == ("Old question?", '{"doc:x": 1}', "[]", 0)
    store.close()
