"""The Lab's answer runs: questions with gold answers (or marked unanswerable: a refusal is right) asked
through the Chat's own path and scored by ``answer_eval``, the code ``python -m echomind eval-answers``
runs, so the Lab and the CLI give the same figures for the same questions and knobs.

Mixed into ``lab.Lab`` (which holds ``engine`` and ``store``); kept apart so lab.py stays one job.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Callable

from . import answer_eval
from .errors import EchoMindError, NotFound
from .settings import RetrievalSettings
from .store import utcnow

Progress = Callable[[str, float], None]
MAX_ANSWERS = 50
MAX_ANSWER_CHARS = 500

# metric key -> (label, format); the CLI's columns, in its order
ANSWER_METRICS: dict[str, tuple[str, str]] = {
    "containment": ("Contains gold", ".3f"), "f1": ("Token F1", ".3f"), "answered": ("Answered", ".3f"),
    "cited": ("Valid citation", ".3f"), "invalid_citations": ("Invalid citations", "d"), "unsupported": ("Unsupported claims", "d"),
    "refusals": ("Refusals (unanswerable)", ".3f"), "sentences": ("Sentences", ".2f"), "chars": ("Characters", ".0f"),
    "ttft_p50_ms": ("TTFT p50 ms", ".0f"), "ttft_p95_ms": ("TTFT p95 ms", ".0f"), "total_p50_ms": ("Total p50 ms", ".0f"),
}


def clean_answers(answers: Any) -> list[str]:
    """Gold answers as stored: a list of distinct non-blank strings (a text area's lines become one each)."""
    if answers is None:
        return []
    if isinstance(answers, str):
        answers = answers.splitlines()
    if not isinstance(answers, (list, tuple)) or not all(isinstance(a, str) for a in answers):
        raise EchoMindError("Gold answers must be a list of strings (one answer per line).")
    cleaned = list(dict.fromkeys(" ".join(a.split()) for a in answers if a.strip()))
    if len(cleaned) > MAX_ANSWERS:
        raise EchoMindError(f"{len(cleaned)} gold answers for one question; at most {MAX_ANSWERS} are kept per question.")
    if too_long := next((a for a in cleaned if len(a) > MAX_ANSWER_CHARS), None):
        raise EchoMindError(f"A gold answer is {len(too_long)} characters long (at most {MAX_ANSWER_CHARS}): "
                            f"'{too_long[:60]}…'. A gold answer is the short string a right answer contains.")
    return cleaned


def check_gold(answers: list[str], unanswerable: bool, expected: dict[str, int]) -> None:
    """An unanswerable question's right answer is a refusal: it has no gold answers and nothing that answers it."""
    if unanswerable and answers:
        raise EchoMindError("A question marked unanswerable has no gold answers (the right answer is a refusal): "
                            "clear the answers or the mark.")
    if unanswerable and expected:
        raise EchoMindError("A question marked unanswerable cannot also name documents or chunks that answer it: "
                            "remove it and add it again as unanswerable, or leave it unmarked.")


def parse_answers_jsonl(data: bytes | str) -> dict[str, dict[str, Any]]:
    """answers.jsonl (``{"_id", "answers": [...]}``, optionally ``"unanswerable": true``) -> id -> entry."""
    text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid, answers = str(row["_id"]), clean_answers(row.get("answers", []))
        except (ValueError, KeyError, TypeError, EchoMindError) as exc:
            reason = str(exc) if isinstance(exc, EchoMindError) else "expected a JSON object with \"_id\" and \"answers\" (a list of strings)"
            raise EchoMindError(f"answers.jsonl line {n}: {reason}. Nothing was imported.") from exc
        out[qid] = {"answers": answers, "unanswerable": bool(row.get("unanswerable", False))}
    return out


class AnswerLab:
    """Gold answers on a set's questions and answer runs over them."""

    engine: Any
    store: Any

    def set_gold(self, set_id: str, qid: str, answers: Any, unanswerable: bool = False) -> None:
        """Replace a question's gold answers and its unanswerable mark (checked before anything is written)."""
        answers = clean_answers(answers)
        rows = self.store.query("SELECT expected_json FROM lab_questions WHERE set_id = ? AND qid = ?", (set_id, qid))
        if not rows:
            raise NotFound(f"No question {qid} in this test set.")
        check_gold(answers, unanswerable, json.loads(rows[0]["expected_json"]))
        with self.store.atomic() as conn:
            conn.execute("UPDATE lab_questions SET answers_json = ?, unanswerable = ? WHERE set_id = ? AND qid = ?",
                         (json.dumps(answers), int(bool(unanswerable)), set_id, qid))

    def gold_questions(self, set_id: str) -> list[dict[str, Any]]:
        """The questions an answer run asks: those with gold answers or marked unanswerable, in set order."""
        rows = self.store.query("SELECT qid, text, answers_json, unanswerable FROM lab_questions WHERE set_id = ? ORDER BY id", (set_id,))
        out = [{"qid": r["qid"], "question": r["text"], "answers": json.loads(r["answers_json"]), "unanswerable": bool(r["unanswerable"])} for r in rows]
        return [q for q in out if q["answers"] or q["unanswerable"]]

    def answer_run(self, set_id: str, settings: RetrievalSettings, limit: int | None = None, label: str = "",
                   progress: Progress | None = None) -> dict[str, Any]:
        """Ask the set's gold questions (the first ``limit``) one by one in fresh chats, as ``eval-answers``
        does, score them with ``answer_eval.score`` and save the run with its knobs and answerer."""
        from .lab import describe_settings, settings_dict

        if limit is not None and limit < 1:
            raise EchoMindError("Ask at least one question (the limit must be 1 or more).")
        chosen = self.gold_questions(set_id)[:limit]
        if not chosen:
            raise EchoMindError("No question in this set has gold answers or is marked unanswerable: add answers on the Answers tab "
                                "(one per line), or import a BEIR set with an answers.jsonl.")
        answered, unanswerable = [], []
        for n, q in enumerate(chosen):
            if progress:
                progress(q["question"], n / len(chosen))
            record = answer_eval.ask_one(self.engine, q["qid"], q["question"], settings)
            record.golds = q["answers"]
            (unanswerable if q["unanswerable"] else answered).append(record)
        if progress:
            progress("scoring", 1.0)
        metrics = answer_eval.score(answered, unanswerable)
        rows = [_row(r, q["unanswerable"]) for r, q in zip(_in_order(chosen, answered, unanswerable), chosen)]
        with self.store.atomic() as conn:
            cur = conn.execute(
                "INSERT INTO lab_answer_runs(set_id, created_at, label, answerer, settings_json, metrics_json, questions_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (set_id, utcnow(), label or describe_settings(settings), self.engine.answerer_label(), json.dumps(settings_dict(settings)),
                 json.dumps(metrics), json.dumps(rows)))
        return self.get_answer_run(cur.lastrowid)

    def answer_runs(self, set_id: str) -> list[dict[str, Any]]:
        rows = self.store.query("SELECT id, set_id, created_at, label, answerer, settings_json, metrics_json FROM lab_answer_runs WHERE set_id = ? ORDER BY id", (set_id,))
        return [_answer_run(r) for r in rows]

    def get_answer_run(self, run_id: int) -> dict[str, Any]:
        rows = self.store.query("SELECT * FROM lab_answer_runs WHERE id = ?", (run_id,))
        if not rows:
            raise NotFound(f"No answer run with id {run_id}.")
        return _answer_run(rows[0])

    def delete_answer_run(self, run_id: int) -> None:
        with self.store.atomic() as conn:
            conn.execute("DELETE FROM lab_answer_runs WHERE id = ?", (run_id,))

    def export_answer_run_csv(self, run_id: int) -> str:
        """One answer run per question, for a spreadsheet: what was asked, answered and how it scored."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["qid", "question", "unanswerable", "answer", "gold", "contains_gold", "f1", "refused", "valid_citation",
                         "invalid_citations", "unsupported", "ttft_ms", "total_ms"])
        for q in self.get_answer_run(run_id)["questions"]:
            writer.writerow([q["qid"], q["question"], int(q["unanswerable"]), q["answer"], " | ".join(q["golds"]),
                             "" if q["contains_gold"] is None else int(q["contains_gold"]), "" if q["f1"] is None else round(q["f1"], 4),
                             int(q["refused"]), int(q["valid_citation"]), q["invalid_citations"], " | ".join(q["unsupported"]),
                             round(q["ttft_ms"], 1), round(q["total_ms"], 1)])
        return out.getvalue()

    def export_answer_runs(self, set_id: str) -> list[dict[str, Any]]:
        rows = self.store.query("SELECT * FROM lab_answer_runs WHERE set_id = ? ORDER BY id", (set_id,))
        return [{k: v for k, v in _answer_run(r).items() if k not in ("id", "set_id")} for r in rows]

    def import_answer_runs(self, set_id: str, runs: list[dict[str, Any]]) -> None:
        with self.store.atomic() as conn:
            for r in runs:
                conn.execute(
                    "INSERT INTO lab_answer_runs(set_id, created_at, label, answerer, settings_json, metrics_json, questions_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (set_id, r.get("created_at", utcnow()), r.get("label", "imported"), r.get("answerer", "unknown"),
                     json.dumps(r.get("settings", {})), json.dumps(r.get("metrics", {})), json.dumps(r.get("questions", []))))


def _in_order(chosen: list[dict], answered: list, unanswerable: list) -> list:
    """Records back in the set's order (they were split by kind for scoring)."""
    a, u = iter(answered), iter(unanswerable)
    return [next(u) if q["unanswerable"] else next(a) for q in chosen]


def _row(r: answer_eval.TurnRecord, unanswerable: bool) -> dict[str, Any]:
    """One question as the Lab shows it: what the user read and how it scored."""
    return {"qid": r.qid, "question": r.question, "unanswerable": unanswerable, "answer": r.text, "golds": r.golds,
            "contains_gold": None if unanswerable else answer_eval.contains_gold(r.text, r.golds),
            "f1": None if unanswerable else answer_eval.token_f1(r.text, r.golds),
            "refused": r.refused, "valid_citation": r.valid_citation, "invalid_citations": r.invalid_citations,
            "unsupported": r.unsupported, "path": r.path, "backend": r.backend, "ttft_ms": r.ttft_ms, "total_ms": r.total_ms}


def _answer_run(row) -> dict[str, Any]:
    out = {k: row[k] for k in ("id", "set_id", "created_at", "label", "answerer")}
    out["settings"] = json.loads(row["settings_json"])
    out["metrics"] = json.loads(row["metrics_json"])
    if "questions_json" in row.keys():
        out["questions"] = json.loads(row["questions_json"])
    return out
