"""The scripted shell call takes the shape of the shell tool each client offers."""

from __future__ import annotations

from ctxtap.modelserver.conversation import ToolSpec
from ctxtap.modelserver.script import ScriptedCall
from ctxtap.modelserver.tools import shape_call

STRING = {"type": "string"}


def test_a_shell_tool_that_takes_a_list_of_commands_is_chosen_over_the_first_tool() -> None:
    tools = [ToolSpec("web_search", schema={"type": "object", "properties": {"query": STRING}}),
             ToolSpec("run_commands", schema={"type": "object", "properties": {
                 "commands": {"type": "array", "items": STRING}}})]
    shaped = shape_call(ScriptedCall(command="ls"), tools)
    assert (shaped.name, shaped.arguments) == ("run_commands", {"commands": ["ls"]})


def test_the_common_shapes_still_hold() -> None:
    bash = ToolSpec("Bash", schema={"type": "object", "properties": {"command": STRING, "description": STRING}})
    assert shape_call(ScriptedCall(command="pwd"), [bash]).arguments == {"command": "pwd", "description": "Run pwd"}
    codex = ToolSpec("exec_command", schema={"type": "object", "properties": {"cmd": STRING}})
    assert shape_call(ScriptedCall(command="pwd"), [codex]).arguments == {"cmd": "pwd"}
