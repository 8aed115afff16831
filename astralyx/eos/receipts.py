"""Signed receipts: who had a deployment's model call which built-in tool, on what, with what result.

A receipt is a record (deployment, workspace, caller, tool, function, base, SHA-256 of the
arguments and of the result, time, conversation) canonicalised with RFC 8785 (JCS) and signed
with the gateway's Ed25519 key (<home>/keys/receipts.ed25519, mode 0600). Anyone with the
public key can check a receipt offline; the gateway keeps every receipt it signed, so a check
against it can also say which field was changed.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path
from typing import Any

import rfc8785
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey
from pydantic import ConfigDict, Field

from ..answers import Answer, absent
from ..auth.actor import Actor
from ..auth.roles import DEPLOYMENTS_READ
from ..engines import Database
from ..errors import NotFound
from ..util import atomic_write, iso, new_id, sha256

ALGORITHM = "Ed25519"
CANONICALIZATION = "RFC8785"
# The fields of a record, in the order people read them (the signature covers their canonical JSON).
FIELDS = (
    "id", "deployment", "workspace", "caller", "tool", "function", "knowledge_base",
    "arguments_sha256", "result_sha256", "time", "conversation",
)


def canonical(record: dict[str, Any]) -> bytes:
    return rfc8785.dumps(record)


def key_id(verify_key: VerifyKey) -> str:
    return "ed25519:" + sha256(bytes(verify_key))[:16]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def content_sha256(value: Any) -> str:
    """SHA-256 of a value as sent or received: strings as they are, anything else canonical JSON."""
    if isinstance(value, str):
        return sha256(value)
    return sha256(canonical(value))


KEY_ENV = "ASTRALYX_RECEIPTS_KEY"  # the seed as 64 hex digits: one key for replicas that share no data directory


def load_or_create_key(path: Path) -> SigningKey:
    """The gateway's signing key (a 32-byte seed): ASTRALYX_RECEIPTS_KEY, else the file, created on
    first use (readable by the owner only). Replicas starting together on one data directory end
    up with the same key: the file is linked into place only if none is there yet."""
    if os.environ.get(KEY_ENV):
        try:
            seed = bytes.fromhex(os.environ[KEY_ENV].strip())
        except ValueError:
            seed = b""
        if len(seed) != 32:
            raise RuntimeError(f"{KEY_ENV} is not an Ed25519 seed: 64 hex digits expected (e.g. from `openssl rand -hex 32`)")
        return SigningKey(seed)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        fresh = path.with_name(f".{path.name}.{secrets.token_hex(8)}.new")
        atomic_write(fresh, bytes(SigningKey.generate()), mode=0o600)
        try:
            os.link(fresh, path)  # fails when another process made the key first: theirs is the key
        except FileExistsError:
            pass
        finally:
            fresh.unlink(missing_ok=True)
    seed = path.read_bytes()
    if len(seed) != 32:
        raise RuntimeError(f"{path} is not an Ed25519 key (32 bytes expected): restore it or remove it to make a new one")
    return SigningKey(seed)


class ReceiptRecord(Answer):
    """What a receipt says happened: the fields its signature covers."""

    # Kept whole as it was signed: a field this version does not name still counts in the signature.
    model_config = ConfigDict(extra="allow")
    id: str
    deployment: str
    workspace: str
    caller: str | None
    tool: str
    function: str
    knowledge_base: str | None
    arguments_sha256: str
    result_sha256: str
    time: str
    conversation: str | None


class Receipt(Answer):
    """A signed receipt of one tool call: the record, and its Ed25519 signature over the record's RFC 8785 JSON."""

    receipt: ReceiptRecord
    algorithm: str = ALGORITHM
    canonicalization: str = CANONICALIZATION
    key_id: str = Field(description="Which key signed it: ed25519:<first 16 hex digits of the key's SHA-256>")
    signature: str = Field(description="Base64")


class PublicKey(Answer):
    """The gateway's Ed25519 public key: receipts verify against it (offline too)."""

    algorithm: str = ALGORITHM
    canonicalization: str = CANONICALIZATION
    key_id: str
    public_key: str = Field(description="Base64")
    public_key_hex: str


class Verdict(Answer):
    """Whether a receipt is valid, or exactly why not."""

    valid: bool
    reason: str
    tampered_fields: list[str] | None = absent("The fields found changed, when known")
    key_id: str | None = absent("This gateway's key")


def _verdict(valid: bool, reason: str, fields: list[str], key_id: str | None = None) -> Verdict:
    return Verdict(valid=valid, reason=reason, tampered_fields=fields or None, key_id=key_id)


def verify(document: Any, public_key: VerifyKey, original: dict[str, Any] | None = None) -> Verdict:
    """Check a receipt against a public key; with the record as signed (`original`), name what changed."""
    expected = key_id(public_key)
    if not isinstance(document, dict) or not isinstance(document.get("receipt"), dict):
        return _verdict(False, 'not a receipt: expected {"receipt": {...}, "signature": "...", ...}', [])
    record = document["receipt"]
    signature = document.get("signature")
    if document.get("algorithm", ALGORITHM) != ALGORITHM:
        return _verdict(False, f"signed with {document.get('algorithm')!r}; receipts are {ALGORITHM}", ["algorithm"])
    try:
        raw_sig = base64.b64decode(signature or "", validate=True)
    except (ValueError, TypeError):
        return _verdict(False, "the signature is not base64: it was altered", ["signature"])
    try:
        message = canonical(record)
    except Exception as e:  # rfc8785 refuses NaN, huge ints, non-string keys
        return _verdict(False, f"the record cannot be canonicalised ({e}): it was altered", [])
    try:
        public_key.verify(message, raw_sig)
        ok = True
    except (BadSignatureError, ValueError):
        ok = False
    claimed = document.get("key_id")
    if ok:
        if claimed not in (None, expected):
            return _verdict(False, f"key_id was changed to {claimed!r}: the signature is by this gateway's key {expected}",
                           ["key_id"], expected)
        return _verdict(True, f"valid: signed by {expected}", [], expected)
    if original is not None:
        changed = [f for f in sorted(set(original) | set(record), key=_field_order)
                   if original.get(f, _MISSING) != record.get(f, _MISSING)]
        if changed:
            details = "; ".join(_change(f, original.get(f, _MISSING), record.get(f, _MISSING)) for f in changed)
            return _verdict(False, f"tampered: {details}", changed, expected)
        if claimed not in (None, expected):
            return _verdict(False, f"wrong key: signed by {claimed}, not by this gateway's key {expected}", [], expected)
        return _verdict(False, "the signature was altered: the record is as signed but the signature does not match it",
                       ["signature"], expected)
    if claimed not in (None, expected):
        return _verdict(False, f"wrong key: signed by {claimed}, not by this gateway's key {expected}", [], expected)
    return _verdict(False, f"the signature does not match the record under {expected}: the record or the signature "
                          "was altered, or another key signed it", [], expected)


class _Missing:
    def __repr__(self) -> str:
        return "(missing)"


_MISSING = _Missing()


def _field_order(name: str) -> tuple[int, str]:
    return (FIELDS.index(name) if name in FIELDS else len(FIELDS), name)


def _change(field: str, signed: Any, now: Any) -> str:
    def show(v: Any) -> str:
        return repr(v) if isinstance(v, _Missing) else json.dumps(v, ensure_ascii=False)[:80]

    return f"field {field!r} is {show(now)}, the gateway signed {show(signed)}"


class Receipts:
    def __init__(self, db: Database, home: Path) -> None:
        self.db = db
        self.key_path = home / "keys" / "receipts.ed25519"
        self._key: SigningKey | None = None

    @property
    def signing_key(self) -> SigningKey:
        if self._key is None:
            self._key = load_or_create_key(self.key_path)
        return self._key

    @property
    def verify_key(self) -> VerifyKey:
        return self.signing_key.verify_key

    def public_key(self) -> PublicKey:
        raw = bytes(self.verify_key)
        return PublicKey(key_id=key_id(self.verify_key), public_key=b64(raw), public_key_hex=raw.hex())

    def issue(
        self,
        *,
        workspace: str,
        deployment: str,
        caller: str | None,
        tool: str,
        function: str,
        knowledge_base: str | None,
        arguments: Any,
        result: Any,
        conversation: str | None,
    ) -> Receipt:
        """Sign and keep the receipt of one tool call."""
        record = {
            "id": new_id("r"),
            "deployment": deployment,
            "workspace": workspace,
            "caller": caller,
            "tool": tool,
            "function": function,
            "knowledge_base": knowledge_base,
            "arguments_sha256": content_sha256(arguments),
            "result_sha256": content_sha256(result),
            "time": iso(),
            "conversation": conversation,
        }
        document = Receipt(receipt=ReceiptRecord.model_validate(record), key_id=key_id(self.verify_key),
                           signature=b64(self.signing_key.sign(canonical(record)).signature))
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO receipts(id, workspace, deployment, signature, document, created_at) VALUES (?,?,?,?,?,?)",
                (record["id"], workspace, deployment, document.signature, document.model_dump_json(), record["time"]),
            )
        return document

    def get(self, actor: Actor, receipt_id: str) -> Receipt:
        actor.require(DEPLOYMENTS_READ)
        row = self.db.one("SELECT document FROM receipts WHERE id=? AND workspace=?", (receipt_id, actor.workspace))
        if row is None:
            raise NotFound(f"Receipt {receipt_id!r} not found in this workspace: receipt ids come in chat responses "
                           "(astralyx.receipts)", code="RECEIPT_NOT_FOUND")
        return Receipt.model_validate_json(row["document"])

    def check(self, actor: Actor, document: Any) -> Verdict:
        """Verify a receipt with this gateway's key; for this workspace's receipts, name any changed field."""
        original = None
        record = document.get("receipt") if isinstance(document, dict) else None
        row = None
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            row = self.db.one("SELECT document FROM receipts WHERE id=? AND workspace=?", (record["id"], actor.workspace))
        if row is None and isinstance(document, dict) and isinstance(document.get("signature"), str):
            # The id itself may be what was changed: the signature still finds the receipt.
            row = self.db.one("SELECT document FROM receipts WHERE signature=? AND workspace=?",
                              (document["signature"], actor.workspace))
        if row is not None:
            original = json.loads(row["document"])["receipt"]
        return verify(document, self.verify_key, original)
