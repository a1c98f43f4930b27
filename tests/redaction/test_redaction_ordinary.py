"""Ordinary content stays as it was: at most 0.1 % of lines altered per content class.

Fail-closed rules (a near miss next to a credential name is redacted) must not
spill over into what agents send all day: source code, git SHAs, UUIDs,
base64 images, lockfile hashes, provider ids and thinking signatures. Each
class is built from real material (this repository's own source, the standard
library) or generated the way the real thing is (PNG files, npm integrity
hashes, Anthropic/OpenAI id shapes), placed as agents place it (raw and inside
JSON tool results), and the altered lines are counted. Run on both engines. The classes are
built in ordinary_content.py.
"""

from __future__ import annotations

import json
import random

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.engine import hyperscan_available
from tests.redaction.ordinary_content import CLASSES

pytestmark = pytest.mark.integration  # about a minute of CPU over both engines: not in `make test-fast`

MAX_ALTERED = 0.001
BACKENDS = ["hyperscan", "python"] if hyperscan_available() else ["python"]


def altered_lines(redactor: Redactor, texts: list[str], *, in_json: bool) -> tuple[int, int, list[str]]:
    """(altered, total, examples) over the lines of `texts`, placed raw or as a JSON tool result."""
    altered = total = 0
    examples: list[str] = []
    for text in texts:
        lines = text.split("\n")
        total += len(lines)
        if in_json:
            body = json.dumps({"type": "tool_result", "tool_use_id": "toolu_1", "content": text}).encode()
            out_body = redactor.redact_bytes(body)
            try:
                out_text = json.loads(out_body)["content"]
            except (ValueError, KeyError):
                altered += len(lines)
                examples.append("<JSON broken>")
                continue
        else:
            out_text = redactor.redact_text(text)
        out_lines = out_text.split("\n")
        if len(out_lines) != len(lines):
            altered += len(lines)
            examples.append("<line count changed>")
            continue
        for before, after in zip(lines, out_lines, strict=True):
            if before != after:
                altered += 1
                examples.append(after.strip()[:140])
    return altered, total, examples


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("content_class", list(CLASSES))
def test_ordinary_content_is_rarely_altered(content_class: str, backend: str) -> None:
    redactor = Redactor(b"\x05" * 32, "ordinary", backend=backend)
    texts = CLASSES[content_class](random.Random(content_class))
    for in_json in (False, True):
        altered, total, examples = altered_lines(redactor, texts, in_json=in_json)
        rate = altered / total
        print(f"{content_class:20s} {'json' if in_json else 'raw ':4s} {altered:4d}/{total:6d} lines ({rate:.3%})")
        assert total >= 1000
        assert rate <= MAX_ALTERED, examples[:10]
