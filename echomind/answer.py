"""One chat turn (seed 1.4): keep the user's message, pick the path (general / no relevant context /
RAG), stream the answer, then cite, store and update the conversation summary."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from . import prompts
from .context import Block, build_blocks, fit, render
from .errors import LLMError
from .providers.llm import LLM, complete, stream_with_deadline
from .retrieval import Retrieval, retrieve
from .settings import RetrievalSettings

GENERAL = re.compile(
    r"^\s*(hi|hello|hey|yo|good (morning|afternoon|evening)|thanks?( you)?|thank you( so much)?|thx|cheers|ok(ay)?|cool|great|nice|"
    r"bye|goodbye|see you|who are you\??|what can you do\??|how are you\??)[\s!.?]*$", re.I)


def is_general_conversation(message: str) -> bool:
    """Greetings, thanks and short non-questions need no retrieval."""
    text = message.strip()
    if GENERAL.match(text):
        return True
    return len(text.split()) <= 2 and "?" not in text and not re.search(r"\d", text) and text.lower() in {"yes", "no", "sure", "fine", "wow", "lol", "hmm"}


@dataclass
class Citation:
    number: int
    chunk_id: str
    doc_id: str
    filename: str
    position: dict[str, Any]
    chunk_index: int
    score: float
    relevance: float
    snippet: str
    text: str
    cited: bool


@dataclass
class Answer:
    chat_id: str
    question: str
    path: str  # "general" | "no_context" | "rag"
    backend: str
    retrieval: Retrieval | None = None
    blocks: list[Block] = field(default_factory=list)
    dropped_blocks: int = 0
    text: str = ""
    citations: list[Citation] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    error: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    message_id: int | None = None
    _pieces: Iterator[str] | None = None
    _engine: Any = None
    _settings: RetrievalSettings | None = None

    @property
    def no_relevant_documents(self) -> bool:
        return self.path == "no_context"

    def stream(self) -> Iterator[str]:
        """Text pieces as they come; the turn is stored when the stream ends (or fails)."""
        t = time.perf_counter()
        first = None
        parts: list[str] = []
        try:
            for piece in self._pieces or iter(()):
                if first is None:
                    first = (time.perf_counter() - t) * 1000
                parts.append(piece)
                yield piece
        except LLMError as exc:
            self.error = str(exc)
            notice = f"\n\n⚠️ {exc} Your question is saved; try again or switch the model in Settings."
            parts.append(notice)
            yield notice
        if self.path == "rag" and not self.error and prompts.echoes_prompt("".join(parts)):
            fallback = extractive_answer(self.question, self.retrieval.standalone, self.blocks)
            notice = "\n\n⚠️ The model repeated the prompt instead of answering; here are the closest passages.\n\n"
            yield notice + fallback
            parts = [notice.strip() + "\n\n" + fallback]
        self.timings_ms["first_token"] = first if first is not None else (time.perf_counter() - t) * 1000
        self.timings_ms["generation"] = (time.perf_counter() - t) * 1000
        self.text = "".join(parts).strip()
        self._finish()

    def complete(self) -> "Answer":
        for _ in self.stream():
            pass
        return self

    def inspector(self) -> dict[str, Any]:
        """Everything the Chat page's inspector shows, as plain data stored with the message."""
        r = self.retrieval
        if r is None:
            return {"path": self.path}
        used = {b.hit.chunk_id for b in self.blocks}
        rows = []
        for rank, hit in enumerate(r.hits, 1):
            t = hit.trace
            rows.append({
                "rank": rank, "file": hit.source.get("filename"), "where": _where(hit.source), "chunk": hit.source.get("chunk_index"),
                "dense rank": t.get("dense_rank"), "dense score": t.get("dense_score"), "bm25 rank": t.get("sparse_rank"),
                "bm25 score": t.get("sparse_score"), "fused": t.get("fused"), "recency": t.get("recency"), "tag boost": t.get("tag_boost"),
                "authoritative": bool(t.get("authoritative_moved_up")), "rerank": t.get("rerank_score"), "relevance": t.get("relevance"),
                "final": t.get("final"), "passed": t.get("passed_threshold"), "in context": hit.chunk_id in used,
                "found by": " | ".join(t.get("queries", [])), "chunk_id": hit.chunk_id, "text": hit.text,
            })
        return {
            "path": self.path, "question": r.question, "standalone": r.standalone, "queries": r.queries, "intent": r.intent, "mode": r.mode,
            "warnings": r.warnings, "candidates": r.candidates, "hits": rows, "dropped_blocks": self.dropped_blocks,
            "blocks": [{"number": b.number, "kind": b.kind, "label": b.label, "text": b.text} for b in self.blocks],
            "timings_ms": self.timings_ms, "threshold": self._settings.relevance_threshold if self._settings else None,
        }

    def _finish(self) -> None:
        engine = self._engine
        self.citations, self.invalid_citations = citations_for(self.text, self.blocks)
        meta = {"path": self.path, "backend": self.backend, "error": self.error, "timings_ms": self.timings_ms,
                "citations": [c.__dict__ for c in self.citations], "invalid_citations": self.invalid_citations,
                "standalone": self.retrieval.standalone if self.retrieval else None, "inspector": self.inspector()}
        self.message_id = engine.chats.add_message(self.chat_id, "assistant", self.text, meta)
        t = time.perf_counter()
        if not self.error:
            engine.update_summary(self.chat_id, self.question, self.text)
        self.timings_ms["summary"] = (time.perf_counter() - t) * 1000


def _where(source: dict[str, Any]) -> str:
    parts = []
    for key, label in (("page", "p."), ("slide", "slide"), ("sheet", "sheet"), ("row", "row")):
        if source.get(key) is not None:
            end = source.get(f"{key}_end")
            parts.append(f"{label} {source[key]}" + (f"-{end}" if end else ""))
    return ", ".join(parts)


def citations_for(text: str, blocks: list[Block]) -> tuple[list[Citation], list[int]]:
    """The blocks the answer cites (or, if it cites none, every block it was given), and the [n]
    that point to no block."""
    numbers = [int(n) for n in re.findall(r"\[(\d{1,3})\]", text)]
    by_number = {b.number: b for b in blocks}
    invalid = sorted({n for n in numbers if n not in by_number})
    cited = [n for n in dict.fromkeys(numbers) if n in by_number]
    chosen = [(by_number[n], True) for n in cited] or [(b, False) for b in blocks]
    out = []
    for block, was_cited in chosen:
        hit = block.hit
        position = {k: hit.source[k] for k in ("page", "page_end", "slide", "sheet", "row", "row_end") if hit.source.get(k) is not None}
        out.append(Citation(block.number, hit.chunk_id, hit.doc_id, hit.source.get("filename", ""), position, hit.source.get("chunk_index", 0),
                            hit.trace.get("final", hit.score), hit.trace.get("relevance", 0.0), " ".join(hit.text.split())[:240], hit.text, was_cited))
    return out, invalid


def extractive_answer(question: str, standalone: str, blocks: list[Block], limit: int = 3) -> str:
    """No LLM: the sentences of the best blocks that share most words with the question (its own
    words count twice: the words a follow-up borrowed from earlier turns only break ties), cited."""
    own, borrowed = prompts.content_words(question), prompts.content_words(standalone)
    picked = []
    for block in blocks:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", block.text) if len(s) > 20]
        if not sentences:
            continue
        best = max(sentences, key=lambda s: (2 * len(prompts.content_words(s) & own) + len(prompts.content_words(s) & borrowed), -sentences.index(s)))
        picked.append(f"{best.strip()} [{block.number}]")
        if len(picked) == limit:
            break
    if not picked:
        return prompts.NOT_ENOUGH
    return "From your documents:\n\n" + "\n\n".join(f"- {p}" for p in picked)


def _words(text: str) -> Iterator[str]:
    for piece in re.findall(r"\S+\s*", text):
        yield piece


def start_turn(engine, chat_id: str, message: str, settings: RetrievalSettings, llm: LLM | None) -> Answer:
    """Everything up to the first token; ``Answer.stream()`` does the rest."""
    config = engine.config
    chat = engine.chats.get(chat_id)
    history = [{"role": m["role"], "content": m["content"]} for m in engine.chats.messages(chat_id, limit=10)]
    engine.chats.add_message(chat_id, "user", message)  # before anything can fail
    backend = llm.name if llm is not None else "none (extractive)"
    summary = chat["conversation_summary"]
    system_general = prompts.with_persona(prompts.GENERAL_SYSTEM, config.persona)

    def general_messages() -> list[dict[str, str]]:
        if summary:
            return [{"role": "system", "content": system_general}, {"role": "user", "content": f"Conversation summary: {summary}\n\n{message}"}]
        return [{"role": "system", "content": system_general}, *history, {"role": "user", "content": message}]

    answer = Answer(chat_id, message, "general", backend, _engine=engine, _settings=settings)
    if is_general_conversation(message):
        answer._pieces = _generate(llm, general_messages(), config) if llm else _words("Hello! Ask me anything about your documents and voice notes.")
        return answer

    retrieval = retrieve(engine, message, settings, llm, history, summary, config.llm_timeout_s)
    answer.retrieval = retrieval
    answer.timings_ms.update(retrieval.timings_ms)
    relevant = retrieval.relevant
    if not relevant:
        answer.path = "no_context"
        best = retrieval.best_relevance
        note = (f"No document was relevant enough (best relevance {best:.2f}, threshold {settings.relevance_threshold:.2f})."
                if retrieval.hits else "There is nothing in your documents to search yet.")
        answer._pieces = _generate(llm, general_messages(), config) if llm else _words(f"{note} {prompts.NOT_ENOUGH}")
        return answer

    t = time.perf_counter()
    blocks = build_blocks(engine, retrieval.standalone, relevant, settings, llm, config.llm_timeout_s)
    answer.timings_ms["context"] = (time.perf_counter() - t) * 1000
    answer.path = "rag"
    system = prompts.with_persona(prompts.RAG_SYSTEM, config.persona)
    if llm is None:
        answer.blocks = blocks
        answer._pieces = _words(extractive_answer(message, retrieval.standalone, blocks))
        return answer
    fixed = llm.count_tokens(system + prompts.rag_user_message(message, "", summary)) + 32
    budget = llm.context_tokens - config.llm_max_tokens - fixed
    answer.blocks, answer.dropped_blocks = fit(blocks, budget, llm.count_tokens)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompts.rag_user_message(message, render(answer.blocks), summary)}]
    answer._pieces = _generate(llm, messages, config)
    return answer


def _generate(llm: LLM, messages: list[dict[str, str]], config) -> Iterator[str]:
    return stream_with_deadline(llm, messages, config.llm_max_tokens, config.temperature, config.llm_timeout_s)


def updated_summary(llm: LLM | None, summary: str, question: str, answer: str, timeout_s: float) -> str:
    """The LLM's update when it is usable; otherwise a plain running list of what the user asked."""
    if llm is not None:
        try:
            output = complete(llm, [{"role": "user", "content": prompts.SUMMARY.format(summary=summary or "(none)", question=question, answer=answer[:800])}],
                              max_tokens=140, timeout_s=timeout_s)
            parsed = prompts.parse_summary(output)
            if parsed:
                return parsed
        except Exception:
            pass
    asked = [s for s in re.split(r"\s*;\s*", summary.removeprefix("The user asked about: ")) if s] if summary.startswith("The user asked about: ") else []
    asked = (asked + [" ".join(question.split())[:120]])[-5:]
    return "The user asked about: " + "; ".join(asked)
