"""What an upstream's URL may be: one rule wherever a runtime URL enters (a deployment's spec, whichever shell
wrote it) and wherever the server is about to call one (a row stored before the rule is refused there too).

An http(s) base URL that parses: a host (at most 253 characters), no user or password (an API key comes
from `api_key_env`), no query or fragment, no whitespace or control characters, at most 2,048 characters.
Link-local addresses (169.254.0.0/16, fe80::/10: cloud metadata services answer there) and the metadata
hostnames are refused unless the operator allows them (`allow_link_local_upstreams`,
ASTRALYX_ALLOW_LINK_LOCAL_UPSTREAMS). Loopback and private addresses stay allowed: Ollama runs there.
"""

from __future__ import annotations

import ipaddress
import socket
import unicodedata
from urllib.parse import urlsplit

from pydantic import JsonValue

from ..errors import Forbidden, Invalid

MAX_URL = 2048
MAX_HOST = 253
SETTING = "allow_link_local_upstreams"
# Instance metadata services by name (their addresses are link-local, or these).
METADATA_HOSTS = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    "metadata.azure.com", "metadata.tencentyun.com",
})
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("100.100.100.200"), ipaddress.ip_address("fd00:ec2::254")})

EXAMPLE = "e.g. http://127.0.0.1:11434/v1"

# What the API's document says of such a URL (a field's json_schema_extra). It is told, not enforced by the
# model: check_upstream_url enforces it, in words. The names and paths it describes are a subset of the taken
# ones (no IPv6 literal, no percent-encoding), so that a URL the document allows is always taken.
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
URL_SCHEMA: dict[str, JsonValue] = {
    "format": "uri", "maxLength": MAX_URL,
    "pattern": rf"^[Hh][Tt][Tt][Pp][Ss]?://{_LABEL}(?:\.{_LABEL}){{0,3}}(?::[1-9][0-9]{{0,3}})?(?:/[A-Za-z0-9._~/-]{{0,200}})?$",
}


def _bad(why: str) -> Invalid:
    return Invalid(f"runtime.url {why}: give the base URL of an OpenAI-compatible server over http or https ({EXAMPLE})",
                   code="INVALID_UPSTREAM_URL")


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The host as an IP address, in every form a resolver takes (2852039166, 0xa9.0xfe.0xa9.0xfe, 169.254.43518)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefx." for c in host.lower()):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def link_local(host: str) -> bool:
    """A link-local or metadata host (an IPv4-mapped IPv6 address counts as its IPv4 one)."""
    name = host.lower().rstrip(".")
    if name in METADATA_HOSTS:
        return True
    ip = _address(name)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip is not None and (ip.is_link_local or ip in METADATA_ADDRESSES)


def check_upstream_url(url: object, *, allow_link_local: bool = False) -> str:
    """The URL if it follows the rule above; else 422 INVALID_UPSTREAM_URL, or 403 UPSTREAM_NOT_ALLOWED for a
    link-local or metadata address the operator did not allow."""
    if not isinstance(url, str) or not url:
        raise _bad("is missing")
    if len(url) > MAX_URL:
        raise _bad(f"is longer than {MAX_URL} characters")
    if any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") for c in url):
        raise _bad("holds whitespace or a control character")
    try:
        parts = urlsplit(url)
        port = parts.port  # out of range or not a number: ValueError
    except ValueError as e:
        raise _bad(f"does not parse ({e})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise _bad(f"has the scheme {parts.scheme + ':' if parts.scheme else 'none'}; only http and https are taken")
    host = parts.hostname or ""
    if not host:
        raise _bad("has no host")
    if len(host) > MAX_HOST:
        raise _bad(f"has a host longer than {MAX_HOST} characters")
    if parts.username is not None or parts.password is not None:
        raise _bad("holds a user or password: name the environment variable holding the key in runtime.api_key_env")
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise _bad("has a query or fragment")
    if port == 0:
        raise _bad("has port 0")
    try:
        host.encode("idna")
    except UnicodeError:
        raise _bad("has a host that is not a valid name") from None
    if not allow_link_local and link_local(host):
        raise Forbidden(
            f"runtime.url points at {host}, a link-local or cloud metadata address, which this server does not call: "
            f"use the upstream's own address, or the operator allows them with {SETTING} (config.toml) or "
            "ASTRALYX_ALLOW_LINK_LOCAL_UPSTREAMS=1",
            code="UPSTREAM_NOT_ALLOWED", details={"setting": SETTING},
        )
    return url
