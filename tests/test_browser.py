"""The real app in headless Debian Chromium (Playwright, no downloaded browser): upload a real PDF,
ask, see a streamed answer with a citation, open the inspector, change a knob and see the ranking
change, add a transcript, delete the document. Screenshots of every page go to test-artifacts/."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import DOCS, ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("appdata")
    (data / "settings.json").write_text(json.dumps({"llm_backend": "embedded"}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "ECHOMIND_DATA_DIR": str(data)}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port), "--server.headless", "true"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://localhost:{port}"
    for _ in range(120):
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=1).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError(proc.stdout.read().decode()[-2000:])
    yield base
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def page(app):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(180_000)
        yield page
        browser.close()


def settle(page):
    """Wait until Streamlit has finished running the script (its own attribute on the app root)."""
    page.wait_for_selector("[data-test-script-state]")
    time.sleep(0.3)
    page.wait_for_function("() => document.querySelector('[data-test-script-state]').getAttribute('data-test-script-state') === 'notRunning'")


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def ask(page, question: str) -> str:
    before = page.locator("[data-testid=stChatMessage]").count()
    box = page.get_by_placeholder("Ask about your documents and voice notes")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function(f"() => document.querySelectorAll('[data-testid=stChatMessage]').length >= {before + 2}")
    settle(page)
    page.get_by_text("Inspector: how this answer was found").last.wait_for()
    return page.locator("[data-testid=stChatMessage]").last.inner_text()


def ranking(page) -> str:
    """Open the inspector of the latest answer and return its text."""
    message = page.locator("[data-testid=stChatMessage]").last
    inspector = message.locator("[data-testid=stExpander]").filter(has_text="Inspector: how this answer was found")
    inspector.get_by_text("Inspector: how this answer was found").click()
    inspector.get_by_text("Ranking", exact=True).wait_for()
    return inspector.inner_text()


def test_the_whole_flow_in_a_browser(app, page):
    page.goto(app + "/")
    settle(page)
    assert "Your library is empty" in page.content()
    shot(page, "01-chat-empty")

    page.goto(app + "/upload")
    settle(page)
    page.locator("[data-testid=stFileUploaderDropzoneInput]").set_input_files(str(DOCS / "pdf_multi-column-2p.pdf"))
    page.get_by_role("button", name="Add to library").click()
    page.get_by_text(re.compile(r"pdf_multi-column-2p\.pdf: indexed, \d+ chunks")).first.wait_for()
    settle(page)
    shot(page, "02-upload")

    page.goto(app + "/")
    settle(page)
    answer = ask(page, "What does dense passage retrieval use to encode passages?")
    assert "embedded:SmolLM2" in page.content()
    page.get_by_text(re.compile(r"Sources \(\d+\)")).last.click()
    assert "pdf_multi-column-2p.pdf" in page.locator("[data-testid=stChatMessage]").last.inner_text()
    first = ranking(page)
    assert "pdf_multi-column-2p.pdf" in first and "Question used for search" in page.content()
    assert len(answer.strip()) > 20
    shot(page, "03-chat-answer-inspector")

    dense = page.get_by_label("Dense weight")
    dense.fill("0")
    dense.press("Enter")
    settle(page)
    ask(page, "What does dense passage retrieval use to encode passages?")
    second = ranking(page)
    lines = lambda text: [line for line in text.splitlines() if re.match(r"^#\d+ ", line)]
    assert lines(first) and lines(second) and lines(first) != lines(second)
    shot(page, "04-chat-knob-changed")

    page.goto(app + "/transcripts")
    settle(page)
    page.get_by_label("Raw transcript").fill("Voice note: the garden tomatoes need watering every morning in July.")
    page.get_by_label("Tags (comma-separated)").fill("garden, tomatoes")
    page.get_by_role("button", name="Add transcript").click()
    page.get_by_text(re.compile(r"Added: \d+ chunks")).wait_for()
    settle(page)
    assert "garden" in page.content()
    shot(page, "05-transcripts")

    page.goto(app + "/upload")
    settle(page)
    page.locator("[data-testid=stMultiSelect]").click()
    page.get_by_role("option", name=re.compile("pdf_multi-column-2p.pdf")).click()
    page.keyboard.press("Escape")
    page.get_by_role("button", name=re.compile(r"Delete selected \(1\)")).click()
    page.get_by_text(re.compile(r"Deleted pdf_multi-column-2p\.pdf")).wait_for()
    settle(page)
    assert "pdf_multi-column-2p.pdf ·" not in page.content()
    shot(page, "06-upload-after-delete")

    page.goto(app + "/settings")
    settle(page)
    assert "Language model" in page.content()
    shot(page, "07-settings")
