"""What the domain answers, as pydantic models: one definition for the library's callers, the API's schema
(its routes declare them as `response_model`, so an answer is filtered by what the document says) and MCP.

An `Answer` is built from data the domain made itself, so it is built with `model_construct` (not
validated again: a search is a hot path). A field made with `absent()` is left out of the JSON when it
holds nothing (None), as the answers always were; every other field is always there, null included.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import JsonDict


def _not_null(schema: JsonDict) -> None:
    """A field that is left out rather than null: the schema says its value's type alone."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del schema["anyOf"]
            schema.update(kept[0])
        else:
            schema["anyOf"] = kept


def absent(description: str | None = None, **kwargs: Any) -> Any:
    """A field of an answer that is there only when it holds something (None: left out of the JSON)."""
    return Field(default=None, description=description, json_schema_extra=_not_null, **kwargs)


class Answer(BaseModel):
    """An answer of the domain: fields by name (a field spelt as a Python keyword has its JSON name as alias),
    the `absent()` ones left out when None."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)
    _absent: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # Its key by name and by alias (a dump may ask for either).
        cls._absent = frozenset(key for name, field in cls.model_fields.items() if field.json_schema_extra is _not_null
                                for key in (name, field.alias or name))

    # No return annotation: pydantic then documents the model's own fields (an annotation would replace them).
    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        if self._absent and isinstance(data, dict):
            for key in self._absent:
                if key in data and data[key] is None:
                    del data[key]
        return data
