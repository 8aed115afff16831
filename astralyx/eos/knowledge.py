"""What the knowledge tools answer: search_knowledge and save_to_knowledge, for every shell that runs them.

The chat gateway (a deployment's built-in tools) and the MCP server (`astralyx.mcp`) call these, so a
model gets the same numbered passages, the same notes ("answer from these and cite", "nothing found,
do not make it up") and the same save outcomes (draft, saved, SAVE_LIMIT, DRAFT_LIMIT) whichever way it came.
Errors a model should read come back as answers with {"error": {"code", "message"}}, not exceptions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import AstralyxError, error_body
from ..metis.saves import Draft, ModelSave, Saves
from ..metis.search import MAX_RESULTS, Search
from .tools import SEARCH

if TYPE_CHECKING:
    from ..auth.actor import Actor
    from ..metis.bases import KnowledgeBase

log = logging.getLogger("astralyx.gateway")

CITE_NOTE = "Answer from these passages and cite each one you use as [ref] with its document."
NOTHING_NOTE = (
    "Nothing in {base} matched this search. Say that you found nothing about it in {base}, and do not make an "
    "answer up; you may search again with other words."
)
FAILED_NOTE = "The search failed: answer without {base}, and say that it could not be searched and why."
LEFT_OUT_NOTE = "Only the best {kept} of the {found} passages found fit in the model's context: the others were left out."
SHORTENED_NOTE = "Only the start of the best of the {found} passages found fits in the model's context: it is cut short."
NONE_FIT_NOTE = (
    "{found} passages were found in {base}, but none fits in what is left of the model's context: answer without "
    "them, and say that the conversation is too long to search {base} now (a new conversation has room)."
)
SHORTEST_PASSAGE = 200  # characters: a passage is not cut shorter than this (it would say little)
DRAFT_NOTE = (
    "Nothing is saved yet: the person sees this note as a draft and chooses Save or Discard. "
    "Tell them the draft awaits their choice."
)
LIMIT_NOTE = (
    "Nothing was saved: models have saved as many notes to this base as allowed for now. Ask the "
    "person whether to save it themselves."
)
DRAFT_LIMIT_NOTE = (
    "Nothing was saved and no draft was made: models have proposed as many notes to this base as allowed for now. "
    "Tell the person; do not try again in this conversation."
)


def search(searcher: Search, reader: Actor, base: str, query: Any, *, max_results: int = MAX_RESULTS,
           as_of: str | None = None, tool: str = SEARCH) -> dict[str, Any]:
    """The passages of `base` for `query` as a model gets them (searched as `reader`), with what to do with them.
    A query missing is the model's to fix: the answer says how to call `tool` (its name as the model sees it) again."""
    if not isinstance(query, str) or not query.strip():
        return error_body("INVALID_ARGUMENTS", f'query is missing: call {tool} again with {{"query": "..."}}, the words '
                                               "or question to search for")
    try:
        found = searcher.search(reader, base, query.strip(), max_results=max_results, as_of=as_of)
    except AstralyxError as e:
        return {"knowledge_base": base, **e.to_dict(), "note": FAILED_NOTE.format(base=base)}
    except Exception as e:  # a base's index may fail in ways of its own: the model answers without it
        log.exception("search_knowledge on %s failed", base)
        return {"knowledge_base": base, **error_body("SEARCH_FAILED", f"The search failed on the server ({type(e).__name__})"),
                "note": FAILED_NOTE.format(base=base)}
    result: dict[str, Any] = {"knowledge_base": found.knowledge_base, "mode": found.mode,
                              "results": [p.model_dump() for p in found.results]}
    if as_of:
        result["as_of"] = as_of
    result["note"] = CITE_NOTE if result["results"] else NOTHING_NOTE.format(base=base)
    return result


def fit(result: dict[str, Any], fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """A search answer that fits the model's context (`fits` says whether an answer does): the best passages
    that fit, else the best one cut short, else none; the note says which. Each try is one count of the
    whole request, so the number of passages and the length are found by halving."""
    passages = result.get("results") or []
    if not passages or fits(result):
        return result
    found = len(passages)

    def kept(results: list[dict[str, Any]], note: str) -> dict[str, Any]:
        return {**result, "results": results, "left_out": found - len(results), "note": note}

    def best_of(count: int) -> dict[str, Any]:
        return kept(passages[:count], f"{CITE_NOTE} {LEFT_OUT_NOTE.format(kept=count, found=found)}")

    best = _largest(1, found - 1, best_of, fits)
    if best is not None:
        return best
    text = str(passages[0].get("text") or "")
    note = f"{CITE_NOTE} {SHORTENED_NOTE.format(found=found)}"

    def shortened(hundreds: int) -> dict[str, Any]:  # the best passage, cut to so many hundred characters
        return kept([{**passages[0], "text": _cut(text, hundreds * 100)}], note)

    cut = _largest(SHORTEST_PASSAGE // 100, (len(text) - 1) // 100, shortened, fits)
    if cut is not None:
        return cut
    return kept([], NONE_FIT_NOTE.format(found=found, base=result.get("knowledge_base")))


def _largest(low: int, high: int, make: Callable[[int], dict[str, Any]],
             fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """What `make` gives for the largest n in [low, high] whose answer fits (fitting shrinks as n grows), by halving."""
    best = None
    while low <= high:
        mid = (low + high) // 2
        candidate = make(mid)
        if fits(candidate):
            best, low = candidate, mid + 1
        else:
            high = mid - 1
    return best


def _cut(text: str, length: int) -> str:
    """The text's first `length` characters, ended at a word, marked as cut."""
    if len(text) <= length:
        return text
    head = text[:length]
    space = head.rfind(" ")
    return (head[:space] if space > length // 2 else head).rstrip() + " …"


@dataclass
class SaveOutcome:
    """What became of a save_to_knowledge call: the model's answer, and the draft or save it made."""

    result: dict[str, Any]
    draft: Draft | None = None
    save: ModelSave | None = None


def draft_answer(draft: Draft) -> dict[str, Any]:
    return {
        "status": "draft",
        "knowledge_base": draft.knowledge_base,
        "draft": {"id": draft.id, "title": draft.title, "text": draft.text},
        "note": DRAFT_NOTE,
    }


def saved_answer(save: ModelSave) -> dict[str, Any]:
    base = save.knowledge_base
    return {
        "status": "saved",
        "knowledge_base": base,
        "title": save.title,
        "path": f"saved/{save.path}",
        "link": save.link,
        "undo": save.undo,
        "message": f"Saved to {base}",
        "note": f"The note is saved in {base}. Tell the person it was saved; they can undo it.",
    }


def save(saves: Saves, base: KnowledgeBase, *, by: str, conversation: str | None, title: Any, text: Any,
         confirm: bool, maker: str | None = None) -> SaveOutcome:
    """Ask before saving (`confirm`: a draft the person decides on: `maker`, the key that chats) or save on its own
    (within SAVE_LIMIT)."""
    try:
        if confirm:
            draft = saves.propose(base, by, conversation, title, text, made_by=maker)
            return SaveOutcome(draft_answer(draft), draft=draft)
        done = saves.save_now(base, by, conversation, title, text)
    except AstralyxError as e:
        note = {"SAVE_LIMIT": LIMIT_NOTE, "DRAFT_LIMIT": DRAFT_LIMIT_NOTE}.get(e.code, "Nothing was saved.")
        return SaveOutcome({**error_body(e.code, e.message), "note": note})
    except Exception as e:  # a disk that refuses the file: the model is told, the chat goes on
        log.exception("save_to_knowledge on %s failed", base.name)
        return SaveOutcome({**error_body("SAVE_FAILED", f"The note could not be written on the server ({type(e).__name__})"),
                      "note": "Nothing was saved. Tell the person."})
    return SaveOutcome(saved_answer(done), save=done)
