"""Metis memory: dated facts, the replacement timeline, history, secrets refused, facts as notes."""

from .facts import Fact, FactIn
from .secrets import find_secret
from .service import Memory

__all__ = ["Fact", "FactIn", "Memory", "find_secret"]
