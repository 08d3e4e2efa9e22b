"""Transcripts: add voice-note transcripts (raw text, refined notes, tags typed or generated, echotag),
search, list, inspect their chunks and delete them."""

import streamlit as st

from echomind.errors import EchoMindError
from echomind.ui.state import get_engine

engine = get_engine()
st.title("Transcripts")
with st.form("add-transcript", clear_on_submit=True):
    raw = st.text_area("Raw transcript", height=150, placeholder="Paste what the voice note said…")
    refined = st.text_area("Refined notes (optional)", height=100)
    cols = st.columns([2, 1, 1])
    tags = cols[0].text_input("Tags (comma-separated)")
    echotag = cols[1].text_input("Echotag")
    generate = cols[2].checkbox("Generate tags", value=True, help="With the LLM, or from the most frequent words without one")
    if st.form_submit_button("Add transcript", type="primary"):
        try:
            added = engine.transcripts.add(raw, refined, tags=[t for t in tags.split(",") if t.strip()], echotag=echotag or None, generate_tags=generate)
            st.success(f"Added: {added['ingest'].chunks} chunks, tags: {', '.join(added['tags']) or 'none'}")
        except EchoMindError as exc:
            st.error(str(exc))

search = st.text_input("Search transcripts", placeholder="words in the text, tags or echotag")
transcripts = engine.transcripts.list(search)
if not transcripts:
    st.info("No transcripts yet." if not search else "No transcript matches.")
for t in transcripts:
    with st.expander(f"{t['echodate'][:16].replace('T', ' ')} · {t['echotag'] or 'untagged'} · {t['raw_text'][:60]}"):
        st.markdown("**Tags:** " + (", ".join(t["tags"]) or "none"))
        st.markdown("**Raw:**")
        st.text(t["raw_text"])
        if t["refined_text"]:
            st.markdown("**Refined:**")
            st.text(t["refined_text"])
        if t["doc_id"]:
            chunks = engine.document_chunks(t["doc_id"])
            st.caption(f"{len(chunks)} chunks: " + " | ".join(c["text"][:80] for c in chunks))
        if st.button("Delete", key=f"delete-{t['id']}"):
            engine.transcripts.delete(t["id"])
            st.rerun()
