"""The `astra` command line."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def loading(freeze: bool = False) -> Iterator[None]:
    """Loading modules and building the app make a few hundred thousand objects and next to no garbage, and
    the cyclic collector would scan them again and again (~10% of a local command): it pauses meanwhile.
    `freeze` moves what was loaded out of its reach for good (gc.freeze), for what loads once per process."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


with loading(freeze=True):
    from .main import cli

__all__ = ["cli", "loading"]
