"""What a question says besides its topic, read by rules (no model): whom it names, when it asks about,
and which of its words are only the question's form.

    cues("When did Mel go camping in June 2023?") ->
        Cues(names=("mel",), period=June 2023, keyword_query="Mel camping in June 2023", topic_query="camping in June 2023")

Search uses them after fusing the rankings (search.py `boost`): a passage said by (or a fact about) a person
the question names, and one said or dated within the period it asks about, move up. A passage's speaker
is a fact's subject, or the name a transcript line starts with ("Caroline: …", "Caroline (8 May 2023): …");
its dates are a fact's said_at, a note's `said_at` / `date` front matter, or a date its text writes out in
full (8 May 2023, 2023-05-08, May 2023). No passage is filtered out for a cue: a misread question only
reorders. The keywords search the question without its form ("what would … likely"), and in a memory
without its names too (each fact of a person holds the name; the subject's bonus stands for it); the
vectors read the question as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from .memory.dates import MONTHS, Period, asked_period, named_dates
from .memory.facts import moment

# Capitalised words that are the question's form, not a name ("What", "Did", "I", a month or a weekday).
_NOT_NAMES = frozenset(
    "what when where who whom whose why how which did does do is are was were has have had can could would should "
    "will shall may might must i the a an in on at of for to and or but if since after before during by from with "
    "about into as not no yes please tell give find list show describe explain name any some all each every both "
    "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow mr mrs ms dr".split()
) | frozenset(MONTHS)

# Words of a question's form that BM25 would still weigh (the index leaves out the commonest English words only):
# searching "likely pursue her education" for "What fields would Caroline be likely to pursue in her education?".
QUESTION_WORDS = frozenset(
    "what when where who whom whose why how which would could should might must shall can "
    "did does do done doing has have had having is are was were be been being am "
    "her hers his him he she they them their theirs its it me my mine our ours us we you your yours i "
    "likely kind kinds type types sort sorts thing things something anything ever also about any some "
    "much many more most other others such very really just get got make made go went gone "
    "mention mentioned mentions say said tell told think thought s t".split()
)

_NAME = re.compile(r"\b([A-Z][\w-]*(?:'s|’s)?)")
_WORD = re.compile(r"\w+", re.UNICODE)
# A transcript line: "Caroline: …", "Caroline (8 May 2023): …", "Dr Ana Lima [10:02]: …"
_SPEAKER = re.compile(r"^\s*([A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2})\s*(?:[(\[][^)\]\n]{0,40}[)\]])?\s*:")
MIN_PREFIX = 3  # "Mel" names Melanie; "Al" is not taken for Alice


@dataclass(frozen=True)
class Cues:
    names: tuple[str, ...]  # case-folded names the question mentions
    period: Period | None  # the period it asks about (memory/dates.py)
    keyword_query: str  # the words searched by keywords: the question's form left out (unless nothing is left)
    topic_query: str  # the same without the names: in a memory, whom it is about is the subject's bonus

    @property
    def any(self) -> bool:
        return bool(self.names) or self.period is not None


def cues(query: str, today: date | None = None) -> Cues:
    names: list[str] = []
    for m in _NAME.finditer(query):
        word = re.sub(r"(?:'s|’s)$", "", m[1])
        if len(word) < 2 or word.casefold() in _NOT_NAMES or word.isupper():
            continue  # an acronym (LGBTQ, NYC) is a topic, not a person
        names.append(word.casefold())
    words = [w for w in _WORD.findall(query) if w.casefold() not in QUESTION_WORDS]
    keyword_query = " ".join(words) or query
    said = set(names)
    topic = [w for w in words if w.casefold() not in said and not (w[-1:] in "sS" and w[:-1].casefold() in said)]
    return Cues(tuple(dict.fromkeys(names)), asked_period(query, today), keyword_query, " ".join(topic) or keyword_query)


def speaker(hit: Any) -> str | None:
    """Whom a passage is about or by: a fact's subject, a transcript line's speaker."""
    subject = (hit.attrs or {}).get("subject")
    if isinstance(subject, str) and subject:
        return subject
    m = _SPEAKER.match(hit.text)
    return m[1] if m else None


def names_match(who: str | None, names: tuple[str, ...]) -> bool:
    """A name the question says is the speaker's, a word of it, or (3 letters or more) the start of one."""
    if not who or not names:
        return False
    parts = who.casefold().split()
    whole = " ".join(parts)
    for name in names:
        if name == whole or name in parts:
            return True
        if len(name) >= MIN_PREFIX and any(p.startswith(name) for p in parts):
            return True
    return False


# A fact said a little after what it tells of still counts ("last week I …"): said up to this long after
# the period, or a day before it.
SAID_AFTER = timedelta(days=14)
SAID_BEFORE = timedelta(days=1)


def dated_in(hit: Any, period: Period) -> bool:
    """Was the passage said, or does it say a date, within the period asked about? A period named without
    its year ("in June") is taken in the year of the passage's date (or the year before: said in January of
    a December), not only in the latest year, so that a memory of older chats answers it too."""
    def within(said: datetime, ends: datetime | None = None) -> bool:
        for p in _years_of(period, said):
            if ends is None and p.start - SAID_BEFORE <= said < p.end + SAID_AFTER:
                return True
            if ends is not None and said < p.end + SAID_AFTER and ends > p.start - SAID_BEFORE:
                return True
        return False

    attrs = hit.attrs or {}
    for key in ("said_at", "date"):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            try:
                said = moment(value)
            except (ValueError, TypeError):
                continue
            if within(said):
                return True
    return any(within(named.start, named.end) for named in named_dates(hit.text[:2000]))


def _years_of(period: Period, said: datetime) -> list[Period]:
    if not period.yearless:
        return [period]
    return [period.in_year(said.year), period.in_year(said.year - 1)]
