"""The scripted server's implicit (OpenAI-style) cache reads in 128-token steps, as OpenAI's does."""

from __future__ import annotations

import json

from ctxtap.modelserver import ModelServer
from ctxtap.modelserver.cache import OPENAI_CACHE_STEP_TOKENS, PromptCache
from ctxtap.modelserver.client import HttpClient
from ctxtap.modelserver.prefix import Prefix


def test_reads_are_whole_steps_of_128_tokens():
    cache = PromptCache(min_tokens=1024, bytes_per_token=4.0, clock=lambda: 0.0)
    first = Prefix(b"a" * 4 * 1100)  # 1100 tokens
    assert cache.apply("k", first, explicit=False, block_tokens=128).read == 0
    grown = Prefix(first.data + b"b" * 4 * 300)
    assert cache.apply("k", grown, explicit=False, block_tokens=128).read == 1024  # 1100 rounded down to a step
    again = Prefix(grown.data + b"c" * 40)
    read = cache.apply("k", again, explicit=False, block_tokens=128).read
    assert read == 1280 and read % OPENAI_CACHE_STEP_TOKENS == 0  # 1400 shared tokens -> 10 steps
    assert cache.apply("k", Prefix(grown.data + b"d"), explicit=False).read == 1400  # without steps: token exact


def test_the_server_reads_the_responses_cache_in_steps():
    with ModelServer() as server:
        client = HttpClient(server.url, timeout=30)
        text = "word " * 1500
        reads = []
        for extra in ("", " more" * 50):
            body = {"model": "gpt-5", "prompt_cache_key": "s1", "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text + extra}]}]}
            resp = client.request("POST", "/v1/responses", json.dumps(body).encode(),
                                  [("content-type", "application/json")])
            reads.append(json.loads(resp.body())["usage"]["input_tokens_details"]["cached_tokens"])
        client.close()
    assert reads[0] == 0 and reads[1] > 0 and reads[1] % OPENAI_CACHE_STEP_TOKENS == 0
