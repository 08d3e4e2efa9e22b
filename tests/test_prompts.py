"""Parsers for what small models really write."""

from __future__ import annotations

import pytest

from echomind import prompts


@pytest.mark.parametrize("output,expected", [
    ("1. vitamin D deficiency cancer\n2. low vitamin D tumour risk", ["vitamin D deficiency cancer", "low vitamin D tumour risk"]),
    ('Here are two queries:\n- "vitamin D and cancer"\n- \'cancer risk vitamin\'', ["vitamin D and cancer", "cancer risk vitamin"]),
    ("Query 1: vitamin D cancer link\nQuery 2: Does vitamin D deficiency raise cancer risk?", ["vitamin D cancer link"]),
    ("", []),
    ("I like turtles.\nThe weather is nice today.", []),  # drift: no content word of the question
    ("vitamin D cancer\nvitamin d cancer\nVITAMIN D CANCER", ["vitamin D cancer"]),
])
def test_parse_queries(output, expected):
    assert prompts.parse_queries(output, "Does vitamin D deficiency raise cancer risk?", limit=3) == expected


@pytest.mark.parametrize("output,expected", [
    ("1: 7\n2: 3\n3: 10", [7.0, 3.0, 10.0]),
    ("[1] - 8/10\n[2] - 2/10\n[3] = 5", [8.0, 2.0, 5.0]),
    ("Passage 2: 9. Passage 1: 4.", [4.0, 9.0, None]),
    ("7, 3, 12", [7.0, 3.0, 10.0]),
    ("I cannot rate these.", [None, None, None]),
    ("1: 7\n9: 3", [7.0, None, None]),
])
def test_parse_scores(output, expected):
    assert prompts.parse_scores(output, 3) == expected


def test_parse_intent_and_fallback():
    assert prompts.parse_intent("Type: Procedural.", "x") == "procedural"
    assert prompts.parse_intent("hmm", "How do I install the printer driver?") == "procedural"
    assert prompts.parse_intent("", "What happened last week with the budget?") == "temporal"
    assert prompts.parse_intent("???", "Who founded Linn Electronics?") == "factual"


def test_parse_tags():
    assert prompts.parse_tags("Tags: #budget, Kitchen Renovation, timeline.\n- contractor") == ["budget", "kitchen renovation", "timeline", "contractor"]
    assert prompts.parse_tags("") == []
    assert prompts.keyword_tags("The kitchen budget. Kitchen tiles and the kitchen budget again, budget!")[:2] == ["budget", "kitchen"]


def test_parse_compressed_keeps_only_verbatim_sentences():
    passage = "The pump runs at 40 bar. It weighs 3 kg. Colours: red and blue."
    assert prompts.parse_compressed("[Partial]: The pump runs at 40 bar.", passage) == "[Partial]: The pump runs at 40 bar."
    assert prompts.parse_compressed("The pump runs at 90 bar. It weighs 3 kg.", passage) == "It weighs 3 kg."
    assert prompts.parse_compressed("NONE", passage) is None
    assert prompts.parse_compressed("Completely invented sentence here.", passage) is None


def test_parse_condensed():
    assert prompts.parse_condensed('Rewritten question: "What does the Aurora X2 cost?"', "and what does it cost?") == "What does the Aurora X2 cost?"
    assert prompts.parse_condensed("", "q") is None
