"""The Chat page in headless Debian Chromium while an answer is being written: a visible stage at once,
the input disabled, Stop, a second tab that cannot send into the running chat, a reload that does
not lose the answer, and the no-document caption above the answer. The model is a wire-level Ollama
stand-in that streams slowly (no Ollama server can run here); the engine, embedder and SQLite are real."""

from __future__ import annotations

import json
import os
import time

import pytest

from echomind.engine import Engine
from echomind.settings import AppConfig
from ollama_server import FakeOllama
from test_browser import ARGS, ARTIFACTS, CHROMIUM, serve_app, settle

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed (.ci/run installs it)")
MANUAL = (b"Aurora X2 espresso machine manual. The Aurora X2 costs 499 euros and heats up in 25 seconds. "
          b"Descale the Aurora X2 every two months with citric acid. The steam wand froths milk in 40 seconds.")
LONG_REPLY = "The Aurora X2 costs 499 euros [1]. " + " ".join(["The manual says so [1]."] * 60)
TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def slow_app(tmp_path_factory, embedder):
    data = tmp_path_factory.mktemp("chatdata")
    engine = Engine(AppConfig(data_dir=data), embedder=embedder, llm=None)
    engine.ingest_bytes("aurora-manual.txt", MANUAL)
    engine.close()
    with FakeOllama(reply=lambda prompt: LONG_REPLY, word_delay_s=0.08) as fake:
        (data / "settings.json").write_text(json.dumps({"llm_backend": "ollama", "ollama_host": fake.host, "ollama_model": "llama3.2"}))
        with serve_app(data, data.parent / "chat-server.log") as base:
            yield base, data


@pytest.fixture(scope="module")
def browser(slow_app):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def open_tab(browser, base, wait: bool = True):
    tab = browser.new_context(viewport={"width": 1300, "height": 950}).new_page()
    tab.set_default_timeout(120_000)
    tab.goto(base)
    if wait:
        settle(tab)
    return tab


def send(tab, question: str) -> float:
    box = tab.get_by_placeholder("Ask about your documents and voice notes")
    box.fill(question)
    t = time.monotonic()
    box.press("Enter")
    return t


def test_stage_at_once_input_disabled_and_stop(browser, slow_app):
    base, _ = slow_app
    tab = open_tab(browser, base)
    sent = send(tab, "How much does the Aurora X2 cost?")
    tab.get_by_text("Working:").first.wait_for()
    TIMES["status_visible_s"] = time.monotonic() - sent
    tab.get_by_text("499 euros").first.wait_for()
    TIMES["first_words_visible_s"] = time.monotonic() - sent
    box = tab.locator("[data-testid=stChatInput] textarea")
    assert box.count() == 1 and box.is_disabled()  # one input, not a stale enabled copy beside it
    tab.screenshot(path=str(ARTIFACTS / "chat-01-writing.png"))

    other = open_tab(browser, base, wait=False)  # a second tab on the same chat cannot send into it meanwhile
    other.get_by_text("Working:").first.wait_for()
    assert other.locator("[data-testid=stChatInput] textarea").is_disabled()
    other.context.close()

    tab.get_by_role("button", name="Stop").click()
    tab.get_by_text("(stopped)").wait_for()
    settle(tab)
    last = tab.locator("[data-testid=stChatMessage]").last.inner_text()
    assert "499 euros" in last and last.count("The manual says so") < 60
    tab.wait_for_function("() => !document.querySelector('[data-testid=stChatInput] textarea').disabled")  # free again once stored
    tab.screenshot(path=str(ARTIFACTS / "chat-02-stopped.png"))
    print(f"\nstage visible after {TIMES['status_visible_s']:.2f} s, first words after {TIMES['first_words_visible_s']:.2f} s")
    assert TIMES["status_visible_s"] < TIMES["first_words_visible_s"]


def test_a_reload_while_answering_loses_nothing(browser, slow_app):
    base, data = slow_app
    tab = open_tab(browser, base)
    send(tab, "How long does the steam wand take?")
    tab.get_by_text("Working:").first.wait_for()
    tab.reload()  # the page's script run is gone; the turn goes on in the engine
    settle(tab)
    tab.get_by_text("The manual says so").last.wait_for()
    deadline = time.monotonic() + 60
    while tab.locator("[data-testid=stChatInput] textarea").is_disabled() and time.monotonic() < deadline:
        time.sleep(0.5)
    settle(tab)
    from echomind.store import Store

    store = Store(data / "echomind.sqlite3")
    rows = store.query("SELECT role, content FROM messages ORDER BY id")
    store.close()
    asked = [i for i, r in enumerate(rows) if r["content"] == "How long does the steam wand take?"]
    assert asked and rows[asked[0] + 1]["role"] == "assistant" and rows[asked[0] + 1]["content"].count("The manual says so") == 60


def test_the_no_document_caption_comes_before_the_answer(browser, slow_app):
    base, _ = slow_app
    tab = open_tab(browser, base)
    send(tab, "Who won the football world cup in 2018?")
    tab.get_by_text("No document was relevant to this question.").wait_for()
    settle(tab)
    message = tab.locator("[data-testid=stChatMessage]").last
    text = message.inner_text()
    assert text.index("No document was relevant") < text.index("I found nothing in your documents")
    tab.screenshot(path=str(ARTIFACTS / "chat-03-no-document.png"))
