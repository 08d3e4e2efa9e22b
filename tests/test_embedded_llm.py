"""The offline LLM (SmolLM2-135M-Instruct via llama-cpp-python) end to end over real documents.
It is a weak model: these tests check the pipeline's structure and robustness, not its wisdom."""

from __future__ import annotations

import shutil

import pytest

from conftest import doc
from echomind.errors import LLMError
from echomind.providers.llm import make_llm, smollm2_path
from echomind.settings import AppConfig, RetrievalSettings


@pytest.fixture(scope="module")
def smollm(tmp_path_factory):
    return make_llm(AppConfig(data_dir=tmp_path_factory.mktemp("cfg"), llm_backend="embedded", llm_context_tokens=2048, llm_max_tokens=96))


def test_the_shipped_gguf_is_found_and_loads(smollm):
    assert smollm2_path() is not None and smollm.name == "embedded:SmolLM2-135M-Instruct.Q4_1"
    assert smollm.count_tokens("Hello world") >= 2


def test_any_gguf_path_works_and_a_wrong_one_is_explained(tmp_path):
    copy = tmp_path / "my-model.gguf"
    shutil.copy(smollm2_path(), copy)
    llm = make_llm(AppConfig(data_dir=tmp_path, llm_backend="embedded", gguf_path=str(copy), llm_context_tokens=512))
    assert llm.name == "embedded:my-model"
    assert "".join(llm.stream([{"role": "user", "content": "Say hi."}], 8, 0.0)).strip()
    with pytest.raises(LLMError, match="No GGUF model file"):
        make_llm(AppConfig(data_dir=tmp_path, llm_backend="embedded", gguf_path=str(tmp_path / "missing.gguf")))


def test_a_grounded_turn_with_the_embedded_model(make_engine, smollm):
    engine = make_engine(llm=smollm, llm_max_tokens=96, llm_context_tokens=2048)
    engine.ingest_bytes("crazyones.pdf", doc("pdf_crazyones.pdf"))
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    chat = engine.chats.create()
    answer = engine.ask(chat, "How many tracks does the LinnSequencer record?")
    assert answer.backend == "embedded:SmolLM2-135M-Instruct.Q4_1" and answer.path == "rag"
    pieces = list(answer.stream())
    assert len(pieces) > 3 and answer.text and answer.error is None
    assert answer.citations and answer.citations[0].filename == "linn.txt"
    assert answer.timings_ms["first_token"] <= answer.timings_ms["generation"]
    assert engine.chats.get(chat)["conversation_summary"]
    follow = engine.ask(chat, "and what is its memory size?")
    assert "Linn" in follow.retrieval.standalone or "linn" in follow.retrieval.standalone.lower()
    assert follow.retrieval.hits[0].source["filename"] == "linn.txt"
    follow.complete()


def test_expansion_rerank_and_tags_survive_the_small_model(make_engine, smollm):
    engine = make_engine(llm=smollm)
    engine.ingest_bytes("linn.txt", doc("groundtruth_linn.txt"))
    engine.ingest_bytes("crazyones.pdf", doc("pdf_crazyones.pdf"))
    result = engine.retrieve("How do I change the tempo?", RetrievalSettings(query_expansion=True, intent_aware=True, rerank=True,
                                                                          rerank_candidates=4, rerank_top_n=2))
    assert 1 <= len(result.queries) <= 4 and result.queries[0] == "How do I change the tempo?"
    assert result.intent in ("factual", "procedural", "exploratory", "temporal")
    assert 1 <= len(result.hits) <= 2 and result.hits[0].source["filename"] == "linn.txt" or result.warnings
    tags = engine.suggest_tags("We planned the kitchen renovation: budget, tiles, the contractor and the schedule for March.")
    assert 3 <= len(tags) <= 6 and all(len(t) <= 40 for t in tags)
