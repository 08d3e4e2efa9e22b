"""Run the parser in a worker process with a memory cap and a deadline.

pypdf, python-docx and pandas all have inputs that take minutes or gigabytes; a thread cannot be
stopped, a process can. The worker is started once and reused; it is killed and restarted after a
timeout or a crash, and the caller gets a specific error instead of a hung app.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from ..errors import CorruptFile, EchoMindError, ParseTimeout
from . import Limits, ParsedDocument

_HEADER = struct.Struct("!Q")


def _send(stream, obj) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    chunks, remaining = [], size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class ParserProcess:
    def __init__(self, timeout_s: float = 120.0, memory_mb: int = 6144):
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def parse(self, data: bytes, filename: str, password: str | None = None, limits: Limits = Limits(),
              progress: Callable[[int, int], None] | None = None) -> ParsedDocument:
        """Parse in the worker. ``progress(done, total)`` is called per page read with OCR; each such
        page restarts the deadline, so a long scan is bounded per page, not refused for its length
        (``Limits.max_ocr_pages`` bounds the number of pages)."""
        with self._lock:
            proc = self._ensure()
            try:
                _send(proc.stdin, (data, filename, password, limits))
                deadline = time.monotonic() + self.timeout_s
                while True:
                    size = _HEADER.unpack(_read_exact(proc.stdout.fileno(), _HEADER.size, deadline))[0]
                    message = pickle.loads(_read_exact(proc.stdout.fileno(), size, deadline))
                    if message[0] != "progress":
                        break
                    deadline = time.monotonic() + self.timeout_s
                    if progress is not None:
                        try:
                            progress(message[1], message[2])
                        except Exception:  # a failing progress display must not fail the parse
                            progress = None
                status, value = message
            except TimeoutError:
                self._kill()
                raise ParseTimeout(f"Reading '{filename}' took longer than {self.timeout_s:.0f} s (for one step or one OCR page) and was stopped. The file may be damaged or unusually complex.") from None
            except (EOFError, BrokenPipeError, OSError):
                code = self._kill()
                reason = "ran out of memory" if code in (-9, 137) or code is None else f"crashed (exit {code})"
                raise CorruptFile(f"Reading '{filename}' {reason}; nothing was stored. The file may be damaged or too complex (memory limit {self.memory_mb} MB).") from None
        if status == "ok":
            return value
        raise value

    def _ensure(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "echomind.parsing.sandbox", str(self.memory_mb)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        return self._proc

    def _kill(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        proc.kill()
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        with self._lock:
            self._kill()

    def peak_memory_mb(self) -> float | None:
        """The worker's peak resident memory so far (Linux), for the bench."""
        try:
            status = open(f"/proc/{self._proc.pid}/status").read()
        except (AttributeError, OSError):
            return None
        return int(status.split("VmHWM:")[1].split()[0]) / 1024


def _serve(memory_mb: int) -> None:
    """Worker loop: read a request, parse, answer ("ok", doc) or ("error", EchoMindError)."""
    import resource

    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from . import parse_bytes  # import the parsers once, inside the cap

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints from libraries must not corrupt the channel
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        data, filename, password, limits = pickle.loads(stdin.read(_HEADER.unpack(header)[0]))

        def progress(done: int, total: int) -> None:
            _send(stdout, ("progress", done, total))

        try:
            reply = ("ok", parse_bytes(data, filename, password, limits, progress))
        except EchoMindError as exc:
            reply = ("error", exc)
        except MemoryError:
            reply = ("error", CorruptFile(f"Reading '{filename}' needed more than {memory_mb} MB of memory; nothing was stored."))
        except RecursionError:
            reply = ("error", CorruptFile(f"'{filename}' could not be read: its structure is nested too deeply (or loops); it may be damaged. Nothing was stored."))
        except Exception:  # a library failure becomes a user-facing rejection, never the library's own text
            reply = ("error", CorruptFile(f"'{filename}' could not be read: the parser failed on its content, which may be damaged or use a feature EchoMind cannot read. Nothing was stored."))
        _send(stdout, reply)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
