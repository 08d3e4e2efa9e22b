"""FAISS ``IndexFlatIP`` over L2-normalised vectors (cosine), keyed by chunk rowid, with deletions."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import faiss
import numpy as np

from ..private_files import open_private, write_private


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class DenseIndex:
    def __init__(self, dim: int):
        self.dim = dim
        self.generation = -1
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return self.index.ntotal

    def add(self, rowids: list[int], vectors: np.ndarray) -> None:
        if not len(rowids):
            return
        vectors = normalise(vectors)
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vector dimension {vectors.shape[1]} does not match the index ({self.dim})")
        with self._lock:
            self.index.add_with_ids(vectors, np.asarray(rowids, dtype=np.int64))

    def remove(self, rowids: list[int]) -> None:
        if rowids:
            with self._lock:
                self.index.remove_ids(np.asarray(rowids, dtype=np.int64))

    def search(self, queries: np.ndarray, k: int, allowed: set[int] | None = None) -> list[list[tuple[int, float]]]:
        """One ranked list of (rowid, cosine) per query vector; ``allowed`` restricts the rowids searched."""
        with self._lock:
            if self.index.ntotal == 0 or (allowed is not None and not allowed):
                return [[] for _ in range(len(queries))]
            params = None
            if allowed is not None:
                params = faiss.SearchParameters()
                params.sel = faiss.IDSelectorBatch(np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            # one OpenMP thread per query: for a single query, a second thread costs more than it saves
            faiss.omp_set_num_threads(max(1, min(os.cpu_count() or 1, len(queries))))
            scores, ids = self.index.search(normalise(queries), min(k, self.index.ntotal), params=params)
        return [[(int(i), float(s)) for i, s in zip(row_ids, row_scores) if i != -1] for row_ids, row_scores in zip(ids, scores)]

    def ids(self) -> set[int]:
        with self._lock:
            return {int(i) for i in faiss.vector_to_array(self.index.id_map)}

    def vectors(self, rowids: list[int]) -> dict[int, np.ndarray]:
        """Stored (normalised) vectors of these rowids; missing ones are left out."""
        out = {}
        with self._lock:
            for rowid in rowids:
                try:
                    out[rowid] = self.index.reconstruct(int(rowid))
                except RuntimeError:
                    pass
        return out

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        with self._lock:
            open_private(tmp).close()  # created owner-only; FAISS writes into it
            faiss.write_index(self.index, str(tmp))
            tmp.replace(path)
            write_private(path.with_suffix(".json"), json.dumps({"generation": self.generation, "dim": self.dim}).encode())

    @classmethod
    def load(cls, path: Path) -> "DenseIndex":
        meta = json.loads(path.with_suffix(".json").read_text())
        index = cls(meta["dim"])
        index.index = faiss.read_index(str(path))
        index.generation = meta["generation"]
        return index
