"""The offline LLM: a GGUF file run in-process by llama-cpp-python (SmolLM2-135M-Instruct by default)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterator


class LlamaCppLLM:
    # A 135M model writes fluent text with invented figures: answers only choose among the context's
    # sentences (``choose``) and it never answers from its own knowledge.
    local_small = True

    def __init__(self, path: Path, context_tokens: int = 4096, threads: int | None = None):
        from llama_cpp import Llama

        self.path = Path(path)
        self.llama = Llama(model_path=str(self.path), n_ctx=context_tokens, n_threads=threads or os.cpu_count() or 1,
                           n_batch=256, verbose=False, seed=42)
        self.context_tokens = context_tokens
        self.name = f"embedded:{self.path.stem}"
        self._lock = threading.Lock()  # one llama context: one generation at a time

    def stream(self, messages: list[dict], max_tokens: int, temperature: float) -> Iterator[str]:
        with self._lock:
            for chunk in self.llama.create_chat_completion(messages=messages, stream=True, max_tokens=max_tokens, temperature=temperature,
                                                           repeat_penalty=1.15):
                piece = chunk["choices"][0]["delta"].get("content")
                if piece:
                    yield piece

    def choose(self, messages: list[dict], options: int) -> int | None:
        """The number of one option, the reply constrained by a grammar to "1".."options"."""
        from llama_cpp import LlamaGrammar

        alternatives = " | ".join(f'"{n}"' for n in range(1, options + 1))
        grammar = LlamaGrammar.from_string(f"root ::= {alternatives}", verbose=False)
        with self._lock:
            out = self.llama.create_chat_completion(messages=messages, max_tokens=3, temperature=0.0, grammar=grammar)
        text = (out["choices"][0]["message"].get("content") or "").strip()
        return int(text) - 1 if text.isdigit() and 1 <= int(text) <= options else None

    def count_tokens(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))
