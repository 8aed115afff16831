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


def observations(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    facts = []
    for sample in data:
        for session in sample["observation"].values():
            for items in session.values():
                facts.extend(item[0] for item in items)
    return facts


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    facts = observations(path)
    start = time.perf_counter()
    refused = [(f, r) for f in facts if (r := find_secret(f))]
    elapsed = time.perf_counter() - start
    with_digits = sum(any(c.isdigit() for c in f) for f in facts)
    caught = sum(find_secret(s) is not None for s in SECRETS)
    print(f"ordinary facts: {len(facts)} ({with_digits} with digits)")
    print(f"refused (false positives): {len(refused)} = {100 * len(refused) / len(facts):.2f}%")
    for fact, reason in refused:
        print(f"  [{reason}] {fact}")
    print(f"secrets caught: {caught}/{len(SECRETS)}")
    print(f"time: {1e6 * elapsed / len(facts):.0f} µs per fact")


if __name__ == "__main__":
    main()
