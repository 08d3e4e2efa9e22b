"""The live retrieval knobs, on every page. Values live in session_state and become one
RetrievalSettings for the next question; "Reset to defaults" puts the seed's values back."""

from __future__ import annotations

import dataclasses

import streamlit as st

from ..settings import FILE_TYPES, TIME_WINDOWS, RetrievalSettings
from .state import get_engine

DEFAULTS = RetrievalSettings()
PREFIX = "knob_"
DATES = ("date_from", "date_to")  # date widgets hold a date or None; settings hold "YYYY-MM-DD" or ""


def _key(name: str) -> str:
    return PREFIX + name


def _reset() -> None:
    for f in dataclasses.fields(RetrievalSettings):
        st.session_state.pop(_key(f.name), None)


def knobs() -> RetrievalSettings:
    for f in dataclasses.fields(RetrievalSettings):
        default = getattr(DEFAULTS, f.name)
        st.session_state.setdefault(_key(f.name), None if f.name in DATES else list(default) if isinstance(default, tuple) else default)
    side = st.sidebar
    side.subheader("Retrieval knobs")
    with side.expander("Search", expanded=True):
        st.number_input("Top-k chunks", 1, 50, key=_key("top_k"))
        st.number_input("k per query", 1, 200, key=_key("k_per_query"))
        st.number_input("Dense weight", 0.0, 1.0, step=0.1, key=_key("dense_weight"), format="%.2f")
        st.number_input("Sparse (BM25) weight", 0.0, 1.0, step=0.1, key=_key("sparse_weight"), format="%.2f")
        st.slider("Relevance threshold", 0.0, 1.0, step=0.05, key=_key("relevance_threshold"),
                  help="Compared with each hit's relevance in [0, 1]: rerank score / 10, or the calibrated cosine similarity.")
        st.slider("Minimum evidence to answer", 0.0, 1.0, step=0.05, key=_key("min_evidence"),
                  help="Answers without an LLM (and with the small embedded one) quote the best sentences only when the best one "
                       "answers the question this likely; below it, the answer says no passage answers it.")
    with side.expander("Query"):
        st.toggle("Condense follow-up questions", key=_key("condense_followups"))
        st.toggle("Query expansion", key=_key("query_expansion"))
        st.toggle("Intent-aware rewriting", key=_key("intent_aware"))
    with side.expander("Time, tags and sources"):
        st.selectbox("Time window", list(TIME_WINDOWS), key=_key("time_window"))
        st.number_input("Recency half-life (days, 0 = off)", 0.0, 3650.0, step=1.0, key=_key("recency_halflife_days"))
        st.number_input("Tag boost factor (0 = off)", 0.0, 2.0, step=0.1, key=_key("tag_boost"))
        st.toggle("Prefer uploaded documents in near-ties", key=_key("prefer_authoritative"))
        st.selectbox("Search in", ["all", "documents", "transcripts"], key=_key("source_type"))
        in_library = {d["filetype"] for d in get_engine().documents()}
        st.multiselect("File types (none = all)", sorted(in_library | set(st.session_state[_key("file_types")])) or list(FILE_TYPES),
                       key=_key("file_types"), placeholder="All file types")
        st.date_input("Documents dated from", key=_key("date_from"), format="YYYY-MM-DD",
                      help="The document's own date (a filing's period end, front-matter, a date in the file name); the upload day when it has none.")
        st.date_input("Documents dated up to", key=_key("date_to"), format="YYYY-MM-DD")
    with side.expander("Rerank and context"):
        st.toggle("LLM rerank", key=_key("rerank"))
        st.number_input("Rerank candidates", 1, 50, key=_key("rerank_candidates"))
        st.number_input("Rerank keeps top n", 1, 50, key=_key("rerank_top_n"))
        st.number_input("Parent context (chars)", 100, 8000, step=100, key=_key("parent_context_max_chars"))
        st.toggle("LLM compression", key=_key("compression"))
        st.toggle("Sentence dedupe", key=_key("dedupe_sentences"))
        st.toggle("Show sources", key=_key("show_sources"))
    side.button("Reset to defaults", on_click=_reset, width="stretch")
    values = {f.name: st.session_state[_key(f.name)] for f in dataclasses.fields(RetrievalSettings)}
    values["doc_ids"] = tuple(st.session_state.get("doc_filter", ()))
    values["file_types"] = tuple(values["file_types"] or ())
    for name in DATES:
        values[name] = values[name].isoformat() if values[name] else ""
    try:
        return RetrievalSettings(**values)
    except ValueError as exc:
        side.error(str(exc))
        return DEFAULTS
