"""When a question to a memory asks about: a day, month or year it names, read by rules (no model).

"What was Ana's role in April 2026?" asks about April 2026, and the memory's search puts the fact
that held then first, as `as_of` would, without leaving the others out (a rule can misread a
question; the answer still holds the current fact, and each passage says when it held).

Read (English, any case): 2026-04-15; 15 April 2026, April 15(, 2026); April 2026, Apr 2026; a
month after a word such as in, during, since, by, last (in September: the latest September up to
today); a year (2026, in 2025); last / this year or month, yesterday, N days, months or years ago.
The first date named wins. "Since", "before" and the like are read as the date itself.

`named_dates` reads the dates a passage writes out in full (no relative ones): search moves up a passage
dated within the period a question asks about (metis/cues.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

MONTHS = {
    name: i
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sept", "sep"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
# A month alone ("may", "march" are words too) only after a word that makes it a time.
_BEFORE_MONTH = r"(?:in|during|since|until|till|by|before|after|from|of|around|early|mid|late|last|this|past)"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_AGO = r"(\d{1,2}|an?|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago"

_RULES = [
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("day month year", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.I)),
    ("month day year", re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?", re.I)),
    ("month year", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    # not followed by its day or year: those are the rules above (this match would start earlier)
    ("month", re.compile(rf"\b{_BEFORE_MONTH}\s+{_MONTH}(?![\w-])(?!\.?,?\s+(?:of\s+)?\d)", re.I)),
    ("relative", re.compile(r"\b(last|this|past|previous)\s+(year|month)\b|\byesterday\b", re.I)),
    ("ago", re.compile(rf"\b{_AGO}\b", re.I)),
    ("year", re.compile(rf"(?<![\w-]){_YEAR}(?![\w-])")),
]


@dataclass(frozen=True)
class Period:
    """From `start` (included) to `end` (not included), UTC; `said`: the words that named it."""

    start: datetime
    end: datetime
    said: str
    # Named without its year ("in June", "on 8 May"): read as the latest such up to today, but it may be
    # another year's (a memory of older chats): search's date bonus takes it in any year (metis/cues.py).
    yearless: bool = False

    def in_year(self, year: int) -> Period:
        """The same days in another year (29 February becomes the 28th)."""
        def moved(moment: datetime) -> datetime:
            shift = year - self.start.year
            try:
                return moment.replace(year=moment.year + shift)
            except ValueError:
                return moment.replace(year=moment.year + shift, day=28)
        return Period(moved(self.start), moved(self.end), self.said, self.yearless)

    def overlaps(self, since: datetime, until: datetime | None) -> bool:
        """Did something that held from `since` until `until` (None: still) hold at some time in it?"""
        return since < self.end and (until is None or until > self.start)


def asked_period(query: str, today: date | None = None) -> Period | None:
    """The period the question names (the one named first), or None."""
    today = today or datetime.now(UTC).date()
    found: list[tuple[int, Period]] = []
    for rule, pattern in _RULES:
        for m in pattern.finditer(query):
            period = _period(rule, m, today)
            if period is not None:
                found.append((m.start(), period))
                break
    return min(found, key=lambda f: f[0])[1] if found else None


def _period(rule: str, m: re.Match[str], today: date) -> Period | None:
    said = m.group(0)
    try:
        if rule == "iso":
            return _days(date(int(m[1]), int(m[2]), int(m[3])), 1, said)
        if rule == "day month year":
            return _day(int(m[1]), MONTHS[m[2].lower()], m[3], today, said)
        if rule == "month day year":
            return _day(int(m[2]), MONTHS[m[1].lower()], m[3], today, said)
        if rule == "month year":
            return _month(int(m[2]), MONTHS[m[1].lower()], said)
        if rule == "month":
            month = MONTHS[m[1].lower()]
            return replace(_month(today.year if month <= today.month else today.year - 1, month, said), yearless=True)
        if rule == "relative":
            if said.lower() == "yesterday":
                return _days(today - timedelta(days=1), 1, said)
            back = 0 if m[1].lower() == "this" else 1
            if m[2].lower() == "year":
                return _year(today.year - back, said)
            month = today.month - back
            return _month(today.year if month else today.year - 1, month or 12, said)
        if rule == "ago":
            n = _NUMBERS.get(m[1].lower()) or int(m[1])
            unit = m[2].lower()
            if unit == "year":
                return _year(today.year - n, said)
            if unit == "month":
                months = today.year * 12 + today.month - 1 - n
                return _month(months // 12, months % 12 + 1, said)
            days = n * (7 if unit == "week" else 1)
            return _days(today - timedelta(days=days), 7 if unit == "week" else 1, said)
        if rule == "year":
            return _year(int(m[1]), said)
    except ValueError:  # 2026-02-30, 31 June: not a date
        return None
    return None


def _day(day: int, month: int, year: str | None, today: date, said: str) -> Period:
    if year:
        return _days(date(int(year), month, day), 1, said)
    this_year = date(today.year, month, day)
    return replace(_days(this_year if this_year <= today else date(today.year - 1, month, day), 1, said), yearless=True)


def _days(first: date, n: int, said: str) -> Period:
    start = datetime.combine(first, datetime.min.time(), UTC)
    return Period(start, start + timedelta(days=n), said)


def _month(year: int, month: int, said: str) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return Period(start, end, said)


def _year(year: int, said: str) -> Period:
    return Period(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), said)


# The rules that need no "today": a date written out in full in a passage's text.
_ABSOLUTE = [
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("day month year", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("month day year", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)),
    ("month year", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
]


def named_dates(text: str, most: int = 8) -> list[Period]:
    """The dates a text writes out in full (2023-05-08, 8 May 2023, May 8, 2023, May 2023), at most `most`:
    what a passage says it is dated (a saved chat turn "Ana (8 May 2023): …"). No relative dates: a
    passage's "last year" is its writer's, not ours."""
    found: list[tuple[int, Period]] = []
    taken: list[tuple[int, int]] = []
    today = date.max
    for rule, pattern in _ABSOLUTE:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue  # "8 May 2023" is not also "May 2023"
            period = _period(rule, m, today)
            if period is not None:
                found.append((m.start(), period))
                taken.append((m.start(), m.end()))
            if len(found) >= most:
                break
    return [p for _, p in sorted(found, key=lambda f: f[0])]
