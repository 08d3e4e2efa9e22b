"""Upload: several files at once, each with its stage and progress in plain sight; files the engine
refuses stay listed with its reason until dismissed; passwords for encrypted PDFs; the library with
each document's own date and title, delete and re-index; a chunk browser that shows every redaction."""

import html
import logging
import re
from collections import Counter

import pandas as pd
import streamlit as st

from echomind.errors import EchoMindError, PasswordRequired
from echomind.ui.state import get_engine

engine = get_engine()
STAGES = {"parse": "Reading", "chunk": "Chunking", "embed": "Embedding", "index": "Indexing", "done": "Done"}
REDACTION = re.compile(r"\[REDACTED_([A-Z_]+)\]")
log = logging.getLogger("echomind.upload")
# name -> {"state": indexed | replaced | duplicate | failed | locked, "line": what the user reads}
files_state: dict = st.session_state.setdefault("upload_files", {})
pending: dict = st.session_state.setdefault("pending_passwords", {})  # name -> bytes of a locked PDF


def ingest(name: str, data: bytes, box, password: str | None = None) -> None:
    """One file, its progress drawn in ``box``; the outcome is kept in session state so it outlives reruns."""
    bar = box.progress(0.0, text=f"**{name}** · Reading")
    order = list(STAGES)

    def progress(stage: str, fraction: float) -> None:
        step = order.index(stage) if stage in order else 0
        bar.progress(min(1.0, (step + fraction) / (len(order) - 1)), text=f"**{name}** · {STAGES.get(stage, stage)} {fraction:.0%}")

    try:
        result = engine.ingest_bytes(name, data, password=password, progress=progress)
    except PasswordRequired as exc:
        pending[name] = data
        files_state[name] = {"state": "locked", "line": str(exc)}
        return
    except EchoMindError as exc:
        files_state[name] = {"state": "failed", "line": str(exc)}
        pending.pop(name, None)
        return
    except Exception as exc:  # never a library's text on screen; the type goes to the log, no document text
        log.error("ingest of an upload failed with %s", type(exc).__name__)
        files_state[name] = {"state": "failed", "line": f"'{name}' could not be indexed because of an unexpected error; nothing was stored."}
        pending.pop(name, None)
        return
    pending.pop(name, None)
    if result.status == "duplicate":
        files_state[name] = {"state": "duplicate", "line": result.message}
        return
    redactions = ", ".join(f"{v} {k.lower()}" for k, v in result.redactions.items()) or "none"
    line = (f"{name}: {result.status}, {result.chunks} chunks" + (f" (+{result.parents} parents)" if result.parents else "")
            + f", {result.doc_type}, sensitivity {result.sensitivity}, redactions: {redactions}" + (f" — {result.message}" if result.message else ""))
    files_state[name] = {"state": result.status, "line": line}


st.title("Upload")
st.caption(f"PDF, DOCX, PPTX/PPTM, TXT, MD, CSV and XLSX, up to {engine.config.max_upload_mb} MB each; any other file is checked "
           "and, if it cannot be read, you are told why. " + ("Text is redacted for PII before it is indexed." if engine.config.redact_pii
                                                           else "PII redaction is off (Settings): text is indexed as written."))
with st.form("upload", clear_on_submit=True):
    files = st.file_uploader("Add documents", accept_multiple_files=True)  # no type filter: the engine explains refusals
    submitted = st.form_submit_button("Add to library", type="primary")
if submitted and files:
    for name in [n for n, f in files_state.items() if f["state"] not in ("failed", "locked")]:
        files_state.pop(name)  # last batch's successes make room; refusals stay until dismissed
    boxes = [(file, st.container(border=True)) for file in files]
    for file, box in boxes:
        box.progress(0.0, text=f"**{file.name}** · Waiting")
    for file, box in boxes:
        ingest(file.name, file.getvalue(), box)
    engine.save_indexes()  # a restart after a crash then loads instead of rebuilding
    st.rerun()

ICONS = {"indexed": ":material/check_circle:", "replaced": ":material/check_circle:", "duplicate": ":material/info:", "failed": ":material/error:"}
for name, entry in list(files_state.items()):
    with st.container(border=True):
        if entry["state"] == "locked":
            with st.form(f"password-{name}"):
                st.markdown(f":material/lock: **{name}** is password protected.")
                st.caption(entry["line"])
                password = st.text_input("Password", type="password", key=f"pw-{name}")
                unlock, dismiss = st.columns(2)
                if unlock.form_submit_button("Unlock and add") and name in pending:
                    ingest(name, pending[name], st.empty(), password)
                    engine.save_indexes()
                    st.rerun()  # the form and any earlier error for this file go once it is unlocked
                if dismiss.form_submit_button("Dismiss"):
                    files_state.pop(name, None)
                    pending.pop(name, None)
                    st.rerun()
            continue
        text, button = st.columns([7, 1], vertical_alignment="center")
        show = {"failed": text.error, "duplicate": text.info}.get(entry["state"], text.success)
        named = entry["line"] if name in entry["line"] else f"{name}: {entry['line']}"
        show(named, icon=ICONS[entry["state"]])
        if button.button("Dismiss", key=f"dismiss-{name}"):
            files_state.pop(name, None)
            st.rerun()
for kind, line in st.session_state.pop("library_notice", []):
    getattr(st, kind)(line)

st.header("Library")
documents = engine.documents()
if not documents:
    st.info("No documents yet. Add some above; voice notes go on the Transcripts page.")
    st.stop()


def doc_date(d: dict) -> str:
    return d["meta"].get("doc_date") or ""


frame = pd.DataFrame([{
    "name": d["filename"], "title": d["meta"].get("doc_title") or "", "date": doc_date(d), "date from": d["meta"].get("doc_date_source") or "",
    "type": d["filetype"], "doc type": d["doc_type"], "sensitivity": d["sensitivity"], "redactions": d["redactions"],
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
    st.session_state["library_notice"] = [("success", f"Deleted {', '.join(d['filename'] for d in chosen)}")]
    st.rerun()
if cols[1].button(f"Re-index selected ({len(chosen)})", disabled=not chosen):
    notices = []
    for d in chosen:
        try:
            engine.reindex_document(d["id"])
            notices.append(("success", f"Re-indexed {d['filename']}"))
        except EchoMindError as exc:
            notices.append(("error", f"{d['filename']}: {exc}"))
    st.session_state["library_notice"] = notices
    st.rerun()

st.header("Chunk browser")
names = {d["id"]: f"{d['filename']} ({d['doc_type']})" for d in documents}
doc_id = st.selectbox("Document", list(names), format_func=names.get)
current = next(d for d in documents if d["id"] == doc_id)
chunks = engine.document_chunks(doc_id)
searchable = [c for c in chunks if not c["source"]["is_parent"]]  # parents repeat their children's text
found = Counter(m.group(1) for c in searchable for m in REDACTION.finditer(c["text"]))
meta = current["meta"]
st.markdown(f"**Title:** {meta.get('doc_title') or '—'} · **Date:** {meta.get('doc_date') or 'none (upload day ' + current['created_at'][:10] + ' is used)'}"
            + (f" ({meta['doc_date_source']})" if meta.get("doc_date_source") else ""))
st.markdown("**Redactions in this document:** " + (", ".join(f"{n} {kind.lower()}" for kind, n in found.most_common()) if found else "none")
            + (f" in {sum(1 for c in searchable if REDACTION.search(c['text']))} chunks" if found else ""))
only_redacted = st.toggle("Only chunks with redactions", disabled=not found)
shown = [c for c in chunks if REDACTION.search(c["text"])] if only_redacted else chunks
rows = [{"#": c["source"]["chunk_index"], "kind": "parent" if c["source"]["is_parent"] else ("child" if c["source"].get("parent_chunk_id") else "chunk"),
         "section": c["source"].get("section"), "page": c["source"].get("page"), "slide": c["source"].get("slide"), "row": c["source"].get("row"),
         "chars": len(c["text"]), "redactions": len(REDACTION.findall(c["text"])), "text": c["text"][:160]} for c in shown]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
numbers = [c["source"]["chunk_index"] for c in shown]
if numbers:
    index = st.selectbox("Show chunk #", numbers)
    chunk = next(c for c in shown if c["source"]["chunk_index"] == index)
    if chunk["source"].get("context"):
        st.caption(f"Indexed with the header: {chunk['source']['context']}")
    marked = REDACTION.sub(lambda m: f"<mark style='background:#ffd7d7;color:#8a0000'>{m.group(0)}</mark>", html.escape(chunk["text"]))
    st.html(f"<div data-testid='chunk-text' style='white-space:pre-wrap;font-family:monospace;font-size:0.85rem'>{marked}</div>")
