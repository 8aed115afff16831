"""The HTTP shell: the REST API under /v1 (OpenAI-compatible routes included) and the console."""

from .app import create_app

__all__ = ["create_app"]
