"""The follow-up set (tests/data/followups.jsonl) and its scorer: the set's targets exist in the shared
data, and the scorer, run on a real engine over real files, counts hits and misses correctly. No hit
rate of the condensation itself is asserted here: that is what the set measures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from conftest import DOCS, SHARED
from echomind.followup_eval import (SOURCES, STYLES, FollowUp, build_followup_library, evaluate_followups, load_followups, split_target,
                                    squad_corpus, target_names)
from test_real_documents import PASSWORDS, REJECTED

SET = Path(__file__).parent / "data" / "followups.jsonl"
FILINGS = SHARED / "filings"
PRONOUNS = re.compile(r"\b(it|its|it's|they|them|their|there|he|him|his|she|her|one|this|that|these|those)\b", re.I)
SUBSET = ("d04", "d06", "d12", "s02", "s05", "s17")  # three styles, two sources, small files only


@pytest.fixture(scope="module")
def pairs() -> list[FollowUp]:
    return load_followups(SET)


def test_the_set_is_big_and_mixed_enough(pairs):
    assert len(pairs) >= 48
    assert {p.source for p in pairs} == set(SOURCES) and {p.style for p in pairs} == set(STYLES)
    without_pronoun = [p for p in pairs if not PRONOUNS.search(p.second)]
    assert len(without_pronoun) >= len(pairs) / 3, "at least a third of the follow-ups must have no pronoun"
    assert all((p.style == "pronoun") == bool(PRONOUNS.search(p.second)) for p in pairs), "the style labels match the wording"
    assert all(p.first != p.second for p in pairs)


def test_every_target_exists_in_the_sources(pairs):
    squad_ids = set(squad_corpus(SHARED).corpus)
    pages: dict[str, int] = {}
    for p in pairs:
        for target in p.expect:
            if p.source == "squad":
                assert target in squad_ids, (p.id, target)
                continue
            name, page = split_target(target)
            path = (DOCS if p.source == "docs" else FILINGS) / name
            assert path.is_file(), (p.id, target)
            assert name not in REJECTED and name not in PASSWORDS, f"{p.id}: {name} is not indexed without help"
            if p.source == "filings":
                assert page is not None, f"{p.id}: a filing target names its page"
            if page is not None:
                pages.setdefault(name, len(PdfReader(path).pages))
                assert 1 <= page <= pages[name], (p.id, target)


def test_load_followups_names_the_bad_line(tmp_path):
    good = {"id": "x", "source": "docs", "first": "What is it?", "second": "When?", "expect": ["a.pdf"], "style": "elliptical"}
    cases = {
        "not json": "line 2: not valid JSON",
        json.dumps({k: v for k, v in good.items() if k != "expect"}): "line 2: missing expect",
        json.dumps(good | {"style": "vague"}): "style one of",
        json.dumps(good | {"expect": []}): "expect must be a non-empty list",
        json.dumps(good): "duplicate id 'x'",
    }
    for line, message in cases.items():
        path = tmp_path / "set.jsonl"
        path.write_text(json.dumps(good) + "\n" + line + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match=re.escape(message)):
            load_followups(path)


def test_scorer_on_a_subset_with_a_known_hit_and_miss(make_engine, pairs):
    subset = [p for p in pairs if p.id in SUBSET]
    assert len(subset) == len(SUBSET)
    known = [
        FollowUp("hit", "docs", "How do I insert the cable into the gland?", "What is the maximum torque for an M63x1.5 cable gland?",
                 ("pdf_AutoCad_Diagram.pdf",), "short"),
        FollowUp("miss", "docs", "How do I insert the cable into the gland?", "What is the maximum torque for an M63x1.5 cable gland?",
                 ("Oxygen_0",), "short"),  # in the library, but not the first hit
        FollowUp("page-hit", "docs", "What is dense passage retrieval?", "DPR beats BM25 by 65.2% vs 42.9% in top-5 accuracy",
                 ("pdf_multi-column-2p.pdf#page=2",), "elliptical"),
        FollowUp("page-miss", "docs", "What is dense passage retrieval?", "DPR beats BM25 by 65.2% vs 42.9% in top-5 accuracy",
                 ("pdf_multi-column-2p.pdf#page=1",), "elliptical"),  # the right file, the wrong page
    ]
    engine = make_engine()
    library = build_followup_library(engine, SHARED, subset + known)
    assert library["squad_paragraphs"] == 3 and not library["skipped"] and len(library["files"]) == 4
    assert set(target_names(engine).values()) == {split_target(t)[0] for p in subset + known for t in p.expect}

    scored = evaluate_followups(engine, known, condense=False, k=1)
    assert [r["hit"] for r in scored["rows"]] == [True, False, True, False]
    assert scored["hit@1"] == 0.5 and scored["by_style"] == {"elliptical": 0.5, "short": 0.5} and scored["by_source"] == {"docs": 0.5}
    assert scored["rows"][1]["top"] == ["pdf_AutoCad_Diagram.pdf", "pdf_AutoCad_Diagram.pdf#page=1"]

    for condense in (False, True):
        result = evaluate_followups(engine, subset, condense=condense)
        rows = result["rows"]
        assert result["pairs"] == 6 and result["condense"] is condense and [r["id"] for r in rows] == list(SUBSET)
        assert result["first_hit@5"] == 1.0, [r["first_top"] for r in rows]  # each first question finds its own document
        assert result["hit@5"] == sum(r["hit"] for r in rows) / 6
        assert all(r["hit"] == bool(set(r["top"]) & set(r["expect"])) for r in rows)
        assert result["counts"]["style"] == {"pronoun": 2, "elliptical": 2, "short": 2}
        assert result["counts"]["source"] == {"docs": 3, "filings": 0, "squad": 3} and set(result["by_source"]) == {"docs", "squad"}
        assert all(0.0 <= v <= 1.0 for v in (*result["by_style"].values(), *result["by_source"].values()))
        if not condense:
            assert [r["standalone"] for r in rows] == [p.second for p in subset]  # searched literally
        assert all(isinstance(r["standalone"], str) and r["standalone"].strip() for r in rows)
    assert engine.chats.list() == []  # the scorer's chats are removed

    kept = evaluate_followups(engine, subset[:1], condense=True, keep_chats=True)
    (chat,) = engine.chats.list()
    messages = engine.chats.messages(chat["id"])
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[0]["content"] == subset[0].first
    assert kept["rows"][0]["second"] == subset[0].second
