"""The OpenAPI document is honest: a bounded schemathesis run over the real, seeded app.

Every operation of /v1/openapi.json gets a few generated requests (valid ones and broken ones); each answer
must be no 5xx, a status the document lists for the operation, a content type it declares, and a 405 must
say in `Allow` what the address takes. Kept small (a few examples an operation): a few minutes at most.
"""

from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.specs.openapi import checks  # noqa: E402

from astralyx.server import create_app  # noqa: E402

from .conftest import ADMIN_TOKEN  # noqa: E402

# An operation's examples: enough to find a status or content type the document does not say. A deeper run
# by hand: ASTRALYX_SCHEMATHESIS_EXAMPLES=50 pytest tests/test_openapi.py -m slow
EXAMPLES = int(os.environ.get("ASTRALYX_SCHEMATHESIS_EXAMPLES", "5"))
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CHECKS = [
    schemathesis.checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]


@pytest.fixture
def seeded(core):
    """A documents base with a note, a memory with a fact, the default e5-small deployment."""
    from fastapi.testclient import TestClient

    app = create_app(core)
    with TestClient(app, headers=AUTH) as c:
        assert c.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"},
                                                          "spec": {"embedding": {"deployment": "e5-small"}}}).status_code == 201
        assert c.put("/v1/metis/knowledge-bases/handbook/notes/leave.md",
                     json={"metadata": {"title": "Leave"}, "content": "Vacation is 25 days a year."}).status_code == 201
        assert c.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"},
                                                          "spec": {"kind": "memory"}}).status_code == 201
        assert c.post("/v1/metis/knowledge-bases/team/memory", json={"facts": [
            {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team."}]}).status_code == 200
    return app


# Rules on data the schema cannot say: which models the library has, which files the server's disk holds,
# which workspaces exist, a base's kind and its sources together, a note path's rules (NFKC, odd names).
# A schema-valid request refused with one of these codes is the rule working, not the document lying.
DATA_RULES = {"UNKNOWN_MODEL", "MODEL_FILE_MISSING", "NOT_GGUF", "WORKSPACE_NOT_FOUND", "INVALID_SPEC", "BAD_PATH",
              "WRONG_DEPLOYMENT_KIND", "WRONG_MODEL_KIND", "UPSTREAM_ONLY", "TOOL_BASE_NOT_FOUND", "NOTE_RESERVED",
              "FACT_SENSITIVE",  # the secrets detector's rule
              "INVALID_NAME",  # a deployment's default name, made from the model's: the model may be any upstream's
              "TOOL_NAME_TAKEN",  # two tools named alike (or one's default name another's)
              "EXPORT_INVALID"}  # what an uploaded archive holds


@schemathesis.check
def valid_requests_accepted(ctx, response, case):
    """Schemathesis' positive_data_acceptance, but for the rules of DATA_RULES."""
    try:
        return checks.positive_data_acceptance(ctx, response, case)
    except AssertionError:
        try:
            code = response.json()["error"]["code"]
        except (ValueError, KeyError, TypeError):
            raise
        if code in DATA_RULES:
            return None
        raise


def run(operation, mode: GenerationMode, pinned: dict[str, str] | None, checks: list) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    def answers_as_documented(case):
        if pinned and case.path_parameters:
            case.path_parameters.update({k: v for k, v in pinned.items() if k in case.path_parameters})
        case.call_and_validate(headers=AUTH, checks=checks)

    answers_as_documented()


def pins(operation) -> list[dict[str, str] | None]:
    """Generated path parameters (most name nothing: 404), then the seeded base, memory and note."""
    path = operation.path
    if "{" not in path:
        return [None]
    documents = {"base": "handbook", "name": "handbook" if "knowledge-bases" in path else "e5-small", "path": "leave.md"}
    return [None, documents, {**documents, "base": "team"}]


@pytest.mark.slow  # a bounded schemathesis run: about a minute
def test_every_operation_answers_as_documented(seeded):
    api = schemathesis.openapi.from_asgi("/v1/openapi.json", seeded)
    failures: dict[str, str] = {}
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) > 40  # every route is in the document
    for operation in operations:
        for pinned in pins(operation):
            for mode, extra in ((GenerationMode.POSITIVE, [valid_requests_accepted]), (GenerationMode.NEGATIVE, [])):
                try:
                    run(operation, mode, pinned, CHECKS + extra)
                except Unsatisfiable:  # no request can be wrong for this schema (e.g. path parameters only)
                    continue
                except (Exception, BaseExceptionGroup) as e:  # each operation's first failure, all of them reported at once
                    failures.setdefault(operation.label, f"{mode.value} {pinned}: {str(e)[:1500]}")
    assert not failures, "\n\n".join(f"{label}:\n{why}" for label, why in failures.items())


def test_every_body_and_stream_is_in_the_document(client):
    doc = client.get("/v1/openapi.json").json()
    schemas = doc["components"]["schemas"]
    untyped = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for media, content in op.get("requestBody", {}).get("content", {}).items():
                schema = content.get("schema", {})
                ref = schema.get("$ref") or next((s["$ref"] for s in schema.get("anyOf", []) if "$ref" in s), None)
                fields = schemas[ref.rsplit("/", 1)[1]].get("properties") if ref else schema.get("properties")
                if not fields and schema.get("type") != "string" and path != "/eos/receipts/verify":
                    untyped.append(f"{method.upper()} {path} ({media})")
    assert not untyped, f"bodies without fields in the document: {untyped}"
    # The streams say their media types; every error answer has the error shape.
    sync = doc["paths"]["/metis/knowledge-bases/{base}/sync"]["post"]["responses"]
    assert "application/x-ndjson" in sync["200"]["content"]
    assert "text/event-stream" in doc["paths"]["/chat/completions"]["post"]["responses"]["200"]["content"]
    search = doc["paths"]["/metis/knowledge-bases/{base}/search"]["post"]["responses"]
    assert search["404"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert {"400", "401", "403", "413", "415", "422", "500"} <= set(search)


def test_a_concrete_path_is_allowed_its_own_methods_only(client):
    # OpenAPI matches /eos/receipts/verify before /eos/receipts/{receipt_id}: Allow says what the document says.
    r = client.options("/v1/eos/receipts/verify")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    r = client.options("/v1/eos/receipts/r_abc")
    assert r.status_code == 405 and r.headers["allow"] == "GET"
    doc = client.get("/v1/openapi.json").json()
    assert set(doc["paths"]["/eos/receipts/verify"]) == {"post"}


def test_a_glob_the_document_allows_is_one_the_server_takes(client):
    # The document says what a source's glob may be (1 to 500 characters, not only spaces, no control
    # character or backslash), and a glob that fits is taken; one that does not is told in words.
    schema = client.get("/v1/openapi.json").json()["components"]["schemas"]["Source"]["properties"]["exclude"]
    items = schema["anyOf"][0]["items"]
    assert (items["minLength"], items["maxLength"], schema["anyOf"][0]["maxItems"]) == (1, 500, 100)
    for bad, words in (("", "1 to 500 characters"), ("  ", "1 to 500 characters"), ("a\\b", "backslash")):
        r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "docs"},
                                                           "spec": {"sources": [{"folder": "/srv/docs", "exclude": [bad]}]}})
        assert r.status_code == 422 and words in r.json()["error"]["message"], r.json()


def test_the_document_shows_what_a_tool_is(client):
    tools = client.get("/v1/openapi.json").json()["components"]["schemas"]["DeploymentSpec"]["properties"]["tools"]
    item = tools["items"]
    assert item["required"] == ["builtin", "knowledge_base"] and item["additionalProperties"] is False
    assert item["properties"]["builtin"]["enum"] == ["search_knowledge", "save_to_knowledge"]
    assert item["properties"]["name"]["anyOf"][0]["pattern"] == "^[a-zA-Z0-9_-]{1,64}$"
