"""A HAR of one Claude Code call to the Messages API and its answer, the smallest import there is (a support
module, no tests: the CLI's failure and first-hour tests import it)."""

from __future__ import annotations

import json

HAR = {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": [{
    "startedDateTime": "2026-11-29T10:00:00.000Z", "time": 12,
    "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "httpVersion": "HTTP/1.1",
                "headers": [{"name": "content-type", "value": "application/json"},
                            {"name": "user-agent", "value": "claude-cli/2.0.0 (external, cli)"}],
                "queryString": [], "cookies": [], "headersSize": -1, "bodySize": -1,
                "postData": {"mimeType": "application/json", "text": json.dumps({
                    "model": "claude-haiku-4-5", "max_tokens": 5,
                    "messages": [{"role": "user", "content": "hi"}]})}},
    "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                 "headers": [{"name": "content-type", "value": "application/json"}], "cookies": [],
                 "content": {"size": 2, "mimeType": "application/json", "text": json.dumps({
                     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                     "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn",
                     "usage": {"input_tokens": 3, "output_tokens": 1}})},
                 "redirectURL": "", "headersSize": -1, "bodySize": -1},
    "cache": {}, "timings": {"send": 1, "wait": 10, "receive": 1}}]}}
