"""EchoMind: entry script. Shared state and the sidebar knobs, then the page navigation."""

from pathlib import Path

import streamlit as st

from echomind.ui.sidebar import knobs
from echomind.ui.state import get_engine

st.set_page_config(page_title="EchoMind", page_icon=str(Path(__file__).with_name("assets") / "icon.png"), layout="wide")
engine = get_engine()
pages = [
    st.Page("views/chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page("views/upload.py", title="Upload", icon=":material/upload_file:"),
    st.Page("views/transcripts.py", title="Transcripts", icon=":material/mic:"),
    st.Page("views/lab.py", title="Lab", icon=":material/science:"),
    st.Page("views/settings.py", title="Settings", icon=":material/settings:"),
]
navigation = st.navigation(pages)
st.session_state["pages"] = {p.url_path or "chat": p for p in pages}  # for st.page_link from the pages
st.session_state["sidebar_top"] = st.sidebar.container()  # pages put their own controls above the knobs
st.session_state["retrieval_settings"] = knobs()
st.sidebar.caption(f"Answers: {engine.llm.name if engine.llm else 'none (extractive)'} · Embedder: {engine.embedder.id}")
for notice in engine.notices:
    st.sidebar.info(notice)
navigation.run()
