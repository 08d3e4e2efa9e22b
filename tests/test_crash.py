"""Crash safety: a real EchoMind process is killed with SIGKILL at random moments while it ingests,
deletes or answers; the restart must find SQLite, FAISS and BM25 holding the same chunk ids, no
partial document, no orphan file, every committed step kept, and the rerun must complete.

The trials print a table (run with -s to see it); ``ECHOMIND_CRASH_TRIALS`` raises the ingest count.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import DOCS, ROOT

WORKER = Path(__file__).with_name("crash_worker.py")
FILES = ["pdf_crazyones.pdf", "docx_handbook-1p.docx", "pptx_table.pptx", "docx_tables.docx", "pdf_multilang.pdf",
         "pdf_google-doc-document.pdf", "docx_hdrftr.docx", "pptx_pypptx-notes.pptx"]
INGEST_TRIALS = int(os.environ.get("ECHOMIND_CRASH_TRIALS", "20"))


class Run:
    """One worker process; its stdout lines are the steps it reported as committed."""

    def __init__(self, data_dir: Path, mode: str, *args: str):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        # stderr to a file: with two pipes, communicate() would skip what readline() has buffered
        self.stderr = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([sys.executable, str(WORKER), str(data_dir), mode, *args], stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, env=env, cwd=ROOT)
        line = self.proc.stdout.readline()
        assert line.startswith("start "), line + self.errors()
        self.start = json.loads(line[6:])
        self.started = time.perf_counter()

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()

    def kill_after(self, seconds: float) -> list[list[str]]:
        time.sleep(seconds)
        self.proc.send_signal(signal.SIGKILL)
        out, _ = self.proc.communicate()
        assert self.proc.returncode in (-signal.SIGKILL, 0)
        return [line.split() for line in out.splitlines()]

    def finish(self) -> tuple[list[list[str]], float]:
        # not communicate(timeout=...): with a timeout it reads the pipe's fd and skips what readline() buffered
        self.proc.wait(timeout=600)
        out = self.proc.stdout.read()
        assert self.proc.returncode == 0, self.errors()
        steps = [line.split() for line in out.splitlines()]
        assert steps[-1] == ["done"]
        return steps, time.perf_counter() - self.started


def assert_whole(start: dict) -> None:
    check = start["check"]
    assert check["consistent"], check
    assert start["files"] == start["documents"], "every document has its original and no file is an orphan"


def ingest_paths() -> list[str]:
    return [str(DOCS / name) for name in FILES]


@pytest.fixture(scope="module")
def full_ingest(tmp_path_factory):
    """One uninterrupted ingest: how long the work takes, and a library for the delete trials."""
    data = tmp_path_factory.mktemp("template") / "data"
    steps, seconds = Run(data, "ingest", *ingest_paths()).finish()
    assert [s[1] for s in steps if s[0] == "committed"] == ["indexed"] * len(FILES)
    return data, seconds


def test_kill_during_ingest(tmp_path, full_ingest):
    _, work = full_ingest
    rng = random.Random(5)
    table = []
    for trial in range(INGEST_TRIALS):
        data = tmp_path / f"trial{trial}"
        delay = rng.uniform(0, work)
        steps = Run(data, "ingest", *ingest_paths()).kill_after(delay)
        committed = {s[2] for s in steps if s[0] == "committed"}
        rerun = Run(data, "ingest", *ingest_paths())
        assert_whole(rerun.start)
        assert committed <= set(rerun.start["documents"]), "a reported commit was lost"
        # a kill after the last commit but before the close leaves stale (or no) saved indexes: rebuilt
        final, _ = rerun.finish()
        statuses = [s[1] for s in final if s[0] == "committed"]
        assert len(statuses) == len(FILES) and statuses.count("duplicate") == len(set(rerun.start["documents"]))
        after = Run(data, "status")
        after.proc.kill()
        assert_whole(after.start)
        assert len(after.start["documents"]) == len(FILES)
        table.append((trial, f"{delay:.2f}", len(committed), len(rerun.start["documents"]), rerun.start["index_source"]))
    print("\ningest trials: trial, kill after s, commits reported, documents at restart, indexes at restart")
    for row in table:
        print(*row)
    assert {row[2] for row in table} - {0, len(FILES)}, "the kills should land between commits too"


def test_kill_during_delete(tmp_path, full_ingest):
    template, _ = full_ingest
    rng = random.Random(7)
    for trial in range(10):
        data = tmp_path / f"trial{trial}"
        shutil.copytree(template, data)
        run = Run(data, "delete")
        before = set(run.start["documents"])
        steps = run.kill_after(rng.uniform(0, 1.5))
        deleted = {s[1] for s in steps if s[0] == "deleted"}
        rerun = Run(data, "delete")
        assert_whole(rerun.start)
        left = set(rerun.start["documents"])
        # the one being deleted at the kill may have gone or stayed, never half
        assert left <= before - deleted and len(left) >= len(before - deleted) - 1
        rerun.finish()
        check = Run(data, "status")
        check.proc.kill()
        assert_whole(check.start)
        assert check.start["documents"] == []


def test_kill_during_chat_turn(tmp_path, full_ingest):
    template, _ = full_ingest
    data = tmp_path / "chat"
    shutil.copytree(template, data)
    questions = ["What does the handbook say about holidays?", "Who are the crazy ones?", "What is in the table?"]
    rng = random.Random(11)
    asked_total: list[str] = []
    for trial in range(8):
        run = Run(data, "chat", *questions)
        steps = run.kill_after(rng.uniform(0.5, 12))
        asked = [" ".join(s[2:]) for s in steps if s[0] == "asked"]
        asked_total += asked
        restart = Run(data, "status")
        restart.proc.kill()
        assert_whole(restart.start)
        kept = restart.start["user_messages"]
        for question in asked_total:
            assert question in kept, f"the user's message {question!r} was lost"
    final, _ = Run(data, "chat", questions[0]).finish()
    assert any(s[0] == "answered" for s in final)
