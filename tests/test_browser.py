"""The real app in headless Debian Chromium (Playwright, no downloaded browser): upload a real PDF,
ask, see a streamed answer with a citation, open the inspector, change a knob and see the ranking
change, add a transcript, delete the document. Screenshots of every page go to test-artifacts/."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import DOCS, ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"
SERVER: dict = {}  # data dir, port and log file of the running app
REQUESTS: list[str] = []  # every URL the browser fetched
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed (.ci/run installs it)")


@contextlib.contextmanager
def serve_app(data: Path, log_path: Path):
    """The real app (`streamlit run app.py`) on a free loopback port over the data directory ``data``;
    yields its base URL once its health check answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port), "--server.headless", "true"],
                                cwd=ROOT, env={**os.environ, "ECHOMIND_DATA_DIR": str(data)}, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://localhost:{port}"
        for _ in range(120):
            try:
                if urllib.request.urlopen(base + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            proc.kill()
            raise RuntimeError(log_path.read_text()[-2000:])
        try:
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("appdata")
    (data / "settings.json").write_text(json.dumps({"llm_backend": "embedded"}))
    SERVER["data"], SERVER["log"] = data, data.parent / "server.log"
    with serve_app(data, SERVER["log"]) as base:
        SERVER["port"] = int(base.rsplit(":", 1)[1])
        yield base


@pytest.fixture(scope="module")
def page(app):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(180_000)
        page.on("request", lambda request: REQUESTS.append(request.url))
        yield page
        browser.close()


@pytest.fixture(scope="module")
def second_page(page):
    """Another browser context: a second, independent Streamlit session (another tab or window)."""
    other = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    tab = other.new_page()
    tab.set_default_timeout(180_000)
    tab.on("request", lambda request: REQUESTS.append(request.url))
    yield tab
    other.close()


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
    page.get_by_test_id("stMainBlockContainer").locator("[data-testid=stMultiSelect]").click()  # the sidebar has a file-type filter too
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


def test_upload_refusal_is_explained_and_listed_until_dismissed(app, page):
    """A legacy .doc goes through the widget (no type filter) and the engine's reason is on screen,
    not in a hover chip; it stays listed while the user moves around the app, until dismissed."""
    page.goto(app + "/upload")
    settle(page)
    page.locator("[data-testid=stFileUploaderDropzoneInput]").set_input_files([str(DOCS / "doc_legacy-duplicate-paragraphs.doc"), str(DOCS / "groundtruth_crazyones.txt")])
    page.get_by_role("button", name="Add to library").click()
    refusal = page.locator("[data-testid=stAlertContentError]").filter(has_text="doc_legacy-duplicate-paragraphs.doc")
    refusal.wait_for()
    page.get_by_text(re.compile(r"groundtruth_crazyones\.txt: indexed, \d+ chunks")).wait_for()
    settle(page)
    assert "DOCX" in refusal.inner_text()
    shot(page, "14-upload-refusal-listed")
    page.get_by_role("link", name="Chat").click()  # in-app navigation: same session
    settle(page)
    page.get_by_role("link", name="Upload").click()
    settle(page)
    assert refusal.is_visible() and "DOCX" in refusal.inner_text()
    page.get_by_role("button", name="Dismiss").first.click()  # listed in upload order: the refusal first
    refusal.wait_for(state="detached", timeout=30_000)
    settle(page)
    assert page.get_by_text(re.compile(r"groundtruth_crazyones\.txt: indexed")).is_visible()
    shot(page, "15-upload-refusal-dismissed")


def submit_upload(page, app, name: str) -> None:
    page.goto(app + "/upload")
    settle(page)
    page.locator("[data-testid=stFileUploaderDropzoneInput]").set_input_files(str(DOCS / name))
    page.get_by_role("button", name="Add to library").click()


def send(page, question: str) -> int:
    before = page.locator("[data-testid=stChatMessage]").count()
    box = page.get_by_placeholder("Ask about your documents and voice notes")
    box.fill(question)
    box.press("Enter")
    return before


def test_two_sessions_upload_and_chat_at_once(app, page, second_page):
    """Both sessions write at the same moment (ingest + ingest, then chat + ingest + chat): no
    'database is locked', nothing lost."""
    submit_upload(page, app, "docx_handbook-1p.docx")
    submit_upload(second_page, app, "pptx_table.pptx")
    for tab, name in ((page, "docx_handbook-1p.docx"), (second_page, "pptx_table.pptx")):
        tab.get_by_text(re.compile(re.escape(name) + r": indexed, \d+ chunks")).first.wait_for()
    page.goto(app + "/")
    settle(page)
    second_page.goto(app + "/")
    settle(second_page)
    first_before = send(page, "What does the handbook cover?")
    submit_upload(second_page, app, "pdf_crazyones.pdf")  # an ingest while the other session answers
    second_page.get_by_text(re.compile(r"pdf_crazyones\.pdf: indexed, \d+ chunks")).first.wait_for()
    second_page.goto(app + "/")
    settle(second_page)
    for _ in range(2):  # the same chat is busy answering the other session; KNOWN BUG: a first click may be lost
        second_page.get_by_role("button", name="New chat").click()
        settle(second_page)
        if second_page.get_by_role("heading", name="New chat").count():
            break
    assert second_page.get_by_role("heading", name="New chat").count()
    second_before = send(second_page, "Who are the crazy ones?")
    for tab, before in ((page, first_before), (second_page, second_before)):
        tab.wait_for_function(f"() => document.querySelectorAll('[data-testid=stChatMessage]').length >= {before + 2}")
        settle(tab)
    shot(page, "08-session-a")
    shot(second_page, "09-session-b")
    for tab in (page, second_page):
        assert "database is locked" not in tab.content() and "Traceback" not in tab.content()
    assert "database is locked" not in SERVER["log"].read_text(errors="replace")

    from echomind.settings import AppConfig
    from echomind.store import Store

    store = Store(AppConfig(data_dir=SERVER["data"]).db_path)
    names = {r["filename"] for r in store.query("SELECT filename FROM documents")}
    questions = [r["content"] for r in store.query("SELECT content FROM messages WHERE role = 'user'")]
    answers = store.query("SELECT COUNT(*) FROM messages WHERE role = 'assistant'")[0][0]
    store.close()
    assert {"docx_handbook-1p.docx", "pptx_table.pptx", "pdf_crazyones.pdf"} <= names
    assert "What does the handbook cover?" in questions and "Who are the crazy ones?" in questions
    assert answers == len(questions)


def test_lab_from_inspector_to_sweep_chart(app, page):
    """Build a test set from the Chat inspector, run it, sweep a knob and see the chart."""
    page.goto(app + "/")
    settle(page)
    page.get_by_role("button", name="New chat").click()
    settle(page)
    ask(page, "Who are the crazy ones?")
    message = page.locator("[data-testid=stChatMessage]").last
    message.get_by_text("Inspector: how this answer was found").click()
    row = message.locator("[data-testid=stHorizontalBlock]").filter(has_text="crazyones.pdf").first
    button = row.get_by_role("button", name="✓ answers it")
    button.click()
    try:  # KNOWN BUG (closing note): the first click after a background turn's final rerun is often lost
        page.get_by_text("Added to the test set 'From chat'").wait_for(timeout=15_000)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError; the second click must work
        settle(page)
        button.click()
        page.get_by_text("Added to the test set 'From chat'").wait_for()
    settle(page)
    page.goto(app + "/lab")
    settle(page)
    from echomind.settings import AppConfig
    from echomind.store import Store

    store = Store(AppConfig(data_dir=SERVER["data"]).db_path)
    picked = store.query("SELECT q.text, q.expected_json FROM lab_questions q JOIN lab_sets s ON s.id = q.set_id WHERE s.name = 'From chat'")
    store.close()
    assert [r[0] for r in picked] == ["Who are the crazy ones?"] and '"chunk:' in picked[0][1]
    page.get_by_role("tab", name="Run").click()
    page.get_by_role("button", name="Run with current knobs").click()
    page.get_by_text("Per question", exact=True).wait_for()
    settle(page)
    metrics = page.locator("[data-testid=stMetric]")
    assert metrics.count() >= 7 and "MRR@10" in metrics.all_inner_texts()[1]
    shot(page, "10-lab-run")

    page.get_by_role("tab", name="Sweep").click()
    page.get_by_role("button", name="Run sweep").click()
    chart = page.locator("[data-testid=stVegaLiteChart]").first
    chart.wait_for()
    settle(page)
    chart.locator("canvas, svg").first.wait_for()
    assert "across dense share" in page.content()
    shot(page, "11-lab-sweep-chart")

    for attempt in range(3):  # a tab click that lands during a rerun can be lost
        page.get_by_role("tab", name="Compare").click()
        try:
            page.get_by_text("Knobs that differ").wait_for(timeout=15_000)
            break
        except Exception:
            settle(page)
    assert "Questions whose first hit moved" in page.locator("[data-testid=stTabs]").inner_text()
    shot(page, "12-lab-compare")


def test_lab_beir_import_gives_the_cli_figures(app, page, tmp_path):
    """A SciFact subset imported through the page and run with default knobs shows the figures the
    CLI computes on the same library."""
    from echomind.__main__ import main
    from test_evaluation import write_subset

    subset = write_subset(tmp_path / "scifact-mini", queries=12, corpus=120)
    page.goto(app + "/lab")
    settle(page)
    page.get_by_role("button", name="Reset to defaults").click()
    settle(page)
    page.get_by_role("tab", name="Import / export").click()
    page.get_by_label("Name").fill("scifact-mini")
    uploaders = page.locator("[data-testid=stForm] [data-testid=stFileUploaderDropzoneInput]")
    for i, name in enumerate(("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")):
        uploaders.nth(i).set_input_files(str(subset / name))
    page.get_by_role("button", name="Import BEIR set").click()
    page.get_by_text("Imported 'scifact-mini': 12 questions.").wait_for()
    settle(page)
    page.get_by_role("tab", name="Run").click()
    assert "Current knobs: defaults" in page.content()
    page.get_by_role("button", name="Run with current knobs").click()
    page.get_by_text("Per question", exact=True).wait_for()
    settle(page)
    shown = dict(zip(page.locator("[data-testid=stMetricLabel]").all_inner_texts(), page.locator("[data-testid=stMetricValue]").all_inner_texts()))
    shot(page, "13-lab-beir-run")

    library = tmp_path / "library-copy"
    shutil.copytree(SERVER["data"], library)
    out = tmp_path / "cli.json"
    assert main(["eval", str(subset), "--modes", "hybrid", "--k-per-query", "20", "--store", str(library), "--json", str(out)]) == 0
    cli = json.loads(out.read_text())["hybrid"]
    assert shown["nDCG@10"] == f"{cli['nDCG@10']:.3f}" and shown["MRR@10"] == f"{cli['MRR@10']:.3f}" and shown["Recall@100"] == f"{cli['Recall@100']:.3f}"


def test_private_by_default(app):
    """Runs after the flows above: the browser fetched nothing but the local app, the server listens
    on the loopback interface only, and its log holds no document text."""
    from urllib.parse import urlparse

    hosts = {urlparse(url).hostname for url in REQUESTS if not url.startswith(("data:", "blob:", "about:"))}
    assert REQUESTS and hosts <= {"localhost", "127.0.0.1"}, [u for u in REQUESTS if "localhost" not in u]
    port = f"{SERVER['port']:04X}"
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and local.endswith(":" + port):
                listening.append(local.split(":")[0])
    loopback = {"0100007F", "00000000000000000000000001000000"}
    assert listening and set(listening) <= loopback, listening
    from pypdf import PdfReader

    log = SERVER["log"].read_text(errors="replace")
    text = " ".join(page.extract_text() for page in PdfReader(DOCS / "pdf_multi-column-2p.pdf").pages).split()
    phrases = [" ".join(text[i : i + 6]) for i in range(0, len(text) - 6, 40)]
    assert phrases and not [p for p in phrases if p in log]
