"""Settings: the LLM backend and model, the embedder, persona, upload limits and PII redaction, saved across restarts."""

import streamlit as st

from echomind.errors import EchoMindError
from echomind.providers.ollama_llm import OllamaLLM
from echomind.ui.state import get_engine, restart_engine

engine = get_engine()
config = engine.config
st.title("Settings")
# Every widget has a key: its identity then survives a save that changes its starting value, so the
# next change to it is not lost.

st.subheader("Language model")
backends = ["auto", "ollama", "embedded", "none"]
backend = st.radio("Backend", backends, index=backends.index(config.llm_backend), horizontal=True, key="set_backend",
                   help="auto: Ollama when a server answers with the model, else extractive answers (cited sentences from your documents), "
                        "which measured better than the embedded SmolLM2-135M (see the README). embedded: the small model chooses "
                        "among the cited sentences. none: extractive answers.")
host = st.text_input("Ollama host", value=config.ollama_host, key="set_host")
models = st.session_state.get("ollama_models")
if st.button("List the server's models"):
    try:
        st.session_state["ollama_models"] = models = OllamaLLM(host, config.ollama_model).list_models()
    except EchoMindError as exc:
        st.error(str(exc))
if models:
    model = st.selectbox("Ollama model", models, index=models.index(config.ollama_model) if config.ollama_model in models else 0, key="set_model_pick")
else:
    model = st.text_input("Ollama model", value=config.ollama_model, key="set_model")
gguf = st.text_input("GGUF file for the embedded model (empty: SmolLM2-135M-Instruct shipped with EchoMind)", value=config.gguf_path, key="set_gguf")
persona = st.text_area("Persona (added to the system prompt)", value=config.persona, key="set_persona")

st.subheader("Documents")
embedders = ["minilm-int8", "ollama"]
embedder = st.radio("Embedding model", embedders, index=embedders.index(config.embedder), horizontal=True, key="set_embedder")
if embedder != config.embedder:
    st.warning("Changing the embedding model re-embeds every chunk in the library when you save. This can take a while.")
upload_mb = st.number_input("Upload limit (MB per file)", 1, 2000, value=config.max_upload_mb, key="set_upload_mb",
                            help="The browser upload is also capped by server.maxUploadSize in .streamlit/config.toml (200 MB).")
redact = st.toggle("Redact personal data", value=config.redact_pii, key="set_redact_pii",
                   help="E-mail addresses, phone numbers, SSNs, card and account numbers become [REDACTED_EMAIL], [REDACTED_PHONE], … "
                        "in the indexed text; the chunk browser on the Upload page shows each one.")
st.caption("Applies to documents added after you save. To apply it to documents already in the library, select them on the "
           "Upload page and press **Re-index selected**.")
limit_cols = st.columns(2)
table_rows = limit_cols[0].number_input("Rows per CSV/XLSX file", 1, 10_000_000, value=config.max_table_rows, step=10_000, key="set_table_rows")
max_chunks = limit_cols[1].number_input("Chunks per document", 1, 10_000_000, value=config.max_chunks_per_document, step=1_000, key="set_max_chunks",
                                        help="About 25 chunks are embedded per second on a 2-core laptop.")

if st.button("Save settings", type="primary"):
    changed_embedder = embedder != config.embedder
    config.llm_backend, config.ollama_host, config.ollama_model = backend, host, model.removesuffix(":latest") if model else config.ollama_model
    config.gguf_path, config.persona, config.embedder, config.max_upload_mb = gguf.strip(), persona, embedder, int(upload_mb)
    config.max_table_rows, config.max_chunks_per_document = int(table_rows), int(max_chunks)
    config.redact_pii = bool(redact)
    config.save()
    try:
        if changed_embedder:
            engine = restart_engine()
        else:
            engine.reconfigure()
        st.success(f"Saved. Answers now come from {engine.answerer_label()}.")
    except EchoMindError as exc:
        st.error(f"Saved, but the model could not be loaded: {exc}")

st.subheader("Library health")
st.caption(f"Data directory: {config.data_dir}")
if st.button("Check index consistency"):
    report = engine.check_consistency()
    if report["consistent"]:
        st.success(f"SQLite, FAISS and BM25 agree on {report['sqlite']} chunks.")
    else:
        st.warning(f"Out of step: {report}. Rebuilding from SQLite…")
        report = engine.repair()
        (st.success if report["consistent"] else st.error)(f"After the repair: {report}")
