"""Ordinary content, class by class: what agents send all day and redaction must leave alone (source code,
git SHAs, UUIDs, base64 images, lockfile hashes, provider ids, thinking signatures, ...), built from real
material or generated the way the real thing is (a support module, no tests: test_redaction_ordinary.py
counts the lines redaction alters; benchmarks/bench_secret_engines.py and bench_token_detector.py count
false positives on the same classes)."""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import random
import string
import struct
import uuid
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALNUM = string.ascii_letters + string.digits


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# --- the classes ----------------------------------------------------------------------------


def source_code() -> list[str]:
    """This repository's own modules (not tests: they hold fake secrets on purpose) and stdlib modules."""
    texts = []
    for package in ("ctxtap", "analysis", "reports", "proxy_addons", "redaction", "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            texts.append(path.read_text("utf-8"))
    import importlib

    for name in ("argparse", "asyncio.base_events", "email.message", "http.client", "json.decoder", "logging",
                 "pathlib", "shutil", "subprocess", "tarfile", "typing", "unittest.mock", "urllib.parse", "zipfile"):  # fmt: skip
        module = importlib.import_module(name)
        texts.append(inspect.getsource(module))
    return texts


def git_shas(rng: random.Random, n: int = 3000) -> list[str]:
    lines = []
    for i in range(n):
        sha = hashlib.sha1(rng.randbytes(20)).hexdigest()
        lines.append(
            [
                f"commit {sha}",
                f"{sha[:7]} Fix the parser for chunked bodies (#{i})",
                f'    "sha": "{sha}",',
                f"{sha} refs/heads/feature-{i}",
                f"index {sha[:12]}..{sha[12:24]} 100644",
                f"Merge: {sha[:9]} {sha[20:29]}",
            ][i % 6]
        )
    return ["\n".join(lines)]


def uuids(rng: random.Random, n: int = 3000) -> list[str]:
    lines = []
    for i in range(n):
        u = str(uuid.UUID(bytes=rng.randbytes(16), version=4))
        lines.append(
            [
                f'  "session_id": "{u}",',
                f'  "prompt_cache_key": "{u}",',
                f"x-client-request-id: {u}",
                f'  "idempotency_key": "{u}",',
                f'{{"type": "tool_use", "id": "{u}", "name": "Bash"}}',
                f"  installation_id = {u}",
            ][i % 6]
        )
    return ["\n".join(lines)]


def _png(rng: random.Random, width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def base64_images(rng: random.Random, n: int = 1200) -> list[str]:
    lines = []
    for i in range(n):
        data = base64.b64encode(_png(rng, rng.randint(8, 40), rng.randint(8, 40))).decode()
        if i % 2:
            lines.append(json.dumps({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}))
        else:
            lines.append(f'<img src="data:image/png;base64,{data}">')
    return ["\n".join(lines)]


def lockfile_hashes(rng: random.Random, n: int = 3000) -> list[str]:
    lines = []
    for i in range(n):
        name = _r(rng, string.ascii_lowercase + "-", rng.randint(3, 14))
        sha512 = base64.b64encode(rng.randbytes(64)).decode()
        sha1 = hashlib.sha1(rng.randbytes(8)).hexdigest()
        lines.append(
            [
                f'      "integrity": "sha512-{sha512}",',
                f'      "resolved": "https://registry.npmjs.org/{name}/-/{name}-1.{i % 9}.0.tgz",',
                f"  integrity sha512-{sha512}",
                f"  resolution: {{integrity: sha512-{sha512}}}",
                f'  resolved "https://registry.yarnpkg.com/{name}/-/{name}-2.0.{i % 7}.tgz#{sha1}"',
                f'{name} = {{version = "1.0", hash = "sha256:{hashlib.sha256(rng.randbytes(8)).hexdigest()}"}}',
            ][i % 6]
        )
    return ["\n".join(lines)]


def provider_ids(rng: random.Random, n: int = 3000) -> list[str]:
    lines = []
    for i in range(n):
        b58 = _r(rng, "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 24)
        hx = _r(rng, "0123456789abcdef", 48)
        lines.append(
            [
                f'{{"id": "msg_01{b58}", "type": "message", "role": "assistant"}}',
                f'{{"type": "tool_result", "tool_use_id": "toolu_01{b58}", "content": "ok"}}',
                f'{{"previous_response_id": "resp_{hx}"}}',
                f'{{"type": "function_call", "call_id": "call_{_r(rng, ALNUM, 24)}", "name": "shell"}}',
                f'{{"id": "chatcmpl-{_r(rng, ALNUM, 29)}", "object": "chat.completion"}}',
                f"request-id: req_011C{b58}",
                f'{{"id": "fc_{hx}", "type": "function_call"}}',
                f'{{"id": "rs_{hx}", "type": "reasoning"}}',
                f'{{"id": "gen-{rng.randint(10**9, 10**10)}-{_r(rng, ALNUM, 20)}"}}',
                f'{{"file_id": "file-{_r(rng, ALNUM, 22)}"}}',
            ][i % 10]
        )
    return ["\n".join(lines)]


def thinking_signatures(rng: random.Random, n: int = 1500) -> list[str]:
    lines = []
    for i in range(n):
        sig = base64.b64encode(rng.randbytes(rng.randint(180, 900))).decode()
        fernet = base64.urlsafe_b64encode(b"\x80" + rng.randbytes(rng.randint(200, 800))).decode()
        lines.append(
            [
                json.dumps({"type": "thinking", "thinking": "Let me look at the tests.", "signature": sig}),
                json.dumps({"type": "reasoning", "encrypted_content": "gAAAAA" + fernet}),
                json.dumps({"type": "redacted_thinking", "data": sig}),
            ][i % 3]
        )
    return ["\n".join(lines)]


def go_sums(rng: random.Random, n: int = 3000) -> list[str]:
    """go.sum lines: `h1:` and base64 SHA-256, module paths with versions and pseudo-versions."""
    lines = []
    for i in range(n):
        mod = f"github.com/{_r(rng, string.ascii_lowercase, 6)}/{_r(rng, string.ascii_lowercase + '-', 9)}"
        h1 = base64.b64encode(hashlib.sha256(rng.randbytes(8)).digest()).decode()
        pseudo = f"v0.0.0-2024{rng.randint(10, 12)}{rng.randint(10, 28)}{rng.randint(100000, 999999)}-{hashlib.sha1(rng.randbytes(4)).hexdigest()[:12]}"
        lines.append([f"{mod} v1.{i % 20}.{i % 7} h1:{h1}", f"{mod} v1.{i % 20}.{i % 7}/go.mod h1:{h1}",
                      f"{mod} {pseudo} h1:{h1}", f"\t{mod} {pseudo} // indirect"][i % 4])
    return ["\n".join(lines)]


def css_and_markup(rng: random.Random, n: int = 3000) -> list[str]:
    """Utility classes, CSS-module and CSS-in-JS hashed class names, BEM names, data attributes."""
    lines = []
    for i in range(n):
        h = _r(rng, ALNUM, rng.randint(5, 8))
        lines.append([
            f'<div class="flex items-center justify-between px-{i % 9} py-2 hover:bg-blue-{(i % 9 + 1) * 100} md:w-1/{i % 5 + 2}">',
            f'<button class="Button_primary__{h} Button_large__{_r(rng, ALNUM, 5)}">',
            f".css-{_r(rng, string.ascii_lowercase + string.digits, 7)}{{display:flex;-webkit-box-align:center}}",
            f'<span class="sc-{_r(rng, ALNUM, 6)} {_r(rng, ALNUM, 6)}" data-testid="card-header-{i}">',
            f".search-results__item--highlighted-{i} .search-results__item-title{{color:#{_r(rng, '0123456789abcdef', 6)}}}",
            f"  --chakra-colors-blackAlpha-{(i % 9 + 1) * 100}: rgba(0, 0, 0, 0.{i % 9});",
        ][i % 6])
    return ["\n".join(lines)]


def minified_js(rng: random.Random, n: int = 1500) -> list[str]:
    """Bundler output: mangled names, chunk file names with content hashes, source-map references."""
    lines = []
    for i in range(n):
        a, b = _r(rng, string.ascii_letters, 1), _r(rng, string.ascii_letters, 2)
        lines.append([
            f'!function(e,t){{"use strict";var {a}=t.exports,{b}=e.createElement("div");{b}.className="{a}-{i}";return {a}.apply(this,arguments)}}(this,module);',
            f'import{{a as {a},b as {b}}}from"./chunk-{_r(rng, string.ascii_uppercase + string.digits, 8)}.js";export const {b}{i}=()=>{a}({i});',
            f'<script src="/_next/static/chunks/pages/_app-{hashlib.sha1(rng.randbytes(4)).hexdigest()[:16]}.js" defer></script>',
            f"//# sourceMappingURL=main.{hashlib.md5(rng.randbytes(4)).hexdigest()[:20]}.bundle.js.map",
            f'webpackJsonp([{i}],{{"./node_modules/lodash-es/_baseGetTag.js":function(e,t,n){{n.r(t)}}}});',
        ][i % 5])
    return ["\n".join(lines)]


def paths_and_identifiers(rng: random.Random, n: int = 3000) -> list[str]:
    """File paths, snake_case, camelCase and kebab-case names as code, logs and listings hold them."""
    words = ["user", "account", "settings", "request", "handler", "config", "parser", "stream", "buffer", "token",
             "session", "manager", "factory", "provider", "context", "response", "payload", "validator", "cache"]

    def name(k: int) -> list[str]:
        return [rng.choice(words) for _ in range(k)]

    lines = []
    for i in range(n):
        w = name(rng.randint(3, 6))
        lines.append([
            f"src/{'_'.join(w[:2])}/{w[2].capitalize()}{''.join(x.capitalize() for x in w[3:])}Service.test.ts",
            f"def test_{'_'.join(w)}_{i}(self) -> None:",
            f"const {w[0]}{''.join(x.capitalize() for x in w[1:])}V{i % 4} = use{w[1].capitalize()}{w[2].capitalize()}();",
            f"/home/dev/.cache/pip/wheels/{_r(rng, '0123456789abcdef', 2)}/{'-'.join(w)}-{i % 9}.{i % 5}.0-py3-none-any.whl",
            f"node_modules/@{w[0]}/{'-'.join(w[1:])}/dist/{w[-1]}.esm-bundler.prod.js",
            f"ERROR {'.'.join(w)}.{w[0].upper()}_{w[1].upper()}_TIMEOUT_MS exceeded in {'_'.join(w)}Handler",
        ][i % 6])
    return ["\n".join(lines)]


CLASSES = {
    "source code": lambda rng: source_code(),
    "git SHAs": git_shas,
    "UUIDs": uuids,
    "base64 images": base64_images,
    "lockfile hashes": lockfile_hashes,
    "provider ids": provider_ids,
    "thinking signatures": thinking_signatures,
    "Go module sums": go_sums,
    "CSS and markup": css_and_markup,
    "minified JS": minified_js,
    "paths and identifiers": paths_and_identifiers,
}
