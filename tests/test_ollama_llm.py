"""The Ollama chat backend through the real ``ollama`` client over HTTP: streaming, model list, "auto"
selection, and a server that is missing, dies mid-stream, is slow or sends garbage."""

from __future__ import annotations

import socket

import pytest

from echomind.errors import LLMError
from echomind.providers.llm import complete, make_llm, stream_with_deadline
from echomind.providers.ollama_llm import OllamaLLM
from echomind.settings import AppConfig, RetrievalSettings
from ollama_server import FakeOllama

AURORA = b"The Aurora X2 espresso machine costs 499 euros and has a 15 bar pump."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streams_pieces_and_sends_the_window_size():
    with FakeOllama(reply=lambda p: "one two three four") as server:
        llm = OllamaLLM(server.host, "llama3.2", context_tokens=3000)
        pieces = list(llm.stream([{"role": "user", "content": "hi"}], max_tokens=50, temperature=0.1))
        assert "".join(pieces) == "one two three four" and len(pieces) == 4
        assert llm.list_models() == ["llama3.2:latest", "nomic-embed-text:latest"]
    request = [r for r in server.requests if r["path"] == "/api/chat"][0]
    assert request["options"]["num_ctx"] == 3000 and request["options"]["num_predict"] == 50 and request["stream"] is True


def test_auto_prefers_a_reachable_ollama_with_the_model(tmp_path):
    with FakeOllama() as server:
        assert make_llm(AppConfig(data_dir=tmp_path, ollama_host=server.host, ollama_model="llama3.2")).name == "ollama:llama3.2"
        fallback = make_llm(AppConfig(data_dir=tmp_path, ollama_host=server.host, ollama_model="mistral"))
        assert fallback is None  # model missing: not Ollama, and extractive answers (measured better than the embedded model)
    down = make_llm(AppConfig(data_dir=tmp_path, ollama_host=f"http://127.0.0.1:{_free_port()}"))
    assert down is None
    assert make_llm(AppConfig(data_dir=tmp_path, llm_backend="none")) is None


def test_missing_model_and_missing_server_give_clear_messages():
    with FakeOllama() as server:
        with pytest.raises(LLMError, match="ollama pull mistral"):
            complete(OllamaLLM(server.host, "mistral"), [{"role": "user", "content": "hi"}])
    with pytest.raises(LLMError, match="not reachable"):
        complete(OllamaLLM(f"http://127.0.0.1:{_free_port()}", "llama3.2"), [{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("mode,message", [("die", "broke off|stopped before"), ("garbage", "not its API's JSON")])
def test_broken_streams_raise_after_what_arrived(mode, message):
    with FakeOllama(chat_mode=mode, reply=lambda p: "alpha beta gamma delta epsilon") as server:
        llm = OllamaLLM(server.host, "llama3.2")
        received = []
        with pytest.raises(LLMError, match=message):
            for piece in stream_with_deadline(llm, [{"role": "user", "content": "hi"}], 50, 0.1, 30):
                received.append(piece)
    assert mode == "garbage" or "".join(received) == "alpha beta "


def test_slow_server_times_out():
    with FakeOllama(delay_s=3) as server:
        with pytest.raises(LLMError, match="did not answer in time"):
            complete(OllamaLLM(server.host, "llama3.2", timeout_s=0.5), [{"role": "user", "content": "hi"}])


def test_a_whole_turn_on_ollama_and_a_death_mid_answer_keeps_the_question(make_engine):
    with FakeOllama(reply=lambda p: "The Aurora X2 costs 499 euros [1]." if "Answer in one or two sentences" in p else "Summary: Aurora price.") as server:
        engine = make_engine(llm=OllamaLLM(server.host, "llama3.2"))
        engine.ingest_bytes("aurora.txt", AURORA)
        chat = engine.chats.create()
        answer = engine.ask(chat, "How much is the Aurora X2?")
        assert answer.backend == "ollama:llama3.2"
        assert "".join(answer.stream()) == "The Aurora X2 costs 499 euros [1]." and answer.citations[0].cited
        server.chat_mode = "die"
        broken = engine.ask(chat, "How much is the Aurora X2 exactly?").complete()
        assert broken.error and "Your question is saved" in broken.text
        assert [m["role"] for m in engine.chats.messages(chat)] == ["user", "assistant", "user", "assistant"]
        assert engine.chats.messages(chat)[2]["content"] == "How much is the Aurora X2 exactly?"


def test_garbage_and_slowness_in_every_llm_step_fall_back_sanely(make_engine):
    """Over the wire: expansion, rerank and tags get nonsense where lines, numbers or a list are
    expected; then the server turns slow. Answers still come, the fused order stays, tags fall back
    to keywords, and every question is kept."""
    def reply(prompt: str) -> str:
        if "Answer in one or two sentences" in prompt:
            return "The Aurora X2 costs 499 euros [1]."
        return "{{{ ☃ NaN !!! <html>"  # expansion, rerank scores, tags, summary

    with FakeOllama(reply=reply) as server:
        engine = make_engine(llm=OllamaLLM(server.host, "llama3.2", timeout_s=1.0))
        engine.ingest_bytes("aurora.txt", AURORA)
        engine.ingest_text("kettle.txt", "The Boreal kettle boils a litre of water in three minutes.")
        chat = engine.chats.create()
        plain = engine.search("How much is the Aurora X2?").hits
        settings = RetrievalSettings(query_expansion=True, rerank=True)
        answer = engine.ask(chat, "How much is the Aurora X2?", settings).complete()
        assert answer.text == "The Aurora X2 costs 499 euros [1]." and not answer.error
        retrieval = answer.retrieval
        assert retrieval.queries[0] == "How much is the Aurora X2?" and all(len(q) < 200 for q in retrieval.queries)
        assert "could not be read; the fused order is kept" in " ".join(retrieval.warnings)
        assert [h.chunk_id for h in retrieval.hits][:1] == [h.chunk_id for h in plain][:1]
        tags = engine.suggest_tags("Voice note: descale the Aurora espresso machine every month, the Aurora pump needs it.")
        assert "aurora" in tags and not any("{" in t or "☃" in t for t in tags)

        server.chat_mode, server.delay_s = "slow", 3
        slow = engine.ask(chat, "How much is the Aurora X2 with the pump?", settings).complete()
        assert slow.error and "Your question is saved" in slow.text
        assert "Rerank failed" in " ".join(slow.retrieval.warnings)
        assert [m["content"] for m in engine.chats.messages(chat) if m["role"] == "user"] == ["How much is the Aurora X2?", "How much is the Aurora X2 with the pump?"]
