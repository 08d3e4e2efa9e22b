"""Chat with any OpenAI-compatible server (llama.cpp's server, LM Studio, vLLM, LocalAI, Jan, a hosted
API) through the official ``openai`` package: ``/v1/models`` and streamed ``/v1/chat/completions``.

Every failure becomes an ``LLMError`` whose words say what to do. The API key is sent to the server
and nowhere else: it is never logged, and it is scrubbed from any server message we pass on.
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

import openai

from ..errors import LLMError

NO_KEY = "not-needed"  # local servers ignore the key, but the client refuses to run without one
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
_CONTEXT_WORDS = re.compile(r"context[_ ](length|window)|maximum context|too many tokens|prompt is too long|exceeds? (the )?context", re.I)


def resolve_api_key(configured: str) -> str:
    """The key from Settings, else ``OPENAI_API_KEY``, else none (local servers need none)."""
    return configured or os.environ.get("OPENAI_API_KEY", "")


def mask_key(key: str) -> str:
    """What the UI may show of a key: its last 4 characters at most (none of a key that short)."""
    if not key:
        return ""
    return "•" * 8 + (key[-4:] if len(key) >= 12 else "")


def remote_host(base_url: str) -> str | None:
    """The host that receives the passages, or None when the server runs on this machine."""
    host = urlparse(base_url if "//" in base_url else f"http://{base_url}").hostname or ""
    return None if host.lower() in LOCAL_HOSTS else host


def retry_after_s(headers) -> float | None:
    """The server's hint in seconds: ``retry-after-ms``, ``retry-after`` as seconds or as an HTTP date."""
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class OpenAICompatibleLLM:
    def __init__(self, base_url: str, api_key: str, model: str, context_tokens: int = 4096, timeout_s: float = 120.0,
                 max_rate_wait_s: float = 30.0):
        self.base_url, self.model, self.context_tokens = base_url.rstrip("/"), model, context_tokens
        self.timeout_s, self.max_rate_wait_s = timeout_s, max_rate_wait_s
        self._key = resolve_api_key(api_key)
        self.client = self._new_client()

    def _new_client(self) -> openai.OpenAI:
        # Retries are ours (one, after a 429's hint): the client's own would also retry a dead server.
        return openai.OpenAI(base_url=self.base_url, api_key=self._key or NO_KEY, timeout=openai.Timeout(self.timeout_s, connect=min(5.0, self.timeout_s)),
                             max_retries=0)

    @property
    def name(self) -> str:
        """Shown with every answer; an unnamed model is the server's (asked once, if it answers)."""
        try:
            return f"openai:{self._short(self._model())}"
        except LLMError:
            return "openai"

    @staticmethod
    def _short(model: str) -> str:
        return Path(model).name if model.endswith(".gguf") else model  # llama.cpp's server names models by their path

    def reachable(self, timeout_s: float = 1.5) -> bool:
        try:
            self.client.with_options(timeout=timeout_s).models.list()
            return True
        except Exception:  # noqa: BLE001 - any failure means "not usable now"
            return False

    def list_models(self) -> list[str]:
        try:
            return sorted(m.id for m in self.client.models.list() if m.id)
        except Exception as exc:  # noqa: BLE001 - translated below
            raise self._translate(exc) from exc

    def _model(self) -> str:
        """The configured model, or the server's first one (llama.cpp and LM Studio serve one at a time)."""
        if not self.model:
            models = self.list_models()
            if not models:
                raise LLMError(f"The server at {self.base_url} lists no models; load one there or name it in Settings.")
            self.model = models[0]
        return self.model

    def stream(self, messages: list[dict], max_tokens: int, temperature: float) -> Iterator[str]:
        model = self._model()
        finished, sent = False, False
        try:
            with self._open(model, messages, max_tokens, temperature) as chunks:  # closed on Stop, errors and the end
                for chunk in chunks:
                    for choice in chunk.choices or ():
                        if choice.delta and choice.delta.content:
                            sent = True
                            yield choice.delta.content
                        finished = finished or bool(choice.finish_reason)
        except LLMError:
            raise
        except Exception as exc:  # noqa: BLE001 - translated below
            raise self._translate(exc, midway=sent) from exc
        if not finished:
            if not sent:  # llama.cpp's server ends an over-long prompt's stream this way, without a word
                raise self._diagnose_silent_end(model, messages)
            raise LLMError(f"The answer from {self.base_url} stopped before it was complete (the server may have crashed).")

    def _diagnose_silent_end(self, model: str, messages: list[dict]) -> LLMError:
        """A stream that ended before its first word: ask once without streaming, which makes servers
        that cannot report errors inside a stream (llama.cpp's) say why, e.g. a prompt over the window."""
        try:  # on a new connection: the server resets the one its broken stream used
            with self._new_client() as client:
                client.chat.completions.create(model=model, messages=messages, max_tokens=1, stream=False)
        except Exception as exc:  # noqa: BLE001 - translated below
            return self._translate(exc)
        return LLMError(f"The server at {self.base_url} closed the answer before sending anything (it may have crashed); try again.")

    def _open(self, model: str, messages: list[dict], max_tokens: int, temperature: float):
        """The streamed request, retried once after a 429 as long as the server's hint allows."""
        request = dict(model=model, messages=messages, max_tokens=max_tokens, temperature=temperature, stream=True)
        try:
            return self.client.chat.completions.create(**request)
        except openai.RateLimitError as exc:
            wait = retry_after_s(exc.response.headers)
            wait = 1.0 if wait is None else wait
            if wait > self.max_rate_wait_s:
                raise LLMError(f"The server at {self.base_url} is rate-limiting requests (429) and asks to wait {wait:.0f} s; "
                               f"try again later or check your plan's limits.") from exc
            time.sleep(wait)
            try:
                return self.client.chat.completions.create(**request)
            except openai.RateLimitError as again:
                raise LLMError(f"The server at {self.base_url} is still rate-limiting requests (429) after waiting {wait:.0f} s; "
                               f"try again in a minute or check your plan's limits.") from again

    def _translate(self, exc: Exception, midway: bool = False) -> LLMError:
        """A client exception in words a user can act on (never with the key in them)."""
        url = self.base_url
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(f"The server at {url} did not answer within {self.timeout_s:.0f} s.")
        if isinstance(exc, openai.APIConnectionError) and not midway:
            return LLMError(f"The OpenAI-compatible server is not reachable at {url}. Start it, or fix the base URL or choose another backend in Settings.")
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return LLMError(f"The server at {url} refused the API key ({exc.status_code}); check the API key in Settings or OPENAI_API_KEY.")
        if isinstance(exc, openai.NotFoundError):
            return LLMError(f"The server at {url} has no model '{self.model}' (404); pick one with \"List the server's models\" in Settings.")
        message = self._scrub(getattr(exc, "message", None) or str(exc))
        if isinstance(exc, openai.APIStatusError):
            body = exc.body if isinstance(exc.body, dict) else {}
            code = (body["error"] if isinstance(body.get("error"), dict) else body).get("code")
            if code == "context_length_exceeded" or _CONTEXT_WORDS.search(message):
                return LLMError(f"The question with its passages was too long for the model's window at {url}; lower the context window "
                                f"in Settings (now {self.context_tokens} tokens) or ask a shorter question.")
            return LLMError(f"The server at {url} answered with an error ({exc.status_code}): {message[:300]}")
        if midway:
            return LLMError(f"The connection to {url} broke off in the middle of the answer ({type(exc).__name__}).")
        return LLMError(f"The server at {url} failed: {type(exc).__name__}: {message[:300]}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, mask_key(self._key)) if self._key else text

    def count_tokens(self, text: str) -> int:
        """No portable tokenizer endpoint: a conservative estimate (English averages ~4 chars/token)."""
        return len(text) // 3 + 1
