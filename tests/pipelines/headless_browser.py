"""Debian's Chromium, headless and network-free, driven over the DevTools protocol: opens a
page, waits until its text (shadow DOM included) holds what a test expects, and takes a
screenshot. Used by the dashboard tests; the page may reach 127.0.0.1 only."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from .cli_helpers import closed_loopback_port

CHROMIUM = Path("/usr/bin/chromium")
# no host but 127.0.0.1 resolves, and Chromium's own background traffic is off
NETWORK_FREE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)
# the visible text of the page, shadow roots included (marimo renders tables in them)
PAGE_TEXT = """(function text(node) {
  let found = '';
  if (node.shadowRoot) found += text(node.shadowRoot);
  for (const child of node.childNodes) {
    if (child.nodeType === 3) found += child.textContent + ' ';
    else if (!['STYLE', 'SCRIPT', 'TEMPLATE'].includes(child.tagName)) found += text(child);
  }
  return found;
})(document.body)"""


def page_text_and_screenshot(
    url: str, expected: Sequence[str], screenshot: Path, profile: Path, timeout: float = 300
) -> str:
    """Opens `url`, waits until the page's text holds every string of `expected` (or the
    timeout), saves a PNG screenshot and returns the text (whitespace collapsed)."""
    with browser_page(profile) as page:
        page.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = " ".join(str(page.evaluate(PAGE_TEXT)).split())
            if all(word in text for word in expected):
                break
            time.sleep(1)
        page.screenshot(screenshot)
        return text


@contextmanager
def browser_page(profile: Path, window: str = "1400,1800") -> Iterator[_Session]:
    """Headless, network-free Chromium with one page, driven by the yielded session; the
    browser is stopped by its own handle on the way out. Its singleton socket goes into a
    temporary folder of its own, removed after it, as a stopped Chromium leaves it behind."""
    port = closed_loopback_port()
    scratch = tempfile.TemporaryDirectory(prefix="chromium-")
    browser = subprocess.Popen(
        [
            str(CHROMIUM),
            *NETWORK_FREE_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={window}",
            f"--remote-debugging-port={port}",
            "--remote-allow-origins=*",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": scratch.name},
    )
    try:
        with connect(_page_socket(port), max_size=50_000_000) as socket:
            yield _Session(socket)
    finally:
        browser.terminate()
        browser.wait(timeout=30)
        scratch.cleanup()


def _page_socket(port: int) -> str:
    deadline = time.monotonic() + 300  # a bound for a browser that never answers, not a pace
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=30) as answer:
                tabs = json.load(answer)
            return str(next(tab for tab in tabs if tab["type"] == "page")["webSocketDebuggerUrl"])
        except (OSError, StopIteration, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class _Session:
    """One DevTools connection: numbered calls, answers matched by id; the events that arrive
    meanwhile are kept (`events`), e.g. every `Network.requestWillBeSent` once the Network
    domain is enabled."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.last_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.last_id += 1
        self.socket.send(json.dumps({"id": self.last_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.last_id:
                return dict(message.get("result") or {})
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression)["result"].get("value", "")

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def requested_urls(self) -> list[str]:
        """Every URL the page asked for since `Network.enable`, in order."""
        return [
            str(event["params"]["request"]["url"])
            for event in self.events
            if event.get("method") == "Network.requestWillBeSent"
        ]
