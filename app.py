"""EchoMind's entry script. The full Chat / Upload / Transcripts / Settings pages arrive with the UI
issue; until then this page shows the engine's state so the start command is real."""

import streamlit as st

from echomind.engine import Engine


@st.cache_resource
def get_engine() -> Engine:
    return Engine()


st.set_page_config(page_title="EchoMind", page_icon=":material/graphic_eq:")
st.title("EchoMind")
engine = get_engine()
counts = engine.store.counts()
st.write("Local, private chat with your documents and voice notes.")
col1, col2, col3 = st.columns(3)
col1.metric("Documents", counts["documents"])
col2.metric("Searchable chunks", counts["searchable_chunks"])
col3.metric("Embedder", engine.embedder.id)
st.caption(f"Data directory: {engine.config.data_dir}")
if not counts["documents"]:
    st.info("No documents yet. Add some with `python -m echomind ingest FILE...`; the Upload page is on its way.")
