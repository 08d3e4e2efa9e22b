"""A small HTTP server that speaks Ollama's documented API (/api/embed, /api/tags), for the tests:
no Ollama server can run on these machines. The real ``ollama`` client talks to it over HTTP."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def hashed_embedding(text: str, dim: int = 64) -> list[float]:
    """Deterministic bag-of-words vector: texts sharing words are close, as with a real model."""
    vector = np.zeros(dim)
    for word in text.lower().split():
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = np.linalg.norm(vector) or 1.0
    return (vector / norm).tolist()


class FakeOllama:
    """``chat_mode``: "ok" streams ``reply(prompt)`` word by word; "die" stops after two pieces without
    ``done`` and drops the connection; "slow" waits ``delay_s`` before the first byte; "garbage" sends
    a line that is not JSON."""

    def __init__(self, fail_first: int = 0, dim: int = 64, models: tuple[str, ...] = ("nomic-embed-text:latest", "llama3.2:latest"),
                 chat_mode: str = "ok", reply=lambda prompt: "Hello from the fake Ollama [1].", delay_s: float = 0.0, word_delay_s: float = 0.0):
        self.requests: list[dict] = []
        self.fail_first = fail_first
        self.dim = dim
        self.models = models
        self.chat_mode = chat_mode
        self.reply = reply
        self.delay_s = delay_s
        self.word_delay_s = word_delay_s  # between streamed words, as a real model generates
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _json(self, code: int, body: dict) -> None:
                payload = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):
                if self.path == "/api/tags":
                    self._json(200, {"models": [{"name": m, "model": m, "size": 274302450} for m in server.models]})
                else:
                    self._json(404, {"error": "not found"})

            def _chat(self, body: dict) -> None:
                model = body["model"]
                if model not in server.models and f"{model}:latest" not in server.models:
                    self._json(404, {"error": f"model '{model}' not found"})
                    return
                prompt = "\n".join(m["content"] for m in body["messages"])
                if server.delay_s:
                    time.sleep(server.delay_s)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                words = server.reply(prompt).split(" ")
                for i, word in enumerate(words):
                    if server.chat_mode == "die" and i == 2:
                        self.wfile.flush()
                        self.connection.shutdown(2)  # the server process died mid-answer
                        return
                    line = {"model": model, "created_at": "2026-11-22T00:00:00Z", "message": {"role": "assistant", "content": word + (" " if i < len(words) - 1 else "")}, "done": False}
                    payload = (json.dumps(line) if server.chat_mode != "garbage" else "<html>proxy error</html>") + "\n"
                    try:
                        self._chunk(payload.encode())
                    except (BrokenPipeError, ConnectionResetError):  # the client stopped reading (Stop)
                        return
                    time.sleep(server.word_delay_s)
                done = {"model": model, "created_at": "2026-11-22T00:00:01Z", "message": {"role": "assistant", "content": ""}, "done": True,
                        "done_reason": "stop", "total_duration": 1000, "prompt_eval_count": len(prompt.split()), "eval_count": len(words)}
                self._chunk((json.dumps(done) + "\n").encode())
                self._chunk(b"")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append({"path": self.path, **body})
                if server.fail_first > 0:
                    server.fail_first -= 1
                    self._json(500, {"error": "model is loading"})
                    return
                if self.path == "/api/chat":
                    self._chat(body)
                elif self.path == "/api/embed":
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    self._json(200, {"model": body["model"], "embeddings": [hashed_embedding(t, server.dim) for t in inputs],
                                     "total_duration": 1000, "load_duration": 10, "prompt_eval_count": sum(len(t.split()) for t in inputs)})
                else:
                    self._json(404, {"error": f"unknown endpoint {self.path}"})

        Handler.protocol_version = "HTTP/1.1"
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOllama":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
