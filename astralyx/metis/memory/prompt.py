"""What the extractor is asked: the instructions, the conversation as numbered lines, the answer's JSON schema.

Small models name things inconsistently and leave "I", "my manager" and "yesterday" as they are, so the
prompt gives them what they need to do better: today's date, each message's date (with its weekday, so
"next Friday" can be resolved), the speakers' names, and the subjects and attributes the memory already
knows. The answer is constrained by a JSON schema; each fact cites the message it comes from, so the date
it was said is taken from that message rather than from the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

# The answer: {"facts": [{"subject", "attribute", "fact", "message"}]}. Kept small and flat: the
# smaller the schema, the steadier a small model follows it.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string"},
                    "attribute": {"type": "string"},
                    "fact": {"type": "string"},
                    "message": {"type": "integer"},
                },
                "required": ["subject", "attribute", "fact", "message"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}

RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "facts", "strict": True, "schema": ANSWER_SCHEMA},
}

SYSTEM = """\
You read a conversation and list the durable facts in it: what will still be worth knowing later \
about people, teams, projects, places and plans (roles, employers, where someone lives or works, \
deadlines and dates, decisions, preferences, relationships, events that happened).
Leave out small talk, greetings, questions, passing moods, and anything that looks like a password, \
a key, a token or a card number.

For each fact give:
- subject: who or what the fact is about, by name ("Ana", "Launch", "Data team"). Never "I", "me", \
"you", "we" or "my manager": write the name the conversation gives. If a speaker's name is unknown, \
write "User" for the user.
- attribute: what about the subject, in one to three lowercase words ("role", "employer", "city", \
"deadline", "preferred language").
- fact: one short sentence that stands alone: names instead of pronouns, and dates instead of \
"yesterday", "last week" or "next Friday" (use the date of the message and today's date).
- message: the number of the message the fact comes from.

When a fact is about a subject or attribute the memory already knows, use exactly that subject and \
attribute, so that the new fact can replace the old one.

Answer with JSON only, in this shape: {"facts": [{"subject": "...", "attribute": "...", "fact": "...", \
"message": 1}]}. If nothing durable was said, answer {"facts": []}."""

RETRY_NOTE = (
    "Your previous answer could not be read. Answer with one JSON object only, no other text: "
    '{"facts": [...]}, or {"facts": []} if there are no durable facts.'
)


@dataclass
class Line:
    """One message of the conversation as the extractor sees it."""

    number: int  # 1-based, as cited back in "message"
    role: str
    name: str | None
    content: str
    said_at: str  # the message's date or date-time (ISO)


def day(value: str) -> str:
    """'2026-10-12' or '2026-10-12T09:30:00Z' → '2026-10-12 (Monday)'."""
    d = date.fromisoformat(value[:10])
    return f"{d.isoformat()} ({d.strftime('%A')})"


def render_line(line: Line) -> str:
    who = f"{line.name} ({line.role})" if line.name else line.role
    return f"[{line.number}] {line.said_at[:16].replace('T', ' ')} {who}: {line.content}"


def render_known(known: dict[str, list[str]], *, max_chars: int = 3000) -> str:
    """The memory's subjects and their attributes, one subject a line, within a budget."""
    out: list[str] = []
    size = 0
    for subject in sorted(known, key=str.lower):
        attributes = ", ".join(sorted(set(known[subject]), key=str.lower))
        text = f"- {subject}: {attributes}" if attributes else f"- {subject}"
        if size + len(text) > max_chars:
            out.append(f"- … and {len(known) - len(out)} more subjects")
            break
        out.append(text)
        size += len(text) + 1
    return "\n".join(out)


def messages(lines: list[Line], *, today: date, known: dict[str, list[str]], retry: bool = False) -> list[dict[str, Any]]:
    """The chat messages of one extraction request (one window of the conversation)."""
    dates = sorted({line.said_at[:10] for line in lines})
    parts = [f"Today is {day(today.isoformat())}."]
    if dates:
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        parts.append(f"The conversation took place on {day(when) if len(dates) == 1 else when}.")
    names = sorted({line.name for line in lines if line.name})
    if names:
        parts.append("Speakers: " + ", ".join(names) + ".")
    if known:
        parts.append("The memory already knows these subjects and attributes:\n" + render_known(known))
    else:
        parts.append("The memory is empty so far.")
    parts.append("The conversation, one message a line:\n" + "\n".join(render_line(line) for line in lines))
    system = SYSTEM + ("\n\n" + RETRY_NOTE if retry else "")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]
