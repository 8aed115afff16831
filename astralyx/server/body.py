"""JSON request bodies: one parser and one rule for every route, API and console alike.

A JSON body must parse and be nested at most MAX_DEPTH deep, else 400 `INVALID_JSON`. The depth
matters: Python's parser and everything after it (validation, YAML, canonical JSON) recurse, and
a body of 100,000 `[` must be refused before any of them runs. `limits.BodyLimit` applies the
rule to every JSON body before the application reads it; routes that read the raw body parse it
with the same function.

A string of the body may also not hold a lone surrogate ("\\udc00": valid JSON, but no character, so
not UTF-8 either, and every file, index and answer it would reach is). `surrogate_problem` says where; the
request models (`models.Body`) and the routes that read their own body refuse it with the route's code.
"""

from __future__ import annotations

import json
import re
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


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def lone_surrogate(value: Any) -> str | None:
    """Where the first string (or object key) holding a lone surrogate is, as one writes it: `messages[0].content`
    (`` for the value itself); None when there is none. JSON's escapes give only strings of characters otherwise:
    a pair of surrogates is read as the one character it stands for."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                # A key is said with its surrogates escaped: the place goes into an answer, which is UTF-8.
                name = str(key).encode("utf-8", "backslashreplace").decode()
                place = f"{where}.{name}" if where else name
                if name != str(key):
                    return place
                stack.append((child, place))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


def surrogate_problem(value: Any) -> str | None:
    """What is wrong when a string of `value` holds a lone surrogate, said for the error message; else None."""
    where = lone_surrogate(value)
    if where is None:
        return None
    return (f"{where or 'the text'} holds a lone surrogate (a \\ud800-\\udfff escape without its pair), which is "
            "no character: send text as UTF-8")


def _too_deep() -> BadRequest:
    return BadRequest(
        f"The body nests arrays or objects more than {MAX_DEPTH} deep: send it flatter", code="INVALID_JSON"
    )
