"""False positives of the secret detector on ordinary facts: LoCoMo's observations.

Every observation in LoCoMo (../shared/data/locomo/locomo10.json, `observation`) is an ordinary fact
about a person, with dates, ages, prices and counts; none is a secret. Each one the detector refuses
is a false positive. Also checks a small set of real secret shapes is still caught.

    .venv/bin/python bench/secrets_fp.py [path/to/locomo10.json]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from astralyx.metis.memory.secrets import find_secret

DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo" / "locomo10.json"

SECRETS = [
    "My password is hunter2.",
    "The wifi password is Tr0ub4dor&3.",
    "Ana's PIN is 4821.",
    "The OpenAI key is sk-proj-abc123DEF456ghi789JKL012mno345PQR678stu.",
    "The deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789.",
    "The AWS key is AKIAIOSFODNN7EXAMPLE.",
    "The company card is 4111 1111 1111 1111.",
    "Bruno's card number is 5555-5555-5555-4444.",
    "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
    "The staging database is at postgres://admin:Zx81kq2m@db.internal/app.",
]


# Ordinary facts with numbers, the shapes a memory keeps every day: none is a secret.
NUMBERS = [
    "Ana's phone extension is {n4}.",
    "The launch moved to Friday {d} October {y}.",
    "The offsite is on {y}-{m:02d}-{d:02d} at {h}:{mi:02d}.",
    "The new laptops cost ${n4},{c3}.99 each.",
    "Bruno's phone number is +55 81 9{n4}-{n4b}.",
    "The office is at {n3} Market Street, San Francisco, CA 94{n3}.",
    "Ana was born in {y0} and moved to Porto in {y}.",
    "The budget for {y} is EUR {n3},{c3},000.",
    "Flight TP{n4} leaves at {h}:{mi:02d} from gate {n2}.",
    "The team has {n2} people and {n3} open tickets.",
    "Room {n3} on floor {n1} is booked for the standup.",
    "The order number is {n13}.",
    "Invoice INV-{y}-{n4} was paid on {d} March.",
    "The server has {n3} GB of RAM and {n2} cores.",
    "Version {n1}.{n2}.{n1b} ships on {y}/{m:02d}/{d:02d}.",
    "The PIN pad is on the left of the door.",
    "Ana's password manager is Bitwarden.",
    "The password policy asks for {n2} characters.",
    "Bruno reset his password on {d} May.",
    "The API key for staging is kept in the vault.",
]


def number_facts(count: int = 400) -> list[str]:
    import random

    rng = random.Random(7)
    out = []
    for i in range(count):
        template = NUMBERS[i % len(NUMBERS)]
        out.append(template.format(
            n1=rng.randint(1, 9), n1b=rng.randint(0, 9), n2=rng.randint(10, 99), n3=rng.randint(100, 999),
            n4=rng.randint(1000, 9999), n4b=rng.randint(1000, 9999), c3=rng.randint(100, 999),
            n13=rng.randint(10**12, 10**13 - 1), y=rng.randint(1990, 2030), y0=rng.randint(1950, 2000),
            m=rng.randint(1, 12), d=rng.randint(1, 28), h=rng.randint(0, 23), mi=rng.randint(0, 59),
        ))
    return out


def messages(path: Path) -> list[str]:
    """Every chat message of LoCoMo's conversations: ordinary talk, never a secret."""
    out = []
    for sample in json.loads(path.read_text()):
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                out.extend(turn["text"] for turn in session if turn.get("text"))
    return out


def observations(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    facts = []
    for sample in data:
        for session in sample["observation"].values():
            for items in session.values():
                facts.extend(item[0] for item in items)
    return facts


def measure(name: str, texts: list[str]) -> float:
    start = time.perf_counter()
    refused = [(t, r) for t in texts if (r := find_secret(t))]
    elapsed = time.perf_counter() - start
    with_digits = sum(any(c.isdigit() for c in t) for t in texts)
    print(f"{name}: {len(texts)} ({with_digits} with digits), refused {len(refused)} = "
          f"{100 * len(refused) / len(texts):.2f}%, {1e6 * elapsed / len(texts):.0f} µs each")
    for text, reason in refused:
        print(f"  [{reason}] {text}")
    return elapsed


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    find_secret("warm up")  # loads detect-secrets' plugins once
    measure("LoCoMo observations (facts)", observations(path))
    measure("LoCoMo chat messages", messages(path))
    measure("ordinary facts with numbers", number_facts())
    caught = sum(find_secret(s) is not None for s in SECRETS)
    print(f"secrets caught: {caught}/{len(SECRETS)}")


if __name__ == "__main__":
    main()
