"""The Lab page's Answers tab with Streamlit's AppTest over a real engine, a real SQLite file and real
SQuAD paragraphs (extractive answers: no model, so it is fast)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from conftest import ROOT, SHARED
from echomind.evaluation import document_text, load_beir
from echomind.lab_answers import clean_answers
from echomind.settings import RetrievalSettings
from echomind.ui.state import get_engine
from test_pages import data_dir  # noqa: F401 - the same isolated data directory fixture

SQUAD = SHARED / "qa" / "squad-dev-even"
PARAGRAPHS = ["Super_Bowl_50_0", "Super_Bowl_50_1"]


def lab_page(set_id: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / "lab.py"), default_timeout=120)
    at.session_state["retrieval_settings"] = RetrievalSettings()
    at.session_state["lab_set"] = set_id
    return at.run()


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def test_answers_tab_edits_gold_answers_runs_and_shows_the_figures(data_dir):
    engine = get_engine()
    beir = load_beir(SQUAD)
    gold = {r["_id"]: r["answers"] for r in map(json.loads, open(SQUAD / "answers.jsonl", encoding="utf-8"))}
    engine.ingest_texts([(f"squad-{p}", document_text(beir.corpus[p]), {"beir_id": p}) for p in PARAGRAPHS])
    asked = [q for q, rel in beir.qrels.items() if next(iter(rel)) in PARAGRAPHS][:3]
    set_id = engine.lab.create_set("Super Bowl")
    for qid in asked:
        engine.lab.add_question(set_id, beir.queries[qid], {}, qid=qid, answers=gold[qid])

    at = lab_page(set_id)
    assert not at.exception and "Answers" in [t.label for t in at.tabs]
    # edit the first question's gold answers: one per line, blank lines dropped
    area = next(t for t in at.text_area if t.label == "Gold answers (one per line)")
    assert area.value.splitlines() == clean_answers(gold[asked[0]])
    area.set_value("Denver Broncos\n\nBroncos\n")
    button(at, "Save gold answers").click().run()
    assert not at.exception and engine.lab.gold_questions(set_id)[0]["answers"] == ["Denver Broncos", "Broncos"]
    # a contradiction is refused with the engine's message, nothing changes
    next(c for c in at.checkbox if c.label.startswith("Unanswerable") and c.key.startswith("unanswerable-")).check()
    button(at, "Save gold answers").click().run()
    assert any("has no gold answers" in e.value for e in at.error)
    assert engine.lab.gold_questions(set_id)[0]["unanswerable"] is False
    # an unanswerable question typed on the tab
    next(t for t in at.text_input if t.label == "New question with gold answers").set_value("What did the loss mean to France?")
    next(c for c in at.checkbox if c.key == "gold-new-unanswerable").check()
    button(at, "Add question with its answers").click().run()
    assert not at.exception and engine.lab.gold_questions(set_id)[-1]["unanswerable"]

    at = lab_page(set_id)
    button(at, "Run answers").click().run()
    assert not at.exception
    runs = engine.lab.answer_runs(set_id)
    assert len(runs) == 1 and runs[0]["metrics"]["questions"] == 3 and runs[0]["metrics"]["unanswerable"] == 1
    shown = {m.label: m.value for m in at.metric}
    assert shown["Contains gold"] == f"{runs[0]['metrics']['containment']:.3f}" and "Refusals (unanswerable)" in shown
    table = next(d.value for d in at.dataframe if "contains gold" in d.value.columns)
    assert list(table["question"]) == [q["question"] for q in engine.lab.gold_questions(set_id)]
    assert list(table["contains gold"])[-1] == "—" and list(table["gold"])[-1] == "(refusal)"
    assert any("Answerer: extractive" in c.value for c in at.caption)
