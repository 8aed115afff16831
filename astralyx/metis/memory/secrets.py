"""What looks like a secret is never kept: passwords, PINs and door codes, one-time (verification) codes,
recovery codes, seed phrases, security answers, identity and bank account numbers, API keys and tokens,
private keys, card numbers.

Three kinds of evidence, tried in order:
- *Shapes* that are secrets whatever the sentence says: private key blocks, the key and token shapes
  of detect-secrets' regex plugins (AWS, GitHub, Slack, Stripe, OpenAI, JWT, …), Luhn-valid card
  numbers with a card network's prefix and length, IBANs with a valid check (mod 97), US social
  security numbers, Brazilian CPFs and UK national insurance numbers in their printed forms, a
  password in a URL of any scheme, twelve or more words in a row of one BIP-39 list (a seed phrase, its
  checksum right or not: prose has short words no list holds, "the", "de", "и").
- *A named value*: a secret's name in one of the languages of `secret_words.py` ("password",
  "Passwort", "mot de passe", "door code", "seed phrase", "密码", …), perhaps whose it is ("for the
  router"), a separator (":", "is", "ist", "est", "是", …), then a value. After ":" any value is
  a secret; after a word such as "is" the value must look like one (digits, symbols, inner capitals,
  quoted) or end the clause ("the wifi password is sunflower."), and ordinary words ("is stored in the
  vault", "ist zu kurz") are not values, unless a value in apposition follows ("is the same as always,
  Lisboa#2019"). A bare "code" is a secret's name when it opens something ("the code of the garage") or
  was sent to someone ("the code they texted me"); digits said in groups are one value ("739 204").
- *A keypad*: typing digits where a door, gate or alarm is ("to open the garage punch in 8 8 1 2").
- *Randomness*: a long word mixing letters and digits with high entropy is a key, named or not.

Ordinary facts with numbers (dates, prices, phone, order and version numbers, commit ids) must pass:
bench/secrets_fp.py measures both sides, on a held-out set of secrets and on LoCoMo's talk.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Any

from .secret_words import (
    API_KEY,
    BANK_ACCOUNT,
    CARD,
    CJK_NAMES,
    CJK_SEPARATORS,
    CODE_LIKE_NAMES,
    CODE_WORDS,
    COMPOUND_HEADS,
    COPULAS,
    FILLERS,
    ID_NUMBER,
    KEY_NAMES,
    KEYPAD_VERBS,
    LOCK_WORDS,
    NAMES,
    NOT_LOCK_CODES,
    NOT_SECRET_OF,
    NOT_VALUES,
    ONE_TIME_CODE,
    PASSWORD,
    PIN,
    PRIVATE_KEY,
    QUALIFIERS,
    RECOVERY_CODES,
    SECURITY_ANSWER,
    SEED_PHRASE,
    SENT_WORDS,
    STRONG_SEPARATORS,
    VALUE_ENDS,
    WEAK_NAMES,
)

__all__ = [
    "API_KEY", "BANK_ACCOUNT", "CARD", "ID_NUMBER", "ONE_TIME_CODE", "PASSWORD", "PIN", "PRIVATE_KEY", "RECOVERY_CODES",
    "SECURITY_ANSWER", "SEED_PHRASE", "find_secret", "find_secret_in_fact",
]

# detect-secrets plugins that are not about key or token shapes in a sentence: a public IP is not a
# secret, the keyword one is tuned for code files, the entropy ones only read quoted strings.
_SKIP_PLUGINS = {"IPPublicDetector", "KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString"}


@lru_cache(maxsize=1)
def _plugins() -> list[Any]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    plugins: list[Any] = []
    cls: Any
    for cls in get_mapping_from_secret_type_to_class().values():
        if cls.__name__ in _SKIP_PLUGINS or not issubclass(cls, RegexBasedDetector):
            continue
        plugins.append(cls())
    return sorted(plugins, key=lambda p: type(p).__name__)


def find_secret(text: str) -> str | None:
    """Why `text` looks like a secret ("a password", "a PIN or access code", …), or None."""
    if not text:
        return None
    text = unicodedata.normalize("NFKC", text)
    return _shape(text) or _named(text) or _random(text)


def find_secret_in_fact(subject: str, attribute: str, fact: str, source: str = "") -> tuple[str, str] | None:
    """(reason, field) for the first field of a fact that holds a secret, or None.

    Each field alone, then the attribute read as the secret's name: a fact whose attribute is
    "wifi password" and whose sentence is "It is sunflower42." gives the password away as surely as
    "The wifi password is sunflower42." does.
    """
    for field, text in (("subject", subject), ("attribute", attribute), ("fact", fact), ("source", source)):
        reason = find_secret(text)
        if reason:
            return reason, field
    reason = _named_attribute(unicodedata.normalize("NFKC", attribute or ""), unicodedata.normalize("NFKC", fact or ""))
    return (reason, "fact") if reason else None


# --- shapes -------------------------------------------------------------------------------------

_PRIVATE_KEY = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\bPuTTY-User-Key-File-\d|\bAGE-SECRET-KEY-1")
_URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]*:(?P<pw>[^\s/@]+)@[\w.-]", re.IGNORECASE)
_CARD = re.compile(r"(?<![\d.,/-])(?:\d[ -]?){12,18}\d(?![\d/-]|[.,]\d)")
# Printed in groups of four ("DE89 3704 0044 0532 0130 00") or in one piece; capitals only.
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?|[A-Z0-9]{11,30})\b")
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_CPF = re.compile(r"(?<![\d.])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d-])")
_DNI = re.compile(r"\b[XYZ]?\d{7,8}[A-Z]\b")
_NINO = re.compile(r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")


def _shape(text: str) -> str | None:
    if _PRIVATE_KEY.search(text):
        return PRIVATE_KEY
    for plugin in _plugins():
        for _ in plugin.analyze_string(text):
            return PRIVATE_KEY if type(plugin).__name__ == "PrivateKeyDetector" else API_KEY
    for m in _URL_PASSWORD.finditer(text):
        if not m.group("pw").isdigit():  # host:port is not a password
            return PASSWORD
    if _has_card_number(text):
        return CARD
    if any(_iban_valid(m.group(0)) for m in _IBAN.finditer(text)):
        return BANK_ACCOUNT
    if (_SSN.search(text) or _NINO.search(text) or any(_cpf_valid(m.group(0)) for m in _CPF.finditer(text))
            or any(_dni_valid(m.group(0)) for m in _DNI.finditer(text))):
        return ID_NUMBER
    if _has_seed_phrase(text):
        return SEED_PHRASE
    return None


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


def _iban_valid(candidate: str) -> bool:
    s = candidate.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    rearranged = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _cpf_valid(candidate: str) -> bool:
    d = [int(c) for c in candidate if c.isdigit()]
    if len(set(d)) == 1:
        return False
    for n in (9, 10):
        check = sum(d[i] * (n + 1 - i) for i in range(n)) * 10 % 11 % 10
        if check != d[n]:
            return False
    return True


def _dni_valid(candidate: str) -> bool:
    """A Spanish DNI or NIE: its letter is the number's check (mod 23)."""
    number = candidate[:-1].replace("X", "0").replace("Y", "1").replace("Z", "2")
    return len(number) == 8 and "TRWAGMYFPDXBNJZSQVHLCKE"[int(number) % 23] == candidate[-1]


@lru_cache(maxsize=1)
def _bip39() -> list[frozenset[str]]:
    from mnemonic import Mnemonic

    # NFKC, as the text is read (the lists write accents apart in some languages).
    return [frozenset(unicodedata.normalize("NFKC", w) for w in Mnemonic(language).wordlist)
            for language in ("english", "spanish", "french", "italian", "portuguese", "czech")]


_SEED_WORDS = 12  # the shortest seed phrase


def _has_seed_phrase(text: str) -> bool:
    """Twelve or more words of one BIP-39 list in a row: a wallet, not a sentence.

    Its checksum is not asked for: a phrase copied with a word wrong is still the wallet's (and a few
    guesses from it). Prose does not make such a run: every language's sentences need short words
    ("the", "of", "de", "que") that no list holds (LoCoMo's longest English run is 8).
    """
    words = re.findall(r"[^\W\d_]+", text.lower())
    if len(words) < _SEED_WORDS:
        return False
    for wordlist in _bip39():
        run = 0
        for word in words:
            run = run + 1 if word in wordlist else 0
            if run >= _SEED_WORDS:
                return True
    return False


# --- named values --------------------------------------------------------------------------------

def _alternation(patterns: list[str]) -> str:
    return "|".join(f"(?:{p})" for p in sorted(patterns, key=len, reverse=True))


def _names_re(patterns: list[str]) -> re.Pattern[str]:
    # A name may end a compound ("WLAN-Passwort", "wifi-wachtwoord") but not begin one ("password-less").
    return re.compile(rf"(?<!\w)(?:{_alternation(patterns)})(?![\w-])", re.IGNORECASE)


_NAME_RES = [(reason, _names_re(patterns)) for reason, patterns in NAMES.items()]
_WEAK_RE = _names_re(WEAK_NAMES)
_KEY_NAMES_RE = _names_re(KEY_NAMES)
_CODE_RE = _names_re(CODE_WORDS)
_CJK_RES = [
    (reason, re.compile(
        rf"(?:{_alternation([re.escape(n) for n in names])})\s*(?:的|の)?\s*(?:[{CJK_SEPARATORS}]|です|입니다|이에요)?\s*"
        r"[「『\"“'‘]?(?P<value>[\x21-\x7e]{3,})", re.IGNORECASE))
    for reason, names in CJK_NAMES.items()
]
_ASIDE = re.compile(r"\([^()]{0,40}\)")
_ELIDED = ("d'", "l'", "dell'", "dall'", "all'", "nell'", "sull'", "dello", "d’", "l’")
_CLAUSE_END = re.compile(r"[.!?。！？;；](?=\s|$)|\n")
_QUOTED = re.compile(r"^[\"'“‘`«„「『].+")
_TRIM = ".,;:!?)]}»\"'”’`」』"


def _named(text: str) -> str | None:
    for reason, name_re in _NAME_RES:
        for m in name_re.finditer(text):
            words = _clause(text, m.end())
            if m.group(0).lower() in CODE_LIKE_NAMES and _names_a_thing(words):
                continue  # "la clave del curso es ING-305": the course's code
            if _value_after(reason, words):
                return reason
    for m in _WEAK_RE.finditer(text):
        if _login_pair_after(_clause(text, m.end())):
            return PASSWORD
    for m in _CODE_RE.finditer(text):
        before = [w.lower().strip(_TRIM) for w in text[:m.start()].split()[-2:]]
        if before and before[-1] in NOT_LOCK_CODES:
            continue
        words = _clause(text, m.end())
        sep = _separator_index(words)
        named = [w.lower().strip(_TRIM) for w in words[:sep if sep is not None else 6]]
        if any(w in NOT_LOCK_CODES for w in named):  # "the code they sent me for the booking is …"
            continue
        # "the code they texted me is …", "o código que recebi por SMS é …"
        if sep is not None and any(w in SENT_WORDS for w in (*before, *named)) and _value_after(ONE_TIME_CODE, words[sep:]):
            return ONE_TIME_CODE
        # "the code for the front door is …", "alarm disarm code is …"
        if (_opens_something(words) or any(w in LOCK_WORDS for w in before)) and _value_after(PIN, words):
            return PIN
    if _keypad_entry(text):
        return PIN
    for m in _KEY_NAMES_RE.finditer(text):
        located = _locate_value(_clause(text, m.end()))
        if located and located[0] and _looks_random(located[1][0].strip(_TRIM), min_len=8, named=True):
            return API_KEY
    for reason, cjk_re in _CJK_RES:
        for m in cjk_re.finditer(text):
            value = m.group("value").strip(_TRIM)
            if _cjk_value(reason, value):
                return reason
    return None


def _separator_index(words: list[str]) -> int | None:
    """Where the first separator of a name's clause is, within ten words (the words before it say which one)."""
    return next((i for i in range(min(len(words), 10)) if _separator_at(words, i)), None)


def _names_a_thing(words: list[str]) -> bool:
    """The phrase after the name says what it identifies rather than opens: "del curso (de inglés) es …"."""
    if len(words) < 2 or words[0].lower() not in QUALIFIERS or (_separator_index(words) or 0) < 2:
        return False
    noun = words[2] if words[1].lower() in _ARTICLES and len(words) > 2 else words[1]
    return _unelided(noun) in NOT_SECRET_OF


_ARTICLES = {"the", "a", "an", "el", "la", "los", "las", "le", "les", "o", "os", "as", "il", "lo", "gli", "der", "die", "das"}


def _unelided(word: str) -> str:
    """A word without its elided article or preposition, lower case: "l'immeuble" → "immeuble"."""
    word = word.lower().strip(_TRIM)
    for prefix in _ELIDED:
        if word.startswith(prefix) and len(word) > len(prefix):
            return word[len(prefix):]
    return word


_DIGITS = r"\d(?:[ .-]?\d){3,9}"  # four to ten digits, perhaps in groups: "8 8 1 2", "739 204"
_KEYPAD = re.compile(rf"(?<!\w)(?:{'|'.join(KEYPAD_VERBS)})\s+(?:the\s+(?:code|digits|numbers)\s+)?[\"'“‘]?"
                     rf"(?P<digits>{_DIGITS})(?![\d.,:/-]\d|\w)", re.IGNORECASE)


def _keypad_entry(text: str) -> bool:
    """Digits typed where a door, gate or alarm is: "to open the garage punch in 8 8 1 2"."""
    for m in _KEYPAD.finditer(text):
        if not _is_date_or_time(m.group("digits")) and any(_unelided(w) in LOCK_WORDS for w in text.split()):
            return True
    return False


def _clause(text: str, start: int) -> list[str]:
    """The words after a name up to the end of its clause, separators split off ("router:" → "router", ":")."""
    rest = _ASIDE.sub(" ", text[start:start + 240])  # "Security question (first car): Corolla"
    end = _CLAUSE_END.search(rest)
    if end:
        rest = rest[:end.start()]
    words: list[str] = []
    for word in rest.split():
        if len(word) > 1 and word[-1] in ":：" and not word[:-1].isdigit():
            words.extend([word[:-1], ":"])
        elif len(word) > 1 and word[0] in ":：=＝":
            words.extend([word[0], word[1:]])
        else:
            words.append(word)
    return words


def _separator_at(words: list[str], i: int) -> str | None:
    if i < len(words):
        word = words[i].lower()
        if word in STRONG_SEPARATORS:
            return "strong"
        if word in COPULAS:
            return "copula"
    return None


def _locate_value(words: list[str]) -> tuple[str | None, list[str]] | None:
    """(how the value is given, the words from the value on), or None when the name is given no value here.

    How: "strong" after ":" or "=", "copula" after "is", "ist", …, "end" when a phrase about whose it
    is ends the clause with it ("Пин-код от карты 4477"), None when it follows the name directly ("PIN 4821").
    """
    i = 0
    if words and words[0].lower() in ("'s", "’s"):
        i = 1
    if i + 1 < len(words) and words[i] == "," and words[i + 1].lower() in ("it's", "it’s", "that's", "it", "which"):
        # "his Instagram password, it's doggo4life"
        i += 2 if words[i + 1].lower() not in ("it", "which") else 1
        if words[i - 1].lower() in ("it", "which") and i < len(words) and words[i].lower() == "is":
            i += 1
        return ("copula", words[i:]) if i < len(words) else None
    if i < len(words) and (words[i].lower() in QUALIFIERS or words[i].lower().startswith(_ELIDED)):
        # "for the office router is …": a few words, then a separator.
        j = next((k for k in range(i + 1, min(len(words), i + 6)) if _separator_at(words, k)), None)
        if j is None:
            if _separator_at(words, i) and i + 1 < len(words):
                # "on" and "to" are also the copulas of Finnish and Polish: "Salasana on Sauna2024!"
                return "loose", words[i + 1:]
            if len(words) <= i + 5:
                return "end", words[-1:]
            else:
                return None
        i = j
    elif i + 1 < len(words) and words[i][:1].isupper() and _separator_at(words, i + 1):
        i += 1  # a proper name between: "mot de passe Gmail est …"
    elif i < len(words) and not _separator_at(words, i) and words[i].lower().strip(_TRIM) not in COMPOUND_HEADS:
        # A word or three about which one, then a separator: "mot de passe administrateur est …".
        j = next((k for k in range(i + 1, min(len(words), i + 4)) if _separator_at(words, k)), None)
        if j is not None and not any(w.endswith(",") for w in words[i:j]):
            k = j + 1
            while k < len(words) and words[k].lower() in FILLERS:
                k += 1
            return ("loose", words[k:]) if k < len(words) else None
    kind = _separator_at(words, i)
    if kind:
        i += 1
        # "is now", "ist jetzt", "is: …"
        while i < len(words) and (words[i].lower() in FILLERS or _separator_at(words, i) == "strong"):
            if _separator_at(words, i) == "strong":
                kind = "strong"
            i += 1
    if i >= len(words):
        return None
    return kind, words[i:]


def _opens_something(words: list[str]) -> bool:
    """The phrase after a bare "code" says what it opens: "for the front door", "für die Haustür", "dell'allarme"."""
    head = words[:6]
    if not head:
        return False
    first = head[0].lower()
    if first.startswith(_ELIDED):  # "dell'allarme", "de l'immeuble": the article is part of the word
        return any(_unelided(w) in LOCK_WORDS for w in head)
    return first in QUALIFIERS and any(_unelided(w) in LOCK_WORDS for w in head[1:])


def _value_after(reason: str, words: list[str]) -> bool:
    located = _locate_value(words)
    if located is None:
        return False
    kind, rest = located
    if reason in (PIN, ONE_TIME_CODE):
        rest = _digit_groups_joined(rest)
    value = rest[0].strip(_TRIM)
    if not value:
        return False
    lower = value.lower()
    if reason in (ID_NUMBER, BANK_ACCOUNT):
        return _id_value(rest)
    if reason == SEED_PHRASE:
        if kind in (None, "end") or lower in NOT_VALUES:
            return False
        plain = [w for w in rest if re.fullmatch(r"[^\W\d_]+[.,]?", w)]
        return len(plain) >= 6 or (kind == "strong" and len(plain) >= 3)
    if reason == SECURITY_ANSWER:
        if kind in (None, "end") or lower in NOT_VALUES:
            return False
        if kind == "strong":
            return True
        # "… is Fluffy", "… is \"blue bicycle\"", "… is marmalade." — not "… were replaced by a passkey"
        follows = rest[1].lower() if len(rest) > 1 else ""
        return (value[:1].isupper() or bool(_QUOTED.match(rest[0])) or _has_digit_or_symbol(value)
                or (kind == "copula" and (not follows or follows in VALUE_ENDS)))
    if reason == RECOVERY_CODES:
        return any(_credential_like(w.strip(_TRIM)) for w in rest[:8]) and lower not in NOT_VALUES
    if reason == ONE_TIME_CODE:  # digits, as such codes are sent: "482913", "739 204", "G-482913"
        if lower in NOT_VALUES:
            return _in_apposition(reason, rest)
        return sum(c.isdigit() for c in value) >= 4 and not _is_date_or_time(value) and not _is_address(value)
    # PASSWORD and PIN
    if kind in (None, "end", "loose"):  # "PIN 4821", "pw hunter2", "Passwort Sommer2024!"
        if kind != "loose" and value.lower().strip(_TRIM) in COMPOUND_HEADS:
            return False
        strong_evidence = kind is None or _has_digit_or_symbol(value)
        return (_credential_like(value) and strong_evidence and not _is_address(value)
                and (reason != PIN or sum(c.isdigit() for c in value) >= 3))
    if kind == "strong":
        return lower not in ("none", "n/a", "unknown", "?", "tbd")
    if lower in NOT_VALUES:  # "is the same as always, Lisboa#2019": the value may follow, in apposition
        return _in_apposition(reason, rest)
    if reason == PASSWORD and _is_date_or_time(value):  # "the safe combination is 12-34-56" is a PIN
        return False
    if _credential_like(value) or _QUOTED.match(rest[0]):
        return True
    if len(rest) > 2 and rest[1] in ("/", "|") or re.fullmatch(r"[^/:\s]+[/:][^/:\s]{4,}", value):
        return True  # a login pair: "deploy / St4ging#1", "bob:hunter2"
    # A plain word that ends the clause, or is followed by "and", ",": "the wifi password is sunflower."
    follows = rest[1].lower() if len(rest) > 1 else ""
    return not follows or follows in VALUE_ENDS or rest[0].endswith(",")


def _digit_groups_joined(rest: list[str]) -> list[str]:
    """Digits said in groups are one value: "739 204" → "739204", "8 8 1 2" → "8812"."""
    n = 0
    while n < min(len(rest), 10) and re.fullmatch(r"\d{1,4}", rest[n]):
        n += 1
    if n < len(rest) and re.fullmatch(r"\d{1,4}[.,;!?]", rest[n]):  # the last group, at the end of the sentence
        n += 1
    return ["".join(w.strip(_TRIM) for w in rest[:n]), *rest[n:]] if n >= 2 else rest


def _in_apposition(reason: str, rest: list[str]) -> bool:
    """After an ordinary phrase, a value set off by a comma or a dash that ends the clause: "is the same as
    always, Lisboa#2019", "is the name of her cat, Mittens9". It must look made up: letters with digits or
    symbols (not a product name that begins with a digit, "1Password"), or for a code four digits and more."""
    for i in range(1, min(len(rest), 12)):
        if not (rest[i - 1].endswith(",") or rest[i - 1] in ("-", "—", "–", ":")):
            continue
        if i + 1 < len(rest) and rest[i + 1].lower() not in VALUE_ENDS:  # "…, INC-20431 has the details"
            continue
        value = rest[i].strip(_TRIM)
        if reason == PASSWORD:
            letters = any(c.isalpha() for c in value)
            if (letters and _has_digit_or_symbol(value) and _credential_like(value) and not value[0].isdigit()
                    and not _is_address(value)):
                return True
        elif reason in (PIN, ONE_TIME_CODE) and value.isdigit() and len(value) >= 4:
            return True
    return False


def _has_digit_or_symbol(value: str) -> bool:
    return any(c.isdigit() or c in "!@#$%^&*+=?~<>|\\{}[]_" for c in value)


def _is_address(value: str) -> bool:
    """A web or mail address is where a secret is used, not the secret."""
    return "://" in value or bool(re.fullmatch(r"[\w.+-]+@[\w-]+\.[\w.]+", value))


def _id_value(rest: list[str]) -> bool:
    """An identity or account number: at least six digits in the next few words, or a passport-like code."""
    joined = " ".join(rest[:5])
    for m in re.finditer(r"[A-Z0-9](?:[A-Z0-9 ./-]*[A-Z0-9])?", joined.upper()):
        chunk = m.group(0)
        digits = sum(c.isdigit() for c in chunk)
        if digits >= 6 and not _is_date_or_time(chunk):
            return True
    return False


def _login_pair_after(words: list[str]) -> bool:
    """A login given with its password: "login for the router: admin / hunter2", "is bob:hunter2"."""
    located = _locate_value(words)
    if located is None or located[0] is None:
        return False
    rest = " ".join(located[1][:4])
    pair = re.match(r"^(\S+?)\s*(?:/|:|\|)\s*(\S{4,})", rest)
    return bool(pair and pair.group(1) and not pair.group(1).isdigit())


def _cjk_value(reason: str, value: str) -> bool:
    if reason in (ID_NUMBER,):
        return sum(c.isdigit() for c in value) >= 6
    if reason == PIN:
        return sum(c.isdigit() for c in value) >= 3
    if reason == ONE_TIME_CODE:
        return sum(c.isdigit() for c in value) >= 4
    return len(value) >= 3 and not _is_date_or_time(value)


def _named_attribute(attribute: str, fact: str) -> str | None:
    """The attribute names a password or code and the fact carries a value that looks like one."""
    attribute = attribute.strip().lower()
    if not attribute or not fact:
        return None
    for reason, name_re in _NAME_RES:
        if reason not in (PASSWORD, PIN, ONE_TIME_CODE, RECOVERY_CODES):
            continue
        m = name_re.search(attribute)
        after = attribute[m.end():].split() if m else []
        if not m or (after and after[0] not in QUALIFIERS):  # "password manager" is not a password
            continue
        if m.group(0) in CODE_LIKE_NAMES:  # "clave del curso", or "clave" and "La clave del curso es …"
            said = name_re.search(fact)
            if _names_a_thing([*after, "is"]) or (said and _names_a_thing(_clause(fact, said.end()))):
                continue
        words = fact.split()
        if len(words) == 1:  # the value alone: "Tr0ub4dor&3"
            return reason if words[0].strip(_TRIM) else None
        for word in words:
            value = word.strip(_TRIM)
            if _credential_like(value) and not _is_date_or_time(value) and not re.fullmatch(r"(19|20)\d\d", value):
                return reason
        # "It is sunflower." / "C'est soleil."
        said = re.match(r"^(?:it|that|this|es|das|c'|ce|het|det|to|это)\s*(?:is|'s|’s|ist|est|es|é|è|är|er|jest|—)?\s+(.+)$",
                        fact.strip(), re.IGNORECASE)
        if said and _value_after(reason, ["is", *said.group(1).split()]):
            return reason
    return None


# --- helpers -------------------------------------------------------------------------------------

_DATE_OR_TIME = re.compile(
    r"\d{1,4}[-/.]\d{1,2}(?:[-/.]\d{1,4})?(?:T[\d:.]+Z?)?|\d{1,2}(?::\d{2}){1,2}(?:am|pm|h)?|\d{1,2}(?:am|pm|h)|"
    r"\d{1,2}(?:st|nd|rd|th)", re.IGNORECASE)


def _is_date_or_time(value: str) -> bool:
    return bool(_DATE_OR_TIME.fullmatch(value))


def _credential_like(value: str) -> bool:
    """Digits with letters, symbols, inner capitals or four digits and more: what a password or code looks like."""
    if len(value) < 4 or _is_date_or_time(value):
        return False
    digits = sum(c.isdigit() for c in value)
    letters = sum(c.isalpha() for c in value)
    if digits and letters:
        return not re.fullmatch(r"\d+(?:st|nd|rd|th|am|pm|km|kg|gb|mb|cm|mm|ms|px|h|x|k|m)", value, re.IGNORECASE)
    if digits == len(value):
        return True
    if digits and not letters:  # "12-34-56", "4821#"
        return digits >= 4
    if any(c in "!@#$%^&*+=?~<>|\\{}[]_" for c in value):
        return True
    inner_upper = any(c.isupper() for c in value[1:])
    return inner_upper and any(c.islower() for c in value) and not value.isupper()


# "api key is …", "token: …", "secret=…": a key's name and its value in one piece.
_KEY_VALUE = re.compile(
    rf"(?<!\w)(?:{_alternation(KEY_NAMES)})(?![\w-])"
    r"\s*(?:is|was|=|:|-|ist|est|es|é|è|是|は)?\s*[\"'“‘`]?(?P<value>[A-Za-z0-9_\-+/=.]{8,})",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9_\-+/=.~]{20,}")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s]+", re.IGNORECASE)


def _random(text: str) -> str | None:
    for m in _KEY_VALUE.finditer(text):
        if _looks_random(m.group("value").rstrip(".,;:!?"), min_len=8, named=True):
            return API_KEY
    without_urls = _URL.sub(" ", text)
    for m in _WORD.finditer(without_urls):
        if _looks_random(m.group(0).strip(".-_~"), min_len=20):
            return API_KEY
    return None


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def _looks_random(word: str, *, min_len: int, named: bool = False) -> bool:
    """A long word mixing letters and digits with high entropy: a key, not a name or a number."""
    if len(word) < min_len:
        return False
    letters = sum(c.isalpha() for c in word)
    digits = sum(c.isdigit() for c in word)
    if not digits or (not letters and not named):
        return False
    if not letters:  # a named secret of digits alone: long enough to be a key, not a count
        return digits >= 16
    # Ordinary compounds ("state-of-the-art", "2026-10-12T10:05", "v1.2.3-beta") split into short parts.
    parts = [p for p in re.split(r"[-_./~+=]", word) if p]
    if max(len(p) for p in parts) < 8 and len(parts) > 1:
        return False
    longest = max(parts, key=len)
    if re.fullmatch(r"[0-9a-f]+", longest) and not named:
        # Lower-case hex alone (commit ids, checksums, UUIDs) is not a secret without a key-like name.
        return False
    mixed_case = any(c.islower() for c in word) and any(c.isupper() for c in word)
    threshold = 3.0 if min_len < 20 else 3.5
    return _entropy(word) >= threshold and (mixed_case or digits >= 3 or len(word) >= 32)
