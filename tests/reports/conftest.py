"""The report folder's fixtures: one headless Chromium per module for the browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.reports.browser_support import ARGS, CHROMIUM


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (Debian: apt-get install chromium); "
                    "report browser tests skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()
