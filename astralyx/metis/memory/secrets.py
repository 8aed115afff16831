"""What looks like a secret is never kept: passwords, API keys and tokens, private keys, card numbers.

Key and token shapes come from detect-secrets' regex plugins (AWS, GitHub, Slack, Stripe, OpenAI,
JWT, basic auth in URLs, …), used programmatically on the text of one fact. Added here what it lacks
for sentences: Luhn-valid card numbers with a card brand's prefix and length, "my password is …",
private key blocks, and long random-looking words (its entropy plugins only look at quoted strings).

Ordinary numbers (dates, years, prices, phone extensions, room numbers) must pass: bench/secrets_fp.py
measures the false positives on LoCoMo's observations.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

API_KEY = "an API key or token"
PASSWORD = "a password"
CARD = "a payment card number"
PRIVATE_KEY = "a private key"

# detect-secrets plugins that are not about key or token shapes in a sentence: a public IP is not a
# secret, the keyword one is tuned for code files, the entropy ones only read quoted strings.
_SKIP_PLUGINS = {"IPPublicDetector", "KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString"}


@lru_cache(maxsize=1)
def _plugins() -> list:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    plugins = []
    for cls in get_mapping_from_secret_type_to_class().values():
        if cls.__name__ in _SKIP_PLUGINS or not issubclass(cls, RegexBasedDetector):
            continue
        plugins.append(cls())
    return sorted(plugins, key=lambda p: type(p).__name__)


_PRIVATE_KEY = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\bPuTTY-User-Key-File-\d|\bAGE-SECRET-KEY-1")

# "my password is …", "the wifi password: …", "PIN 4821", "passcode=…"
_PASSWORD = re.compile(
    r"\b(?:pass(?:word|phrase|code|wd)|pwd|pin(?:\s*code)?|wi-?fi\s+key|credentials?)s?\b"
    r"(?:\s+(?:for|of|to|on)\s+(?:the\s+|my\s+|his\s+|her\s+|their\s+|our\s+)?[\w.@-]+)?"
    r"\s*(?P<sep>is|was|are|=|:|-|->|now|will\s+be|became|set\s+to|changed\s+to)\s*(?:now\s+|still\s+)?"
    r"[\"'“‘`]?(?P<value>[^\s\"'”’`]{3,})",
    re.IGNORECASE,
)
# Words that follow "password is" in ordinary sentences ("the password is stored in the vault").
_NOT_A_VALUE = set(
    """a an the in on at to of for by with from into not no never now still also being been very too
    stored saved kept written shared same secret secure strong weak long short managed set valid invalid
    correct wrong known unknown different new old changed reset required needed expired rotated protected
    hidden encrypted missing lost forgotten easy hard simple complex private personal his her their my our
    your its mine yours hers theirs working broken fine ok okay there here locked case-sensitive due""".split()
)

# "api key is …", "token: …", "secret = …": a value given for a key-like name.
_KEY_VALUE = re.compile(
    r"\b(?:api[\s_-]?key|access[\s_-]?key|secret(?:[\s_-]?key)?|(?:access|auth|bearer|api|bot|refresh)?[\s_-]?token|"
    r"client[\s_-]?secret|private[\s_-]?key|bearer)s?\b"
    r"\s*(?:is|was|=|:|-)?\s*[\"'“‘`]?(?P<value>[A-Za-z0-9_\-+/=.]{8,})",
    re.IGNORECASE,
)

_WORD = re.compile(r"[A-Za-z0-9_\-+/=.~]{20,}")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s]+", re.IGNORECASE)
_CARD = re.compile(r"(?<![\d.,/-])(?:\d[ -]?){12,18}\d(?![\d/-]|[.,]\d)")


def find_secret(text: str) -> str | None:
    """Why `text` looks like a secret ("a password", "an API key or token", …), or None."""
    if not text:
        return None
    if _PRIVATE_KEY.search(text):
        return PRIVATE_KEY
    for plugin in _plugins():
        for _ in plugin.analyze_string(text):
            return PRIVATE_KEY if type(plugin).__name__ == "PrivateKeyDetector" else API_KEY
    if _has_card_number(text):
        return CARD
    for m in _PASSWORD.finditer(text):
        value = m.group("value").rstrip(".,;:!?)")
        if m.group("sep") in ("=", ":") and value:  # "password: …" gives the value, whatever it is
            return PASSWORD
        if value and value.lower() not in _NOT_A_VALUE and not _is_plain_time(value):
            return PASSWORD
    for m in _KEY_VALUE.finditer(text):
        if _looks_random(m.group("value").rstrip(".,;:!?"), min_len=8):
            return API_KEY
    without_urls = _URL.sub(" ", text)
    for m in _WORD.finditer(without_urls):
        if _looks_random(m.group(0).strip(".-_~"), min_len=20):
            return API_KEY
    return None


def _is_plain_time(value: str) -> bool:
    return bool(re.fullmatch(r"\d{1,2}(:\d{2})?(am|pm)?", value, re.IGNORECASE))


def _has_card_number(text: str) -> bool:
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if _card_brand(digits) and _luhn(digits):
            return True
    return False


def _card_brand(d: str) -> bool:
    """Does the number have a card network's prefix and length (phone numbers mostly do not)?"""
    n = len(d)
    if d[0] == "4":
        return n in (13, 16, 19)  # Visa
    if 51 <= int(d[:2]) <= 55 or 2221 <= int(d[:4]) <= 2720:
        return n == 16  # Mastercard
    if d[:2] in ("34", "37"):
        return n == 15  # Amex
    if d.startswith("6011") or d.startswith("65") or 644 <= int(d[:3]) <= 649 or 622126 <= int(d[:6]) <= 622925:
        return n in (16, 19)  # Discover
    if d[:2] in ("36", "38", "39") or 300 <= int(d[:3]) <= 305:
        return n in (14, 16, 19)  # Diners
    if 3528 <= int(d[:4]) <= 3589:
        return 16 <= n <= 19  # JCB
    if d[:2] == "62":
        return 16 <= n <= 19  # UnionPay
    if d[:4] in ("5018", "5020", "5038", "5893", "6304", "6759", "6761", "6762", "6763"):
        return 12 <= n <= 19  # Maestro
    return False


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def _looks_random(word: str, *, min_len: int) -> bool:
    """A long word mixing letters and digits with high entropy: a key, not a name or a number."""
    if len(word) < min_len:
        return False
    letters = sum(c.isalpha() for c in word)
    digits = sum(c.isdigit() for c in word)
    if not letters or not digits:
        return False
    # Ordinary compounds ("state-of-the-art", "2026-10-12T10:05", "v1.2.3-beta") split into short parts.
    parts = [p for p in re.split(r"[-_./~+=]", word) if p]
    if max(len(p) for p in parts) < 8 and len(parts) > 1:
        return False
    longest = max(parts, key=len)
    if re.fullmatch(r"[0-9a-f]+", longest) and min_len >= 20:
        # Lower-case hex alone (commit ids, checksums, UUIDs) is not a secret without a key-like name.
        return False
    mixed_case = any(c.islower() for c in word) and any(c.isupper() for c in word)
    threshold = 3.0 if min_len < 20 else 3.5
    return _entropy(word) >= threshold and (mixed_case or digits >= 3 or len(word) >= 32)
