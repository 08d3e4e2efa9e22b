"""`python -m echomind ask` in a real process over a real library: a streamed, cited answer, follow-ups
in a named chat across calls, and a refusal for a question the library cannot answer."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, doc


def run(data_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "echomind", "--data-dir", str(data_dir), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ask_streams_a_cited_answer_and_keeps_the_chat(tmp_path):
    data = tmp_path / "lib"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"llm_backend": "none"}))
    (tmp_path / "linn.txt").write_bytes(doc("groundtruth_linn.txt"))
    assert run(data, "ingest", str(tmp_path / "linn.txt")).returncode == 0
    first = run(data, "ask", "How many tracks does each LinnSequencer sequence contain?", "--chat", "linn")
    assert first.returncode == 0, first.stderr
    assert "32 simultaneous, polyphonic tracks" in first.stdout and "[1]" in first.stdout
    assert "Sources:\n[1] linn.txt" in first.stdout and "Searching your documents..." in first.stderr
    follow = run(data, "ask", "How many notes per disk?", "--chat", "linn")
    assert "110,000 notes" in follow.stdout
    off = run(data, "ask", "Who won the football world cup in 2018?")
    assert off.stdout.startswith("I found nothing in your documents") and "Sources:" not in off.stdout
    from echomind.store import Store

    store = Store(data / "echomind.sqlite3")
    titles = [r["title"] for r in store.query("SELECT title FROM chats")]
    messages = store.query("SELECT COUNT(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.title = 'linn'")[0][0]
    store.close()
    assert titles.count("linn") == 1 and messages == 4
