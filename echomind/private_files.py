"""Everything EchoMind writes is owner-only: files are created 0600 (never briefly world-readable)
and replaced atomically, so a crash leaves the old version or the new one, never half of one."""

from __future__ import annotations

import os
from pathlib import Path


def open_private(path: Path):
    """A new file for writing, mode 0600 from the start."""
    path.unlink(missing_ok=True)
    return open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def write_private(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open_private(tmp) as f:
        f.write(data)
    tmp.replace(path)
