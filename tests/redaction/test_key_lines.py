"""A private key's body read without its BEGIN line (`redaction/key_lines.py`), through the whole redactor.

Bodies are drawn at random here (DER is random to the eye), in the ways an agent sees part of a key file:
lines alone, JSON-escaped in a tool result, after a Read tool's or `cat -n`'s line numbers, with CRLF, at
PEM's and OpenSSH's widths. No sixteen characters of the body may survive; what stays is text around it,
certificates with their BEGIN line, base64 of text, images, and base64 not cut at one width.
"""

from __future__ import annotations

import base64
import json
import random
import textwrap

import pytest

from ctxtap.redaction import Redactor
from tests.redaction.rule_checks import BACKENDS, KEY


@pytest.fixture(params=BACKENDS)
def redactor(request: pytest.FixtureRequest) -> Redactor:
    return Redactor(KEY, "key-lines", backend=request.param)


def _lines(seed: int, width: int = 64, n_bytes: int = 1190) -> list[str]:
    rnd = random.Random(seed)
    return textwrap.wrap(base64.b64encode(bytes(rnd.randrange(256) for _ in range(n_bytes))).decode(), width)


def _survivors(out: str, lines: list[str]) -> list[str]:
    body = "".join(lines).rstrip("=")
    return [body[i : i + 16] for i in range(0, len(body) - 16, 8) if body[i : i + 16] in out]


def _views(lines: list[str]) -> dict[str, str]:
    middle = lines[3:12]
    tail = lines[-6:]
    return {
        "alone": "\n".join(middle) + "\n",
        "tail then END": "\n".join(tail) + "\n-----END PRIVATE KEY-----\n",
        "tool result": json.dumps({"type": "tool_result", "content": "\n".join(middle) + "\n"}),
        "read tool numbers": json.dumps({"content": "".join(f"{n:6}\u2192{line}\n" for n, line in enumerate(middle, 4))},
                                        ensure_ascii=False),
        "read tool numbers, escaped": json.dumps({"content": "".join(f"{n:6}\u2192{line}\n"
                                                                    for n, line in enumerate(middle, 4))}),
        "cat -n": "".join(f"{n:6}\t{line}\n" for n, line in enumerate(middle, 4)),
        "cat -n in JSON": json.dumps({"output": "".join(f"{n:6}\t{line}\n" for n, line in enumerate(middle, 4))}),
        "grep -n": "".join(f"{n}:{line}\n" for n, line in enumerate(middle, 4)),
        "number, colon, space (opencode's read)": json.dumps({"output": "".join(f"{n}: {line}\n"
                                                                               for n, line in enumerate(middle, 4))}),
        "zero-padded number and a bar": "".join(f"{n:05d}| {line}\n" for n, line in enumerate(middle, 4)),
        "crlf": "\r\n".join(middle) + "\r\n",
        "json in json": json.dumps({"input": json.dumps({"text": "\n".join(middle)})}),
    }


@pytest.mark.parametrize("width", [64, 70])
def test_a_key_body_read_without_its_begin_line_is_redacted(redactor: Redactor, width: int) -> None:
    for seed in range(6):
        lines = _lines(seed, width)
        for view, text in _views(lines).items():
            out = redactor.redact_text(f"Here is part of the file:\n{text}and that is all.")
            assert not _survivors(out, lines), (view, seed, out[:300])
            assert out.startswith("Here is part of the file:") and out.endswith("and that is all."), view


def test_what_stays(redactor: Redactor) -> None:
    cert = _lines(40)
    bundle = "".join(f"-----BEGIN CERTIFICATE-----\n{chr(10).join(_lines(41 + k)[:9])}\n-----END CERTIFICATE-----\n"
                     for k in range(3))
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(900)).decode()
    text = base64.b64encode(("The build failed because the cache was cold; run it again. " * 12).encode()).decode()
    uneven = _lines(50)
    for kept in (
        "-----BEGIN CERTIFICATE-----\n" + "\n".join(cert[:12]) + "\n",  # a certificate in view: public
        bundle,
        "\n".join(textwrap.wrap(png, 64)) + "\n",  # an image, `openssl base64`'s width
        "\n".join(textwrap.wrap(base64.b64encode(random.Random(8).randbytes(900)).decode(), 76)) + "\n",  # MIME's
        "\n".join(textwrap.wrap(text, 64)) + "\n",  # text as base64: a text's entropy
        "\n".join([uneven[0], uneven[1][:60], uneven[2]]) + "\n",  # no encoder's wrapping
        "one line of base64: " + cert[20] + "\n",
    ):
        assert redactor.redact_text(kept) == kept, kept[:120]
