"""An upstream's URL (eos/urls.py): http(s) that parses, no link-local or metadata address unless the operator
allows it; a listing calls no upstream; a row stored before the rule never breaks a page."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astralyx.eos.urls import URL_SCHEMA, check_upstream_url, link_local
from astralyx.errors import Forbidden

DEPLOYMENTS = "/v1/eos/deployments"

BAD = [
    "file:///etc/passwd",
    "gopher://127.0.0.1:70/_x",
    "javascript:alert(1)",
    "not a url",
    "http://" + "a" * 10_000 + "/v1",
    "http://" + "a." * 130 + "com/v1",  # a host of 263 characters
    "http://a\u001bb/v1",
    "http://127.0.0.1:11434/v1\n",
    "http:///v1",
    "http://127.0.0.1:99999/v1",
    "http://user:secret@127.0.0.1/v1",
    "http://127.0.0.1/v1?key=x",
    "",
]
LINK_LOCAL = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]:8080/v1",
    "http://2852039166/v1",  # 169.254.169.254 as one number
    "http://[::ffff:169.254.169.254]/v1",
    "http://metadata.google.internal/computeMetadata/v1",
]


def _spec(url: str) -> dict:
    return {"spec": {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": url}}}


@pytest.mark.parametrize("url", BAD)
def test_a_url_that_is_not_an_http_base_url_is_refused_everywhere_it_enters(client, url):
    r = client.put(f"{DEPLOYMENTS}/chat", json=_spec(url))
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_UPSTREAM_URL", r.text
    if url:  # (no URL at all: a model the library does not know, UNKNOWN_MODEL)
        r = client.post(DEPLOYMENTS, json={"model": "scripted", "kind": "chat", "name": "chat", "url": url})
        assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_UPSTREAM_URL", r.text
    assert "chat" not in [d["metadata"]["name"] for d in client.get(DEPLOYMENTS).json()["deployments"]]


def test_the_deploy_route_refuses_with_the_rule_s_code(client):
    r = client.post(DEPLOYMENTS, json={"model": "scripted", "kind": "chat", "name": "chat", "url": "file:///etc/passwd"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_UPSTREAM_URL"
    assert "http" in r.json()["error"]["message"]


@pytest.mark.parametrize("url", LINK_LOCAL)
def test_link_local_and_metadata_addresses_are_refused(client, url):
    r = client.put(f"{DEPLOYMENTS}/chat", json=_spec(url))
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["code"] == "UPSTREAM_NOT_ALLOWED" and error["details"]["setting"] == "allow_link_local_upstreams"
    assert "ASTRALYX_ALLOW_LINK_LOCAL_UPSTREAMS" in error["message"]


@pytest.fixture
def link_local_allowed(monkeypatch):
    monkeypatch.setenv("ASTRALYX_ALLOW_LINK_LOCAL_UPSTREAMS", "1")


def test_the_operator_may_allow_link_local_addresses(link_local_allowed, client):
    r = client.put(f"{DEPLOYMENTS}/chat", json=_spec("http://169.254.10.20:8000/v1"))
    assert r.status_code == 200, r.text
    assert client.put(f"{DEPLOYMENTS}/chat", json=_spec("gopher://169.254.10.20/")).status_code == 422


def test_the_cli_refuses_them_too(astra):
    out = astra("eos", "deploy", "llama3.2:1b", "--name", "x", "--kind", "chat", "--url", "file:///etc/passwd", ok=False)
    assert out.exit_code != 0 and "INVALID_UPSTREAM_URL" in out.output
    out = astra("eos", "deploy", "llama3.2:1b", "--name", "x", "--kind", "chat", "--url", "http://169.254.169.254/", ok=False)
    assert out.exit_code != 0 and "UPSTREAM_NOT_ALLOWED" in out.output


def test_a_listing_calls_no_upstream_and_a_deployment_s_page_checks_it(client, scripted_openai):
    assert client.put(f"{DEPLOYMENTS}/chat", json=_spec(scripted_openai.url)).status_code == 200
    listed = {d["metadata"]["name"]: d for d in client.get(DEPLOYMENTS).json()["deployments"]}
    assert listed["chat"]["status"]["ok"] is None and "not checked yet" in listed["chat"]["status"]["detail"]
    assert listed["e5-small"]["status"]["ok"] is True  # in process: known without asking anyone
    assert scripted_openai.models_asked == 0
    status = client.get(f"{DEPLOYMENTS}/chat").json()["status"]
    assert status == {"ok": True, "detail": f"{scripted_openai.url} answers (scripted)"}
    assert scripted_openai.models_asked == 1
    for _ in range(3):
        listed = {d["metadata"]["name"]: d for d in client.get(DEPLOYMENTS).json()["deployments"]}
        assert listed["chat"]["status"]["ok"] is True and listed["chat"]["status"]["checked_at"]
    assert scripted_openai.models_asked == 1
    # asked for: ?check=true asks each upstream (or tells its check of the last 15 s)
    checked = {d["metadata"]["name"]: d for d in client.get(DEPLOYMENTS, params={"check": "true"}).json()["deployments"]}
    assert checked["chat"]["status"]["ok"] is True and scripted_openai.models_asked >= 1


def test_a_call_tells_the_listing_how_the_upstream_answered(client, scripted_openai):
    assert client.put(f"{DEPLOYMENTS}/chat", json=_spec(scripted_openai.url)).status_code == 200
    scripted_openai.reply("Hello.")
    r = client.post("/v1/chat/completions", json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200, r.text
    listed = {d["metadata"]["name"]: d for d in client.get(DEPLOYMENTS).json()["deployments"]}
    assert listed["chat"]["status"]["ok"] is True and "answered a call" in listed["chat"]["status"]["detail"]
    assert scripted_openai.models_asked == 0


@pytest.mark.parametrize("url", ["http://a\u001bb/v1", "http://169.254.169.254/v1", "file:///etc/passwd"])
def test_a_row_stored_before_the_rule_never_breaks_a_page_and_is_not_called(client, core, url):
    """The issue: a control character in a stored URL made GET /v1/eos/deployments answer 500 until deleted."""
    spec = _spec("http://127.0.0.1:9/v1")["spec"]
    assert client.put(f"{DEPLOYMENTS}/chat", json={"spec": spec}).status_code == 200
    with core.db.transaction() as conn:
        spec["runtime"]["url"] = url
        conn.execute("UPDATE deployments SET spec=? WHERE workspace='default' AND name='chat'", (json.dumps(spec),))
    core.runtimes.drop("default", "chat")
    for params in ({}, {"check": "true"}, {"health": "false"}):
        r = client.get(DEPLOYMENTS, params=params)
        assert r.status_code == 200, r.text
    status = client.get(f"{DEPLOYMENTS}/chat").json()["status"]
    assert status["ok"] is False and status["detail"].startswith("not called: runtime.url")
    r = client.post("/v1/chat/completions", json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 503 and r.json()["error"]["code"] == "DEPLOYMENT_UNAVAILABLE"
    assert "runtime.url" in r.json()["error"]["message"]
    # and it is fixed as any spec is, or deleted
    assert client.put(f"{DEPLOYMENTS}/chat", json=_spec("http://127.0.0.1:9/v1")).status_code == 200
    assert client.delete(f"{DEPLOYMENTS}/chat").status_code == 200


@settings(max_examples=500, deadline=None, derandomize=True)
@given(url=st.from_regex(URL_SCHEMA["pattern"], fullmatch=True))
def test_a_url_the_document_describes_is_taken(url):
    # The document's pattern (eos/urls.py URL_SCHEMA) is a subset of the rule: a client that follows it is not
    # refused, except for a link-local or metadata address, which the operator decides.
    try:
        assert check_upstream_url(url) == url
    except Forbidden as e:
        assert e.code == "UPSTREAM_NOT_ALLOWED" and link_local(urlsplit(url).hostname or "")


def test_the_document_says_what_a_url_may_be(client):
    schemas = client.get("/v1/openapi.json").json()["components"]["schemas"]
    for name in ("UpstreamRuntime", "DeployIn"):
        url = schemas[name]["properties"]["url"]
        assert url["pattern"] == URL_SCHEMA["pattern"] and url["maxLength"] == 2048, name
