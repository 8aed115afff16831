"""The Memory service: keep, preview, list, edit and forget the facts of a memory base.

Permissions live here (keep/edit/forget: knowledge-bases:write-content; reading: knowledge-bases:read).
Every change runs under the base's folder lock, reads the facts from their files, applies the
timeline rules (timeline.py) and writes the difference as one step (store.py), through the
base's writer (metis/writer.py), which tells the index.
"""

from __future__ import annotations

import builtins
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from ...auth.actor import Actor
from ...auth.roles import READ, WRITE_CONTENT
from ...errors import BadRequest, Conflict, Invalid, NotFound, describe
from ...locks import Locks
from ...util import iso, new_id
from ..bases import KnowledgeBase, KnowledgeBases
from ..writer import Writer
from .facts import ID_RE, MAX_FACT, Correction, Fact, FactIn, moment, normalize_said_at, one_line
from .secrets import find_secret_in_fact
from .store import JOURNAL, MemoryStore
from .timeline import CONFIRMS, KNOWN, OLDER, REPLACES, held_on, key_of, norm_name, place, settle

MAX_BATCH = 500

# What keeping a batch would do: the answers, and the facts before and after by id.
Plan = tuple[list[dict[str, Any]], dict[str, Fact], dict[str, Fact]]


def _brief(fact: Fact) -> dict[str, Any]:
    brief: dict[str, Any] = {"id": fact.id, "fact": fact.fact, "said_at": fact.said_at, "source": fact.source}
    if fact.said_again:
        brief["said_again"] = list(fact.said_again)
    return brief


def _swap(facts: dict[str, Fact], old: list[Fact], new: list[Fact]) -> None:
    """Put a key's new timeline in place of its old one (a note merged into another one goes)."""
    for fact in old:
        facts.pop(fact.id, None)
    facts.update({f.id: f for f in new})


def _stamp(dt: datetime) -> str:
    return dt.isoformat(timespec="microseconds").replace("+00:00", "Z")


class Memory:
    def __init__(self, bases: KnowledgeBases, writer: Writer, *, locks: Locks) -> None:
        self.bases = bases
        self.locks = locks
        self.writer = writer  # every fact's file is written through it (the index hears of it there)
        self._repaired: set[str] = set()
        self._guard = threading.Lock()

    # -- bases -------------------------------------------------------------
    def base(self, actor: Actor, name: str, permission: str = READ) -> KnowledgeBase:
        actor.require(permission)
        base = self.bases.get(actor, name)
        self.check_memory(base)
        return base

    @staticmethod
    def check_memory(base: KnowledgeBase) -> None:
        if base.kind != "memory":
            raise Conflict(
                f"{base.name!r} is a knowledge base of documents, not a memory: facts are kept in a base of "
                "kind memory (create one with spec.kind \"memory\")",
                code="NOT_A_MEMORY",
            )

    def store(self, base: KnowledgeBase) -> MemoryStore:
        """The base's store, repaired before first use in this process. Call under the base's folder lock."""
        store = MemoryStore(base.folder, self.writer.of(base))
        key = f"{base.folder}|{base.created_at}"
        # A journal left by a process that crashed (maybe another one: a local CLI beside the server)
        # is replayed before anything else is changed, so it can never replay over newer changes.
        if key not in self._repaired or store.journal.exists():
            with self._guard:
                self._repaired.add(key)
            store.repair()
        return store

    def repair(self, base: KnowledgeBase) -> list[str]:
        """Repair one memory now (at start, or after files were changed by hand). Paths changed."""
        self.check_memory(base)
        with self.locks.folder(base.folder):
            changed = MemoryStore(base.folder, self.writer.of(base)).repair()
            with self._guard:
                self._repaired.add(f"{base.folder}|{base.created_at}")
        return changed

    def repair_all(self) -> None:
        for base in self.bases.all():
            if base.kind == "memory" and base.folder.exists():
                self.repair(base)

    def repair_interrupted(self) -> None:
        """At start: finish any change a crash interrupted (its journal is still there). Cheap: one stat a memory."""
        for base in self.bases.all():
            if base.kind == "memory" and (base.folder / JOURNAL).exists():
                self.repair(base)

    # -- reading -----------------------------------------------------------
    def facts_in(self, base: KnowledgeBase) -> list[Fact]:
        """Every fact of the base, arranged (current and history). No permission check: callers did it."""
        with self.locks.folder(base.folder):
            store = self.store(base)
            return [f for tl in store.timelines(store.facts()).values() for f in tl]

    def known_subjects(self, base: KnowledgeBase) -> dict[str, list[str]]:
        """Subjects the memory knows and their attributes (as spelt by the current facts): for the extractor."""
        out: dict[str, list[str]] = {}
        seen: dict[str, str] = {}
        for fact in sorted(self.facts_in(base), key=lambda f: (norm_name(f.subject), norm_name(f.attribute))):
            if fact.status != "current":
                continue
            subject = seen.setdefault(norm_name(fact.subject), fact.subject)
            out.setdefault(subject, []).append(fact.attribute)
        return out

    def get(self, actor: Actor, base_name: str, fact_id: str) -> Fact:
        base = self.base(actor, base_name)
        return self._find(self.facts_in(base), base, fact_id)

    @staticmethod
    def _find(facts: list[Fact], base: KnowledgeBase, fact_id: str) -> Fact:
        for fact in facts:
            if fact.id == fact_id:
                return fact
        raise NotFound(
            f"No fact {fact_id!r} in memory {base.name!r}: `astra metis memory {base.name} --history` lists them",
            code="FACT_NOT_FOUND",
        )

    def list(self, actor: Actor, base_name: str, *, history: bool = False, as_of: str | None = None,
             subject: str | None = None, attribute: str | None = None) -> dict[str, Any]:
        """Current facts grouped by subject; with history, what each replaced; as_of: what held then; subject,
        attribute: only the facts about that subject, of that attribute (named as facts are matched: without case
        and extra spaces). The API's listing and MCP's recall."""
        base = self.base(actor, base_name)
        facts = self.facts_in(base)
        only = (norm_name(subject or ""), norm_name(attribute or ""))
        timelines: dict[tuple[str, str], list[Fact]] = {}
        for fact in facts:
            key = key_of(fact)
            if all(not wanted or wanted == part for wanted, part in zip(only, key, strict=True)):
                timelines.setdefault(key, []).append(fact)
        at = as_of_moment(as_of) if as_of else None
        subjects: dict[str, dict[str, Any]] = {}
        counts = {"current": 0, "history": 0}
        for key in sorted(timelines):
            timeline = timelines[key]
            if at is not None:
                held = [f for f in timeline if held_on(f, at)]
                if not held:
                    continue
                head = held[-1]
                older = timeline[: timeline.index(head)]
            else:
                head, older = timeline[-1], timeline[:-1]
            item = fact_dict(head)
            counts["current"] += 1
            if history:
                item["replaced"] = [fact_dict(f) for f in reversed(older)]
                counts["history"] += len(older)
            group = subjects.setdefault(key[0], {"subject": timeline[-1].subject, "facts": []})
            group["facts"].append(item)
        answer: dict[str, Any] = {
            "knowledge_base": base.name,
            "subjects": list(subjects.values()),
            "count": counts["current"],
        }
        if history:
            answer["history_count"] = counts["history"]
        if as_of:
            answer["as_of"] = as_of
        if only[0]:
            answer["subject"] = subject
        if only[1]:
            answer["attribute"] = attribute
        return answer

    # -- keeping -----------------------------------------------------------
    def preview(
        self, actor: Actor, base_name: str, facts: builtins.list[FactIn | dict[str, Any]]
    ) -> builtins.list[dict[str, Any]]:
        """What each fact WOULD become if kept (new, replaces, older, known). Writes nothing."""
        base = self.base(actor, base_name, WRITE_CONTENT)
        incoming = self._validate(facts)
        with self.locks.folder(base.folder):
            store = self.store(base)
            results, _, _ = self._plan(store, incoming)
        return results

    def keep(self, actor: Actor, base_name: str, facts: builtins.list[FactIn | dict[str, Any]]) -> dict[str, Any]:
        """Keep facts as one step (all or nothing). Answers what became of each and how many were replaced."""
        base = self.base(actor, base_name, WRITE_CONTENT)
        incoming = self._validate(facts)
        with self.locks.folder(base.folder):
            store = self.store(base)
            results, before, after = self._plan(store, incoming)
            ops = store.ops_for(before, after)
            store.commit(ops)  # under the lock: the index hears of changes in the order they were made
        return {
            "knowledge_base": base.name,
            "facts": results,
            "kept": sum(1 for r in results if r["status"] != "known"),
            "replaced": sum(1 for r in results if r["change"] == REPLACES),
            # Known already: not kept twice; of those, confirmed: a saying on another date, recorded.
            "known": sum(1 for r in results if r["status"] == "known"),
            "confirmed": sum(1 for r in results if r["change"] == CONFIRMS),
        }

    def _validate(self, facts: builtins.list[FactIn | dict[str, Any]]) -> builtins.list[FactIn]:
        if not isinstance(facts, list) or not facts:
            raise BadRequest('Send {"facts": [{"subject", "attribute", "fact", "source", "said_at"?}, …]}', code="INVALID_FACT")
        if len(facts) > MAX_BATCH:
            raise Invalid(f"At most {MAX_BATCH} facts at once: send them in several requests", code="TOO_MANY_FACTS")
        incoming: builtins.list[FactIn] = []
        for i, raw in enumerate(facts):
            try:
                fact = raw if isinstance(raw, FactIn) else FactIn.model_validate(raw)
            except ValidationError as e:
                raise Invalid(describe(e, "fact" if len(facts) == 1 else f"facts[{i}]"),
                              code="INVALID_FACT") from None
            incoming.append(fact)
        # Secrets first, for the whole batch: nothing of any of them is written.
        for i, fact in enumerate(incoming):
            where = "The fact" if len(incoming) == 1 else f"facts[{i}]"
            refuse_secret(fact.subject, fact.attribute, fact.fact, fact.source, where=where)
        return incoming

    def _plan(self, store: MemoryStore, incoming: builtins.list[FactIn]) -> Plan:
        existing = store.facts()
        timelines = store.timelines(existing)
        before = {f.id: f for tl in timelines.values() for f in tl}
        after = dict(before)
        latest = max((moment(f.kept_at) for f in existing), default=datetime.min.replace(tzinfo=UTC))
        start = max(datetime.now(UTC), latest + timedelta(microseconds=1))
        said_default = iso()
        results: builtins.list[dict[str, Any]] = []
        ids: builtins.list[str | None] = []
        for i, fin in enumerate(incoming):
            fact = Fact(
                id=new_id("f"),
                subject=fin.subject,
                attribute=fin.attribute,
                fact=fin.fact,
                source=fin.source,
                said_at=fin.said_at or said_default,
                kept_at=_stamp(start + timedelta(microseconds=i)),
            )
            key = key_of(fact)
            timeline = timelines.get(key, [])
            if timeline:  # one spelling per subject and attribute: the one the memory knows
                fact = fact.with_(subject=timeline[-1].subject, attribute=timeline[-1].attribute)
            placement = place(timeline, fact)
            entry: dict[str, Any] = {
                "subject": fact.subject,
                "attribute": fact.attribute,
                "fact": fact.fact,
                "source": fact.source,
                "said_at": fact.said_at,
                "change": placement.change,
            }
            if placement.change in (KNOWN, CONFIRMS):
                # Not kept twice. Confirms: said on another date, which the fact records (said_again).
                assert placement.known is not None
                entry["status"] = "known"
                entry["known"] = _brief(placement.known)
                results.append(entry)
                ids.append(None)
                if placement.change == KNOWN:
                    continue
            elif placement.change == REPLACES:
                assert placement.current is not None
                entry["replaces"] = _brief(placement.current)
            assert placement.timeline is not None  # known changes nothing and went on above
            if placement.change == OLDER:
                entry["current"] = _brief(placement.timeline[-1])
                if placement.split is not None:  # said between two sayings of a fact: now two facts
                    entry["splits"] = _brief(placement.split)
            _swap(after, timeline, placement.timeline)
            timelines[key] = placement.timeline
            if placement.change == CONFIRMS:
                continue
            entry["id"] = fact.id
            results.append(entry)
            ids.append(fact.id)
        for entry, fid in zip(results, ids, strict=True):
            if fid is None or fid not in after:
                continue
            final = after[fid]
            entry["status"] = final.status
            if final.status == "history":
                entry["until"] = final.until
                entry["replaced_by"] = final.replaced_by
        return results, before, after

    # -- correcting and forgetting ---------------------------------------------
    def edit(
        self,
        actor: Actor,
        base_name: str,
        fact_id: str,
        fact: str | None = None,
        *,
        said_at: str | None = None,
        source: str | None = None,
    ) -> Fact:
        """Correct a fact's wording (or its date or source), for every saying of it. Its place in the history
        is kept; if it now says what the fact beside it says, the two are one fact (the corrected one answered)."""
        base = self.base(actor, base_name, WRITE_CONTENT)
        changes: dict[str, Any] = {}
        if fact is not None:
            wording = one_line(fact, "the fact")
            if not wording or len(wording) > MAX_FACT:
                raise Invalid(f"A fact is one sentence of 1 to {MAX_FACT} characters", code="INVALID_FACT")
            changes["fact"] = wording
        if source is not None:
            if not str(source).strip():
                raise Invalid("source cannot be empty", code="INVALID_FACT")
            changes["source"] = one_line(source, "source")
        if said_at is not None:
            changes["said_at"] = normalize_said_at(said_at)
        if not changes:
            raise BadRequest('Send {"fact": "the corrected sentence"}', code="INVALID_FACT")
        refuse_secret("", "", changes.get("fact", ""), changes.get("source", ""), where="the correction")
        check_id(fact_id)
        with self.locks.folder(base.folder):
            store = self.store(base)
            timelines = store.timelines(store.facts())
            before = {f.id: f for tl in timelines.values() for f in tl}
            current = self._find(list(before.values()), base, fact_id)
            if all(getattr(current, k) == v for k, v in changes.items()):
                return current
            stamp = iso()
            record = correction(current, changes, stamp)
            edited = current.with_(**changes, edited_at=stamp, corrected=(*current.corrected, record))
            old = timelines[key_of(current)]
            # The edited fact may now be the same fact as one beside it: then they are one fact (one note).
            timeline, where = settle([edited if f.id == fact_id else f for f in old])
            home = where[fact_id]
            timeline = [f.with_(edited_at=edited.edited_at) if f.id == home else f for f in timeline]
            after = dict(before)
            _swap(after, old, timeline)
            ops = store.ops_for(before, after)
            store.commit(ops)  # under the lock: the index hears of changes in the order they were made
        return after[home]

    def forget(self, actor: Actor, base_name: str, fact_id: str, *, history: bool = False) -> dict[str, Any]:
        """Delete a fact; with history, also the older facts of its subject and attribute it replaced.

        Without history the facts it replaced stay: the one before it holds again (it was current
        before this one was said).
        """
        base = self.base(actor, base_name, WRITE_CONTENT)
        check_id(fact_id)
        with self.locks.folder(base.folder):
            store = self.store(base)
            timelines = store.timelines(store.facts())
            before = {f.id: f for tl in timelines.values() for f in tl}
            fact = self._find(list(before.values()), base, fact_id)
            timeline = timelines[key_of(fact)]
            index = next(i for i, f in enumerate(timeline) if f.id == fact_id)
            gone = {fact_id} | ({f.id for f in timeline[:index]} if history else set())
            # The facts on either side of a forgotten one may be the same fact: one fact again (one note).
            remaining, where = settle([f for f in timeline if f.id not in gone])
            after = dict(before)
            _swap(after, timeline, remaining)
            ops = store.ops_for(before, after)
            store.commit(ops)  # under the lock: the index hears of changes in the order they were made
        answer: dict[str, Any] = {
            "knowledge_base": base.name,
            "forgotten": fact_id,
            "history_forgotten": len(gone) - 1,
        }
        if fact.status == "current" and remaining:
            answer["current"] = fact_dict(remaining[-1])
        joined = {home for fid, home in where.items() if fid != home}
        if joined:  # the facts on either side of it were the same fact: one fact again
            answer["rejoined"] = fact_dict(next(f for f in remaining if f.id in joined))
        return answer


def correction(fact: Fact, changes: dict[str, Any], stamp: str) -> Correction:
    """What an Edit of `fact` keeps: the values it changed, as they were. An earlier wording that looks
    like a secret is not kept (the correction may be what took it out)."""
    before = {k: getattr(fact, k) for k, v in changes.items() if getattr(fact, k) != v}
    if "fact" in before and find_secret_in_fact("", "", before["fact"], ""):
        del before["fact"]
    if "source" in before and find_secret_in_fact("", "", "", before["source"]):
        del before["source"]
    return Correction(on=stamp[:10], **before)


def fact_dict(fact: Fact) -> dict[str, Any]:
    data = fact.to_dict()
    data["held"] = {"from": fact.said_at, "until": fact.until}
    return data


def check_id(fact_id: str) -> None:
    if not ID_RE.match(fact_id or ""):
        raise NotFound(f"{fact_id!r} is not a fact id (f_ and 16 hex digits)", code="FACT_NOT_FOUND")


def refuse_secret(subject: str, attribute: str, fact: str, source: str, *, where: str) -> None:
    found = find_secret_in_fact(subject, attribute, fact, source)
    if found:
        reason, field = found
        # The message never repeats the text: it must not reach a log either.
        raise Invalid(
            f"{where} looks like {reason} (in its {field}): secrets are never kept in a memory, and nothing of it "
            "was written. Keep it in a password manager, or reword the fact without it",
            code="FACT_SENSITIVE",
            details={"reason": reason, "where": where, "field": field},
        )


def as_of_moment(value: str) -> datetime:
    """The instant `as_of` asks about: a date means by the end of that day (a bad one: INVALID_DATE)."""
    return moment(normalize_said_at(value, "as_of"), end_of_day=True)
