"""request_state (2026-07-28 elicitation): what the server seals it opens unchanged; anything else is refused."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astralyx.errors import AstralyxError
from astralyx.mcp.server import Sealer, input_schema

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
states = st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=5)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=states, flip=st.integers(min_value=0))
def test_sealed_state_opens_as_it_was_and_any_change_is_refused(core, state, flip):
    sealer = Sealer(core)
    sealed = sealer.seal(state)
    assert sealer.open(sealed) == state
    i = flip % len(sealed)
    changed = sealed[:i] + ("A" if sealed[i] != "A" else "B") + sealed[i + 1:]
    with pytest.raises(AstralyxError) as e:
        sealer.open(changed)
    assert e.value.code == "INVALID_STATE"


def test_schemas_have_no_nullable_unions():
    from pydantic import BaseModel, Field

    class Args(BaseModel):
        name: str | None = Field(default=None, description="A name")
        count: int = Field(default=3, description="How many")

    schema = input_schema(Args)
    assert schema["properties"]["name"] == {"type": "string", "description": "A name", "title": "Name"}
    assert schema["properties"]["count"]["default"] == 3 and "title" not in schema
