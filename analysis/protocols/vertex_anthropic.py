"""Anthropic Messages on Google Vertex AI (`rawPredict`, `streamRawPredict`).

Claude Code with `CLAUDE_CODE_USE_VERTEX=1`, and any agent using the Anthropic
Vertex SDK, posts the Messages body to
`…/publishers/anthropic/models/<model>:streamRawPredict` with the model named
in the path (the body has `anthropic_version` instead of `model`); the answer
is Anthropic's own SSE or JSON. Token counts go to
`…/publishers/anthropic/models/count-tokens:rawPredict`.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from ctxtap.analysis.protocols.anthropic import AnthropicMessages
from ctxtap.analysis.protocols.common import RequestDraft
from ctxtap.analysis.protocols.registry import Endpoint, RequestContext

_MODEL = re.compile(r"/publishers/anthropic/models/(?P<model>[^/:]+):(?:stream)?[rR]awPredict$")


class VertexMessages(AnthropicMessages):
    api = "vertex-messages"
    title = "Anthropic Messages on Google Vertex AI"
    order = 13
    endpoints = (
        Endpoint(re.compile(r"/publishers/anthropic/models/count-tokens:[rR]awPredict$"), "count_tokens"),
        Endpoint(_MODEL, "generate"),
    )

    def parse_request(self, body: Any, ctx: RequestContext) -> RequestDraft:
        draft = super().parse_request(body, ctx)
        if draft.model is None:
            m = _MODEL.search(ctx.path.split("?", 1)[0])
            draft.model = unquote(m.group("model")) if m and m.group("model") != "count-tokens" else None
        return draft


PROTOCOL = VertexMessages()
