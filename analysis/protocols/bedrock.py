"""Anthropic Messages on Amazon Bedrock (`InvokeModel`, `InvokeModelWithResponseStream`).

Claude Code with `CLAUDE_CODE_USE_BEDROCK=1`, and any agent using the
Anthropic Bedrock SDK, sends the Messages body to
`/model/<model id>/invoke[-with-response-stream]` with the model named in the
path (the body has `anthropic_version` instead of `model`), and a streamed answer
comes back as AWS event-stream frames, each holding one Messages event as base64
(`{"bytes": "..."}`). The body is read by the Messages parser; the frames are
turned back into the SSE events they carry, so a stream is reassembled exactly
as Anthropic's own, mid-stream exceptions included.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import unquote

from ctxtap.analysis.parsing.models import ParsedResponse
from ctxtap.analysis.protocols.anthropic import AnthropicMessages
from ctxtap.analysis.protocols.anthropic import parse_response as parse_messages_response
from ctxtap.analysis.protocols.common import RequestDraft
from ctxtap.analysis.protocols.registry import Endpoint, RequestContext
from ctxtap.wire.eventstream import looks_like_eventstream, read_messages

# An Anthropic model id, a cross-region inference profile (`us.anthropic.…`) or either URL-encoded.
_PATH = re.compile(r"/model/(?P<model>[^/]*anthropic\.claude[^/]*)/invoke(?:-with-response-stream)?$")


class BedrockMessages(AnthropicMessages):
    api = "bedrock-messages"
    title = "Anthropic Messages on Amazon Bedrock"
    order = 12
    endpoints = (Endpoint(_PATH, "generate"),)

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        draft = super().parse_request(body, ctx)
        if draft.model is None:
            m = _PATH.search(ctx.path.split("?", 1)[0])
            draft.model = unquote(m.group("model")) if m else None
        return draft

    def parse_response(self, raw: bytes, sse: bool, endpoint: str) -> ParsedResponse:
        if not looks_like_eventstream(raw):
            return parse_messages_response(raw, sse, endpoint)
        events, complete = eventstream_as_sse(raw)
        response = parse_messages_response(events, True, endpoint)
        if not complete:
            note = "the event stream ends inside a frame, or a frame does not hold a Messages event"
            response.parse_error = f"{response.parse_error}; {note}" if response.parse_error else note
            if response.parse_status == "ok":
                response.parse_status = "partial"
        return response


def eventstream_as_sse(raw: bytes) -> tuple[bytes, bool]:
    """The Messages events the frames carry, as the SSE body Anthropic would have sent, and
    whether every frame was read. An exception frame becomes an `error` event."""
    messages, complete = read_messages(raw)
    out = []
    for message in messages:
        kind = message.headers.get(":message-type", "event")
        if kind == "exception" or kind == "error":
            try:
                detail = json.loads(message.payload)
            except ValueError:
                detail = {}
            error = {"type": (message.headers.get(":exception-type") or message.headers.get(":error-code")
                              or message.headers.get(":event-type") or kind),
                     "message": detail.get("message") if isinstance(detail, dict) else None}
            out.append(b"event: error\ndata: " + json.dumps({"type": "error", "error": error}).encode() + b"\n\n")
            continue
        try:
            event = base64.b64decode(json.loads(message.payload)["bytes"], validate=True)
        except (ValueError, KeyError, TypeError, binascii.Error):
            complete = False  # not a Messages event: counted as a stream that did not read whole
            continue
        out.append(b"data: " + event.replace(b"\n", b" ") + b"\n\n")
    return b"".join(out), complete


PROTOCOL = BedrockMessages()
