"""Checks of a rendered report's HTML without a browser: well formed, self-contained, its embedded JSON
(a support module, no tests: test_report.py, test_report_huge.py and test_report_browser.py use it)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

FIVE_MB = 5_000_000
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Structure(HTMLParser):
    """Checks that every element is closed in order and collects what loads resources."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, int]] = []
        self.problems: list[str] = []
        self.resource_refs: list[str] = []
        self.scripts: list[dict] = []
        self.ids: list[str] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"])
        for key in ("src", "href", "srcset", "data", "poster", "action", "xlink:href"):
            value = (a.get(key) or "").strip().lower()
            if value and not value.startswith(("#", "data:")):
                self.resource_refs.append(f"<{tag} {key}={value[:80]}>")
        if tag == "link":
            self.resource_refs.append(f"<link {a}>")
        if tag == "script":
            self._in_script = {"attrs": a, "text": ""}
        if tag not in VOID:
            self.stack.append((tag, self.getpos()[0]))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.problems.append(f"line {self.getpos()[0]}: </{tag}> closes {self.stack[-1] if self.stack else None}")
            return
        self.stack.pop()
        if tag == "script" and self._in_script is not None:
            self.scripts.append(self._in_script)
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self._in_script["text"] += data


def structure(html: str) -> Structure:
    parser = Structure()
    parser.feed(html)
    parser.close()
    return parser


def embedded(html: str, element_id: str) -> dict:
    parsed = structure(html)
    [script] = [s for s in parsed.scripts if s["attrs"].get("id") == element_id]
    assert script["attrs"].get("type") == "application/json"
    return json.loads(script["text"])


def assert_self_contained(html: str) -> None:
    parsed = structure(html)
    assert not parsed.problems, parsed.problems[:5]
    assert not parsed.stack, parsed.stack[:5]
    assert not parsed.resource_refs, parsed.resource_refs[:5]
    assert len(parsed.ids) == len(set(parsed.ids)), "duplicate element ids"
    css = "".join(re.findall(r"<style>(.*?)</style>", html, re.S))
    assert "@import" not in css and not re.search(r"url\(\s*['\"]?(https?:)?//", css)
    assert "@font-face" not in css
    assert 'http-equiv="Content-Security-Policy"' in html and "default-src 'none'" in html
    kinds = sorted(s["attrs"].get("type", "script") for s in parsed.scripts)
    assert kinds == ["application/json", "application/json", "script"], kinds  # one inline script, no src
