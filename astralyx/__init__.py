"""Astralyx: a self-hosted knowledge and memory layer for AI assistants."""

__version__ = "0.1.0"
