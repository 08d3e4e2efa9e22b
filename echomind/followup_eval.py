"""Follow-up retrieval benchmark: two-turn pairs where the second question only makes sense after the
first ("When was it built?", "How much?", "Who funded the study?").

Each pair is asked as a user would: a fresh chat, the first question through the Chat's own turn
(``engine.ask``, which stores both messages), then the second through ``engine.retrieve`` with the
chat's history, condensation on or off. A pair scores hit@k when one of its expected targets (a file
name for documents, ``file#page=N`` for a page of a filing, a BEIR corpus id for SQuAD paragraphs)
is among the documents (or pages) of the top k hits. Runs offline with no LLM: condensation then borrows words from the earlier question.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import EchoMindError
from .evaluation import BeirSet, ingest_corpus, load_beir
from .settings import RetrievalSettings

SOURCES = ("docs", "filings", "squad")
STYLES = ("pronoun", "elliptical", "short")
FIELDS = ("id", "source", "first", "second", "expect", "style")
SQUAD_DIR = Path("qa") / "squad-dev-even"


@dataclass(frozen=True)
class FollowUp:
    id: str
    source: str  # docs | filings | squad
    first: str  # a standalone question
    second: str  # needs the first turn to be understood
    expect: tuple[str, ...]  # file names, ``file#page=N`` (a page of a PDF) or BEIR corpus ids (squad)
    style: str  # pronoun | elliptical | short


def load_followups(path: Path | str) -> list[FollowUp]:
    """The set as JSON lines; a malformed line is reported by its line number, not by a KeyError."""
    pairs: list[FollowUp] = []
    seen: set[str] = set()
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}, line {n}: not valid JSON ({exc.msg}).") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}, line {n}: expected an object with {', '.join(FIELDS)}.")
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise ValueError(f"{path}, line {n}: missing {', '.join(missing)}.")
        if row["source"] not in SOURCES or row["style"] not in STYLES:
            raise ValueError(f"{path}, line {n}: source must be one of {SOURCES} and style one of {STYLES}.")
        expect = row["expect"]
        if not isinstance(expect, list) or not expect or not all(isinstance(e, str) and e for e in expect):
            raise ValueError(f"{path}, line {n}: expect must be a non-empty list of file names or corpus ids.")
        if not all(isinstance(row[f], str) and row[f].strip() for f in ("id", "first", "second")):
            raise ValueError(f"{path}, line {n}: id, first and second must be non-empty text.")
        if row["id"] in seen:
            raise ValueError(f"{path}, line {n}: duplicate id {row['id']!r}.")
        seen.add(row["id"])
        pairs.append(FollowUp(row["id"], row["source"], row["first"].strip(), row["second"].strip(), tuple(expect), row["style"]))
    return pairs


# -- the library the set is asked against ------------------------------------------------------------
def build_followup_library(engine, shared_dir: Path | str, pairs: list[FollowUp] | None = None,
                           progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
    """Ingest ``docs/``, ``filings/`` and the SQuAD corpus from the shared data directory (as the
    evaluation ingests a BEIR corpus, so SQuAD documents carry their corpus id). With ``pairs`` only
    the files and paragraphs those pairs expect are ingested (a small library for tests); without,
    everything, so every question competes with every other document. Files that cannot be parsed
    (scanned, encrypted, damaged) are skipped with their reasons; ``files`` lists those in the library
    (re-running skips what is already stored)."""
    shared_dir = Path(shared_dir)
    wanted = {split_target(t)[0] for p in pairs for t in p.expect} if pairs is not None else None
    in_library, skipped = [], {}
    files = [p for d in ("docs", "filings") for p in sorted((shared_dir / d).iterdir())
             if p.is_file() and p.suffix.lower() not in (".tsv", "") and not p.name.startswith("LICENSE")]
    for path in files:
        if wanted is not None and path.name not in wanted:
            continue
        try:
            engine.ingest_bytes(path.name, path.read_bytes())
            in_library.append(path.name)
        except EchoMindError as exc:
            skipped[path.name] = str(exc)
    squad = squad_corpus(shared_dir, wanted)
    if squad.corpus:
        ingest_corpus(engine, squad, progress)
    return {"files": in_library, "skipped": skipped, "squad_paragraphs": len(squad.corpus)}


def squad_corpus(shared_dir: Path | str, ids: set[str] | None = None) -> BeirSet:
    """The SQuAD paragraphs as a BEIR set (only ``ids`` when given)."""
    beir = load_beir(Path(shared_dir) / SQUAD_DIR)
    if ids is not None:
        beir.corpus = {cid: entry for cid, entry in beir.corpus.items() if cid in ids}
    return beir


def target_names(engine) -> dict[str, str]:
    """doc_id -> the name a pair expects: the BEIR corpus id when the document came from a corpus,
    else its file name."""
    return {d["id"]: str(d["meta"].get("beir_id") or d["filename"]) for d in engine.documents()}


def hit_targets(hits, names: dict[str, str], k: int) -> list[str]:
    """The distinct targets of the top ``k`` hits, in rank order: each hit's document name and, when
    it has a page, ``name#page=N`` too (a 40-page filing is found by almost any money question, so
    filing pairs expect the pages that answer)."""
    keys = []
    for hit in hits[:k]:
        name = names.get(hit.doc_id, hit.source.get("filename", hit.doc_id))
        keys.append(name)
        if hit.source.get("page") is not None:
            keys.append(page_target(name, hit.source["page"]))
    return list(dict.fromkeys(keys))


def page_target(name: str, page: int) -> str:
    return f"{name}#page={int(page)}"


def split_target(target: str) -> tuple[str, int | None]:
    """``file#page=N`` -> (file, N); a plain name -> (name, None)."""
    name, sep, page = target.rpartition("#page=")
    return (name, int(page)) if sep and page.isdigit() else (target, None)


# -- scoring -----------------------------------------------------------------------------------------
def evaluate_followups(engine, pairs: list[FollowUp], condense: bool, settings: RetrievalSettings | None = None, k: int = 5,
                       keep_chats: bool = False, progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
    """Every pair in a fresh chat: the first question as a Chat turn, the second retrieved with the
    chat's history and condensation ``condense``. Returns hit@k of the second turn overall, per
    style and per source, the first turn's hit@k, and one row per pair (with the standalone question
    that was searched). Chats are deleted afterwards unless ``keep_chats``."""
    settings = settings or RetrievalSettings()
    names = target_names(engine)
    rows = []
    for n, pair in enumerate(pairs):
        if progress:
            progress(pair.id, n / max(1, len(pairs)))
        chat_id = engine.chats.create(f"follow-up {pair.id}")
        try:
            answer = engine.ask(chat_id, pair.first, settings).complete()
            first_top = hit_targets(answer.retrieval.hits, names, k) if answer.retrieval is not None else []
            retrieval = engine.retrieve(pair.second, settings.replace(condense_followups=condense), chat_id=chat_id)
        finally:
            if not keep_chats:
                engine.chats.delete(chat_id)
        second_top = hit_targets(retrieval.hits, names, k)
        rows.append({
            "id": pair.id, "source": pair.source, "style": pair.style, "first": pair.first, "second": pair.second,
            "standalone": retrieval.standalone, "expect": list(pair.expect),
            "first_hit": bool(set(first_top) & set(pair.expect)), "hit": bool(set(second_top) & set(pair.expect)),
            "first_top": first_top, "top": second_top,
        })
    return {"condense": condense, "k": k, "pairs": len(rows), **summarise(rows, k), "rows": rows}


def summarise(rows: list[dict[str, Any]], k: int = 5) -> dict[str, Any]:
    """hit@k overall, per style, per source, and of the first turn."""
    def rate(selected: list[dict[str, Any]], key: str = "hit") -> float:
        return sum(r[key] for r in selected) / len(selected) if selected else 0.0

    return {
        f"hit@{k}": rate(rows), f"first_hit@{k}": rate(rows, "first_hit"),
        "by_style": {s: rate([r for r in rows if r["style"] == s]) for s in STYLES if any(r["style"] == s for r in rows)},
        "by_source": {s: rate([r for r in rows if r["source"] == s]) for s in SOURCES if any(r["source"] == s for r in rows)},
        "counts": {"style": {s: sum(r["style"] == s for r in rows) for s in STYLES},
                   "source": {s: sum(r["source"] == s for r in rows) for s in SOURCES}},
    }


def compare_followups(engine, pairs: list[FollowUp], settings: RetrievalSettings | None = None, k: int = 5) -> dict[str, dict[str, Any]]:
    """Condensation on and off over the same pairs (the figure issue 10 asks for)."""
    return {"on": evaluate_followups(engine, pairs, True, settings, k), "off": evaluate_followups(engine, pairs, False, settings, k)}


def format_report(results: dict[str, dict[str, Any]], k: int = 5) -> str:
    """A plain table: rows overall / per style / per source, columns condensation on / off."""
    on, off = results["on"], results["off"]
    lines = [f"{'second turn hit@' + str(k):28s} {'condense on':>12s} {'condense off':>13s}   pairs",
             f"{'all':28s} {on[f'hit@{k}']:12.3f} {off[f'hit@{k}']:13.3f}   {on['pairs']}"]
    for group, key in (("style", "by_style"), ("source", "by_source")):
        for name, value in on[key].items():
            lines.append(f"{group + ' ' + name:28s} {value:12.3f} {off[key].get(name, 0.0):13.3f}   {on['counts'][group][name]}")
    lines.append(f"{'first turn hit@' + str(k):28s} {on[f'first_hit@{k}']:12.3f} {off[f'first_hit@{k}']:13.3f}")
    return "\n".join(lines)
