"""The secret detector, both sides: secrets said in everyday words refused, ordinary facts kept.

- Recall on a held-out set (bench/data/secrets_heldout.tsv): secrets in natural sentences, by kind and
  language, written before the detector was changed for issue 29 (round 5) and not tuned on otherwise; on
  rounds 1 to 3 (secrets_round1.tsv …), held out when first measured, then used to improve it; and on
  round 5 (secrets_round5.tsv, ordinary_round5.tsv), issue 29's reports and sentences written with its fix.
  A row starting "(source)" puts the sentence in a fact's source; "(fact) attribute | sentence" gives
  the attribute and the fact apart, as a person or the extractor would.
- False positives on ordinary facts: every observation and chat message of LoCoMo
  (../shared/data/locomo/locomo10.json) and generated facts with numbers (dates, phone, order and
  version numbers, prices, commit ids), in English and in several languages (bench/data/ordinary_facts.tsv),
  many of them near a secret's words ("the password manager is …", "the PIN pad is broken").

    .venv/bin/python bench/secrets_fp.py [path/to/locomo10.json]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from astralyx.metis.memory.secrets import find_secret, find_secret_in_fact

DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo" / "locomo10.json"
DATA = Path(__file__).resolve().parent / "data"

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


def _rows(name: str) -> list[list[str]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]


def _numbers(rng) -> dict:
    return dict(
        n1=rng.randint(1, 9), n2=rng.randint(10, 99), n3=rng.randint(100, 999), n4=rng.randint(1000, 9999),
        n6=rng.randint(10**5, 10**6 - 1), n8=rng.randint(10**7, 10**8 - 1), n13=rng.randint(10**12, 10**13 - 1),
        y=rng.randint(1990, 2030), m=rng.randint(1, 12), d=rng.randint(1, 28), h=rng.randint(0, 23),
        mi=rng.randint(0, 59), hex="".join(rng.choice("0123456789abcdef") for _ in range(40)),
    )


def ordinary_multilingual(per_template: int = 4) -> list[tuple[str, str]]:
    """(language, fact) from the templates of bench/data/ordinary_facts.tsv, each filled a few times."""
    import random

    rng = random.Random(11)
    return [(lang, template.format(**_numbers(rng))) for lang, template in _rows("ordinary_facts.tsv")
            for _ in range(per_template)]


def refused(row: str) -> str | None:
    """The reason a held-out row is refused, read the way the memory reads a fact."""
    if row.startswith("(source) "):
        found = find_secret_in_fact("Ana", "note", "Ana said something.", row.removeprefix("(source) "))
    elif row.startswith("(fact) "):
        attribute, fact = row.removeprefix("(fact) ").split(" | ", 1)
        found = find_secret_in_fact("office", attribute, fact)
    else:
        found = find_secret_in_fact("Ana", "note", row)
    return found[0] if found else None


def held_out(name: str) -> None:
    from collections import defaultdict

    by_kind: dict[str, list[bool]] = defaultdict(list)
    by_lang: dict[str, list[bool]] = defaultdict(list)
    missed = []
    for kind, lang, text in _rows(name):
        hit = refused(text) is not None
        by_kind[kind].append(hit)
        by_lang[lang].append(hit)
        if not hit:
            missed.append(f"  [{kind}/{lang}] {text}")
    total = [h for hits in by_kind.values() for h in hits]
    print(f"{name}: refused {sum(total)}/{len(total)} = {100 * sum(total) / len(total):.1f}%")
    print("  by kind: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in by_kind.items()))
    print("  by language: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(by_lang.items())))
    for line in missed:
        print("  missed" + line)


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
    held_out("secrets_round5.tsv")
    held_out("secrets_heldout.tsv")
    held_out("secrets_round3.tsv")
    held_out("secrets_round2.tsv")
    held_out("secrets_round1.tsv")
    caught = sum(find_secret(s) is not None for s in SECRETS)
    print(f"secret shapes caught: {caught}/{len(SECRETS)}")
    if path.exists():
        measure("LoCoMo observations (facts)", observations(path))
        measure("LoCoMo chat messages", messages(path))
    else:
        print(f"LoCoMo not found at {path}: pass its path to measure on it")
    measure("ordinary facts with numbers (en)", number_facts())
    multilingual = ordinary_multilingual()
    measure(f"ordinary facts near secret words ({len({lang for lang, _ in multilingual})} languages)",
            [fact for _, fact in multilingual])
    measure("ordinary sentences near secret words, held out", [text for _, text in _rows("ordinary_heldout.tsv")])
    for n in (5, 3, 2):
        measure(f"ordinary sentences near secret words, round {n}", [text for _, text in _rows(f"ordinary_round{n}.tsv")])


if __name__ == "__main__":
    main()
