"""Responses continuations: rebuild the full input behind a `previous_response_id`.

Codex on a WebSocket sends only the items that are new since its previous
request and points at the previous response; the model still reads everything.
For each response id we keep the request's own new items, its parent id and the
response's output items (wire dicts, not blocks), so the effective input of any
continuation is: the parent's effective input + the parent's output + new items.
Each item is stored once; a continuation walks the links back to the root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class _Entry:
    previous: str | None
    items: list[Any]
    output: list[Any]
    complete: bool


class ResponsesChain:
    """Per-capture memory of Responses requests, keyed by the response id they produced."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, response_id: object) -> bool:
        return response_id in self._entries

    def record(
        self,
        response_id: str,
        previous_response_id: str | None,
        items: list[Any],
        output: list[Any],
        complete: bool = True,
    ) -> None:
        """Remember what request produced `response_id` (its new items) and what it returned."""
        self._entries[response_id] = _Entry(previous_response_id, list(items), list(output), complete)

    def resolve(self, previous_response_id: str | None) -> tuple[list[tuple[Any, str]], bool]:
        """(items, complete): the inherited input of a request continuing `previous_response_id`.

        Each item is paired with the response id whose request or output carried it.
        `complete` is False when a link in the chain is unknown (e.g. recorded
        before the capture started) — the items found are still returned.
        """
        if not previous_response_id:
            return [], True
        chain: list[tuple[str, _Entry]] = []
        seen: set[str] = set()
        current: str | None = previous_response_id
        complete = True
        while current:
            if current in seen:  # a cycle can only come from corrupt data
                complete = False
                break
            seen.add(current)
            entry = self._entries.get(current)
            if entry is None:
                complete = False
                break
            complete = complete and entry.complete
            chain.append((current, entry))
            current = entry.previous
        items: list[tuple[Any, str]] = []
        for response_id, entry in reversed(chain):
            items.extend((item, response_id) for item in entry.items)
            items.extend((item, response_id) for item in entry.output)
        return items, complete
