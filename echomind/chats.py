"""Chats and their messages in SQLite: several chats, each with its own history and summary.

The user's message is written before anything else happens in a turn, so a failed or killed answer
never loses it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from .errors import NotFound
from .store import Store, utcnow


class ChatLog:
    def __init__(self, store: Store):
        self.store = store

    def create(self, title: str = "New chat") -> str:
        chat_id = uuid.uuid4().hex[:12]
        now = utcnow()
        with self.store.atomic() as conn:
            conn.execute("INSERT INTO chats(id, title, created_at, updated_at) VALUES (?, ?, ?, ?)", (chat_id, title.strip() or "New chat", now, now))
        return chat_id

    def list(self) -> list[dict[str, Any]]:
        rows = self.store.query(
            "SELECT c.*, (SELECT COUNT(*) FROM messages m WHERE m.chat_id = c.id) AS messages FROM chats c ORDER BY updated_at DESC, rowid DESC"
        )
        return [dict(r) for r in rows]

    def get(self, chat_id: str) -> dict[str, Any]:
        rows = self.store.query("SELECT * FROM chats WHERE id = ?", (chat_id,))
        if not rows:
            raise NotFound(f"No chat with id {chat_id}.")
        return dict(rows[0])

    def rename(self, chat_id: str, title: str) -> None:
        self.get(chat_id)
        with self.store.atomic() as conn:
            conn.execute("UPDATE chats SET title = ?, updated_at = ? WHERE id = ?", (title.strip() or "Untitled chat", utcnow(), chat_id))

    def delete(self, chat_id: str) -> None:
        self.get(chat_id)
        with self.store.atomic() as conn:
            conn.execute("DELETE FROM chats WHERE id = ?", (chat_id,))

    def add_message(self, chat_id: str, role: str, content: str, meta: dict[str, Any] | None = None) -> int:
        with self.store.atomic() as conn:
            cur = conn.execute("INSERT INTO messages(chat_id, role, content, created_at, meta_json) VALUES (?, ?, ?, ?, ?)",
                               (chat_id, role, content, utcnow(), json.dumps(meta or {}, default=str)))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (utcnow(), chat_id))
        return int(cur.lastrowid)

    def messages(self, chat_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM messages WHERE chat_id = ? ORDER BY id"
        rows = self.store.query(sql, (chat_id,))
        out = [dict(r) | {"meta": json.loads(r["meta_json"])} for r in rows]
        return out[-limit:] if limit else out

    def set_summary(self, chat_id: str, summary: str) -> None:
        with self.store.atomic() as conn:
            conn.execute("UPDATE chats SET conversation_summary = ? WHERE id = ?", (summary, chat_id))
