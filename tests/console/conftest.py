"""Browser tests: the real app served by uvicorn on a free port, driven by Playwright in Debian's Chromium.

Chromium comes from apt (`apt-get install chromium`), never from `playwright install`.
Screenshots of each page go to docs/console/ when ASTRALYX_SCREENSHOTS=1, else to the test's tmp dir.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from astralyx.server import create_app

from ..conftest import ADMIN_TOKEN

CHROMIUM = os.environ.get("ASTRALYX_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "console"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    core: object


@pytest.fixture
def live_server(core) -> Iterator[LiveServer]:
    """`astra serve`'s app for the test's temporary home, on 127.0.0.1 in a thread."""
    port = _free_port()
    config = uvicorn.Config(create_app(core), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the app did not start")
        time.sleep(0.01)
    yield LiveServer(f"http://127.0.0.1:{port}", core)
    server.should_exit = True
    thread.join(timeout=5)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1200, "height": 800})
    context.set_default_timeout(15_000)
    # Assertions wait as long as actions do (Playwright's own default for expect is 5 s, which a
    # model round trip on a busy 2-core machine can exceed).
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def signed_in(page):
    """A page signed in as the admin of `default`."""
    sign_in(page, ADMIN_TOKEN)
    return page


def sign_in(page, token: str) -> None:
    page.goto("/sign-in")
    page.get_by_label("API key").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/metis/knowledge-bases")


@pytest.fixture
def shot(tmp_path):
    """shot(page, "name"): a full-page PNG of what the person sees."""
    folder = DOCS if os.environ.get("ASTRALYX_SCREENSHOTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def deploy(core, name: str, kind: str, url: str = "http://127.0.0.1:9/v1", model: str | None = None):
    """An upstream deployment of workspace `default` (port 9: nothing answers, unless a scripted server's url)."""
    from astralyx.eos.deployments import parse_spec

    spec = parse_spec({"model": model or name, "kind": kind, "runtime": {"type": "upstream", "url": url}})
    return core.deployments.put(None, "default", name, spec)
