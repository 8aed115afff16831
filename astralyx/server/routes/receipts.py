"""Signed receipts of tool calls: /v1/eos/receipts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends

from ...auth.actor import Actor
from ...core import Astralyx
from ...eos.receipts import PublicKey, Receipt, Verdict
from ...errors import Invalid
from ..body import surrogate_problem
from ..deps import get_actor, get_core
from ..openapi import errors

router = APIRouter(prefix="/eos/receipts", tags=["receipts"])


@router.get("/public-key", response_model=PublicKey)
def public_key(core: Astralyx = Depends(get_core)) -> PublicKey:
    """The gateway's Ed25519 public key: receipts verify against it (offline too)."""
    return core.receipts.public_key()


@router.post("/verify", response_model=Verdict)
def verify_receipt(
    # Any JSON: a receipt as it was given, or whatever was sent as one (the answer says what is wrong with it).
    document: Any = Body(..., examples=[{"id": "r_…", "signature": "…"}]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> Verdict:
    """Valid, or exactly why not: a changed field (named), an altered signature, another key."""
    problem = surrogate_problem(document)
    if problem:  # the rule of every JSON body (models.Body): this one has no model
        raise Invalid(f"The request is not valid: {problem}", code="INVALID_REQUEST")
    return core.receipts.check(actor, document)


@router.get("/{receipt_id}", response_model=Receipt, responses=errors(404))
def get_receipt(receipt_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Receipt:
    return core.receipts.get(actor, receipt_id)
