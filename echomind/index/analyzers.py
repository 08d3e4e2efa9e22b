"""Text to BM25 terms. ``seed`` is the seed's tokeniser; ``english`` is what Lucene's EnglishAnalyzer
does (Unicode words, stopwords, possessives, Porter stemming), which measures better (see README)."""

from __future__ import annotations

import re
from typing import Callable

import Stemmer

SEED_TOKEN = re.compile(r"[a-z0-9]{2,}")
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
LUCENE_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with".split()
)
_stemmer = Stemmer.Stemmer("porter")


def seed_tokens(text: str) -> list[str]:
    return SEED_TOKEN.findall(text.lower())


def english_tokens(text: str) -> list[str]:
    words = []
    for w in WORD.findall(text.lower()):
        if w.endswith("'s"):
            w = w[:-2]
        if w and w not in LUCENE_STOPWORDS:
            words.append(w)
    return _stemmer.stemWords(words)


ANALYZERS: dict[str, Callable[[str], list[str]]] = {"seed": seed_tokens, "english": english_tokens}


def get_analyzer(name: str) -> Callable[[str], list[str]]:
    try:
        return ANALYZERS[name]
    except KeyError:
        raise ValueError(f"Unknown analyzer {name!r}; choose one of: {', '.join(ANALYZERS)}") from None
