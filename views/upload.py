"""Upload: several files at once with progress per file, passwords for encrypted PDFs, the library
table with delete and re-index, and a chunk browser."""

import pandas as pd
import streamlit as st

from echomind.errors import EchoMindError, PasswordRequired
from echomind.ui.state import get_engine

engine = get_engine()
TYPES = ["pdf", "docx", "pptx", "pptm", "txt", "md", "csv", "xlsx"]
STAGES = {"parse": "Reading", "chunk": "Chunking", "embed": "Embedding", "index": "Indexing", "done": "Done"}
st.session_state.setdefault("pending_passwords", {})
st.session_state.setdefault("upload_log", [])


def ingest(name: str, data: bytes, password: str | None = None) -> None:
    with st.status(f"{name}", expanded=False) as status:
        bar = st.progress(0.0, text="Reading")
        order = list(STAGES)

        def progress(stage: str, fraction: float) -> None:
            step = order.index(stage) if stage in order else 0
            bar.progress(min(1.0, (step + fraction) / (len(order) - 1)), text=STAGES.get(stage, stage))

        try:
            result = engine.ingest_bytes(name, data, password=password, progress=progress)
        except PasswordRequired as exc:
            st.session_state["pending_passwords"][name] = data
            status.update(label=f"🔒 {name}: {exc}", state="error")
            st.session_state["upload_log"].append(("error", f"🔒 {name}: {exc}"))
            return
        except EchoMindError as exc:
            status.update(label=f"{name}: {exc}", state="error")
            st.session_state["upload_log"].append(("error", f"{name}: {exc}"))
            return
        st.session_state["pending_passwords"].pop(name, None)
        if result.status == "duplicate":
            status.update(label=f"{name}: duplicate — {result.message}", state="complete")
            st.session_state["upload_log"].append(("info", f"{name}: {result.message}"))
            return
        redactions = ", ".join(f"{v} {k.lower()}" for k, v in result.redactions.items()) or "none"
        line = (f"{name}: {result.status}, {result.chunks} chunks" + (f" (+{result.parents} parents)" if result.parents else "")
                + f", {result.doc_type}, sensitivity {result.sensitivity}, redactions: {redactions}")
        status.update(label=line, state="complete")
        st.session_state["upload_log"].append(("success", line + (f" — {result.message}" if result.message else "")))


st.title("Upload")
st.caption(f"PDF, DOCX, PPTX/PPTM, TXT, MD, CSV and XLSX, up to {engine.config.max_upload_mb} MB each. Text is redacted for PII before it is indexed.")
with st.form("upload", clear_on_submit=True):
    files = st.file_uploader("Add documents", type=TYPES, accept_multiple_files=True)
    submitted = st.form_submit_button("Add to library", type="primary")
if submitted and files:
    st.session_state["upload_log"] = []
    for file in files:
        ingest(file.name, file.getvalue())
    engine.save_indexes()  # a restart after a crash then loads instead of rebuilding

for name in list(st.session_state["pending_passwords"]):
    with st.form(f"password-{name}"):
        st.markdown(f"🔒 **{name}** is password protected.")
        password = st.text_input("Password", type="password", key=f"pw-{name}")
        if st.form_submit_button("Unlock and add"):
            ingest(name, st.session_state["pending_passwords"][name], password)
if not submitted:  # in the run that ingests, the status lines above already say it
    for kind, line in st.session_state["upload_log"]:
        getattr(st, kind)(line)

st.header("Library")
documents = engine.documents()
if not documents:
    st.info("No documents yet. Add some above; voice notes go on the Transcripts page.")
    st.stop()
frame = pd.DataFrame([{
    "name": d["filename"], "type": d["filetype"], "doc type": d["doc_type"], "sensitivity": d["sensitivity"],
    "chunks": d["chunks"] - d["parents"], "parents": d["parents"], "size KB": round(d["size_bytes"] / 1024, 1), "added": d["created_at"][:16].replace("T", " "),
} for d in documents])
st.dataframe(frame, hide_index=True, width="stretch")
labels = {d["id"]: f"{d['filename']} · {d['created_at'][:10]}" for d in documents}
chosen_ids = st.multiselect("Select documents", list(labels), format_func=labels.get, placeholder="Choose documents to delete or re-index")
chosen = [d for d in documents if d["id"] in chosen_ids]
cols = st.columns(3)
if cols[0].button(f"Delete selected ({len(chosen)})", disabled=not chosen):
    for d in chosen:
        engine.delete_document(d["id"])
    engine.save_indexes()
    st.session_state["upload_log"] = [("success", f"Deleted {', '.join(d['filename'] for d in chosen)}")]
    st.rerun()
if cols[1].button(f"Re-index selected ({len(chosen)})", disabled=not chosen):
    for d in chosen:
        try:
            engine.reindex_document(d["id"])
        except EchoMindError as exc:
            st.error(f"{d['filename']}: {exc}")
    st.rerun()

st.header("Chunk browser")
names = {d["id"]: f"{d['filename']} ({d['doc_type']})" for d in documents}
doc_id = st.selectbox("Document", list(names), format_func=names.get)
chunks = engine.document_chunks(doc_id)
rows = [{"#": c["source"]["chunk_index"], "kind": "parent" if c["source"]["is_parent"] else ("child" if c["source"].get("parent_chunk_id") else "chunk"),
         "section": c["source"].get("section"), "page": c["source"].get("page"), "slide": c["source"].get("slide"), "row": c["source"].get("row"),
         "chars": len(c["text"]), "redacted": c["source"]["redacted"], "text": c["text"][:160]} for c in chunks]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
index = st.number_input("Show chunk #", 0, max(0, len(chunks) - 1), 0)
st.text(chunks[index]["text"] if chunks else "")
