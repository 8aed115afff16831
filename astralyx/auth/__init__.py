"""Workspaces, roles → permissions, hashed API keys, and the actor of a request."""

from .actor import Actor
from .keys import Keys, Workspaces

__all__ = ["Actor", "Keys", "Workspaces"]
