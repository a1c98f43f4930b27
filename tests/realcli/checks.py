"""What "the whole tool loop was captured and analysed" means, as functions returning problems.

Each check returns a list of human-readable problems instead of asserting, so one
failing CLI run reports everything that is wrong with it at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ctxtap.analysis.parsing.models import Block, ModelCall, ToolCall


def parse_problems(calls: list[ModelCall], client: str) -> list[str]:
    """Every model request and response parsed cleanly and is attributed to CLIENT."""
    problems = []
    for c in calls:
        where = f"call {c.call_key} ({c.api}, {c.purpose.purpose})"
        if c.request.parse_status != "ok":
            problems.append(f"{where}: request {c.request.parse_status}: {c.request.parse_error}")
        if c.response.parse_status != "ok":
            problems.append(f"{where}: response {c.response.parse_status}: {c.response.parse_error}")
        if c.response.error is not None:
            problems.append(f"{where}: error response {c.response.error}")
        if not c.request.effective_input_complete:
            problems.append(f"{where}: effective input incomplete (continuation not resolved)")
        if c.identity.client != client:
            problems.append(f"{where}: client {c.identity.client!r} (rule {c.identity.client_rule}), expected {client!r}")
    return problems


def _args(text: str) -> object:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _replayed_id(call: ToolCall, later: Iterable[ModelCall]) -> str | None:
    """The id a CLI gave a call that arrived WITHOUT a provider id, read from its replay in history.

    Gemini's functionCall carries no `id` from the (fake) API; Gemini CLI invents one and
    sends it with both the replayed functionCall and the functionResponse. The replay is
    the same name and arguments, so that is how the proposed call is recognised.
    """
    wanted = _args(call.arguments)
    for c in later:
        for b in c.request.blocks:
            if b.kind == "tool_call" and b.tool_name == call.name and b.call_id:
                replay = _args(b.text)
                args = replay.get("args", replay.get("arguments")) if isinstance(replay, dict) else None
                if args == wanted:
                    return b.call_id
    return None


def _results(calls: Iterable[ModelCall]) -> dict[str, Block]:
    return {b.call_id: b for c in calls for b in c.request.blocks if b.kind == "tool_result" and b.call_id}


def link_problems(calls: list[ModelCall], min_calls: int) -> tuple[list[str], list[Block]]:
    """Every tool call the model proposed comes back as a tool result, with the same id, in a later request.

    Returns the problems and the linked result blocks (so callers can look at what the
    CLI actually ran). Ids the parser had to synthesise (`name#n`, no id on the wire)
    are resolved through the CLI's replay of the call, see `_replayed_id`.
    """
    problems: list[str] = []
    linked: list[Block] = []
    proposed = 0
    for i, c in enumerate(calls):
        later = calls[i + 1:]
        results = _results(later)
        for tc in c.response.tool_calls:
            proposed += 1
            call_id = tc.call_id
            if call_id not in results and "#" in call_id:
                call_id = _replayed_id(tc, later) or call_id
            block = results.get(call_id)
            if block is None:
                problems.append(f"tool call {tc.name} {tc.call_id} from {c.call_key} has no result in a later "
                                f"request (result ids seen later: {sorted(results)})")
            else:
                linked.append(block)
    if proposed < min_calls:
        problems.append(f"the model proposed {proposed} tool calls, the script makes {min_calls}")
    return problems, linked


def title_problems(calls: list[ModelCall], title_model: str) -> list[str]:
    """The CLI's title side request is recorded: TITLE_MODEL, no tools, answered, besides a tool-bearing main model."""
    titles = [c for c in calls if c.request.model == title_model and c.request.n_tools == 0]
    problems = []
    if not titles:
        problems.append(f"no request to {title_model} without tools (requests: "
                        f"{[(c.request.model, c.request.n_tools) for c in calls]})")
    if not any(c.request.model != title_model and c.request.n_tools > 0 for c in calls):
        problems.append("no tool-bearing request to another model than the title model")
    problems += [f"title call {c.call_key} has no answer text" for c in titles if not c.response.text]
    return problems


def loop_problems(calls: list[ModelCall], client: str, final_text: str, scripted_calls: int,
                  title_model: str | None = None, shell_output: bool = True, finish: str | None = None) -> list[str]:
    """Everything the analysis must see in one recorded basic loop, live or imported from a fixture.

    Every call parses and is CLIENT's; every proposed tool call comes back as a result;
    the `ls` result really lists the fixture repository (unless SHELL_OUTPUT is False: a CLI whose
    shell tool loses its output in the sandbox); FINISH, the call a CLI stops on, has no result; the
    last main call answers
    FINAL_TEXT; TITLE_MODEL's title side request is there.
    """
    if len(calls) < 2:
        return [f"only {len(calls)} model calls"]
    problems = parse_problems(calls, client)
    links, results = link_problems(calls, scripted_calls)
    if finish is not None:  # the CLI stops on its finishing call: no later request carries that result
        links = [p for p in links if not p.startswith("tool call") or calls[-1].call_key not in p]
    problems += links
    if shell_output and not any("pyproject.toml" in b.text and "data.csv" in b.text for b in results):
        problems.append(f"no tool result lists the fixture repository: {[b.text[:80] for b in results]}")
    main_calls = [c for c in calls if c.purpose.purpose == "main"]
    if not main_calls or main_calls[-1].response.text != final_text:
        problems.append(f"the last main call does not answer the final text: {[c.response.text for c in main_calls]}")
    if title_model:
        problems += title_problems(calls, title_model)
    return problems


def repo_problems(before: dict[str, bytes], after: dict[str, bytes], state_dirs: tuple[str, ...]) -> list[str]:
    """The fixture repository is unchanged, except for the CLI's own state directory (grok's `.grok/`)."""
    problems = [f"modified: {p}" for p in before if p in after and after[p] != before[p]]
    problems += [f"deleted: {p}" for p in before if p not in after]
    problems += [f"added: {p}" for p in after
                 if p not in before and not any(Path(p).parts[0] == d for d in state_dirs)]
    return problems


def leaked_secrets(stored: list[tuple[str, bytes]], secrets: tuple[str, ...]) -> list[str]:
    """Where any dummy credential appears in the stored capture (must be nowhere)."""
    return [f"{secret[:12]}... in {where}" for where, data in stored for secret in secrets
            if secret.encode() in data]
