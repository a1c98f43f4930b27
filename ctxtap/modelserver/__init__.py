"""A scripted fake model provider on loopback, for tests, benchmarks and `ctxtap demo`.

Speaks Anthropic Messages, OpenAI Responses (HTTP and the Codex WebSocket
transport), Chat Completions and Gemini; plays multi-step tool loops from a
script; simulates prompt caching so usage numbers move like real ones; injects
provider-shaped errors; records everything it received.

    with ModelServer(script="long") as srv:
        ...  # point a client at srv.url
        srv.exchanges[-1].usage
"""

from __future__ import annotations

from .cache import CacheResult, PromptCache
from .engine import Engine
from .faults import INJECT_HEADER, Fault
from .records import Received, Sent
from .reply import Answer, Event, Reply, ServedExchange
from .script import BUILTIN_SCRIPTS, Script, ScriptedCall, Step
from .server import ModelServer

__all__ = [
    "BUILTIN_SCRIPTS",
    "INJECT_HEADER",
    "Answer",
    "CacheResult",
    "Engine",
    "Event",
    "ServedExchange",
    "Fault",
    "ModelServer",
    "PromptCache",
    "Received",
    "Reply",
    "Script",
    "Sent",
    "Step",
    "ScriptedCall",
]
