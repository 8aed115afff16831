"""The secret detector: secrets refused with a reason, ordinary facts with numbers kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from astralyx.metis.memory.secrets import API_KEY, CARD, PASSWORD, PRIVATE_KEY, find_secret

LOCOMO = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "locomo" / "locomo10.json"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("My password is hunter2.", PASSWORD),
        ("The wifi password is guest2026!", PASSWORD),
        ("password: correct horse battery staple", PASSWORD),
        ("Ana's PIN is 4821.", PASSWORD),
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
