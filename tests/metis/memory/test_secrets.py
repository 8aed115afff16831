"""The secret detector: secrets refused with a reason, ordinary facts with numbers kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from astralyx.metis.memory import secret_words
from astralyx.metis.memory.secrets import (
    API_KEY,
    BANK_ACCOUNT,
    CARD,
    ID_NUMBER,
    PASSWORD,
    PIN,
    PRIVATE_KEY,
    RECOVERY_CODES,
    SECURITY_ANSWER,
    SEED_PHRASE,
    find_secret,
    find_secret_in_fact,
)

LOCOMO = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "locomo" / "locomo10.json"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("My password is hunter2.", PASSWORD),
        ("The wifi password is guest2026!", PASSWORD),
        ("password: correct horse battery staple", PASSWORD),
        ("Ana's PIN is 4821.", PIN),
        ("The OpenAI key is sk-proj-abc123DEF456ghi789JKL012mno345PQR678stu.", API_KEY),
        ("The Stripe key is sk_live_4eC39HqLyjWDarjtT1zdp7dc", API_KEY),
        ("The deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789.", API_KEY),
        ("The AWS key is AKIAIOSFODNN7EXAMPLE.", API_KEY),
        ("The API token is x9Fk2LmQ8rTz.", API_KEY),
        ("Use eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
         "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", API_KEY),
        ("The database is postgres://admin:Zx81kq2m@db.internal/app.", API_KEY),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA", PRIVATE_KEY),
        ("The company card is 4111 1111 1111 1111.", CARD),
        ("Bruno's card number is 5555-5555-5555-4444.", CARD),
        ("Amex 378282246310005 for travel.", CARD),
    ],
)
def test_secrets_are_found(text, reason):
    assert find_secret(text) == reason


# The examples the detector was built on: secrets said in everyday words, by kind and language. The
# held-out sets that measure it are bench/data/secrets_*.tsv (bench/secrets_fp.py), not these.
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("the wifi password at the office is Sunflower!77", PASSWORD),
        ("login for the router: admin / Hx92!kq", PASSWORD),
        ("his password: blueberry", PASSWORD),
        ("pw: hunter2", PASSWORD),
        ("The wifi password is sunflower.", PASSWORD),
        ("Ana's password is correct-horse-battery-staple", PASSWORD),
        ("credentials for the NAS are admin/hunter2", PASSWORD),
        ("Bruno told me his password, it's doggo4life", PASSWORD),
        ("Das Passwort für das WLAN ist Sonnenblume2024", PASSWORD),
        ("Das Kennwort lautet Zebra-Kaffee-9", PASSWORD),
        ("Le mot de passe du wifi est soleil123", PASSWORD),
        ("mon mot de passe : chaton", PASSWORD),
        ("La contraseña del banco es perro1984", PASSWORD),
        ("A senha do Gmail é batata77", PASSWORD),
        ("La password del computer è gatto2020", PASSWORD),
        ("Het wachtwoord van de router is Tulp-88", PASSWORD),
        ("Lösenordet till wifi är Sommar2023", PASSWORD),
        ("hasło do poczty to kotek123", PASSWORD),
        ("пароль от почты — qwerty123", PASSWORD),
        ("Wifi şifresi 12345678ab", PASSWORD),
        ("密码是 abc12345", PASSWORD),
        ("パスワードは hunter22 です", PASSWORD),
        ("비밀번호는 sunshine99", PASSWORD),
        ("redis://:s3cretPass@cache:6379/0", PASSWORD),
        ("amqp://guest:Gu3stPw@rabbit:5672/", API_KEY),  # detect-secrets knows this shape
        ("the door code is 1942#", PIN),
        ("the unlock code for my phone is 2580", PIN),
        ("The safe combination is 12-34-56", PIN),
        ("Der Türcode ist 4711", PIN),
        ("Le digicode est 12A45", PIN),
        ("El código de la puerta es 3344", PIN),
        ("The code for the front door is 4455.", PIN),
        ("My 2FA backup codes are 8473-2910 5521-0098 1190-4432", RECOVERY_CODES),
        ("recovery codes: a8f2-k9d1 p0q3-z7x2", RECOVERY_CODES),
        ("My IBAN is DE89 3704 0044 0532 0130 00", BANK_ACCOUNT),
        ("Bruno's SSN is 078-05-1120", ID_NUMBER),
        ("CPF 123.456.789-09", ID_NUMBER),
        ("Meine Steuer-ID ist 12 345 678 901", ID_NUMBER),
        ("Mi DNI es 12345678Z.", ID_NUMBER),
        ("The HMAC key is 9f86d081884c7d659a2feaa0c55ad015", API_KEY),
        ("The master key for the vault is 7e3f1c9a2b4d6e8f0a1c3e5b7d9f1a3c5e7b9d1f", API_KEY),
        ("seed phrase: legal winner thank year wave sausage worth useful legal winner thank yellow", SEED_PHRASE),
        ("letter advice cage absurd amount doctor acoustic avoid letter advice cage above", SEED_PHRASE),
        ("The answer to my security question is Fluffy", SECURITY_ANSWER),
        ("My mother's maiden name is Kowalski", SECURITY_ANSWER),
        ("Security question (first car): Corolla", SECURITY_ANSWER),
    ],
)
def test_secrets_said_in_everyday_words_are_found(text, reason):
    assert find_secret(text) == reason


@pytest.mark.parametrize(
    "text",
    [
        "Ana's password manager is Bitwarden.",
        "The password manager of the team is 1Password.",
        "The password policy asks for 12 characters.",
        "Bruno reset his password on 3 May.",
        "Ana asked IT for a new password on Monday.",
        "Bruno keeps his passwords in KeePass.",
        "The PIN pad is on the left of the door.",
        "Ana's PIN is 4 digits long.",
        "The door code changes every month.",
        "The zip code of the office is 94107.",
        "Das Passwort ist im Tresor gespeichert.",
        "Le mot de passe est trop court.",
        "La contraseña es demasiado débil.",
        "The security question is about her first pet.",
        "The bank's security questions were replaced by a passkey in 2024.",
        "The backup codes are printed in the drawer.",
        "My seed phrase is in a safe deposit box.",
        "The flight LH3594 leaves at 19:32.",
        "密码是安全的。",
        "パスワードを変更しました。",
    ],
)
def test_ordinary_sentences_near_a_secrets_words_pass(text):
    assert find_secret(text) is None


def test_a_fact_is_read_field_by_field_and_its_attribute_as_the_secrets_name():
    assert find_secret_in_fact("office wifi", "password", "Tr0ub4dor&3") == (PASSWORD, "fact")
    assert find_secret_in_fact("office wifi", "password", "It is sunflower.") == (PASSWORD, "fact")
    assert find_secret_in_fact("front door", "code", "4417") is None  # "code" alone opens nothing
    assert find_secret_in_fact("front door", "door code", "It is 4417.") == (PIN, "fact")
    assert find_secret_in_fact("router", "senha do wifi", "praia123") == (PASSWORD, "fact")
    assert find_secret_in_fact("Ana", "note", "Ana said so.", "email from IT: your new password is Welcome2026!") == (
        PASSWORD, "source")
    # An attribute that is about passwords, with a fact that gives none, is kept.
    assert find_secret_in_fact("Ana", "password manager", "Ana's password manager is Bitwarden.") is None
    assert find_secret_in_fact("Ana", "password", "Ana changed her password on 2024-03-01.") is None


def test_the_vocabulary_holds_patterns_only():
    # Adjacent string literals join silently: a missing comma would make two names one pattern.
    for reason, patterns in {**secret_words.NAMES, **secret_words.CJK_NAMES}.items():
        assert all(isinstance(p, str) and p for p in patterns), reason
    for patterns in (secret_words.KEY_NAMES, secret_words.WEAK_NAMES, secret_words.CODE_WORDS):
        assert all(isinstance(p, str) and p for p in patterns)


@pytest.mark.parametrize(
    "text",
    [
        "Bruno lives in Recife.",
        "Ana changed her password last week.",
        "The password is stored in the vault.",
        "The API key rotates every 90 days.",
        "Ana's phone extension is 4521.",
        "The launch moved to Friday 16 October 2026 at 10:00.",
        "The new laptops cost $1,299.99 each.",
        "Bruno's phone number is +55 81 99876-5432.",
        "The order number is 1234567890123.",
        "The card ends in 4242.",
        "The fix is commit 3f2a9c1b7d3e5a604f2a9c1b7d3e5a60aaaa1234.",
        "The meeting ID is 845 2231 9987.",
        "Ana's username is ana.silva.",
        "The repo is https://github.com/astralyx/astralyx/blob/main/README.md.",
        "Ana was born in 1990.",
        "",
    ],
)
def test_ordinary_facts_pass(text):
    assert find_secret(text) is None


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo is not next to the repository")
def test_no_locomo_observation_is_taken_for_a_secret():
    import json

    facts = [
        item[0]
        for sample in json.loads(LOCOMO.read_text())
        for session in sample["observation"].values()
        for items in session.values()
        for item in items
    ]
    assert len(facts) > 2000
    refused = [f for f in facts if find_secret(f)]
    assert len(refused) / len(facts) < 0.005, refused
