"""A real EchoMind process for the crash trials: it ingests, deletes or chats and reports each committed
step on stdout, so the trial that kills it with SIGKILL knows what must have survived.

    python tests/crash_worker.py DATA_DIR ingest FILE...
    python tests/crash_worker.py DATA_DIR delete
    python tests/crash_worker.py DATA_DIR chat QUESTION...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from echomind.engine import Engine
from echomind.settings import AppConfig


def say(*parts: object) -> None:
    print(*parts, flush=True)


def main(data_dir: str, mode: str, *args: str) -> None:
    llm = "from-config" if mode == "chat" else None
    engine = Engine(AppConfig(data_dir=Path(data_dir), llm_backend="embedded"), llm=llm)
    # what a restart finds, before this process writes anything
    say("start", json.dumps({"index_source": engine.index_source, "check": engine.check_consistency(),
                             "documents": sorted(engine.store.document_ids()), "files": sorted(p.name for p in engine.files_dir.iterdir()),
                             "user_messages": [m["content"] for c in engine.chats.list() for m in engine.chats.messages(c["id"]) if m["role"] == "user"]}))
    if mode == "ingest":
        for path in map(Path, args):
            result = engine.ingest_bytes(path.name, path.read_bytes())
            say("committed", result.status, result.doc_id, path.name)
        engine.save_indexes()
        say("saved")
    elif mode == "delete":
        for doc in engine.documents():
            engine.delete_document(doc["id"])
            say("deleted", doc["id"])
    elif mode == "chat":
        chat_id = engine.chats.create("crash trial")
        for question in args:
            answer = engine.ask(chat_id, question)
            say("asked", chat_id, question)
            for _ in answer.stream():
                pass
            say("answered", chat_id, answer.message_id)
    elif mode != "status":
        raise SystemExit(f"unknown mode {mode}")
    say("done")
    engine.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
