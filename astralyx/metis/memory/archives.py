"""Chat archives people bring: ChatGPT's and Claude's exports, read into typed conversations.

    read_archive(data, name) → Archive(format, conversations)   # a zip, or the conversations.json in it
    choose(conversations, since=…, until=…, title="standup*")    # the filters the CLI and the API share

Both vendors export a zip whose `conversations.json` holds every conversation. Only that file is
read, from memory, never unpacked to disk; the zip's other files (images, attachments) are not
opened. An archive that is not one of these, or that looks hostile, is refused with a 4xx and
nothing of it is kept:

- a zip bomb: conversations.json larger than MAX_JSON_BYTES once unpacked (as declared, and as
  actually read, whichever comes first), or packed more than MAX_RATIO times;
- path tricks: only an entry named exactly `conversations.json`, at the top or one folder down
  (not `.`/`..`, no backslash), is read; two candidates are refused rather than guessed between;
- a zip in the zip, an encrypted entry, JSON that is not a list of conversations, or too many of them.

ChatGPT: a list of {title, create_time (Unix seconds), current_node, mapping: {id: {message, parent,
children}}}; the conversation is the branch that ends at `current_node` (an edited message or a
regenerated answer is a branch: the one the person saw last is read), system, tool and hidden
messages left out, only the text parts of a message. Claude: a list of {uuid, name, created_at,
chat_messages: [{sender: human|assistant, text | content: [{type: text, text}], created_at}]}.

Whatever the file holds, what is read can be written and shown: lone surrogates become U+FFFD, NUL goes from
the text; titles and ids are one line without control or bidirectional-override characters; an id met again
is told apart as id~, id~2, …; a ChatGPT tree that loops is walked once.
"""

from __future__ import annotations

import fnmatch
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, BinaryIO

from ...errors import Invalid, TooLarge

MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # the zip as sent (the API's body limit may be lower: max_body_bytes)
MAX_JSON_BYTES = 256 * 1024 * 1024  # conversations.json unpacked
MAX_RATIO = 200  # unpacked / packed: JSON packs 5-20 times; a bomb packs a thousand
RATIO_FROM = 1024 * 1024  # small entries may pack as they like
MAX_ENTRIES = 200_000  # files in the zip (a ChatGPT export with images holds thousands)
MAX_CONVERSATIONS = 50_000
MAX_TITLE = 200
NAME = "conversations.json"
ROLES = {"user": "user", "human": "user", "assistant": "assistant"}

HOW = ("Export from ChatGPT (Settings → Data controls → Export data) or Claude (Settings → Privacy → Export data) "
       "and send the zip as it came, or the conversations.json inside it")


@dataclass(frozen=True)
class Message:
    role: str  # user | assistant
    text: str
    time: str | None  # UTC date-time (2026-10-12T09:30:00Z), when the export says


@dataclass
class Conversation:
    id: str
    title: str
    created_at: str | None
    messages: list[Message] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What a person chooses by: title, date, how many messages (never their text)."""
        return {"id": self.id, "title": self.title, "created_at": self.created_at, "messages": len(self.messages)}

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "messages": [{"role": m.role, "text": m.text, "time": m.time} for m in self.messages]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Conversation:
        messages = [Message(m["role"], m["text"], m.get("time")) for m in data.get("messages") or []]
        return cls(str(data["id"]), str(data.get("title") or ""), data.get("created_at"), messages)

    def chat(self) -> list[dict[str, Any]]:
        """The messages as the extractor reads them (each dated by its own time, else the conversation's)."""
        out: list[dict[str, Any]] = []
        for m in self.messages:
            item: dict[str, Any] = {"role": m.role, "content": m.text}
            when = m.time or self.created_at
            if when:
                item["time"] = when
            out.append(item)
        return out


@dataclass
class Archive:
    format: str  # chatgpt | claude
    conversations: list[Conversation]


# -- the file ------------------------------------------------------------------


def _invalid(message: str) -> Invalid:
    return Invalid(message, code="ARCHIVE_INVALID")


def _too_large(message: str) -> TooLarge:
    return TooLarge(message, code="ARCHIVE_TOO_LARGE")


def _candidate(name: str) -> bool:
    """`conversations.json` at the top, or one real folder down; nothing else is ever opened."""
    if "\\" in name or name.startswith("/"):
        return False
    parts = name.split("/")
    if parts[-1] != NAME or len(parts) > 2:
        return False
    return len(parts) == 1 or parts[0] not in ("", ".", "..")


def conversations_json(data: bytes | BinaryIO, name: str = "archive") -> bytes:
    """The bytes of conversations.json: `data` itself when it is JSON, else read out of the zip `data` is.

    `data` as bytes (an upload) is held to MAX_ARCHIVE_BYTES; an open file (the person's own export, read by the
    CLI before it sends only conversations.json) may be larger: only its directory and that entry are read."""
    if isinstance(data, bytes):
        if len(data) > MAX_ARCHIVE_BYTES:
            raise _too_large(f"{name} is {len(data)} bytes: an archive is read up to {MAX_ARCHIVE_BYTES} bytes. "
                             "Send the conversations.json inside it alone")
        stream: BinaryIO = io.BytesIO(data)
    else:
        stream = data
    if stream.read(2) != b"PK":
        stream.seek(0)
        raw = stream.read(MAX_JSON_BYTES + 1)
        if len(raw) > MAX_JSON_BYTES:
            raise _too_large(f"{name} is more than {MAX_JSON_BYTES} bytes: conversations.json is read up to that")
        return raw
    stream.seek(0)
    try:
        archive = zipfile.ZipFile(stream)
        entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError) as e:
        raise _invalid(f"{name} is not a zip that can be read ({e}): {HOW}") from None
    if len(entries) > MAX_ENTRIES:
        raise _too_large(f"{name} holds {len(entries)} files: an archive is read with at most {MAX_ENTRIES}")
    found = [e for e in entries if _candidate(e.filename)]
    top = [e for e in found if "/" not in e.filename]
    chosen = top or found
    if not chosen:
        nested = any(e.filename.lower().endswith((".zip", ".tar", ".gz", ".tgz", ".7z")) for e in entries)
        hint = " (archives inside it are not opened: send the inner export itself)" if nested else ""
        raise _invalid(f"{name} holds no conversations.json at its top or one folder down{hint}: {HOW}")
    if len(chosen) > 1:
        raise _invalid(f"{name} holds {len(chosen)} files named conversations.json ({', '.join(e.filename for e in chosen)}): "
                       "send the one to read on its own")
    entry = chosen[0]
    if entry.flag_bits & 0x1:
        raise _invalid(f"{name}: {entry.filename} is encrypted: export again without a password")
    if entry.file_size > MAX_JSON_BYTES:
        raise _too_large(f"{name}: {entry.filename} unpacks to {entry.file_size} bytes: it is read up to {MAX_JSON_BYTES}")
    if entry.file_size > RATIO_FROM and entry.file_size > MAX_RATIO * max(entry.compress_size, 1):
        raise _too_large(f"{name}: {entry.filename} is packed {entry.file_size // max(entry.compress_size, 1)} times "
                         f"(at most {MAX_RATIO}): not an export as the vendors write them")
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(entry) as f:
            while chunk := f.read(1024 * 1024):
                size += len(chunk)
                # The declared size may lie: what is actually unpacked is held to the same limits.
                if size > MAX_JSON_BYTES or (size > RATIO_FROM and size > MAX_RATIO * max(entry.compress_size, 1)):
                    raise _too_large(f"{name}: {entry.filename} unpacks to more than it declares, and more than "
                                     f"{min(MAX_JSON_BYTES, MAX_RATIO * max(entry.compress_size, 1))} bytes: refused")
                chunks.append(chunk)
    except TooLarge:
        raise
    except Exception as e:  # noqa: BLE001 - zlib.error, a bad CRC, an odd method: a broken or doctored zip
        raise _invalid(f"{name}: {entry.filename} cannot be unpacked ({type(e).__name__}): {HOW}") from None
    out = b"".join(chunks)
    if out.startswith(b"PK"):
        raise _invalid(f"{name}: {entry.filename} is itself a zip: archives inside archives are not opened")
    return out


def read_archive(data: bytes, name: str = "archive") -> Archive:
    """A ChatGPT or Claude export (the zip, or its conversations.json) as typed conversations, oldest first."""
    return parse_json(conversations_json(data, name), name)


def parse_json(raw: bytes, name: str = "archive") -> Archive:
    """The conversations of a conversations.json's bytes (ChatGPT's or Claude's)."""
    try:
        value = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise _invalid(f"{name}: conversations.json is not UTF-8 text: {HOW}") from None
    except RecursionError:
        raise _invalid(f"{name}: conversations.json nests too deep to be an export") from None
    except ValueError as e:
        raise _invalid(f"{name}: conversations.json is not JSON ({e}): {HOW}") from None
    return parse(value, name)


def parse(value: Any, name: str = "archive") -> Archive:
    if isinstance(value, dict) and isinstance(value.get("conversations"), list):
        value = value["conversations"]
    if not isinstance(value, list):
        raise _invalid(f"{name}: conversations.json is not a list of conversations: {HOW}")
    if len(value) > MAX_CONVERSATIONS:
        raise _too_large(f"{name} holds {len(value)} conversations: an archive is read with at most {MAX_CONVERSATIONS}; "
                         "split it")
    items = [v for v in value if isinstance(v, dict)]
    if len(items) != len(value):
        raise _invalid(f"{name}: conversations.json holds something that is not a conversation: {HOW}")
    if not items:
        return Archive("chatgpt", [])
    if all("mapping" in v for v in items):
        fmt, reader = "chatgpt", _chatgpt
    elif all("chat_messages" in v for v in items):
        fmt, reader = "claude", _claude
    else:
        raise _invalid(f"{name}: conversations.json is neither ChatGPT's (conversations with a mapping) nor Claude's "
                       f"(conversations with chat_messages): {HOW}")
    conversations: list[Conversation] = []
    seen: set[str] = set()
    again: dict[str, int] = {}
    for i, item in enumerate(items):
        try:
            conv = reader(item, i)
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise _invalid(f"{name}: conversation {i + 1} is not in {fmt}'s form ({type(e).__name__}): {HOW}") from None
        if conv.id in seen:  # ids are how a person chooses: each one once (id~, then id~2, id~3, …)
            n = again.get(conv.id, 1)
            candidate = f"{conv.id}~" if n == 1 else f"{conv.id}~{n}"
            while candidate in seen:  # counted per id: never a walk over every earlier copy
                n += 1
                candidate = f"{conv.id}~{n}"
            again[conv.id] = n + 1
            conv.id = candidate
        seen.add(conv.id)
        conversations.append(conv)
    conversations.sort(key=lambda c: (c.created_at or "", c.id))
    return Archive(fmt, conversations)


# -- the vendors ---------------------------------------------------------------


def _when(value: Any) -> str | None:
    """Unix seconds or ISO 8601 as a UTC date-time (2026-10-12T09:30:00Z); None when absent or odd."""
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            dt = datetime.fromtimestamp(float(value), UTC)
        elif isinstance(value, str) and value.strip():
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
            dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    if not 1970 <= dt.year <= 9999:
        return None
    return dt.replace(microsecond=0).isoformat().replace("+00:00", "Z")


# Lone surrogates (a JSON escape like "\\ud800" decodes to one) cannot be written as UTF-8: each becomes U+FFFD.
_SURROGATE = re.compile("[\ud800-\udfff]")
# What a title or an id never holds: C0/C1 controls (a NUL, a terminal's escape) and the bidirectional overrides
# (a title that reads differently from what it holds); a fact's source made of a title refuses them too.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _text(value: str) -> str:
    """A message's text as it can be kept and sent: no lone surrogates, no NUL."""
    return _SURROGATE.sub("\ufffd", value).replace("\x00", "")


def _line(value: Any) -> str:
    """A title or an id on one line of plain text."""
    return _CONTROL.sub("", " ".join(_text(value).split())) if isinstance(value, str) else ""


one_line = _line  # the same rule for the archive's own name (imports)


def _title(value: Any) -> str:
    return (_line(value).strip() or "(untitled)")[:MAX_TITLE]


def _chatgpt(item: dict[str, Any], i: int) -> Conversation:
    mapping = item.get("mapping") or {}
    if not isinstance(mapping, dict):
        raise TypeError("mapping")
    # The branch the person saw last: from current_node up to the root (a cycle is stopped).
    node_id = item.get("current_node")
    if node_id not in mapping:  # no current node: from the root down, the latest child each time
        roots = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("parent")]
        node_id = roots[0] if roots else None
        down: set[str] = set()  # a doctored tree may loop: each node once
        while isinstance(node_id, str) and node_id not in down:
            down.add(node_id)
            node = mapping.get(node_id)
            children = (node.get("children") if isinstance(node, dict) else None) or []
            children = [c for c in children if isinstance(c, str) and c in mapping] if isinstance(children, list) else []
            if not children:
                break
            node_id = children[-1]
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        path.append(node)
        node_id = node.get("parent")
    messages: list[Message] = []
    for node in reversed(path):
        m = node.get("message")
        if not isinstance(m, dict):
            continue
        role = ROLES.get(str(((m.get("author") or {}).get("role")) or ""))
        meta = m.get("metadata") or {}
        if role is None or (isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation")):
            continue
        content = m.get("content") or {}
        if not isinstance(content, dict) or content.get("content_type", "text") not in ("text", "multimodal_text"):
            continue  # custom instructions, code run, browsing results: not what was said
        parts = content.get("parts") or []
        text = _text("\n".join(p for p in parts if isinstance(p, str))).strip() if isinstance(parts, list) else ""
        if text:
            messages.append(Message(role, text, _when(m.get("create_time"))))
    created = _when(item.get("create_time")) or (messages[0].time if messages else None)
    cid = _line(str(item.get("id") or item.get("conversation_id") or "")) or f"c{i + 1}"
    return Conversation(cid[:100], _title(item.get("title")), created, messages)


def _claude(item: dict[str, Any], i: int) -> Conversation:
    listed = item.get("chat_messages") or []
    if not isinstance(listed, list):
        raise TypeError("chat_messages")
    messages: list[Message] = []
    for m in listed:
        if not isinstance(m, dict):
            continue
        role = ROLES.get(str(m.get("sender") or ""))
        if role is None:
            continue
        blocks = m.get("content")
        text = ""
        if isinstance(blocks, list) and blocks:
            text = "\n".join(b["text"] for b in blocks
                             if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
        if not text.strip() and isinstance(m.get("text"), str):
            text = m["text"]
        text = _text(text).strip()
        if text:
            messages.append(Message(role, text, _when(m.get("created_at"))))
    created = _when(item.get("created_at")) or (messages[0].time if messages else None)
    cid = _line(str(item.get("uuid") or "")) or f"c{i + 1}"
    return Conversation(cid[:100], _title(item.get("name")), created, messages)


# -- choosing ------------------------------------------------------------------


def _day(value: str | None, what: str) -> date | None:
    if value is None or not str(value).strip():
        return None
    try:
        return date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        raise Invalid(f"{what} {value!r} is not a date: write 2026-10-12", code="INVALID_DATE") from None


_GLOB_SPECIAL = re.compile(r"[*?\[]")


def choose(
    conversations: list[Conversation], *, since: str | None = None, until: str | None = None, title: str | None = None,
    ids: list[str] | None = None,
) -> list[Conversation]:
    """The conversations a person chose: by id, and/or by date (since/until, days inclusive) and title glob
    (case-insensitive; a title without * or ? matches anywhere in the title). Empty ones are never chosen."""
    first, last = _day(since, "since"), _day(until, "until")
    wanted = set(ids) if ids is not None else None
    pattern = None
    if title is not None and title.strip():
        glob = title.strip().casefold()
        pattern = glob if _GLOB_SPECIAL.search(glob) else f"*{glob}*"
    out = []
    for conv in conversations:
        if not conv.messages:
            continue
        if wanted is not None and conv.id not in wanted:
            continue
        day = date.fromisoformat(conv.created_at[:10]) if conv.created_at else None
        if first is not None and (day is None or day < first):
            continue
        if last is not None and (day is None or day > last):
            continue
        if pattern is not None and not fnmatch.fnmatchcase(conv.title.casefold(), pattern):
            continue
        out.append(conv)
    return out
