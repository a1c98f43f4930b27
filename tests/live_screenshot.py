"""The README's screenshot of the live view: `make screenshot-live` (never run by the test suite).

Records the scripted agent with `ctxtap record --live` against the scripted model server on
loopback, opens its session page in headless Chromium while the agent runs, and saves the
picture. Usage: python tests/live_screenshot.py OUT.png
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHROMIUM = "/usr/bin/chromium"


def main() -> int:
    from playwright.sync_api import expect, sync_playwright

    from ctxtap.modelserver import ModelServer
    from tests.livescenario import record_live

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/live-view.png").resolve()
    with tempfile.TemporaryDirectory() as tmp_s, ModelServer(script="long", chunk_delay_s=0.02) as server, \
            sync_playwright() as p:
        tmp = Path(tmp_s)
        config = tmp / "config"
        os.environ["CTXTAP_CONFIG_DIR"] = str(config)
        rec = record_live(tmp, config, server.url, turns=3, tool_s=0.4)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(rec.url)
            page.goto(rec.base + "/c/0")
            rec.start_agent()
            page.wait_for_selector("#sessions .vrow", timeout=60_000)
            page.click("#sessions .vrow >> nth=0")
            deadline = time.monotonic() + 120
            while rec.agent_done() is None and time.monotonic() < deadline:
                page.wait_for_timeout(200)
            done = rec.agent_done()
            expect(page.locator("#session-cards [data-field=n_requests]")).to_have_text(str(done), timeout=60_000)
            expect(page.locator(".vcount")).to_contain_text(f"{done} requests", timeout=60_000)
            page.wait_for_selector(".charts svg")
            page.wait_for_timeout(500)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), clip={"x": 0, "y": 0, "width": 1400, "height": 1000})
        finally:
            browser.close()
            rec.finish()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
