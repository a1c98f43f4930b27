"""A client that ignores proxy variables and reads only $OPENAI_BASE_URL (for tests/proxy_addons/test_base_url.py)."""

from __future__ import annotations

import json
import os
import urllib.request

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # HTTPS_PROXY ignored
body = {"model": "gpt-test", "messages": [{"role": "user", "content": "say hi"}]}
for _ in range(2):
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", "user-agent": "BaseUrlBot/1.0"})
    with opener.open(request, timeout=60) as reply:
        print(json.loads(reply.read())["choices"][0]["message"]["content"])
