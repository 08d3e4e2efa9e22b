"""Voice-note transcripts (seed 1.1.B): raw text, refined notes, tags, echotag and echodate, stored in
their own table and indexed as a document with ``type: transcript`` so boosts and filters can use them."""

from __future__ import annotations

import json
import uuid
from typing import Any

from .errors import EmptyDocument, NotFound
from .store import utcnow


class TranscriptBook:
    def __init__(self, engine):
        self.engine = engine
        self.store = engine.store

    def add(self, raw_text: str, refined_text: str | None = None, *, polished_text: str | None = None, tags: list[str] | None = None,
            echotag: str | None = None, echodate: str | None = None, generate_tags: bool = False) -> dict[str, Any]:
        raw = (raw_text or "").strip()
        refined = (refined_text if refined_text is not None else polished_text or "").strip()  # legacy name accepted
        if not raw and not refined:
            raise EmptyDocument("The transcript is empty: add the raw text or the refined notes.")
        tags = [t.strip() for t in (tags or []) if t and t.strip()]
        if not tags and generate_tags:
            tags = self.engine.suggest_tags(raw or refined)
        echotag = (echotag or "").strip() or (tags[0] if tags else None)
        now = utcnow()
        echodate = echodate or now
        tid = uuid.uuid4().hex[:12]
        meta = {"type": "transcript", "tags": tags, "echotag": echotag, "echodate": echodate, "created_at": echodate, "transcript_id": tid}
        text = raw + ("\n\n" + refined if refined else "")
        result = self.engine.ingest_text(f"transcript_{tid}", text, meta)
        with self.store.atomic() as conn:
            conn.execute(
                "INSERT INTO transcripts(id, doc_id, raw_text, refined_text, tags_json, echotag, echodate, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (tid, result.doc_id, raw, refined, json.dumps(tags), echotag, echodate, now),
            )
        return self.get(tid) | {"ingest": result}

    def get(self, tid: str) -> dict[str, Any]:
        rows = self.store.query("SELECT * FROM transcripts WHERE id = ?", (tid,))
        if not rows:
            raise NotFound(f"No transcript with id {tid}.")
        return _row(rows[0])

    def list(self, search: str = "") -> list[dict[str, Any]]:
        if search.strip():
            like = f"%{search.strip()}%"
            rows = self.store.query(
                "SELECT * FROM transcripts WHERE raw_text LIKE ? OR refined_text LIKE ? OR tags_json LIKE ? OR echotag LIKE ? ORDER BY echodate DESC",
                (like, like, like, like),
            )
        else:
            rows = self.store.query("SELECT * FROM transcripts ORDER BY echodate DESC, rowid DESC")
        return [_row(r) for r in rows]

    def delete(self, tid: str) -> None:
        transcript = self.get(tid)
        if transcript["doc_id"] and self.store.get_document(transcript["doc_id"]) is not None:
            self.engine.delete_document(transcript["doc_id"])
        with self.store.atomic() as conn:
            conn.execute("DELETE FROM transcripts WHERE id = ?", (tid,))


def _row(row) -> dict[str, Any]:
    out = dict(row)
    out["tags"] = json.loads(out.pop("tags_json"))
    return out
