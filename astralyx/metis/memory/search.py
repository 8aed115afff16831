"""Facts in search: one passage per fact, cited like a document, current facts first.

The index reads notes/memory/ with `read_fact`: the passage is the fact, its title "Ana — role",
where it sits "Ana › role › current since 2026-10-12" (or "held 2026-09-01 – 2026-10-12" for a fact
of the history), and its document attrs (status, said_at, until) let `rerank` put current facts
before history and, with `as_of`, keep only the facts that held on that date. A question that
names a date ("in April 2026", dates.py) puts the facts that held then first, the others after.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from ..bases import KnowledgeBase
from ..chunking import Chunk
from ..parsing import ParsedDocument
from ..writer import holds_facts
from .dates import Period, asked_period
from .facts import CURRENT_DIR, HISTORY_DIR, Fact, moment, parse
from .timeline import held_on, norm_name

if TYPE_CHECKING:
    from ..search import Hit

PREFIX = CURRENT_DIR + "/"


def label(base: KnowledgeBase, fact_id: str) -> str:
    return f"memory:{base.name}/{fact_id}"


def period(fact: Fact) -> str:
    if fact.status == "history":
        return f"held {fact.said_at} – {fact.until}"
    return f"current since {fact.said_at}"


def fact_document(base: KnowledgeBase, fact: Fact) -> ParsedDocument:
    return ParsedDocument(
        label=label(base, fact.id),
        title=f"{fact.subject} — {fact.attribute}",
        chunks=[Chunk(fact.fact, [fact.subject, fact.attribute, period(fact)])],
        attrs={
            "status": fact.status,
            "said_at": fact.said_at,
            "until": fact.until,
            "subject": fact.subject,
            "attribute": fact.attribute,
            "source": fact.source,
        },
        kind="memory",
    )


def make_reader(fallback: Any = None) -> Callable[[KnowledgeBase, str, str], ParsedDocument | None]:
    """The reader for notes/memory/ (a documents base's notes/memory/ folder is ordinary notes)."""

    def read_fact(base: KnowledgeBase, relpath: str, text: str) -> ParsedDocument | None:
        if not holds_facts(base, relpath):
            return fallback(base, relpath, text.encode()) if fallback else None
        path = PurePosixPath(relpath)
        folder = path.parent.as_posix()
        if path.suffix != ".md" or folder not in (CURRENT_DIR, HISTORY_DIR):
            return None
        fact = parse(text, path.stem, "history" if folder == HISTORY_DIR else "current")
        return fact_document(base, fact) if fact else None

    return read_fact


def _fact_of(hit: Any) -> Fact | None:
    attrs = hit.attrs or {}
    if not attrs.get("said_at"):
        return None
    return Fact(
        id="", subject="", attribute="", fact=hit.text, source="", said_at=attrs["said_at"], kept_at=attrs["said_at"],
        until=attrs.get("until"), status=attrs.get("status", "current"),
    )


def rerank(base: KnowledgeBase, hits: list[Hit], as_of: str | None, query: str = "") -> list[Hit]:
    """Current facts before their history; as_of: only the facts that held on that date; a date the
    query names: the facts that held then first (the others kept after them)."""
    if as_of:
        from .service import as_of_moment

        at = as_of_moment(as_of)  # a bad date: INVALID_DATE, as everywhere
        kept = []
        for hit in hits:
            fact = _fact_of(hit)
            if fact is not None and held_on(fact, at):
                kept.append(hit)
        return kept
    asked = asked_period(query) if query else None
    # Per subject+attribute: what held at the date asked about first, then its current fact, then its
    # history, newest first; the groups keep the rank of their best hit, so a relevant history fact
    # is not pushed out by unrelated current ones.
    groups: dict[tuple[str, str], list[Hit]] = {}
    for hit in hits:
        attrs = hit.attrs or {}
        key = (norm_name(str(attrs.get("subject", ""))), norm_name(str(attrs.get("attribute", ""))))
        if not key[0]:
            key = (hit.document, "")
        groups.setdefault(key, []).append(hit)
    out = []
    for group in groups.values():
        current = [h for h in group if (h.attrs or {}).get("status") != "history"]
        history = sorted(
            (h for h in group if (h.attrs or {}).get("status") == "history"),
            key=lambda h: moment(str(h.attrs.get("said_at"))),
            reverse=True,
        )
        ordered = current + history
        if asked is not None:
            ordered = [h for h in ordered if _held_in(h, asked)] + [h for h in ordered if not _held_in(h, asked)]
        out.extend(ordered)
    return out


def _held_in(hit: Hit, period: Period) -> bool:
    attrs = hit.attrs or {}
    if not attrs.get("said_at"):
        return False
    until = attrs.get("until")
    return period.overlaps(moment(str(attrs["said_at"])), moment(str(until)) if until else None)
