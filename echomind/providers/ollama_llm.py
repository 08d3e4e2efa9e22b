"""Chat with an Ollama server through the ``ollama`` package (``/api/chat``, streamed NDJSON)."""

from __future__ import annotations

from typing import Iterator

import httpx
import ollama

from ..errors import LLMError


class OllamaLLM:
    def __init__(self, host: str, model: str, context_tokens: int = 4096, timeout_s: float = 120.0):
        self.host, self.model, self.context_tokens = host, model, context_tokens
        self.client = ollama.Client(host=host, timeout=timeout_s)
        self.name = f"ollama:{model}"

    def reachable(self, timeout_s: float = 1.5) -> bool:
        try:
            ollama.Client(host=self.host, timeout=timeout_s).list()
            return True
        except Exception:
            return False

    def list_models(self) -> list[str]:
        try:
            return sorted(m.model for m in self.client.list().models if m.model)
        except (httpx.HTTPError, ConnectionError, ollama.ResponseError) as exc:
            raise LLMError(f"Ollama is not reachable at {self.host} ({exc}). Start it with `ollama serve`.") from exc

    def stream(self, messages: list[dict], max_tokens: int, temperature: float) -> Iterator[str]:
        # num_ctx is always sent: Ollama's default window would silently cut long prompts.
        options = {"num_ctx": self.context_tokens, "num_predict": max_tokens, "temperature": temperature}
        done = False
        try:
            for part in self.client.chat(model=self.model, messages=messages, stream=True, options=options):
                content = part.message.content if part.message else ""
                if content:
                    yield content
                done = done or bool(part.done)
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise LLMError(f"The model '{self.model}' is not installed on the Ollama server at {self.host}. Run `ollama pull {self.model}` or pick another model in Settings.") from exc
            raise LLMError(f"Ollama answered with an error ({exc.status_code}): {exc.error}") from exc
        except (httpx.ConnectError, ConnectionError) as exc:
            raise LLMError(f"Ollama is not reachable at {self.host}. Start it with `ollama serve`, or choose another backend in Settings.") from exc
        except httpx.TimeoutException as exc:
            raise LLMError(f"Ollama ({self.model}) did not answer in time.") from exc
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise LLMError(f"The connection to Ollama broke off in the middle of the answer ({exc}).") from exc
        except ValueError as exc:  # a line that is not JSON (a proxy's error page, a crashed server)
            raise LLMError(f"Ollama sent something that is not its API's JSON ({str(exc)[:120]}).") from exc
        if not done:
            raise LLMError("Ollama's answer stopped before it was complete (the server may have crashed).")

    def count_tokens(self, text: str) -> int:
        """No tokenizer endpoint in Ollama: a conservative estimate (English averages ~4 chars/token)."""
        return len(text) // 3 + 1
