"""Opening a report in headless Chromium: Debian's browser and its flags, a page that records console
errors, requests and dialogs, screenshots to test-artifacts/ (a support module, no tests: the browser
tests of this folder and their `browser` fixture in conftest.py use it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import ARTIFACTS

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1300, "height": 1000}


@dataclass
class Opened:
    page: Any
    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.errors == [], self.errors
        assert self.requests == [self.url], self.requests
        assert self.dialogs == [], self.dialogs


@contextmanager
def open_report(browser: Any, path: Path) -> Iterator[Opened]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    opened = Opened(page, path.resolve().as_uri())
    page.on("console", lambda m: opened.errors.append(f"console.{m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: opened.errors.append(f"pageerror: {e}"))
    page.on("request", lambda r: opened.requests.append(r.url))
    page.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    page.goto(opened.url, wait_until="load")
    try:
        yield opened
    finally:
        context.close()


def screenshot(page: Any, name: str, full_page: bool = False) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / name
    page.screenshot(path=str(out), full_page=full_page)
    return out
