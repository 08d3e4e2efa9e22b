"""The engine held for the whole server (``st.cache_resource``) and per-session defaults."""

from __future__ import annotations

import streamlit as st

from ..engine import Engine
from ..settings import AppConfig


@st.cache_resource(show_spinner="Loading EchoMind (models and indexes)…")
def get_engine() -> Engine:
    return Engine(AppConfig.load())


def restart_engine() -> Engine:
    """After an embedder change: close the engine and build a new one (which re-embeds if needed)."""
    get_engine().close()
    get_engine.clear()
    return get_engine()


def current_chat(engine: Engine) -> str:
    """The chat this session shows; the most recent one, or a new one on a fresh store."""
    chat_id = st.session_state.get("chat_id")
    chats = engine.chats.list()
    if chat_id not in {c["id"] for c in chats}:
        chat_id = chats[0]["id"] if chats else engine.chats.create()
        st.session_state["chat_id"] = chat_id
    return chat_id
