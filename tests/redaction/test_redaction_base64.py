"""Files attached to a model call as base64: a key in a text file must not survive `base64 -d`."""

from __future__ import annotations

import base64
import json
import os

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.base64_runs import base64_runs
from tests.redaction.base64_files import DOC, KEY, PASSWORD, _carriers, _readable


@pytest.mark.parametrize("shape", list(_carriers("")))
@pytest.mark.parametrize("urlsafe", [False, True])
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_a_key_in_an_attached_text_file_is_removed(shape, urlsafe, offset):
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    encoded = encode(b"#" * offset + DOC).decode()
    body = json.dumps(_carriers(encoded)[shape]).encode()
    redactor = Redactor(b"k" * 32, "b64")
    stored = redactor.redact_bytes(body)
    readable = _readable(stored)
    assert KEY.encode() not in readable and PASSWORD.encode() not in readable
    assert stored.count(b"[REDACTED:") >= 2 and redactor.redact_bytes(stored) == stored
    json.loads(stored)  # still JSON
    assert b"retries = 3\nretries = 3" in readable  # the rest of the file still reads


def test_text_without_secrets_and_binary_files_are_left_as_they_are():
    redactor = Redactor(b"k" * 32, "b64")
    clean = base64.b64encode(b"hello world, nothing secret here\n" * 40).decode()
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(20_000)).decode()
    for encoded in (clean, png):
        for body in _carriers(encoded).values():
            raw = json.dumps(body).encode()
            assert redactor.redact_bytes(raw) == raw


def test_runs_are_found_whole_with_their_padding_and_short_ones_are_not():
    data = b'x "' + b"QUJD" * 20 + b'==" y ' + b"a" * 63 + b" " + b"ab-_" * 16 + b"="
    assert base64_runs(data) == [(3, 3 + 82), (3 + 82 + 4 + 63 + 1, len(data))]
