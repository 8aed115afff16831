"""Secrets people say in passing (issue 29): one-time codes, a password after a few words, a code typed on a
keypad, an alarm's code in Italian, a seed phrase in Portuguese words; and a course's "clave", which is kept.

Each is read as the memory reads it: kept by hand (422 FACT_SENSITIVE, nothing written) and proposed by the
extractor (left out and counted); the course's code is kept both ways.
"""

from __future__ import annotations

import pytest
from mnemonic import Mnemonic

from astralyx.metis.memory.extract import clean, conversation
from astralyx.metis.memory.secrets import ONE_TIME_CODE, PASSWORD, PIN, SEED_PHRASE, find_secret, find_secret_in_fact

from .conftest import files

URL = "/v1/metis/knowledge-bases/team/memory"
# Twelve words of the Portuguese BIP-39 list whose checksum does not hold: a wallet all the same.
WORDS = "boicotar osso lorde cadastro oriental rapadura rosto agradar anagrama certeiro sugerir generoso"

SECRETS = [
    ("The code they texted me is 482913", ONE_TIME_CODE),
    ("Seu código de verificação é 739 204", ONE_TIME_CODE),
    ("验证码是 847362", ONE_TIME_CODE),
    ("My email password is the same as always, Lisboa#2019", PASSWORD),
    ("Il codice dell'allarme è 9090", PIN),
    ("To open the garage punch in 8 8 1 2 and then star", PIN),
    (f"As doze palavras da minha carteira são {WORDS}", SEED_PHRASE),
    # the same rules, said otherwise
    ("O código que recebi por SMS é 551 203", ONE_TIME_CODE),
    ("Der Code, den sie mir per SMS geschickt haben, ist 884213.", ONE_TIME_CODE),
    ("Your sign-in code is G-482913.", ONE_TIME_CODE),
    ("認証コードは 402913 です", ONE_TIME_CODE),
    ("Her computer password is the name of her cat, Mittens9.", PASSWORD),
    ("Le code de l'immeuble est 2580A.", PIN),
    ("Para abrir o portão digite 1 9 8 4.", PIN),
    ("The safe combination is 12 34 56.", PIN),
    ("La clave del wifi es CASA-2024", PASSWORD),
    (f"Guardei tudo: {WORDS}", SEED_PHRASE),
]

ORDINARY = [
    "La clave del curso es ING-305",
    "La clave del curso de inglés es ING-305.",
    "La clave de la asignatura es MAT2024.",
    "The code they sent me for the booking is XJ42K9.",
    "The code I emailed you is version 2.3.1.",
    "The verification code is 6 digits long.",
    "The verification code expires after 10 minutes.",
    "The code they texted me never arrived, order 55123.",
    "The password was reset, INC-20431 has the details.",
    "The password is kept in the vault, 1Password.",
    "My password is the same as my old one.",
    "Ana entered 3 5 0 0 steps in the app.",
    "Dial 1234 for the front desk.",
    "The confirmation code for the hotel is XJ42K9.",
]


def test_the_seed_phrase_checksum_does_not_hold():
    assert all(word in Mnemonic("portuguese").wordlist for word in WORDS.split())
    assert not Mnemonic("portuguese").check(WORDS)


@pytest.mark.parametrize(("text", "reason"), SECRETS)
def test_secrets_said_in_passing_are_found(text, reason):
    assert find_secret(text) == reason


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_sentences_about_codes_pass(text):
    assert find_secret(text) is None


@pytest.mark.parametrize(("text", "reason"), SECRETS[:7])
def test_kept_by_hand_they_are_refused_and_nothing_is_written(client, team, text, reason):
    before = files(team.folder)
    r = client.post(URL, json={"facts": [{"subject": "Ana", "attribute": "note", "fact": text}]})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "FACT_SENSITIVE" and error["details"]["reason"] == reason
    assert text not in r.text
    assert files(team.folder) == before


def test_proposed_by_the_extractor_they_are_left_out():
    lines = conversation([{"role": "user", "content": "Lots of codes today.", "date": "2026-10-12"}])
    raw = [{"subject": "Ana", "attribute": "note", "fact": text, "message": 1} for text, _ in SECRETS[:7]]
    raw.append({"subject": "Ana", "attribute": "course", "fact": "La clave del curso es ING-305.", "message": 1})
    out = clean(raw, lines, source="chat")
    assert out.left_out_secrets == 7
    assert [f["fact"] for f in out.facts] == ["La clave del curso es ING-305."]


def test_a_course_code_is_kept(client, team):
    course = {"subject": "Curso de inglés", "attribute": "clave", "fact": "La clave del curso es ING-305"}
    r = client.post(URL, json={"facts": [course]})
    assert r.status_code == 200, r.text
    assert r.json()["facts"][0]["change"] == "new"
    assert find_secret_in_fact("Curso de inglés", "clave", "La clave del curso es ING-305") is None
