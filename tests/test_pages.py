"""Each page's logic with Streamlit's AppTest over a real engine and a real SQLite file (the full
navigation flow runs in the browser test)."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, doc
from echomind.settings import AppConfig, RetrievalSettings
from echomind.ui.state import get_engine


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ECHOMIND_DATA_DIR", str(tmp_path))
    (tmp_path / "settings.json").write_text(json.dumps({"llm_backend": "none"}))
    get_engine.clear()
    yield tmp_path
    get_engine().close()
    get_engine.clear()


def page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / f"{name}.py"), default_timeout=120)
    at.session_state["retrieval_settings"] = RetrievalSettings()
    return at


def test_chat_page_answers_with_sources_and_keeps_history(data_dir):
    get_engine().ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    at = page("chat").run()
    assert not at.exception and "1 document in the library" in at.caption[0].value
    at.chat_input[0].set_value("How many tracks does the LinnSequencer record?").run()
    assert not at.exception
    roles = [m.name for m in at.chat_message]
    assert roles == ["user", "assistant"]
    assert "[1]" in at.chat_message[1].markdown[0].value
    assert any("Sources" in e.label for e in at.expander) and any("Inspector" in e.label for e in at.expander)
    chats = get_engine().chats.list()
    assert chats[0]["title"].startswith("How many tracks") and chats[0]["messages"] == 2
    next(b for b in at.button if b.label == "New chat").click().run()
    assert len(get_engine().chats.list()) == 2 and not at.exception


def test_chat_page_guides_an_empty_library(data_dir):
    at = page("chat").run()
    assert not at.exception and "library is empty" in at.info[0].value


def test_upload_page_lists_deletes_and_browses_chunks(data_dir):
    engine = get_engine()
    first = engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    engine.ingest_bytes("crazy.pdf", doc("pdf_crazyones.pdf"))
    at = page("upload").run()
    assert not at.exception
    assert len(at.dataframe) == 2  # the library and the chunk browser
    at.multiselect[0].set_value([first.doc_id]).run()
    next(b for b in at.button if b.label.startswith("Delete selected (1)")).click().run()
    assert not at.exception and [d["filename"] for d in engine.documents()] == ["crazy.pdf"]
    assert "Deleted linn.txt" in at.success[0].value


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def test_upload_page_explains_refusals_keeps_them_until_dismissed_and_unlocks(data_dir):
    """Any file goes through the widget; the legacy .doc gets the engine's reason and stays listed
    across reruns until dismissed; the locked PDF's form and error go once it is unlocked."""
    at = page("upload").run()
    assert not at.exception and at.file_uploader[0].allowed_type == []  # no type filter in the widget
    at.file_uploader[0].set_value([("old.doc", doc("doc_legacy-duplicate-paragraphs.doc"), "application/msword"),
                                   ("locked.pdf", doc("pdf_enc_crazyones-aes256.pdf"), "application/pdf"),
                                   ("linn.txt", doc("groundtruth_linn.txt"), "text/plain")])
    _button(at, "Add to library").click().run()
    assert not at.exception
    assert any("old.doc" in e.value and "DOCX" in e.value for e in at.error)
    assert any(s.value.startswith("linn.txt: indexed") for s in at.success)
    assert "locked.pdf" in " ".join(m.value for m in at.markdown) and any(t.label == "Password" for t in at.text_input)
    at.run()  # another rerun (any widget): the refusal is still listed
    assert any("old.doc" in e.value for e in at.error)

    at.text_input(key="pw-locked.pdf").set_value("wrong")
    _button(at, "Unlock and add").click().run()
    assert not at.exception and any(t.label == "Password" for t in at.text_input)  # still locked, says why
    assert "password" in " ".join(c.value for c in at.caption).lower()
    at.text_input(key="pw-locked.pdf").set_value("password")
    _button(at, "Unlock and add").click().run()
    assert not at.exception and not any(t.label == "Password" for t in at.text_input)
    assert any(s.value.startswith("locked.pdf: indexed") for s in at.success)
    assert not any("locked.pdf" in e.value for e in at.error) and {d["filename"] for d in get_engine().documents()} == {"linn.txt", "locked.pdf"}

    next(b for b in at.button if b.key == "dismiss-old.doc").click().run()
    assert not at.exception and not any("old.doc" in e.value for e in at.error)


def test_chunk_browser_shows_every_redaction_and_the_documents_date(data_dir):
    engine = get_engine()
    text = ("---\ntitle: Supplier contacts\ndate: 2023-03-14\n---\n# Contacts\nCall Jane at +1 415 555 0132 or mail jane.doe@example.com. "
            "Backup: john.roe@example.org. The order total was 1,250 units.\n")
    engine.ingest_bytes("contacts.md", text.encode())
    at = page("upload").run()
    assert not at.exception
    info = " ".join(m.value for m in at.markdown)
    assert "Supplier contacts" in info and "2023-03-14" in info and "front-matter" in info
    assert "2 email, 1 phone" in info
    shown = at.get("html")[0].proto.body
    assert shown.count("<mark") == 3 and "[REDACTED_PHONE]</mark>" in shown and "1,250 units" in shown
    library = at.dataframe[0].value
    assert library["date"][0] == "2023-03-14" and library["title"][0] == "Supplier contacts"


def test_transcripts_page_adds_searches_and_deletes(data_dir):
    at = page("transcripts").run()
    at.text_area[0].set_value("Voice note: buy tomato seeds and compost for the garden on Saturday.")
    at.text_input[0].set_value("garden, shopping")
    next(b for b in at.button if b.label == "Add transcript").click().run()
    assert not at.exception and at.success[0].value.startswith("Added:")
    transcripts = get_engine().transcripts.list()
    assert transcripts[0]["tags"] == ["garden", "shopping"]
    at.text_input[2].set_value("compost").run()
    assert len(at.expander) == 1
    at.text_input[2].set_value("nothing-like-this").run()
    assert "No transcript matches." in at.info[0].value


def test_settings_page_persists_the_backend_and_persona(data_dir):
    at = page("settings").run()
    assert not at.exception
    at.radio[0].set_value("none")
    at.text_area[0].set_value("Answer like a patient librarian.")
    next(b for b in at.button if b.label == "Save settings").click().run()
    assert not at.exception and "extractive" in at.success[0].value
    saved = AppConfig.load(data_dir)
    assert saved.llm_backend == "none" and saved.persona == "Answer like a patient librarian."
    next(b for b in at.button if b.label == "Check index consistency").click().run()
    assert "agree on 0 chunks" in at.success[-1].value


def test_streamlit_config_keeps_the_app_private():
    config = (ROOT / ".streamlit" / "config.toml").read_text()
    assert 'address = "localhost"' in config and "gatherUsageStats = false" in config
    assert "maxUploadSize = 200" in config and AppConfig().max_upload_mb == 200


def test_lab_from_inspector_pick_to_run_sweep_and_compare(data_dir):
    engine = get_engine()
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    engine.ingest_bytes("crazyones.pdf", doc("pdf_crazyones.pdf"))
    chat = page("chat").run()
    chat.chat_input[0].set_value("How many tracks does the LinnSequencer record?").run()
    picks = [b for b in chat.button if b.label == "✓ answers it"]
    assert picks
    picks[0].click().run()
    assert not chat.exception
    sets = engine.lab.sets()
    assert [s["name"] for s in sets] == ["From chat"] and sets[0]["questions"] == 1
    question = engine.lab.question_rows(sets[0]["id"])[0]
    assert question["question"] == "How many tracks does the LinnSequencer record?" and list(question["expected"])[0].startswith("chunk:")

    lab = page("lab")
    lab.session_state["lab_set"] = sets[0]["id"]
    lab.run()
    assert not lab.exception and "How many tracks" in lab.dataframe[0].value["question"][0]
    next(b for b in lab.button if b.label == "Run with current knobs").click().run()
    assert not lab.exception and engine.lab.runs(sets[0]["id"])
    assert any(m.label == "MRR@10" for m in lab.metric)
    knob = next(s for s in lab.selectbox if s.label == "Knob")
    knob.set_value("top_k").run()
    next(b for b in lab.button if b.label == "Run sweep").click().run()
    assert not lab.exception
    runs = engine.lab.runs(sets[0]["id"])
    assert len(runs) == 1 + 5 and len({r["sweep"] for r in runs[1:]}) == 1
    charts = lab.get("vega_lite_chart")
    assert charts, "the sweep is plotted"
    assert "Compare" in [t.label for t in lab.tabs] and not lab.exception


def test_lab_page_deletes_a_test_set_but_not_the_documents(data_dir):
    engine = get_engine()
    result = engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    keep, gone = engine.lab.create_set("Keep"), engine.lab.create_set("Gone")
    engine.lab.add_question(gone, "How many tracks?", {f"doc:{result.doc_id}": 1})
    lab = page("lab")
    lab.session_state["lab_set"] = gone
    lab.run()
    next(b for b in lab.button if b.label == "Delete this test set").click().run()
    assert not lab.exception and [s["id"] for s in engine.lab.sets()] == [keep]
    assert engine.store.query("SELECT COUNT(*) FROM lab_questions")[0][0] == 0 and len(engine.documents()) == 1


def _sidebar_script():
    import streamlit as st

    from echomind.ui.sidebar import knobs

    st.session_state["knobs_out"] = knobs()


def test_sidebar_filters_by_file_type_and_document_date(data_dir):
    import datetime

    get_engine().ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    at = AppTest.from_function(_sidebar_script, default_timeout=60).run()
    assert not at.exception and at.session_state["knobs_out"] == RetrievalSettings()
    types = next(m for m in at.multiselect if m.label.startswith("File types"))
    assert types.options == ["txt"]
    types.set_value(["txt"])
    next(d for d in at.date_input if d.label == "Documents dated from").set_value(datetime.date(2023, 1, 1))
    at.run()
    chosen = at.session_state["knobs_out"]
    assert chosen.file_types == ("txt",) and chosen.date_from == "2023-01-01" and chosen.date_to == ""
    next(d for d in at.date_input if d.label == "Documents dated up to").set_value(datetime.date(2022, 1, 1))
    at.run()
    assert "after date_to" in at.sidebar.error[0].value  # a clear message, and the defaults are used meanwhile
