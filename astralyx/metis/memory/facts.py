"""A fact: who or what (subject), what about it (attribute), one sentence, where and when it was said.

Each fact is a note of the memory: notes/memory/<id>.md while it holds, notes/memory/history/<id>.md
once something said later replaced it. The front matter carries every field; the body repeats the
sentence so the file reads well on its own. `said_at` is the fact's first saying; `said_again` (a list
of dates, left out when empty, so notes written before it read the same) its later ones. `corrected`
(likewise left out when empty) keeps what each Edit changed: the earlier wording (`from`), date or
source, and the day of the correction (`on`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, time
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from ...errors import Invalid
from ..writer import FACTS_DIR

ID_RE = re.compile(r"^f_[0-9a-f]{16}$")
CURRENT_DIR = FACTS_DIR
HISTORY_DIR = f"{FACTS_DIR}/history"
MAX_NAME = 200
MAX_FACT = 2000
MAX_SOURCE = 500
# libyaml when present: a memory's facts are all read on each change, and pure-Python YAML is slow.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
FIELDS = ("id", "subject", "attribute", "fact", "source", "said_at", "said_again", "kept_at", "until", "replaced_by", "edited_at",
          "corrected")


@dataclass(frozen=True)
class Correction:
    """What one Edit changed: the values before it (None: that one was not changed), and its day."""

    on: str  # YYYY-MM-DD
    fact: str | None = None  # the earlier wording ("from")
    said_at: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, str]:
        data = {"from": self.fact, "said_at": self.said_at, "source": self.source, "on": self.on}
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def read(cls, value: Any) -> Correction | None:
        """From front matter (maybe edited by hand): None when it is not one."""
        if not isinstance(value, dict) or not value.get("on"):
            return None
        try:
            on = normalize_said_at(_str(value["on"]))[:10]
            said_at = normalize_said_at(_str(value["said_at"])) if value.get("said_at") else None
        except Invalid:
            return None
        return cls(on=on, fact=_str(value.get("from")), said_at=said_at, source=_str(value.get("source")))


@dataclass(frozen=True)
class Fact:
    id: str
    subject: str
    attribute: str
    fact: str
    source: str
    said_at: str  # a date (2026-10-12) or a UTC date-time (2026-10-12T10:05:00Z): its first saying
    kept_at: str  # UTC date-time with microseconds: also breaks ties between facts said at the same moment
    until: str | None = None  # set once replaced: when the next fact was said
    replaced_by: str | None = None
    edited_at: str | None = None
    said_again: tuple[str, ...] = ()  # its later sayings, in order (none in memories written before them)
    corrected: tuple[Correction, ...] = ()  # what Edit changed, oldest first (none in memories written before)
    status: str = field(default="current", compare=False)  # current | history: where the file is

    @property
    def relpath(self) -> str:
        return f"{HISTORY_DIR if self.status == 'history' else CURRENT_DIR}/{self.id}.md"

    def with_(self, **changes: Any) -> Fact:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if v is not None and v != ()}
        if self.said_again:
            data["said_again"] = list(self.said_again)
        if self.corrected:
            data["corrected"] = [c.to_dict() for c in self.corrected]
        return data


# The rules of one_line() and normalize_said_at() as the API's schema says them (they stay the checks).
# Not blank, and no control character that is not whitespace: what _CONTROL refuses once whitespace is one space.
_CTRL = "\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069"
ONE_LINE: JsonDict = {"pattern": f"^[^{_CTRL}]*[^{_CTRL}\\s][^{_CTRL}]*$"}
DATE_SCHEMA: JsonDict = {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"},
                                   {"type": "null"}]}


class FactIn(BaseModel):
    """A fact to keep, as posted to …/memory."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    subject: str = Field(min_length=1, max_length=MAX_NAME, json_schema_extra=ONE_LINE)
    attribute: str = Field(min_length=1, max_length=MAX_NAME, json_schema_extra=ONE_LINE)
    fact: str = Field(min_length=1, max_length=MAX_FACT, json_schema_extra=ONE_LINE)
    source: str = Field(default="by hand", min_length=1, max_length=MAX_SOURCE, json_schema_extra=ONE_LINE)
    said_at: str | None = Field(default=None, json_schema_extra=DATE_SCHEMA)

    @field_validator("subject", "attribute", "fact", "source")
    @classmethod
    def _one_line(cls, v: str) -> str:
        try:
            return one_line(v)
        except Invalid as e:  # as pydantic's own error: the message then names the field
            raise PydanticCustomError("control_character", e.message) from None

    @field_validator("said_at", mode="before")
    @classmethod
    def _said_at(cls, v: Any) -> str | None:
        if v is None or v == "":
            return None
        return normalize_said_at(v)


# C0 and C1 controls (after whitespace is made one space) and the bidirectional overrides, which
# make a fact read differently from what it holds.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def one_line(value: Any, what: str = "it") -> str:
    """A fact's text field on one line: runs of whitespace (newlines, tabs) become one space;
    other control characters (NUL, escape, …) are refused."""
    text = " ".join(str(value).split())
    found = _CONTROL.search(text)
    if found:
        raise Invalid(f"{what} holds the control character U+{ord(found.group()):04X}: write plain text", code="INVALID_FACT")
    return text


# The forms said_at and as_of take (RFC 3339, and the date alone). Python's fromisoformat alone
# would also take 2026-W01 and 20260101, which a person rarely means and the docs never promise.
DATE_FORMS = "a date (2026-10-12) or a date-time (2026-10-12T10:05:00Z, or with its offset: 2026-10-12T12:05:00+02:00)"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:[Zz]|[+-]\d{2}:\d{2})?")


def normalize_said_at(value: Any, what: str = "said_at") -> str:
    """A date stays a date; a date-time becomes UTC (`Z`). Refuses anything else with how to write it:
    INVALID_DATE, the one code for a bad date wherever it is given (said_at, as_of, a message's date),
    the message naming `what`."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        return value.isoformat()
    else:
        text = str(value).strip()
        try:
            if _DATE.fullmatch(text):
                return date.fromisoformat(text).isoformat()
            if not _DATETIME.fullmatch(text):
                raise ValueError(text)
            dt = datetime.fromisoformat(text.upper().replace("Z", "+00:00").replace(" ", "T", 1))
        except ValueError:
            raise Invalid(f"{what} {text!r} is not a date: write {DATE_FORMS}", code="INVALID_DATE") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        dt = dt.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:30+01:00 is before the first instant there is
        raise Invalid(
            f"{what} {str(value)!r} is out of range: in UTC it must fall between the years 1 and 9999",
            code="INVALID_DATE",
        ) from None
    return dt.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def moment(stamp: str, *, end_of_day: bool = False) -> datetime:
    """The instant a said_at / until / kept_at stands for (a date: its first moment, UTC).

    end_of_day: a date stands for its last moment instead (as_of 2026-09-30: by the end of that day).
    """
    if len(stamp) == 10:
        return datetime.combine(date.fromisoformat(stamp), time.max if end_of_day else time(0), UTC)
    dt = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def render(fact: Fact) -> str:
    meta = {k: getattr(fact, k) for k in FIELDS if getattr(fact, k) not in (None, ())}
    if fact.said_again:
        meta["said_again"] = list(fact.said_again)
    if fact.corrected:
        meta["corrected"] = [c.to_dict() for c in fact.corrected]
    meta["status"] = fact.status
    head = yaml.dump(meta, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{head}---\n\n{fact.fact}\n"


def _str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime | date):  # a hand-edited, unquoted date
        return normalize_said_at(value)
    return str(value)


def parse(text: str, file_id: str, status: str) -> Fact | None:
    """A fact from its file, or None when the file is not one (no front matter, missing fields)."""
    if not text.startswith("---"):
        return None
    try:
        _, head, body = text.split("---", 2)
        meta = yaml.load(head, Loader=_Loader) or {}
    except (ValueError, yaml.YAMLError):
        return None
    if not isinstance(meta, dict):
        return None
    fid: str | None = _str(meta.get("id")) or file_id
    if fid != file_id or not ID_RE.match(fid or ""):
        fid = file_id if ID_RE.match(file_id) else None
    if fid is None:
        return None
    sentence = _str(meta.get("fact")) or " ".join(body.split())
    subject, attribute, said_at = _str(meta.get("subject")), _str(meta.get("attribute")), _str(meta.get("said_at"))
    if not (subject and attribute and sentence and said_at):
        return None
    try:
        said_at = normalize_said_at(said_at)
    except Invalid:
        return None
    kept_at = _str(meta.get("kept_at")) or said_at
    again = meta.get("said_again")
    said_again = []
    for value in again if isinstance(again, list) else []:
        try:
            said_again.append(normalize_said_at(_str(value)))
        except Invalid:
            continue  # a hand-written date we cannot read: the rest of the fact still is
    listed = meta.get("corrected")
    corrected = [c for c in (Correction.read(v) for v in (listed if isinstance(listed, list) else [])) if c]
    return Fact(
        id=fid,
        subject=subject,
        attribute=attribute,
        fact=sentence,
        source=_str(meta.get("source")) or "by hand",
        said_at=said_at,
        kept_at=kept_at,
        until=_str(meta.get("until")),
        replaced_by=_str(meta.get("replaced_by")),
        edited_at=_str(meta.get("edited_at")),
        said_again=tuple(said_again),
        corrected=tuple(corrected),
        status=status,
    )
