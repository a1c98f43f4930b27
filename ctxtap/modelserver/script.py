"""What the fake model answers, step by step.

A script is data, not code, so tests, benchmarks and the demo can describe a
multi-step tool loop (including parallel, repeated and failing calls) and load
it from JSON. The engine picks the step from the conversation it receives, so
the same script drives any client and any wire format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator


class ScriptedCall(BaseModel):
    """One shell-like call. The engine shapes it to the tool the client offers."""

    command: str
    description: str | None = None
    # Force a tool name / raw arguments instead of shaping to the offered shell tool.
    tool: str | None = None
    arguments: dict[str, Any] | None = None


class Step(BaseModel):
    """Either a set of (parallel) tool calls, optionally with preamble text, or final text."""

    calls: list[ScriptedCall] = Field(default_factory=list)
    text: str | None = None
    # Big-stream knobs (throughput benchmarks): N text deltas of M bytes each.
    events: int | None = None
    event_bytes: int = 64

    @field_validator("calls", mode="before")
    @classmethod
    def _strings_are_commands(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"command": v} if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> Step:
        if not self.calls and self.text is None and not self.events:
            raise ValueError("a step needs calls, text or events")
        return self

    @property
    def is_final(self) -> bool:
        return not self.calls


class Script(BaseModel):
    """Ordered steps of one user turn; past the end the model answers `final_text`."""

    steps: list[Step]
    final_text: str = "Done."

    @field_validator("steps")
    @classmethod
    def _has_steps(cls, value: list[Step]) -> list[Step]:
        if not value:
            raise ValueError("a script needs at least one step")
        return value

    def step_for(self, results_so_far: int) -> tuple[int, Step]:
        """The step to play given how many tool results the current turn already holds.

        Step k is due once the results of all calls of steps < k are back, so a
        parallel step of two calls advances the script by two results.
        """
        done = 0
        for index, step in enumerate(self.steps):
            if step.is_final or results_so_far < done + len(step.calls):
                return index, step
            done += len(step.calls)
        return len(self.steps), Step(text=self.final_text)

    @classmethod
    def load(cls, source: str | Path) -> Script:
        """A builtin name ("basic", "long", "quirks"), a JSON file path, or JSON text."""
        text = str(source)
        if text in BUILTIN_SCRIPTS:
            return BUILTIN_SCRIPTS[text].model_copy(deep=True)
        path = Path(text)
        if not text.lstrip().startswith(("{", "[")) and path.exists():
            text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        if isinstance(data, list):
            data = {"steps": data}
        return cls.model_validate(data)


def _desc(cmd: str) -> str:
    return f"Run {cmd} (read-only)"


BUILTIN_SCRIPTS: dict[str, Script] = {
    # The "basic" scenario of the real-client recordings: two parallel calls, then text.
    "basic": Script(
        steps=[
            Step(
                text="I'll list the directory.",
                calls=[ScriptedCall(command="pwd", description=_desc("pwd")), ScriptedCall(command="ls", description=_desc("ls"))],
            ),
            Step(text="I listed the first level of the current directory: see the tool output above. No files were modified."),
        ]
    ),
    # The "long" scenario: six steps that pull file contents into the context.
    "long": Script(
        steps=[
            Step(calls=[ScriptedCall(command="pwd"), ScriptedCall(command="ls")]),
            Step(calls=[ScriptedCall(command="cat README.md")]),
            Step(calls=[ScriptedCall(command="cat config/settings.env")]),
            Step(calls=[ScriptedCall(command="wc -l data.csv")]),
            Step(calls=[ScriptedCall(command="ls src docs")]),
            Step(text="This is a small Python project: README.md, data.csv, config/, src/ and docs/. Nothing was changed."),
        ]
    ),
    # Loop quirks an analyzer must survive: a repeated identical call and a failing call.
    "quirks": Script(
        steps=[
            Step(calls=[ScriptedCall(command="ls")]),
            Step(calls=[ScriptedCall(command="ls")]),
            Step(calls=[ScriptedCall(command="cat missing.txt")]),
            Step(text="The file missing.txt does not exist; the listing is above."),
        ]
    ),
}

DEFAULT_SCRIPT = "basic"
