"""The start command's page renders over a real engine (the full UI and its browser tests come with the UI issue)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from conftest import ROOT, doc
from echomind.engine import Engine
from echomind.settings import AppConfig


def test_placeholder_page_shows_the_store(tmp_path, monkeypatch, embedder):
    monkeypatch.setenv("ECHOMIND_DATA_DIR", str(tmp_path))
    engine = Engine(AppConfig(data_dir=tmp_path), embedder=embedder)
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    engine.close()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == "1" and int(metrics["Searchable chunks"]) >= 5
    assert str(tmp_path) in at.caption[0].value


def test_streamlit_config_keeps_the_app_private():
    config = (ROOT / ".streamlit" / "config.toml").read_text()
    assert 'address = "localhost"' in config and "gatherUsageStats = false" in config
