"""Hits -> numbered context blocks (seed 1.3): parent expansion, per-chunk compression, sentence
dedupe, and a fit to the model's window that drops the lowest-scored blocks instead of letting the
server cut the prompt."""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import prompts
from .providers.llm import LLM, complete
from .search import Hit
from .settings import RetrievalSettings

SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Block:
    text: str
    hit: Hit  # the hit this block stands for (a parent block stands for the child that brought it)
    kind: str  # "parent" | "chunk"
    number: int = 0

    @property
    def context(self) -> str | None:
        """The header of the chunk behind the block (document title, section)."""
        return self.hit.source.get("context")

    @property
    def label(self) -> str:
        source = self.hit.source
        where = [f"{k} {source[k]}" for k in ("page", "slide", "sheet", "row") if source.get(k) is not None]
        return f"{source.get('filename', '?')}" + (f", {', '.join(where)}" if where else "")


def truncate_words(text: str, limit: int) -> str:
    text = flat_lines(text)
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit] + " …"


def compress(llm: LLM, question: str, text: str, timeout_s: float) -> str:
    try:
        output = complete(llm, [{"role": "user", "content": prompts.COMPRESS.format(question=question, passage=prompts.quoted(text))}],
                          max_tokens=min(400, len(text) // 3 + 20), timeout_s=timeout_s)
    except Exception:
        return text
    return prompts.parse_compressed(output, text) or text


def _words(sentence: str) -> frozenset[str]:
    return frozenset(re.findall(r"[^\W_]+", sentence.lower()))


def dedupe_sentences(blocks: list[Block], overlap: float) -> list[Block]:
    """Drop a sentence whose word set has Jaccard >= overlap with one already kept; drop emptied blocks.
    Line breaks (table rows) are kept."""
    kept_sets: list[frozenset[str]] = []
    out = []
    for block in blocks:
        lines = []
        for line in block.text.split("\n"):
            sentences = []
            for sentence in SENTENCE.split(line):
                words = _words(sentence)
                if words and any(len(words & k) / len(words | k) >= overlap for k in kept_sets):
                    continue
                kept_sets.append(words)
                sentences.append(sentence)
            if sentences:
                lines.append(" ".join(sentences))
        if lines:
            block.text = "\n".join(lines)
            out.append(block)
    return out


def flat_lines(text: str) -> str:
    """Spaces folded within each line; line breaks (rows of a table, list items) kept."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def build_blocks(engine, question: str, hits: list[Hit], settings: RetrievalSettings, llm: LLM | None, timeout_s: float = 60.0) -> list[Block]:
    blocks: list[Block] = []
    parents_added: set[str] = set()
    for hit in hits:
        parent_id = hit.source.get("parent_chunk_id")
        if parent_id and parent_id not in parents_added:
            parent = engine.store.chunk_by_id(parent_id)
            if parent is not None:
                parents_added.add(parent_id)
                blocks.append(Block(truncate_words(parent["text"], settings.parent_context_max_chars), hit, "parent"))
        text = flat_lines(hit.text)
        if settings.compression and llm is not None:
            text = compress(llm, question, text, timeout_s)
        blocks.append(Block(text, hit, "chunk"))
    if settings.dedupe_sentences:
        blocks = dedupe_sentences(blocks, settings.dedupe_overlap)
    return number(blocks)


def number(blocks: list[Block]) -> list[Block]:
    for i, block in enumerate(blocks, 1):
        block.number = i
    return blocks


def render(blocks: list[Block]) -> str:
    return "\n\n".join(f"[{b.number}] ({b.label}) {b.text}" for b in blocks)


def fit(blocks: list[Block], budget_tokens: int, count_tokens) -> tuple[list[Block], int]:
    """Drop the lowest-scored blocks until the rendered context fits; returns (blocks, dropped)."""
    blocks = list(blocks)
    dropped = 0
    while len(blocks) > 1 and count_tokens(render(blocks)) > budget_tokens:
        worst = min(range(len(blocks)), key=lambda i: (blocks[i].hit.trace.get("final", blocks[i].hit.score), -i))
        blocks.pop(worst)
        dropped += 1
        number(blocks)
    while blocks and count_tokens(render(blocks)) > budget_tokens and len(blocks[0].text) > 200:
        blocks[0].text = truncate_words(blocks[0].text, int(len(blocks[0].text) * 0.8))  # the best block, shortened
    return blocks, dropped
