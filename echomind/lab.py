"""The Retrieval Lab: test sets (questions and what should be found), runs saved with their settings,
two runs compared, one knob swept, everything exported and imported. Scoring is
``evaluation.run_questions``, the code the CLI ``eval`` runs, so both give the same figures. Questions
may also carry gold answers (or be marked unanswerable) for answer runs: see ``lab_answers``."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable

from .errors import EchoMindError, NotFound
from .evaluation import Question, beir_questions, ingest_corpus, load_beir, run_questions
from .lab_answers import AnswerLab, check_gold, clean_answers, parse_answers_jsonl
from .settings import RetrievalSettings
from .store import utcnow

Progress = Callable[[str, float], None]
METRICS = ("nDCG@10", "MRR@10", "Recall@k", "Recall@10", "Recall@100")

# knob -> (label, default values to sweep)
SWEEPS: dict[str, tuple[str, list]] = {
    "dense_share": ("Dense share (dense weight = x, sparse = 1 - x)", [0.0, 0.25, 0.5, 0.75, 1.0]),
    "dense_weight": ("Dense weight", [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    "sparse_weight": ("Sparse (BM25) weight", [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    "relevance_threshold": ("Relevance threshold", [0.0, 0.2, 0.35, 0.5, 0.65, 0.8]),
    "top_k": ("Top-k chunks", [1, 3, 5, 10, 20]),
    "k_per_query": ("k per query", [5, 10, 20, 50, 100]),
    "rrf_k": ("RRF k", [1, 10, 30, 60, 100]),
    "rerank": ("LLM rerank", [False, True]),
    "query_expansion": ("Query expansion", [False, True]),
    "recency_halflife_days": ("Recency half-life (days)", [0.0, 7.0, 30.0, 365.0]),
    "tag_boost": ("Tag boost", [0.0, 0.2, 0.5, 1.0]),
}


def apply_knob(settings: RetrievalSettings, knob: str, value: Any) -> RetrievalSettings:
    if knob == "dense_share":
        return settings.replace(dense_weight=float(value), sparse_weight=round(1.0 - float(value), 6))
    kind = type(getattr(settings, knob))
    if kind is bool and isinstance(value, str):
        value = value.strip().lower() in ("1", "true", "on", "yes")
    return settings.replace(**{knob: kind(value)})


def settings_dict(settings: RetrievalSettings) -> dict[str, Any]:
    values = dataclasses.asdict(settings)
    values["doc_ids"] = list(values.get("doc_ids") or ())
    return values


def settings_from(values: dict[str, Any]) -> RetrievalSettings:
    known = {f.name for f in dataclasses.fields(RetrievalSettings)}
    values = {k: v for k, v in values.items() if k in known}
    values["doc_ids"] = tuple(values.get("doc_ids") or ())
    return RetrievalSettings.from_dict(values)


class Lab(AnswerLab):
    def __init__(self, engine):
        self.engine = engine
        self.store = engine.store

    # -- test sets ------------------------------------------------------------------------------
    def create_set(self, name: str, source: str = "typed") -> str:
        set_id = uuid.uuid4().hex[:12]
        with self.store.atomic() as conn:
            conn.execute("INSERT INTO lab_sets(id, name, source, created_at) VALUES (?, ?, ?, ?)", (set_id, name.strip() or "Test set", source, utcnow()))
        return set_id

    def sets(self) -> list[dict[str, Any]]:
        rows = self.store.query(
            """SELECT s.*, (SELECT COUNT(*) FROM lab_questions q WHERE q.set_id = s.id) AS questions,
                      (SELECT COUNT(*) FROM lab_runs r WHERE r.set_id = s.id) AS runs
               FROM lab_sets s ORDER BY s.created_at DESC, s.rowid DESC""")
        return [dict(r) for r in rows]

    def get_set(self, set_id: str) -> dict[str, Any]:
        rows = self.store.query("SELECT * FROM lab_sets WHERE id = ?", (set_id,))
        if not rows:
            raise NotFound(f"No test set with id {set_id}.")
        return dict(rows[0])

    def rename_set(self, set_id: str, name: str) -> None:
        with self.store.atomic() as conn:
            conn.execute("UPDATE lab_sets SET name = ? WHERE id = ?", (name.strip() or "Test set", set_id))

    def delete_set(self, set_id: str) -> None:
        with self.store.atomic() as conn:
            conn.execute("DELETE FROM lab_sets WHERE id = ?", (set_id,))

    # -- questions ------------------------------------------------------------------------------
    def questions(self, set_id: str) -> list[Question]:
        return [Question(r["qid"], r["text"], json.loads(r["expected_json"]))
                for r in self.store.query("SELECT * FROM lab_questions WHERE set_id = ? ORDER BY id", (set_id,))]

    def question_rows(self, set_id: str) -> list[dict[str, Any]]:
        """For display: each question with readable labels of what it expects."""
        rows = self.store.query("SELECT * FROM lab_questions WHERE set_id = ? ORDER BY id", (set_id,))
        out = []
        for r in rows:
            labels = json.loads(r["labels_json"])
            expected = json.loads(r["expected_json"])
            out.append({"qid": r["qid"], "question": r["text"], "expected": expected,
                        "labels": {k: labels.get(k) or self.describe(k) for k in expected},
                        "answers": json.loads(r["answers_json"]), "unanswerable": bool(r["unanswerable"])})
        return out

    def describe(self, key: str) -> dict[str, Any]:
        """What a key points at, kept with the question so an exported set can be matched to another library."""
        kind, _, ident = key.partition(":")
        if kind == "chunk":
            chunk = self.store.chunk_by_id(ident)
            if chunk is None:
                return {"missing": True}
            source = chunk["source"]
            return {"filename": source.get("filename"), "chunk_index": source.get("chunk_index"), "page": source.get("page"),
                    "text": " ".join(chunk["text"].split())[:120]}
        doc = self.store.get_document(ident)
        return {"filename": doc["filename"]} if doc is not None else {"missing": True}

    @staticmethod
    def label(info: dict[str, Any] | None, key: str = "") -> str:
        if not info or info.get("missing"):
            return f"{key} (not in the library)"
        if info.get("chunk_index") is not None:
            page = f", p. {info['page']}" if info.get("page") else ""
            return f"{info['filename']} · chunk {info['chunk_index']}{page}"
        return str(info.get("filename"))

    def add_question(self, set_id: str, text: str, expected: dict[str, int], qid: str | None = None,
                     labels: dict[str, Any] | None = None, answers: Any = None, unanswerable: bool = False) -> str:
        """A question already in the set gets the new expected items and gold answers added to it: the same
        ``qid`` when one is given (imports: SQuAD asks the same words about different paragraphs), else the
        same text (the inspector). A question needs something to be measured against: what answers it, gold
        answers, or the unanswerable mark."""
        text = " ".join(text.split())
        answers = clean_answers(answers)
        if not text or not (expected or answers or unanswerable):
            raise EchoMindError("A test question needs its text and at least one document or chunk that answers it "
                                "(or, for answer runs, its gold answers or the unanswerable mark).")
        labels = dict(labels or {})
        labels |= {k: self.describe(k) for k in expected if k not in labels}
        with self.store.atomic() as conn:
            same = conn.execute("SELECT * FROM lab_questions WHERE set_id = ? AND " + ("qid = ?" if qid else "text = ?"),
                                (set_id, qid or text)).fetchone()
            if same is not None:
                merged = json.loads(same["expected_json"]) | expected
                golds = list(dict.fromkeys(json.loads(same["answers_json"]) + answers))
                unanswerable = bool(same["unanswerable"]) or unanswerable
                check_gold(golds, unanswerable, merged)
                conn.execute("UPDATE lab_questions SET expected_json = ?, labels_json = ?, answers_json = ?, unanswerable = ? WHERE set_id = ? AND qid = ?",
                             (json.dumps(merged), json.dumps(json.loads(same["labels_json"]) | labels), json.dumps(golds), int(unanswerable),
                              set_id, same["qid"]))
                return same["qid"]
            check_gold(answers, unanswerable, expected)
            qid = qid or uuid.uuid4().hex[:8]
            conn.execute("INSERT INTO lab_questions(set_id, qid, text, expected_json, labels_json, answers_json, unanswerable) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (set_id, qid, text, json.dumps(expected), json.dumps(labels), json.dumps(answers), int(unanswerable)))
        return qid

    def remove_question(self, set_id: str, qid: str) -> None:
        with self.store.atomic() as conn:
            conn.execute("DELETE FROM lab_questions WHERE set_id = ? AND qid = ?", (set_id, qid))

    # -- runs -----------------------------------------------------------------------------------
    def run(self, set_id: str, settings: RetrievalSettings, label: str = "", sweep: str | None = None, depth: int = 100,
            progress: Progress | None = None) -> dict[str, Any]:
        questions = self.questions(set_id)
        if not questions:
            raise EchoMindError("This test set has no questions yet: add some from the Chat inspector, type them, or import a BEIR set.")
        questions = [q for q in questions if q.expected]  # unanswerable or gold-only questions are for answer runs
        if not questions:
            raise EchoMindError("No question in this set names a document or chunk that answers it, so there is no retrieval to measure; "
                                "its gold answers are measured on the Answers tab.")
        result = run_questions(self.engine, questions, settings, depth=depth, progress=progress)
        for row in result["questions"]:  # named once here, not on every redraw of the page
            row["labels"] = {k: self.describe(k) for k in row["outranked_by"][:3]}
        with self.store.atomic() as conn:
            cur = conn.execute(
                "INSERT INTO lab_runs(set_id, created_at, label, sweep, settings_json, metrics_json, questions_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (set_id, utcnow(), label or describe_settings(settings), sweep, json.dumps(settings_dict(settings)),
                 json.dumps(result["metrics"]), json.dumps(result["questions"])))
        return self.get_run(cur.lastrowid)

    def runs(self, set_id: str) -> list[dict[str, Any]]:
        rows = self.store.query("SELECT id, set_id, created_at, label, sweep, settings_json, metrics_json FROM lab_runs WHERE set_id = ? ORDER BY id", (set_id,))
        return [_run(r) for r in rows]

    def get_run(self, run_id: int) -> dict[str, Any]:
        rows = self.store.query("SELECT * FROM lab_runs WHERE id = ?", (run_id,))
        if not rows:
            raise NotFound(f"No run with id {run_id}.")
        return _run(rows[0])

    def delete_run(self, run_id: int) -> None:
        with self.store.atomic() as conn:
            conn.execute("DELETE FROM lab_runs WHERE id = ?", (run_id,))

    def sweep(self, set_id: str, base: RetrievalSettings, knob: str, values: list, progress: Progress | None = None) -> list[dict[str, Any]]:
        """One run per value of one knob, the rest as ``base``; the runs share a sweep id for the chart."""
        if knob not in SWEEPS:
            raise EchoMindError(f"'{knob}' cannot be swept; choose one of {', '.join(SWEEPS)}.")
        sweep_id = f"{knob}:{uuid.uuid4().hex[:6]}"
        runs = []
        for i, value in enumerate(values):
            def step(_question: str, fraction: float, i: int = i, value: Any = value) -> None:
                progress(f"{SWEEPS[knob][0]} = {value}", (i + fraction) / len(values))

            runs.append(self.run(set_id, apply_knob(base, knob, value), label=f"{knob} = {value}", sweep=sweep_id,
                                 progress=step if progress else None))
        return runs

    def sweeps(self, set_id: str) -> dict[str, list[dict[str, Any]]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for run in self.runs(set_id):
            if run["sweep"]:
                groups.setdefault(run["sweep"], []).append(run)
        return groups

    def compare(self, a_id: int, b_id: int) -> dict[str, Any]:
        """Metrics side by side, the settings that differ, and the questions whose first hit moved."""
        a, b = self.get_run(a_id), self.get_run(b_id)
        metrics = [{"metric": m, "A": a["metrics"].get(m), "B": b["metrics"].get(m),
                    "B - A": (b["metrics"].get(m) or 0) - (a["metrics"].get(m) or 0)} for m in (*METRICS, "p50_ms", "p95_ms")]
        settings = [{"knob": k, "A": a["settings"].get(k), "B": b["settings"].get(k)} for k in a["settings"] if a["settings"].get(k) != b["settings"].get(k)]
        by_qid = {q["qid"]: q for q in a["questions"]}
        moved = []
        for q in b["questions"]:
            old = by_qid.get(q["qid"])
            if old is None:
                continue
            ra, rb = _first_rank(old), _first_rank(q)
            if ra != rb:
                moved.append({"question": q["question"], "A first hit": ra, "B first hit": rb,
                              "better in": "B" if (rb or 999) < (ra or 999) else "A"})
        return {"a": a, "b": b, "metrics": metrics, "settings": settings, "moved": moved}

    # -- import and export ----------------------------------------------------------------------
    def import_beir(self, name: str, corpus: bytes, queries: bytes, qrels: bytes, progress: Progress | None = None,
                    answers: bytes | None = None) -> str:
        """A BEIR set from its three files: the corpus is ingested like any document (duplicates are
        skipped), the qrels point at the ingested documents. With an ``answers.jsonl`` the questions get
        their gold answers; a question whose judged passages are all absent from the corpus is then
        unanswerable (the right answer is a refusal), as ``eval-answers`` leaves articles out."""
        gold = parse_answers_jsonl(answers) if answers is not None else None  # checked before anything is stored
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / (name.strip() or "beir")
            (root / "qrels").mkdir(parents=True)
            (root / "corpus.jsonl").write_bytes(corpus)
            (root / "queries.jsonl").write_bytes(queries)
            (root / "qrels" / "test.tsv").write_bytes(qrels)
            try:
                beir = load_beir(root)
            except (ValueError, KeyError, json.JSONDecodeError) as exc:
                raise EchoMindError(f"Not a BEIR set: {exc}. Expected corpus.jsonl (_id, title, text), queries.jsonl (_id, text) and a qrels TSV (query-id, corpus-id, score).") from exc
        if not beir.queries or not beir.corpus:
            raise EchoMindError("The BEIR files hold no judged queries or no corpus; nothing was imported.")
        questions = beir_questions(beir, ingest_corpus(self.engine, beir, progress))
        with self.store.atomic():
            set_id = self.create_set(name or beir.name, source="beir")
            for q in questions:
                entry = (gold or {}).get(q.qid, {})
                absent = gold is not None and not any(cid in beir.corpus for cid in beir.qrels[q.qid])
                if entry.get("unanswerable") or absent:
                    self.add_question(set_id, q.text, {}, qid=q.qid, unanswerable=True)
                else:
                    self.add_question(set_id, q.text, q.expected, qid=q.qid, answers=entry.get("answers"))
        return set_id

    def import_beir_dir(self, path: Path | str, name: str | None = None, progress: Progress | None = None) -> str:
        """A BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv) with its answers.jsonl when present."""
        root = Path(path)
        files = [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / "test.tsv"]
        if missing := [str(f.relative_to(root)) for f in files if not f.is_file()]:
            raise EchoMindError(f"{root} is not a BEIR folder: {', '.join(missing)} missing.")
        answers = root / "answers.jsonl"
        return self.import_beir(name or root.name, *(f.read_bytes() for f in files), progress=progress,
                                answers=answers.read_bytes() if answers.is_file() else None)

    def export_json(self, set_id: str) -> str:
        info = self.get_set(set_id)
        rows = self.store.query("SELECT * FROM lab_runs WHERE set_id = ? ORDER BY id", (set_id,))
        return json.dumps({
            "echomind_lab": 1, "name": info["name"], "source": info["source"],
            "questions": [{"qid": q["qid"], "question": q["question"], "expected": q["expected"], "labels": q["labels"],
                           "answers": q["answers"], "unanswerable": q["unanswerable"]} for q in self.question_rows(set_id)],
            "runs": [{k: v for k, v in _run(r).items() if k not in ("id", "set_id")} for r in rows],
            "answer_runs": self.export_answer_runs(set_id),
        }, indent=1)

    def import_json(self, data: bytes | str) -> str:
        try:
            payload = json.loads(data)
            questions = payload["questions"]
        except (ValueError, KeyError, TypeError) as exc:
            raise EchoMindError(f"Not an EchoMind Lab export ({exc}); export a set from the Lab page to see the format.") from exc
        with self.store.atomic() as conn:  # one transaction: a bad question leaves nothing behind
            set_id = self.create_set(payload.get("name", "Imported set"), source=payload.get("source", "import"))
            for n, q in enumerate(questions, 1):
                try:
                    labels = q.get("labels") or {}
                    here = {k: self.resolve(k, labels.get(k)) for k in q["expected"]}  # key in this library
                    self.add_question(set_id, q["question"], {here[k]: grade for k, grade in q["expected"].items()}, qid=q.get("qid"),
                                      labels={here[k]: labels.get(k) for k in q["expected"]}, answers=q.get("answers"),
                                      unanswerable=bool(q.get("unanswerable", False)))
                except (KeyError, TypeError, AttributeError) as exc:
                    raise EchoMindError(f"Question {n} of the export is malformed (needs 'question' and 'expected'); nothing was imported.") from exc
                except EchoMindError as exc:
                    raise EchoMindError(f"Question {n} of the export: {exc} Nothing was imported.") from exc
            self.import_answer_runs(set_id, payload.get("answer_runs", []))
            for r in payload.get("runs", []):
                conn.execute(
                    "INSERT INTO lab_runs(set_id, created_at, label, sweep, settings_json, metrics_json, questions_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (set_id, r.get("created_at", utcnow()), r.get("label", "imported"), r.get("sweep"), json.dumps(r.get("settings", {})),
                     json.dumps(r.get("metrics", {})), json.dumps(r.get("questions", []))))
        return set_id

    def resolve(self, key: str, info: dict[str, Any] | None) -> str:
        """A key from another library: the same id if it exists here, else the same file (and chunk number)."""
        kind, _, ident = key.partition(":")
        exists = self.store.chunk_by_id(ident) if kind == "chunk" else self.store.get_document(ident)
        if exists is not None or not info or not info.get("filename"):
            return key
        docs = self.store.find_by_filename(info["filename"])
        if not docs:
            return key
        doc_id = docs[-1]["id"]
        if kind == "doc":
            return f"doc:{doc_id}"
        for chunk in self.store.document_chunks(doc_id):
            if chunk["source"].get("chunk_index") == info.get("chunk_index"):
                return f"chunk:{chunk['chunk_id']}"
        return key

    def export_questions_csv(self, set_id: str) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["qid", "question", "expected", "grades", "expected_labels"])
        for q in self.question_rows(set_id):
            keys = list(q["expected"])
            writer.writerow([q["qid"], q["question"], " ".join(keys), " ".join(str(q["expected"][k]) for k in keys),
                             " | ".join(self.label(q["labels"].get(k), k) for k in keys)])
        return out.getvalue()

    def import_questions_csv(self, name: str, data: bytes | str) -> str:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
        rows = list(csv.DictReader(io.StringIO(text)))
        if not rows or not {"question", "expected"} <= set(rows[0]):
            raise EchoMindError("The CSV needs the columns 'question' and 'expected' (space-separated doc:<id> or chunk:<id> keys); 'grades' is optional.")
        set_id = self.create_set(name or "Imported questions", source="csv")
        for row in rows:
            keys = row["expected"].split()
            grades = [int(g) for g in (row.get("grades") or "").split()] or [1] * len(keys)
            self.add_question(set_id, row["question"], dict(zip(keys, grades)), qid=row.get("qid") or None)
        return set_id

    def export_run_csv(self, run_id: int) -> str:
        run = self.get_run(run_id)
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["qid", "question", "nDCG@10", "MRR@10", "Recall@k", "Recall@10", "Recall@100", "latency_ms", "expected (rank)"])
        for q in run["questions"]:
            writer.writerow([q["qid"], q["question"], *(round(q[m], 4) for m in METRICS), round(q["latency_ms"], 1),
                             " ".join(f"{k}({r or '-'})" for k, r in q["expected"].items())])
        return out.getvalue()


def describe_settings(settings: RetrievalSettings) -> str:
    """A short label for a run: the knobs that differ from the defaults."""
    defaults = settings_dict(RetrievalSettings())
    changed = [f"{k}={v}" for k, v in settings_dict(settings).items() if v != defaults.get(k)]
    return ", ".join(changed) or "defaults"


def _first_rank(question: dict[str, Any]) -> int | None:
    return min((r for r in question["expected"].values() if r), default=None)


def _run(row) -> dict[str, Any]:
    out = {k: row[k] for k in ("id", "set_id", "created_at", "label", "sweep")}
    out["settings"] = json.loads(row["settings_json"])
    out["metrics"] = json.loads(row["metrics_json"])
    if "questions_json" in row.keys():
        out["questions"] = json.loads(row["questions_json"])
    return out
