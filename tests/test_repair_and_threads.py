"""The consistency check finds what a crash or a hand edit could leave, the repair mends it from
SQLite and the kept originals; and many threads writing at once (the Streamlit server runs each
session in its own thread) lose nothing and never see 'database is locked'."""

from __future__ import annotations

import threading

from echomind.settings import RetrievalSettings

from conftest import doc


def test_check_finds_a_partial_document_and_repair_mends_it(engine):
    handbook = engine.ingest_bytes("handbook.docx", doc("docx_handbook-1p.docx"))
    engine.ingest_text("note.txt", "The quarterly review is on Friday in room 4.")
    with engine.store.atomic() as conn:  # a chunk vanishes behind the engine's back
        conn.execute("DELETE FROM chunks WHERE id = (SELECT MAX(id) FROM chunks WHERE doc_id = ?)", (handbook.doc_id,))
    report = engine.check_consistency()
    assert not report["consistent"] and report["partial_documents"] == ["handbook.docx"]
    repaired = engine.repair()
    assert repaired["consistent"] and repaired["partial_documents"] == []
    assert {d["filename"] for d in engine.documents()} == {"handbook.docx", "note.txt"}
    assert engine.search("quarterly review Friday", RetrievalSettings(top_k=1)).hits[0].source["filename"] == "note.txt"


def test_stale_index_entries_are_found_and_rebuilt(engine):
    engine.ingest_text("note.txt", "The quarterly review is on Friday in room 4.")
    engine.sparse.remove(list(engine.sparse.slot)[:1])
    report = engine.check_consistency()
    assert not report["consistent"] and report["missing_in_bm25"] == 1
    assert engine.repair()["consistent"]


def test_threads_ingesting_chatting_and_deleting_at_once(engine):
    files = ["docx_handbook-1p.docx", "pptx_table.pptx", "pdf_crazyones.pdf", "docx_tables.docx"]
    errors: list[BaseException] = []
    chat = engine.chats.create()

    def guarded(work):
        def run():
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)
        return threading.Thread(target=run)

    def ingest(name):
        return lambda: engine.ingest_bytes(name, doc(name))

    def talk(i):
        return lambda: [engine.ask(chat, f"Question {i}.{n} about the handbook?").complete() for n in range(3)]

    def notes(i):
        return lambda: [engine.transcripts.add(f"Voice note {i}-{n}: call the printer supplier about toner.", tags=["office"]) for n in range(3)]

    threads = [guarded(ingest(f)) for f in files] + [guarded(talk(i)) for i in range(3)] + [guarded(notes(i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert {d["filename"] for d in engine.documents()} >= set(files)
    users = [m for m in engine.chats.messages(chat) if m["role"] == "user"]
    assert len(users) == 9 and len(engine.chats.messages(chat)) == 18
    assert len(engine.transcripts.list()) == 6
    assert engine.check_consistency()["consistent"]
