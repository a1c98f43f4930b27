"""Shape a scripted shell call to the tool the client actually offers.

Each CLI names and parameterizes its shell tool differently (Claude/Kimi
`Bash{command,description}`, Grok `bash`, Codex `shell_command`/`exec_command`
or the code-mode `exec` custom tool taking JavaScript, Gemini
`run_shell_command`, Cline `run_commands` taking a list), and a call in the wrong shape is rejected by the client.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from .conversation import ToolSpec
from .script import ScriptedCall

SHELL_TOOL_NAMES = (
    "Bash",
    "bash",
    "shell_command",
    "shell",
    "exec_command",
    "run_shell_command",
    "Shell",
    "exec",
    "local_shell",
    "run_commands",  # Cline: {"commands": [string]}, independent commands
)


@dataclass
class ShapedCall:
    """A tool call ready to render: `arguments` for functions, `input` for custom tools."""

    name: str
    kind: str  # "function" | "custom" | "local_shell"
    call_id: str
    arguments: dict[str, Any] | None = None
    input: str | None = None
    namespace: str | None = None
    command: str = ""

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments if self.arguments is not None else {}, ensure_ascii=False)


def pick_shell_tool(tools: list[ToolSpec]) -> ToolSpec | None:
    """The client's shell-like tool, else its first tool."""
    by_name = {t.name: t for t in tools}
    for name in SHELL_TOOL_NAMES:
        if name in by_name:
            return by_name[name]
    for tool in tools:
        props = (tool.schema or {}).get("properties") or {}
        if "command" in props or "cmd" in props:
            return tool
    return tools[0] if tools else None


def _code_mode_source(command: str) -> str:
    # Codex "code mode": the model writes JavaScript that calls the nested tools.
    return f"const r = await tools.exec_command({{cmd: {json.dumps(command)}}}); text(r.output ?? r);"


def _arguments_for(tool: ToolSpec, call: ScriptedCall) -> dict[str, Any]:
    props: dict[str, Any] = (tool.schema or {}).get("properties") or {}
    command = call.command
    if tool.name == "shell" or (props.get("command") or {}).get("type") == "array":
        args: dict[str, Any] = {"command": ["bash", "-lc", command]}
    elif "commands" in props and "command" not in props:
        args = {"commands": [command]}  # a list of commands, each run on its own
    elif tool.name == "exec_command" or ("cmd" in props and "command" not in props):
        args = {"cmd": command}
    elif "command" in props or not props:
        args = {"command": command}
    else:
        required = (tool.schema or {}).get("required") or list(props)
        args = {required[0]: command}
    if "description" in props and "description" not in args:
        args["description"] = call.description or f"Run {command}"
    return args


def shape_call(call: ScriptedCall, tools: list[ToolSpec]) -> ShapedCall:
    """Render one scripted call for the offered tools (the call's own tool/arguments win)."""
    by_name = {t.name: t for t in tools}
    tool = by_name.get(call.tool) if call.tool else pick_shell_tool(tools)
    if tool is None:
        tool = ToolSpec(call.tool or "Bash", "function", None)
    call_id = "call_" + uuid.uuid4().hex[:24]
    namespace = tool.namespace if tool.namespace not in (None, "functions") else None
    if tool.kind == "custom":
        source = call.arguments.get("input") if call.arguments else None
        text = source if isinstance(source, str) else (_code_mode_source(call.command) if tool.name == "exec" else call.command)
        return ShapedCall(tool.name, "custom", call_id, input=text, namespace=namespace, command=call.command)
    if tool.kind == "local_shell":
        args = {"type": "exec", "command": ["bash", "-lc", call.command], "timeout_ms": 10000}
        return ShapedCall("local_shell", "local_shell", call_id, arguments=args, command=call.command)
    args = dict(call.arguments) if call.arguments is not None else _arguments_for(tool, call)
    return ShapedCall(tool.name, "function", call_id, arguments=args, namespace=namespace, command=call.command)
