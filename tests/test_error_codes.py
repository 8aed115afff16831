"""One status per error code, listed in one place (errors.CODES) and in the README."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from astralyx.errors import CODES, AstralyxError, BadRequest, Invalid, NotFound, describe, error_body, table

ROOT = Path(__file__).resolve().parent.parent


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def codes_given(source: str) -> list[tuple[str, int]]:
    """Every code a module gives, read from its syntax: `code="X"` to any call (an AstralyxError, whichever class),
    the first argument of error_body("X", …) and of the API's error_response("X", …), a class's `code = "X"` (also
    `status, code = 400, "X"`), a request model's `invalid = (what, "X")`, and a dict's "code": "X" (a job's status).
    An error body is built by error_body() alone (test below), so no code reaches an answer another way."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            given = [k.value for k in node.keywords if k.arg == "code"]
            if func in ("error_body", "error_response") and node.args:
                given.append(node.args[0])
            if func == "ApiError" and len(node.args) > 1:  # the CLI's: ApiError(status, "X", message)
                given.append(node.args[1])
            found += [(code, node.lineno) for code in map(_text, given) if code]
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if not isinstance(item, ast.Assign):
                    continue
                for target in item.targets:
                    names = target.elts if isinstance(target, ast.Tuple) else [target]
                    values = item.value.elts if isinstance(item.value, ast.Tuple) and len(names) > 1 else [item.value]
                    for name, value in zip(names, values, strict=False):
                        if isinstance(name, ast.Name) and name.id == "code":
                            code = _text(value)
                        elif isinstance(name, ast.Name) and name.id == "invalid" and isinstance(value, ast.Tuple):
                            code = _text(value.elts[-1])
                        else:
                            continue
                        if code:
                            found.append((code, item.lineno))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                code = _text(value) if _text(key) == "code" else None
                if code:
                    found.append((code, node.lineno))
    return found


def modules() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in sorted((ROOT / "astralyx").rglob("*.py"))]


def test_every_code_the_source_gives_is_listed_with_its_status():
    found: dict[str, list[str]] = {}
    for where, source in modules():
        for code, line in codes_given(source):
            found.setdefault(code, []).append(f"{where}:{line}")
    assert len(found) > 60
    missing = {code: places for code, places in found.items() if code not in CODES}
    assert not missing, f"add these to CODES in astralyx/errors.py: {missing}"


@pytest.mark.parametrize("source", [
    'raise Invalid("No such thing", code="NO_SUCH_CODE")',
    'result = {"knowledge_base": base, **error_body("NO_SUCH_CODE", "It failed")}',
    'error = errors.error_body("NO_SUCH_CODE", message)',
    'return error_response("NO_SUCH_CODE", "It failed", headers=headers)',
    'class Odd(AstralyxError):\n    status, code = 418, "NO_SUCH_CODE"',
    'class Odd(Unavailable):\n    code = "NO_SUCH_CODE"',
    'class OddIn(Body):\n    invalid = ("odd thing", "NO_SUCH_CODE")',
    'status = {"state": "failed", "error": {"code": "NO_SUCH_CODE", "message": "stopped"}}',
    'raise ApiError(0, "NO_SUCH_CODE", "Cannot reach it")',
    'raise ApiError(0, code="NO_SUCH_CODE", message="Cannot reach it")',
])
def test_a_code_not_in_codes_is_caught_wherever_it_is_given(source):
    # SEARCH_FAILED and SAVE_FAILED went unnoticed: given as error("SEARCH_FAILED", …), which a regex did not read.
    assert [code for code, _ in codes_given(source)] == ["NO_SUCH_CODE"]
    assert "NO_SUCH_CODE" not in CODES


def test_the_error_shape_is_built_in_one_place():
    # {"error": {...}} by error_body() (and AstralyxError.to_dict(), which calls it); a validation error's field
    # spelt by errors.field_path() alone, so that every shell writes tools[0].name alike (tools.0.name was one).
    built, read = [], []
    for where, source in modules():
        if where == "astralyx/errors.py":
            continue
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Dict) and [_text(k) for k in node.keys] == ["error"]
                    and isinstance(node.values[0], ast.Dict | ast.Name)):  # not {"error": str(e)}, a sync's outcome
                built.append(f"{where}:{node.lineno}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
                    and "Constant(value='loc')" in ast.dump(node)):  # ".".join(str(p) for p in err["loc"]): tools.0.name
                read.append(f"{where}:{node.lineno}")
    assert not built, f"build these with astralyx.errors.error_body(): {built}"
    assert not read, f"say these with astralyx.errors.describe(): {read}"


def test_one_error_shape_and_one_way_to_say_a_field():
    assert error_body("SAVE_FAILED", "Nothing was saved") == {"error": {"code": "SAVE_FAILED", "message": "Nothing was saved"}}
    assert error_body("X", "m", {"permission": "p"})["error"]["details"] == {"permission": "p"}
    assert {code: CODES[code][0] for code in ("SEARCH_FAILED", "SAVE_FAILED", "MCP_NOT_RUNNING")} == {
        "SEARCH_FAILED": 500, "SAVE_FAILED": 500, "MCP_NOT_RUNNING": 503}
    from pydantic import BaseModel, ValidationError

    class Tool(BaseModel):
        name: str

    class Spec(BaseModel):
        tools: list[Tool]

    with pytest.raises(ValidationError) as e:
        Spec.model_validate({"tools": [{"name": "a"}, {}]})
    assert describe(e.value, "spec") == "The spec is not valid: tools[1].name: Field required"
    assert describe(e.value) == "tools[1].name: Field required"


def test_the_code_decides_the_status_whichever_class_raises_it():
    # The search route once said 400 INVALID_QUERY and the search 422 INVALID_QUERY.
    assert BadRequest("x", code="INVALID_QUERY").status == Invalid("x", code="INVALID_QUERY").status == 422
    assert Invalid("x", code="DEPLOYMENT_NOT_FOUND").status == NotFound("x", code="DEPLOYMENT_NOT_FOUND").status == 404
    assert AstralyxError("x", code="NOTE_CHANGED").status == 409
    assert NotFound("no such thing").status == 404 and NotFound("x").code == "NOT_FOUND"


def test_the_readme_lists_every_code():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- error codes: generated by astralyx.errors.table\(\) -->\n(.*?)\n<!-- /error codes -->", readme, re.S)
    assert match, "README.md lost its error codes table"
    assert match.group(1) == table(), "README's error codes differ from CODES: paste astralyx.errors.table() between its markers"


def test_one_code_one_status_over_http(client):
    # Bad searches: the route's schema and the search's own checks answer alike.
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}})
    url = "/v1/metis/knowledge-bases/handbook/search"
    for body in ({"max_results": 3}, {"query": "  "}, {"query": 7}, {"query": "leave", "max_results": 0},
                 {"query": "leave", "as_of": "last week"}):
        r = client.post(url, json=body)
        assert (r.status_code, r.json()["error"]["code"]) in ((422, "INVALID_QUERY"), (422, "INVALID_DATE")), (body, r.text)
    # Bad facts, whether the body's shape or a fact in it is wrong.
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}})
    for body in ({"fact": "x"}, {"facts": []}, {"facts": "Ana"}, {"facts": [{"subject": "A", "attribute": "b"}]}):
        r = client.post("/v1/metis/knowledge-bases/team/memory", json=body)
        assert (r.status_code, r.json()["error"]["code"]) == (422, "INVALID_FACT"), (body, r.text)
    # A deployment that does not exist is 404, named in the address or in a base's spec.
    assert client.get("/v1/eos/deployments/nope").status_code == 404
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "x"}, "spec": {"embedding": {"deployment": "nope"}}})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "DEPLOYMENT_NOT_FOUND")


def test_a_method_not_taken_says_which_are(client):
    r = client.post("/v1/metis/knowledge-bases/handbook/notes/a.md")
    assert r.status_code == 405 and r.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    # Every route of the path, not only the first Starlette tried.
    assert set(r.headers["allow"].split(", ")) == {"GET", "PUT", "DELETE"}
    r = client.patch("/v1/metis/knowledge-bases")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) == {"GET", "POST"}


def test_a_body_too_deep_or_not_sent_as_json_says_so(client):
    deep = b"[" * 100_000
    r = client.post("/v1/chat/completions", content=deep, headers={"content-type": "application/json"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_JSON")
    # curl -d without -H 'content-type: application/json' sends form data: the answer says what to send.
    for headers in ({}, {"content-type": "application/x-www-form-urlencoded"}):
        r = client.post("/v1/chat/completions", content=deep, headers=headers)
        assert (r.status_code, r.json()["error"]["code"]) == (415, "UNSUPPORTED_MEDIA_TYPE"), r.text
        assert "Content-Type: application/json" in r.json()["error"]["message"]


def test_a_search_request_is_checked_by_the_search_alone(client):
    # "A query missing" was checked twice, by the body's schema and by the search, in two wordings: the search's
    # check is the rule (REST, the CLI and the console say the same), the schema only describes it.
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}})
    url = "/v1/metis/knowledge-bases/handbook/search"
    for body, said in (({"query": "  "}, "Give a query"), ({"query": "x" * 2_001}, "longer than"),
                       ({"query": "leave", "max_results": 0}, "max_results is a whole number")):
        r = client.post(url, json=body)
        assert (r.status_code, r.json()["error"]["code"]) == (422, "INVALID_QUERY"), r.text
        assert r.json()["error"]["message"].startswith(said) or said in r.json()["error"]["message"], r.text
    schema = client.get("/v1/openapi.json").json()["components"]["schemas"]["SearchIn"]["properties"]
    assert schema["query"]["pattern"] == r"\S" and schema["query"]["maxLength"] == 2_000
    assert schema["max_results"]["minimum"] == 1


def test_the_cli_s_own_codes_are_listed():
    assert CODES["UNREACHABLE"][0] == 503 and CODES["ERROR"][0] == 500
    assert all("CLI only" in CODES[code][1] for code in ("UNREACHABLE", "ERROR", "SYNC_LOST"))
