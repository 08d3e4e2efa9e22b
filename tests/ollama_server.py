"""A small HTTP server that speaks Ollama's documented API (/api/embed, /api/tags), for the tests:
no Ollama server can run on these machines. The real ``ollama`` client talks to it over HTTP."""

from __future__ import annotations

import hashlib
import json
import threading
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
    def __init__(self, fail_first: int = 0, dim: int = 64):
        self.requests: list[dict] = []
        self.fail_first = fail_first
        self.dim = dim
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
                    self._json(200, {"models": [{"name": "nomic-embed-text:latest", "model": "nomic-embed-text:latest", "size": 274302450}]})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append({"path": self.path, **body})
                if server.fail_first > 0:
                    server.fail_first -= 1
                    self._json(500, {"error": "model is loading"})
                    return
                if self.path == "/api/embed":
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    self._json(200, {"model": body["model"], "embeddings": [hashed_embedding(t, server.dim) for t in inputs],
                                     "total_duration": 1000, "load_duration": 10, "prompt_eval_count": sum(len(t.split()) for t in inputs)})
                else:
                    self._json(404, {"error": f"unknown endpoint {self.path}"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOllama":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
