"""A tiny agent that runs the scripted model server's tool calls in a real shell (tests of effects and gates).

It speaks Anthropic Messages through HTTPS_PROXY (so `ctxtap record --route` sends it to the scripted
server), offers two tools (Bash, Read), runs each Bash command with /bin/sh in its working directory,
answers any other tool with an error, and stops at the model's final text. Standard library only.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.request
from typing import Any

TOOLS = [
    {"name": "Bash", "description": "Run a shell command.",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "Read", "description": "Read a file.",
     "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                      "required": ["file_path"], "additionalProperties": False}},
]


def _post(body: dict[str, Any]) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    req = urllib.request.Request("https://api.anthropic.com/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "anthropic-version": "2023-06-01",
                                          "x-api-key": "test-key", "user-agent": "shell-agent/1.0"})
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))
    with opener.open(req, timeout=60) as resp:
        return json.loads(resp.read())


def _run(block: dict[str, Any]) -> tuple[str, bool]:
    args = block.get("input") or {}
    if block["name"] == "Bash" and isinstance(args.get("command"), str):
        done = subprocess.run(["/bin/sh", "-c", args["command"]], capture_output=True, text=True, timeout=60)
        return (done.stdout + done.stderr)[-4000:] or f"(exit {done.returncode})", done.returncode != 0
    if block["name"] == "Read" and isinstance(args.get("file_path"), str):
        try:
            with open(args["file_path"]) as fh:
                return fh.read()[:4000], False
        except OSError as exc:
            return str(exc), True
    return f"Error: tool {block['name']} is not available or its input is invalid", True


def main() -> int:
    messages: list[dict[str, Any]] = [{"role": "user", "content": sys.argv[1] if len(sys.argv) > 1 else "go"}]
    for _ in range(8):
        reply = _post({"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": TOOLS, "messages": messages})
        messages.append({"role": "assistant", "content": reply["content"]})
        calls = [b for b in reply["content"] if b.get("type") == "tool_use"]
        if not calls:
            return 0
        results = []
        for block in calls:
            text, is_error = _run(block)
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": text,
                            "is_error": is_error})
        messages.append({"role": "user", "content": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
