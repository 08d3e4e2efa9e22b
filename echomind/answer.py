"""One chat turn: keep the user's message, pick the path (general / no relevant context / RAG), stream
the answer, then cite, store and update the conversation summary.

Answers are grounded by construction: without a model, or with the small embedded one, the answer
quotes the context's best sentences with their citations (the small model may only choose among
them); a capable model's text passes the support check (``grounding``) a sentence at a time."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from . import extractive, prompts
from .context import Block, build_blocks, fit, render
from .errors import LLMError
from .grounding import SentenceCheck, check_sentence, checked_stream, split_sentences
from .providers.llm import LLM, choose_option, complete, stream_with_deadline
from .retrieval import Retrieval, retrieve
from .settings import RetrievalSettings

GENERAL = re.compile(
    r"^\s*(hi|hello|hey|yo|good (morning|afternoon|evening)|thanks?( you)?|thank you( so much)?|thx|cheers|ok(ay)?|cool|great|nice|"
    r"bye|goodbye|see you|who are you\??|what can you do\??|how are you\??)[\s!.?]*$", re.I)
GREETING = "Hello! Ask me anything about your documents and voice notes; I answer from them and cite where each fact stands."
EXTRACTIVE = "extractive"
MODEL_OPTIONS = 5  # candidate sentences a small model chooses among


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
    path: str  # "general" | "no_context" (nothing relevant) | "no_answer" (relevant, but no sentence answers) | "rag"
    backend: str
    retrieval: Retrieval | None = None
    blocks: list[Block] = field(default_factory=list)
    dropped_blocks: int = 0
    text: str = ""
    citations: list[Citation] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    removed: list[SentenceCheck] = field(default_factory=list)  # model sentences the support check dropped
    notices: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)  # the best candidate sentence's scores
    error: str | None = None
    stopped: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)
    message_id: int | None = None
    _pieces: Iterator[str] | None = None
    _checked: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _engine: Any = None
    _settings: RetrievalSettings | None = None

    @property
    def no_relevant_documents(self) -> bool:
        return self.path == "no_context"

    @property
    def refused(self) -> bool:
        """No answer from the documents: nothing relevant, or nothing in the context answered."""
        return self.path in ("no_context", "no_answer") or (self.path == "rag" and not any(c.cited for c in self.citations))

    def stop(self) -> None:
        """Ask a running stream to end after its current piece; what was written so far is kept."""
        self._stop.set()

    def stream(self) -> Iterator[str]:
        """Text pieces as they come; the turn is stored when the stream ends (or fails, or is stopped)."""
        t = time.perf_counter()
        first = None
        parts: list[str] = []
        pieces = self._pieces or iter(())
        try:
            for piece in pieces:
                if first is None:
                    first = (time.perf_counter() - t) * 1000
                parts.append(piece)
                yield piece
                if self._stop.is_set():
                    self.stopped = True
                    break
        except LLMError as exc:
            self.error = str(exc)
            notice = f"\n\n⚠️ {exc} Your question is saved; try again or switch the model in Settings."
            parts.append(notice)
            yield notice
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()  # releases the model at once when stopped
        if self.stopped:
            parts.append("\n\n*(stopped)*")
            yield parts[-1]
        elif self.path == "rag" and not self.error and self._needs_fallback("".join(parts)):
            fallback = extractive.render(extractive.choose(ranked_sentences(self._engine, self.retrieval.standalone, self.blocks)[0]))
            reason = ("repeated the prompt instead of answering" if prompts.echoes_prompt("".join(parts))
                      else "gave no answer its sources support")
            notice = f"\n\n⚠️ The model {reason}; here are the passages that answer it.\n\n"
            yield notice + fallback
            parts = [notice.strip() + "\n\n" + fallback]
        if self.removed:
            self.notices.append(f"{len(self.removed)} sentence(s) of the model's answer were removed: they stated "
                                + "; ".join(", ".join(r.unsupported) for r in self.removed[:3]) + ", which no cited passage contains.")
        self.timings_ms["first_token"] = first if first is not None else (time.perf_counter() - t) * 1000
        self.timings_ms["generation"] = (time.perf_counter() - t) * 1000
        self.text = "".join(parts).strip()
        self._finish()

    def _needs_fallback(self, text: str) -> bool:
        """A model answer that echoes the prompt, or (after the support check) cites no block, is replaced."""
        if prompts.echoes_prompt(text):
            return True
        return self._checked and not re.search(r"\[\d{1,3}\]", text) and prompts.NOT_ENOUGH not in text

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
            "support": self.support_report(),
        }

    def support_report(self) -> dict[str, Any]:
        """The support check as the inspector shows it: claims per sentence and what was removed."""
        checks = [check_sentence(s, {b.number: b.text for b in self.blocks}) for s in split_sentences(self.text)] if self.path == "rag" else []
        return {"checked": len(checks), "unsupported": [c.unsupported for c in checks if c.unsupported],
                "removed": [{"sentence": r.sentence, "unsupported": r.unsupported} for r in self.removed]}

    def _finish(self) -> None:
        engine = self._engine
        self.citations, self.invalid_citations = citations_for(self.text, self.blocks)
        meta = {"path": self.path, "backend": self.backend, "error": self.error, "timings_ms": self.timings_ms, "notices": self.notices,
                "stopped": self.stopped, "refused": self.refused,
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


def _words(text: str) -> Iterator[str]:
    for piece in re.findall(r"\S+\s*", text):
        yield piece


Status = Callable[[str], None]
NO_DOCUMENT = "I found nothing in your documents that answers this"
NO_ANSWER = "Your documents have passages about this, but none of them answers it"


def _no_context_note(retrieval: Retrieval, threshold: float) -> str:
    if not retrieval.hits:
        return "There is nothing in your documents to search yet, so I cannot answer from them."
    return (f"{NO_DOCUMENT} (the closest passage has relevance {retrieval.best_relevance:.2f}, below the threshold "
            f"{threshold:.2f}).")


def start_turn(engine, chat_id: str, message: str, settings: RetrievalSettings, llm: LLM | None, status: Status | None = None,
               question_stored: bool = False) -> Answer:
    """Everything up to the first token; ``Answer.stream()`` does the rest. ``status`` hears each stage
    ("Searching your documents", "Reading 5 passages", "Writing the answer") as it starts.
    ``question_stored``: the caller already stored the user's message (the last one of the chat)."""
    status = status or (lambda stage: None)
    config = engine.config
    chat = engine.chats.get(chat_id)
    stored = engine.chats.messages(chat_id, limit=11)
    if question_stored:
        stored = stored[:-1]
    history = [{"role": m["role"], "content": m["content"], "meta": m["meta"]} for m in stored[-10:]]
    if not question_stored:
        engine.chats.add_message(chat_id, "user", message)  # before anything can fail
    backend = llm.name if llm is not None else EXTRACTIVE
    summary = chat["conversation_summary"]
    system_general = prompts.with_persona(prompts.GENERAL_SYSTEM, config.persona)
    plain_history = [{"role": m["role"], "content": m["content"]} for m in history]

    def general_messages() -> list[dict[str, str]]:
        if summary:
            return [{"role": "system", "content": system_general}, {"role": "user", "content": f"Conversation summary: {summary}\n\n{message}"}]
        return [{"role": "system", "content": system_general}, *plain_history, {"role": "user", "content": message}]

    answer = Answer(chat_id, message, "general", backend, _engine=engine, _settings=settings)
    if is_general_conversation(message):
        answer._pieces = _generate(llm, general_messages(), config) if llm else _words(GREETING)
        return answer

    status("Searching your documents")
    retrieval = retrieve(engine, message, settings, llm, history, summary, config.llm_timeout_s)
    answer.retrieval = retrieval
    answer.timings_ms.update(retrieval.timings_ms)
    relevant = retrieval.relevant
    if not relevant:
        answer.path = "no_context"
        note = _no_context_note(retrieval, settings.relevance_threshold)
        if llm is not None and not getattr(llm, "local_small", False):
            # a capable model may answer from what it knows, but the answer itself says so first
            lead = f"{note} From general knowledge, not from your documents:\n\n"
            answer._pieces = _prefixed(lead, _generate(llm, general_messages(), config))
        else:  # the offline default states no facts of its own
            answer._pieces = _words(note)
        return answer

    t = time.perf_counter()
    blocks = build_blocks(engine, retrieval.standalone, relevant, settings, llm, config.llm_timeout_s)
    status(f"Reading {len(blocks)} passage{'s' if len(blocks) != 1 else ''}")
    answer.timings_ms["context"] = (time.perf_counter() - t) * 1000
    answer.path = "rag"
    if llm is None or getattr(llm, "local_small", False):
        answer.blocks = blocks
        _quote(answer, engine, llm, retrieval, settings, config, status)
        return answer
    system = prompts.with_persona(prompts.RAG_SYSTEM, config.persona)
    fixed = llm.count_tokens(system + prompts.rag_user_message(message, "", summary)) + 32
    budget = llm.context_tokens - config.llm_max_tokens - fixed
    answer.blocks, answer.dropped_blocks = fit(blocks, budget, llm.count_tokens)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompts.rag_user_message(message, render(answer.blocks), summary)}]
    status("Writing the answer")
    answer._pieces = checked_stream(_generate(llm, messages, config), answer.blocks, answer.removed)
    answer._checked = True
    return answer


def ranked_sentences(engine, question: str, blocks: list[Block]) -> tuple[list[extractive.Candidate], dict[int, float]]:
    """The context's sentences, best first, and each block's relevance (the scorer's prior)."""
    priors = {b.number: b.hit.trace.get("relevance", 0.0) for b in blocks}
    return extractive.score_candidates(question, extractive.candidates(blocks), engine.embedder, engine.sparse.idf, priors), priors


def _quote(answer: Answer, engine, llm: LLM | None, retrieval: Retrieval, settings: RetrievalSettings, config, status: Status) -> None:
    """The grounded-by-construction path: quote the best sentences, or say that none answers (the
    evidence gate); a small local model may only choose which sentence comes first."""
    t = time.perf_counter()
    ranked, priors = ranked_sentences(engine, retrieval.standalone, answer.blocks)
    asked = extractive.asked_kind(retrieval.standalone)
    if ranked:
        best = ranked[0]
        answer.evidence = {"score": best.score, "cosine": best.cosine, "overlap": best.overlap, "kind": best.kind,
                           "relevance": retrieval.best_relevance,
                           "evidence": extractive.evidence(best, priors.get(best.block, 0.0), retrieval.best_relevance)}
    missing = asked in ("date", "number") and ranked and not ranked[0].kind  # "when ...?" answered without a date is no answer
    if not ranked or answer.evidence["evidence"] < settings.min_evidence or missing:
        answer.path = "no_answer"
        why = (f"the best one gives no {asked}" if missing else
               f"the best sentence's evidence is {answer.evidence.get('evidence', 0.0):.2f}, below {settings.min_evidence:.2f}")
        answer._pieces = _words(f"{NO_ANSWER} ({why}).")
    else:
        picked = extractive.choose(ranked)
        if llm is not None:
            picked = _model_pick(llm, retrieval.standalone, ranked, picked, config, answer)
        status("Writing the answer")
        answer._pieces = _words(extractive.render(picked))
    answer.timings_ms["select"] = (time.perf_counter() - t) * 1000


def _model_pick(llm: LLM, question: str, ranked: list[extractive.Candidate], picked: list[extractive.Candidate], config,
                answer: Answer) -> list[extractive.Candidate]:
    """A small local model chooses which of the best candidate sentences answers (its reply constrained
    to one of their numbers); the answer still quotes only the sentences themselves."""
    options = ranked[:MODEL_OPTIONS]
    try:
        choice = choose_option(llm, prompts.pick_sentence(question, [c.text for c in options]), len(options), config.llm_timeout_s)
    except LLMError as exc:
        answer.notices.append(f"The model could not choose a sentence ({exc}); the best-scored sentences are quoted.")
        return picked
    if choice is None:
        return picked
    first = options[choice]
    return [first] + [c for c in picked if c is not first][: extractive.Weights().max_sentences - 1]


def _prefixed(lead: str, pieces: Iterator[str]) -> Iterator[str]:
    yield lead
    yield from pieces


def _generate(llm: LLM, messages: list[dict[str, str]], config) -> Iterator[str]:
    return stream_with_deadline(llm, messages, config.llm_max_tokens, config.temperature, config.llm_timeout_s)


def updated_summary(llm: LLM | None, summary: str, question: str, answer: str, timeout_s: float) -> str:
    """The LLM's update when it is usable; otherwise a plain running list of what the user asked."""
    if llm is not None and not getattr(llm, "local_small", False):  # a small model's summary is not worth its seconds
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
