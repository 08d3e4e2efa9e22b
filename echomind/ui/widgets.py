"""Pieces the pages share: citations under an answer and the retrieval inspector."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st


def short_title(question: str, limit: int = 60) -> str:
    """A chat title from its first question, cut at a word boundary."""
    text = " ".join(question.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(",;:") + "…"


def where(citation: dict[str, Any]) -> str:
    position = citation.get("position") or {}
    parts = []
    for key, label in (("page", "p."), ("slide", "slide"), ("sheet", "sheet"), ("row", "row")):
        if key in position:
            end = position.get(f"{key}_end")
            parts.append(f"{label} {position[key]}" + (f"-{end}" if end else ""))
    return ", ".join(parts)


def sources(meta: dict[str, Any]) -> None:
    citations = meta.get("citations") or []
    if not citations:
        return
    cited = any(c["cited"] for c in citations)
    with st.expander(f"Sources ({len(citations)})" + ("" if cited else " – context given, none cited")):
        for c in citations:
            st.markdown(f"**[{c['number']}] {c['filename']}** {where(c)} · chunk {c['chunk_index']} · score {c['score']:.2f} · relevance {c['relevance']:.2f}")
            st.caption(c["snippet"])
            with st.popover("Full chunk"):
                st.text(c["text"])
    if meta.get("invalid_citations"):
        st.warning(f"The answer cites {', '.join(f'[{n}]' for n in meta['invalid_citations'])}, which point to no source.")


def pick_for_lab(engine, question: str, chunk_id: str) -> str:
    """'This chunk answers it': into the Lab's current test set, else one called 'From chat'."""
    lab = engine.lab
    sets = {s["id"]: s["name"] for s in lab.sets()}
    set_id = st.session_state.get("lab_set")
    if set_id not in sets:
        set_id = next((i for i, n in sets.items() if n == "From chat"), None) or lab.create_set("From chat", source="inspector")
        st.session_state["lab_set"] = set_id
    lab.add_question(set_id, question, {f"chunk:{chunk_id}": 1})
    return lab.get_set(set_id)["name"]


def inspector(meta: dict[str, Any], engine=None, key: str = "") -> None:
    """``engine`` given: each ranked chunk gets a '✓ answers it' button that adds it to the Lab."""
    data = meta.get("inspector") or {}
    if "hits" not in data:
        return
    with st.expander("Inspector: how this answer was found"):
        st.markdown(f"**Question used for search:** {data['standalone']}")
        if len(data["queries"]) > 1:
            st.markdown("**Query variants:** " + " · ".join(f"`{q}`" for q in data["queries"]) + (f" (intent: {data['intent']})" if data.get("intent") else ""))
        st.caption(f"Mode: {data['mode']} · {data['candidates']} candidates · threshold {data['threshold']} · path: {data['path']}")
        for warning in data.get("warnings", []):
            st.warning(warning)
        hits = data["hits"]
        if hits:
            st.markdown("**Ranking**")
            for h in hits:
                line = (f"#{h['rank']} {h['file']} {h['where']} · chunk {h['chunk']} · final {h['final']:.3f} · relevance {h['relevance']:.2f}"
                        + (" ✓" if h["passed"] else " ✗"))
                if engine is None:
                    st.markdown(line)
                    continue
                cols = st.columns([5, 1], vertical_alignment="center")
                cols[0].markdown(line)
                if cols[1].button("✓ answers it", key=f"pick-{key}-{h['chunk_id']}", help="Add this question and chunk to a Lab test set"):
                    name = pick_for_lab(engine, data["standalone"], h["chunk_id"])
                    st.toast(f"Added to the test set '{name}'")
            frame = pd.DataFrame([{k: v for k, v in h.items() if k not in ("text", "chunk_id")} for h in hits])
            st.dataframe(frame, hide_index=True, width="stretch")
        if data.get("blocks"):
            st.markdown("**Context sent to the model**" + (f" ({data['dropped_blocks']} block(s) dropped to fit the window)" if data.get("dropped_blocks") else ""))
            for block in data["blocks"]:
                st.markdown(f"`[{block['number']}]` *{block['kind']}* — {block['label']}")
                st.caption(block["text"][:600])
        support = data.get("support") or {}
        if support.get("checked"):
            removed = support.get("removed") or []
            unsupported = support.get("unsupported") or []
            st.markdown(f"**Support check:** {support['checked']} sentence(s) checked; every number, date, amount and name must stand in a "
                        f"cited passage. " + ("All supported." if not removed and not unsupported else ""))
            for r in removed:
                st.caption(f"Removed: “{r['sentence'][:200]}” — not in any cited passage: {', '.join(r['unsupported'])}")
            for claims in unsupported:
                st.caption(f"Unsupported in the answer: {', '.join(claims)}")
        timings = {k: round(v) for k, v in (data.get("timings_ms") or {}).items()}
        st.caption("Latency (ms): " + ", ".join(f"{k} {v}" for k, v in timings.items()))
