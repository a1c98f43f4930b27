"""The client registry: each client's rules in one place, found on first use.

A module in this package defines `CLIENT = Client(...)`; `clients()` lists them
in `order`. The engines ask `clients(disabled)` for the enabled ones, so a run
can switch one client's rules off (e.g. to see what the client-independent
rules make of its traffic). `register` / `unregister` add clients defined
elsewhere (tests, plugins).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ctxtap.analysis.builtins import BuiltinModules
from ctxtap.analysis.clients.rules import IdentityStep, PurposeRule, Rule


@dataclass(frozen=True)
class Client:
    """Everything the analyzer knows about one client (or, for `generic`, about any client)."""

    name: str  # module-level key, e.g. "codex"; what `disabled_clients` names
    ids: frozenset[str]  # client ids as classified at record time, e.g. {"kimi-code", "kimi-cli"}
    order: int  # position among clients (generic first); ties within a rule stage follow it
    rules: tuple[Rule, ...] = ()  # attribution rules
    purposes: tuple[PurposeRule, ...] = ()
    identity: tuple[IdentityStep, ...] = ()
    title_markers: tuple[str, ...] = ()  # text that marks a title request
    side_markers: tuple[str, ...] = ()  # text that marks another structured side request
    # header-like values a client puts in the body (WebSocket frames carry no per-request headers)
    request_headers: Callable[[dict[str, Any]], list[tuple[str, str]]] | None = None


_registered: dict[str, Client] = {}
_version = 0  # bumped on every change, so engines can cache what they build from the clients


def _add_builtin(module: ModuleType) -> None:
    client = getattr(module, "CLIENT", None)
    if isinstance(client, Client) and client.name not in _registered:
        _registered[client.name] = client


_load_builtins = BuiltinModules("ctxtap.analysis.clients", _add_builtin).load


def register(client: Client) -> Client:
    """Add a client (replacing one of the same name); returns it."""
    global _version
    _load_builtins()
    _registered[client.name] = client
    _version += 1
    return client


def unregister(name: str) -> None:
    global _version
    _load_builtins()
    _registered.pop(name, None)
    _version += 1


def version() -> int:
    _load_builtins()
    return _version


def clients(disabled: Iterable[str] = ()) -> list[Client]:
    """Registered clients in order, without those named in `disabled` (by module name or client id)."""
    _load_builtins()
    off = set(disabled)
    return sorted((c for c in _registered.values() if c.name not in off and off.isdisjoint(c.ids)),
                  key=lambda c: (c.order, c.name))
