"""A `.env` file with a key and a password, carried base64-encoded in the shapes model APIs attach files in,
and everything `base64 -d` reads out of a stored body (a support module, no tests: the base64 redaction
tests and the proxy's redaction test use it)."""

from __future__ import annotations

import base64
import re

KEY = "sk-proj-" + "Tq4x" * 12
PASSWORD = "Vault-Pass-8842-qz"
DOC = (f"# settings\nOPENAI_API_KEY={KEY}\nDEBUG=1\nDB_PASSWORD={PASSWORD}\n" + "retries = 3\n" * 40).encode()


def _carriers(encoded: str) -> dict[str, dict]:
    """The shapes model APIs carry a file in."""
    return {
        "anthropic document": {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": [
            {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": encoded}}]}]},
        "openai input_file": {"model": "gpt-5", "input": [{"role": "user", "content": [
            {"type": "input_file", "filename": "settings.env", "file_data": f"data:text/plain;base64,{encoded}"}]}]},
        "gemini inlineData": {"contents": [{"role": "user", "parts": [
            {"inlineData": {"mimeType": "text/plain", "data": encoded}}]}]},
    }


def _readable(stored: bytes) -> bytes:
    """Everything `base64 -d` gets out of the stored body: each run between placeholders, read from
    each of its four possible alignments, in either alphabet."""
    out = [stored]
    for piece in re.split(rb"\[REDACTED:[^\]]*\]", stored):
        for run in re.findall(rb"[A-Za-z0-9+/_\-]{8,}", piece):
            run = run.replace(b"-", b"+").replace(b"_", b"/")
            for skip in range(4):
                chars = run[skip:]
                chars = chars[: len(chars) - len(chars) % 4]
                try:
                    out.append(base64.b64decode(chars))
                except ValueError:
                    pass
    return b"\n".join(out)
