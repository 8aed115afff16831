"""Runtimes: embedded (models shipped in packages, in process) and upstream (any OpenAI-compatible server)."""

from .base import ChatModel, Embedder

__all__ = ["ChatModel", "Embedder"]
