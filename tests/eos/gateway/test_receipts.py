"""Signed receipts of built-in tool calls: fetched, verified offline and by the gateway, tampering named."""

from __future__ import annotations

import base64
import hashlib
import json
import stat

import pytest
import rfc8785
from click.testing import CliRunner
from nacl.signing import VerifyKey

from astralyx.cli import cli
from astralyx.config import Settings
from astralyx.core import Astralyx

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL

ASK = [{"role": "user", "content": "How many vacation days?"}]


def one_receipt(chat, oai, client) -> tuple[dict, str]:
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation"})])
    chat.reply("25 [1].")
    answer = oai.chat.completions.create(model="chat", messages=ASK, metadata={"conversation_title": "Leave"})
    rid = answer.model_extra["astralyx"]["receipts"][0]
    r = client.get(f"/v1/eos/receipts/{rid}")
    assert r.status_code == 200, r.text
    return r.json(), rid


def verify_cli(tmp_path, document: dict) -> tuple[int, str]:
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(document, indent=2))
    result = CliRunner().invoke(cli, ["eos", "receipts", "verify", str(path)])
    return result.exit_code, result.output


def test_receipt_records_who_called_what(chat, oai, client, home):
    document, rid = one_receipt(chat, oai, client)
    record = document["receipt"]
    assert record["id"] == rid
    assert {k: record[k] for k in ("deployment", "workspace", "tool", "function", "knowledge_base", "conversation")} == {
        "deployment": "chat", "workspace": "default", "tool": "search_knowledge", "function": "search_knowledge",
        "knowledge_base": "handbook", "conversation": "Leave"}
    # The hashes are of the arguments as the model sent them and of the result the model got.
    sent = chat.chat_requests[1]["messages"]
    args = [m for m in sent if m["role"] == "assistant"][0]["tool_calls"][0]["function"]["arguments"]
    assert record["arguments_sha256"] == hashlib.sha256(args.encode()).hexdigest()
    result = json.loads(sent[-1]["content"])
    assert record["result_sha256"] == hashlib.sha256(rfc8785.dumps(result)).hexdigest()
    assert document["algorithm"] == "Ed25519" and document["canonicalization"] == "RFC8785"
    # Anyone with the public key verifies it offline: Ed25519 over the RFC 8785 canonical JSON.
    key = client.get("/v1/eos/receipts/public-key").json()
    assert key["key_id"] == document["key_id"]
    VerifyKey(base64.b64decode(key["public_key"])).verify(rfc8785.dumps(record), base64.b64decode(document["signature"]))
    # The signing key is in the data directory, readable by its owner only.
    key_file = home / "keys" / "receipts.ed25519"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_verify_says_valid(chat, oai, client, tmp_path):
    document, rid = one_receipt(chat, oai, client)
    code, out = verify_cli(tmp_path, document)
    assert code == 0, out
    assert out.startswith(f"valid: {rid} signed by ed25519:")
    assert "chat called search_knowledge (search_knowledge: handbook)" in out


def test_verify_names_the_tampered_field(chat, oai, client, tmp_path):
    document, _ = one_receipt(chat, oai, client)
    tampered = json.loads(json.dumps(document))
    tampered["receipt"]["knowledge_base"] = "salaries"
    code, out = verify_cli(tmp_path, tampered)
    assert code == 1
    assert "invalid: tampered: field 'knowledge_base' is \"salaries\", the gateway signed \"handbook\"" in out
    # Two fields at once, and the API says the same.
    tampered["receipt"]["time"] = "2020-01-01T00:00:00Z"
    verdict = client.post("/v1/eos/receipts/verify", json=tampered).json()
    assert verdict["valid"] is False and verdict["tampered_fields"] == ["knowledge_base", "time"]
    # Even the id: the receipt is found by its signature.
    renamed = json.loads(json.dumps(document))
    renamed["receipt"]["id"] = "r_0000000000000000"
    assert client.post("/v1/eos/receipts/verify", json=renamed).json()["tampered_fields"] == ["id"]
    # An altered signature over an untouched record.
    resigned = json.loads(json.dumps(document))
    sig = bytearray(base64.b64decode(resigned["signature"]))
    sig[0] ^= 1
    resigned["signature"] = base64.b64encode(bytes(sig)).decode()
    code, out = verify_cli(tmp_path, resigned)
    assert code == 1 and "the signature was altered" in out


def test_verify_says_wrong_key(chat, oai, client, tmp_path):
    document, _ = one_receipt(chat, oai, client)
    other = Astralyx(Settings.load(tmp_path / "other-home")).start()
    try:
        foreign = other.receipts.issue(workspace="default", deployment="chat", caller="k", tool="search_knowledge",
                                       function="search_knowledge", knowledge_base="handbook", arguments="{}",
                                       result={}, conversation="x").model_dump(mode="json")
        foreign_key = other.receipts.public_key().key_id
    finally:
        other.close()
    code, out = verify_cli(tmp_path, foreign)
    assert code == 1
    assert f"invalid: wrong key: signed by {foreign_key}, not by this gateway's key {document['key_id']}" in out
    # Not a receipt at all.
    code, out = verify_cli(tmp_path, {"hello": 1})
    assert code == 1 and "not a receipt" in out


def test_receipts_are_the_workspace_s(chat, oai, client, key_client):
    _, rid = one_receipt(chat, oai, client)
    assert key_client("viewer").get(f"/v1/eos/receipts/{rid}").status_code == 200
    r = key_client("admin", workspace="acme").get(f"/v1/eos/receipts/{rid}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "RECEIPT_NOT_FOUND"


def test_show_then_verify_from_the_cli(chat, oai, client, tmp_path):
    _, rid = one_receipt(chat, oai, client)
    shown = CliRunner().invoke(cli, ["eos", "receipts", "show", rid])
    assert shown.exit_code == 0, shown.output
    path = tmp_path / "r.json"
    path.write_text(shown.output)
    verified = CliRunner().invoke(cli, ["eos", "receipts", "verify", str(path)])
    assert verified.exit_code == 0 and verified.output.startswith(f"valid: {rid}")
    key = json.loads(CliRunner().invoke(cli, ["eos", "receipts", "public-key"]).output)
    assert key["algorithm"] == "Ed25519" and key["key_id"] == json.loads(shown.output)["key_id"]
