"""JSON request bodies: one parser and one rule for every route, API and console alike.

A JSON body must parse and be nested at most MAX_DEPTH deep, else 400 `INVALID_JSON`. The depth
matters: Python's parser and everything after it (validation, YAML, canonical JSON) recurse, and
a body of 100,000 `[` must be refused before any of them runs. `limits.BodyLimit` applies the
rule to every JSON body before the application reads it; routes that read the raw body parse it
with the same function.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import BadRequest

# Far deeper than any request we take (an OpenAI tool schema nests a handful of levels).
MAX_DEPTH = 64


def parse_json(raw: bytes | str, *, empty: Any = None) -> Any:
    """The body's value (`empty` for a blank body), or 400 INVALID_JSON saying what is wrong."""
    if not raw.strip():
        return empty
    try:
        value = json.loads(raw)
    except RecursionError:
        raise _too_deep() from None
    except ValueError as e:  # JSONDecodeError, and UnicodeDecodeError for bytes that are not UTF-8
        raise BadRequest(f"The body is not valid JSON: {e}", code="INVALID_JSON") from None
    if depth(value) > MAX_DEPTH:
        raise _too_deep()
    return value


def depth(value: Any) -> int:
    """How deeply arrays and objects nest (a scalar 0, `[]` 1, `[{}]` 2); stops once past MAX_DEPTH."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _too_deep() -> BadRequest:
    return BadRequest(
        f"The body nests arrays or objects more than {MAX_DEPTH} deep: send it flatter", code="INVALID_JSON"
    )
