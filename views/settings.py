"""Settings: the LLM backend and model, the embedder, persona, upload limits and PII redaction, saved across restarts."""

import streamlit as st

from echomind.errors import EchoMindError
from echomind.providers.ollama_llm import OllamaLLM
from echomind.providers.openai_llm import OpenAICompatibleLLM, mask_key, remote_host, resolve_api_key
from echomind.settings import EMBEDDERS, LLM_BACKENDS
from echomind.ui.state import get_engine, restart_engine

engine = get_engine()
config = engine.config
st.title("Settings")
# Every widget has a key: its identity then survives a save that changes its starting value, so the
# next change to it is not lost.

st.subheader("Language model")
backends = list(LLM_BACKENDS)
backend = st.radio("Backend", backends, index=backends.index(config.llm_backend), horizontal=True, key="set_backend",
                   help="auto: Ollama when a server answers with the model, else the OpenAI-compatible server below if you named a "
                        "model for it and it answers, else extractive answers (cited sentences from your documents), which measured "
                        "better than the embedded SmolLM2-135M (see the README). openai: any OpenAI-compatible server (llama.cpp, "
                        "LM Studio, vLLM, LocalAI, Jan, a hosted API). embedded: the small model chooses among the cited sentences. "
                        "none: extractive answers.")
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
st.markdown("**OpenAI-compatible server**")
base_url = st.text_input("Base URL", value=config.openai_base_url, key="set_openai_url", help="e.g. http://127.0.0.1:8080/v1 (llama.cpp), "
                         "http://127.0.0.1:1234/v1 (LM Studio), https://api.openai.com/v1")
remote = remote_host(base_url)
st.caption(f"Passages from your documents are sent to **{remote}**." if remote else "Local: the server runs on this machine.")
key_typed = st.text_input("API key", value="", type="password", key="set_openai_key",
                          placeholder=f"saved: {mask_key(config.openai_api_key)}" if config.openai_api_key
                          else "from OPENAI_API_KEY" if resolve_api_key("") else "none (local servers need none)",
                          help="Stored only in settings.json in your data directory (owner-only). Leave empty to keep the saved key.")
forget_key = bool(config.openai_api_key) and st.checkbox("Forget the saved key", key="set_openai_forget")
openai_models = st.session_state.get("openai_models")
if st.button("List the server's models", key="set_openai_list"):
    try:
        st.session_state["openai_models"] = openai_models = OpenAICompatibleLLM(base_url, key_typed or config.openai_api_key, "").list_models()
    except EchoMindError as exc:
        st.error(str(exc))
if openai_models:
    openai_model = st.selectbox("Model on the server", openai_models, key="set_openai_model_pick",
                                index=openai_models.index(config.openai_model) if config.openai_model in openai_models else 0)
else:
    openai_model = st.text_input("Model on the server (empty: its first model; auto uses the server only when one is named)",
                                 value=config.openai_model, key="set_openai_model")
gguf = st.text_input("GGUF file for the embedded model (empty: SmolLM2-135M-Instruct shipped with EchoMind)", value=config.gguf_path, key="set_gguf")
persona = st.text_area("Persona (added to the system prompt)", value=config.persona, key="set_persona")

st.subheader("Documents")
embedders = list(EMBEDDERS)
embedder = st.radio("Embedding model", embedders, index=embedders.index(config.embedder), horizontal=True, key="set_embedder")
if embedder == "openai":
    st.caption("Embeddings come from the OpenAI-compatible server above" + (f" (texts are sent to **{remote}**)." if remote else " (local)."))
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
    changed_embedder = embedder != config.embedder or (embedder == "openai" and base_url.strip() != config.openai_base_url)
    config.llm_backend, config.ollama_host, config.ollama_model = backend, host, model.removesuffix(":latest") if model else config.ollama_model
    config.gguf_path, config.persona, config.embedder, config.max_upload_mb = gguf.strip(), persona, embedder, int(upload_mb)
    config.max_table_rows, config.max_chunks_per_document = int(table_rows), int(max_chunks)
    config.redact_pii = bool(redact)
    config.openai_base_url, config.openai_model = base_url.strip(), (openai_model or "").strip()
    if key_typed or forget_key:
        config.openai_api_key = "" if forget_key else key_typed.strip()
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
