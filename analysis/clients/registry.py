"""The client registry: each client's rules in one place, found on first use.

A module in this package defines `CLIENT = Client(...)`, and a TOML profile beside
them (`analysis.clients.profiles`) defines one as data; a user's own profiles are
loaded too and replace a built-in of the same name. `clients()` lists them in
`order`. The engines ask `clients(disabled)` for the enabled ones, so a run
can switch one client's rules off (e.g. to see what the client-independent
rules make of its traffic). `register` / `unregister` add clients defined
elsewhere (tests, plugins).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
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
_builtin: dict[str, Client] = {}  # what the user's profiles replaced, to put back when they go
_user: dict[str, tuple[Path, int, int]] = {}  # name -> the user profile file it came from (path, mtime, size)
_version = 0  # bumped on every change, so engines can cache what they build from the clients
USER_CHECK_S = 1.0  # how often the user's profile folder is looked at again
_checked = -USER_CHECK_S


def _add_builtin(module: ModuleType) -> None:
    client = getattr(module, "CLIENT", None)
    if isinstance(client, Client) and client.name not in _registered:
        _registered[client.name] = client


_load_modules = BuiltinModules("ctxtap.analysis.clients", _add_builtin).load
_profiles_loaded = False


def _load_builtins() -> None:
    """The built-in client modules and profiles, once; the user's profiles whenever their files change."""
    global _profiles_loaded
    _load_modules()
    if not _profiles_loaded:
        from ctxtap.analysis.clients import profiles

        for path in profiles.builtin_files():
            client = profiles.load_file(path)
            _registered.setdefault(client.name, client)
        _profiles_loaded = True
    _refresh_user_profiles()


def _refresh_user_profiles() -> None:
    """Load the user's profiles (`~/.config/ctxtap/clients/*.toml`) when the folder's files changed: each
    replaces a built-in client of the same name; a removed file puts the built-in back."""
    global _checked, _version
    now = time.monotonic()
    if now - _checked < USER_CHECK_S:
        return
    _checked = now
    from ctxtap.analysis.clients import profiles

    files = {}
    for path in profiles.user_files():
        st = path.stat()
        files[path] = (path, st.st_mtime_ns, st.st_size)
    if sorted(files.values()) == sorted(_user.values()):
        return
    for name in list(_user):
        del _registered[name]
        if name in _builtin:
            _registered[name] = _builtin.pop(name)
    _user.clear()
    try:
        for path, signature in files.items():
            client = profiles.load_file(path)
            if client.name in _registered and client.name not in _builtin:
                _builtin[client.name] = _registered[client.name]
            _registered[client.name] = client
            _user[client.name] = signature
    finally:
        _version += 1


def user_profile_names() -> dict[str, Path]:
    """The clients a user profile defines, and the file each comes from."""
    _load_builtins()
    return {name: sig[0] for name, sig in _user.items()}


def reload_user_profiles() -> None:
    """Look at the user's profile folder now (a test or a command that just wrote a profile)."""
    global _checked
    _checked = -USER_CHECK_S
    _load_builtins()


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
