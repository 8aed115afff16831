"""The `astra` command line."""

from .main import cli

__all__ = ["cli"]
