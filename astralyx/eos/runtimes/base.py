"""What every runtime offers, whatever runs the model (in process, in a worker process, or an upstream server)."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

CHARS_PER_TOKEN = 3  # an estimate where the model's tokenizer is not at hand: conservative (English is ~4)

if TYPE_CHECKING:  # numpy is imported where vectors are made: a command that only lists does not load it
    import numpy as np


class Embedder(ABC):
    """Turns texts into unit-length vectors.

    Models with an asymmetric convention (e5: "query: " / "passage: ") apply it here, so
    callers only say whether they embed passages to index or a query to search with.
    """

    name: str
    dimensions: int

    @abstractmethod
    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """float32 array (len(texts), dimensions), each row L2-normalised."""

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray:
        """float32 array (dimensions,), L2-normalised."""

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Several queries at once (the OpenAI endpoint's default for symmetric use); by default one by one."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self.embed_query(t) for t in texts]).astype(np.float32)


class ChatModel(ABC):
    """Answers OpenAI chat-completion requests (dicts in the OpenAI wire shape)."""

    name: str
    # The context window in tokens when it is known (an embedded model's, an upstream's declared one):
    # the gateway fits search results to it. None: not known, nothing is fitted.
    context_length: int | None = None
    where = "in process"  # where it runs, as its deployment's status says it

    def count_tokens(self, request: dict[str, Any]) -> int:
        """The tokens a request's prompt takes (messages and tools); by default estimated from its characters."""
        chars = sum(len(_content_text(m.get("content"))) + len(json.dumps(m.get("tool_calls") or "")) + 16
                    for m in request.get("messages") or [] if isinstance(m, dict))
        chars += len(json.dumps(request.get("tools") or [], ensure_ascii=False))
        return chars // CHARS_PER_TOKEN + 1

    def close(self) -> None:
        """Let go of what it holds (a worker process). A later call may start it again."""
        return None

    @abstractmethod
    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """A `chat.completion` object for a request (messages, tools, response_format, …)."""

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """`chat.completion.chunk` objects; by default one chunk from `complete`."""
        response = self.complete(request)
        choice = response["choices"][0]
        message = choice["message"]
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **tc} for i, tc in enumerate(message["tool_calls"])]
        yield {
            "id": response.get("id"),
            "object": "chat.completion.chunk",
            "created": response.get("created"),
            "model": response.get("model"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}],
        }


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text ones
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
