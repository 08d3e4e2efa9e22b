"""Chat: several chats, streamed grounded answers with citations, and an inspector for each answer."""

import streamlit as st

from echomind.errors import EchoMindError
from echomind.ui import widgets
from echomind.ui.state import current_chat, get_engine

engine = get_engine()
settings = st.session_state["retrieval_settings"]
chat_id = current_chat(engine)
chats = engine.chats.list()

with st.session_state.get("sidebar_top", st.sidebar):
    st.subheader("Chats")
    titles = {c["id"]: c["title"] for c in chats}
    choice = st.selectbox("Chat", list(titles), index=list(titles).index(chat_id), format_func=titles.get, label_visibility="collapsed")
    if choice != chat_id:
        st.session_state["chat_id"] = chat_id = choice
    cols = st.columns(2)
    if cols[0].button("New chat", width="stretch"):
        st.session_state["chat_id"] = engine.chats.create()
        st.rerun()
    if cols[1].button("Delete chat", width="stretch"):
        engine.chats.delete(chat_id)
        st.session_state.pop("chat_id", None)
        st.rerun()
    with st.form("rename", border=False):
        title = st.text_input("Rename chat", value=titles[chat_id])
        if st.form_submit_button("Rename") and title.strip():
            engine.chats.rename(chat_id, title)
            st.rerun()

st.title(titles.get(chat_id, "Chat"))
documents = engine.counts()["documents"]
st.caption(f"Answering with **{engine.answerer_label()}** · {documents} document{'' if documents == 1 else 's'} in the library")
if not documents:
    st.info("Your library is empty. Add documents or voice-note transcripts first, then ask questions about them.")
    if "pages" in st.session_state:  # (absent when the page runs alone under AppTest)
        st.page_link(st.session_state["pages"]["upload"], label="Upload documents", icon=":material/upload_file:")

for message in engine.chats.messages(chat_id):
    with st.chat_message(message["role"]):
        meta = message["meta"]
        if message["role"] == "assistant" and meta.get("path") == "no_context":
            st.caption("No document was relevant to this question.")
        elif message["role"] == "assistant" and meta.get("path") == "no_answer":
            st.caption("Relevant passages were found, but none answers this question (see Sources).")
        st.markdown(message["content"])
        if message["role"] == "assistant":
            for notice in meta.get("notices") or []:
                st.caption(f"⚠️ {notice}")
            if settings.show_sources:
                widgets.sources(meta)
            widgets.inspector(meta, engine, key=str(message['id']))

turn = engine.running_turn(chat_id)
busy = turn is not None and turn.running
question = st.chat_input("Ask about your documents and voice notes", disabled=busy, key="chat_input")
if question and not busy:
    try:
        engine.start_turn(chat_id, question, settings)
    except EchoMindError as exc:
        st.error(str(exc))
        st.stop()
    if titles.get(chat_id) == "New chat":
        engine.chats.rename(chat_id, widgets.short_title(question))
    st.rerun()
if busy:
    with st.chat_message("assistant"):
        stage = st.empty()
        text = st.empty()
        st.button("Stop", key=f"stop-{chat_id}", on_click=turn.stop, icon=":material/stop_circle:")
        while not turn.wait(0.15):
            stage.caption(f"**Working:** {turn.stage}… ({turn.elapsed:.0f} s)")
            if turn.text:
                text.markdown(turn.text + " ▌")
    st.rerun()
