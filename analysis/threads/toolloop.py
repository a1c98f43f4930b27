"""The tool loop: every proposed call linked to its result, with repeats, errors and lifetime cost."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

SHELL_TOOLS = {"bash", "shell", "shell_command", "exec_command", "run_shell_command", "local_shell", "exec",
               "terminal", "run_terminal_cmd", "command"}
_COMMAND_KEYS = ("command", "cmd", "script", "commandLine")
_JS_CMD = re.compile(r"\bcmd\s*:\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')")
_DENIED = re.compile(r"permission denied by|was denied|denied by (?:the )?(?:user|policy)|user (?:denied|rejected|declined)|not allowed|"
                     r"requires approval|blocked by (?:policy|sandbox)|doesn't want to proceed|rejected by",
                     re.IGNORECASE)
# an exit status the client states in the result text (`Exit Code: 0`, `Process exited with code 1`)
_EXIT_LINE = re.compile(r"^\s*(?:exit[ _]code|exit status|process exited with code|exited with (?:code|status))"
                        r"\s*:?\s*(-?\d+)\b", re.IGNORECASE | re.MULTILINE)
# an `Error:` line that says there was none (Gemini CLI's shell tool: `Error: (none)`)
_NO_ERROR_LINE = re.compile(r"^\s*error\s*:\s*(?:\(none\)|none|null|-)?\s*$", re.IGNORECASE | re.MULTILINE)
_ERROR = re.compile(r"\bTraceback \(most recent|command not found|No such file or directory|^error:|"
                    r"\"is_error\": *true", re.IGNORECASE | re.MULTILINE)
_JSON_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "status_code")
_JSON_ERROR_KEYS = ("is_error", "isError")

_UNIT = r"(bytes?|chars?|characters|lines?|tokens?)"
_N = r"(\d[\d,]*)"
_ELL = r"(?:\.\.\.|\u2026)"
# (rule id, pattern): what clients write where they cut a result. Groups: omitted, total, unit.
_TRUNCATION: list[tuple[str, re.Pattern[str]]] = [
    ("truncation.omitted-of", re.compile(rf"\[\s*{_ELL}?\s*omitted\s+{_N}\s+of\s+{_N}\s+{_UNIT}\s*{_ELL}?\s*\]",
                                         re.IGNORECASE)),
    ("truncation.n-omitted", re.compile(rf"[\[(<]\s*{_ELL}?\s*{_N}\s+(?:more\s+)?{_UNIT}\s+(?:omitted|truncated|elided|removed)"
                                        rf"\s*{_ELL}?\s*[\])>]", re.IGNORECASE)),
    ("truncation.n-truncated", re.compile(rf"{_ELL}\s*{_N}\s+{_UNIT}\s+truncated\s*{_ELL}", re.IGNORECASE)),
    ("truncation.too-large", re.compile(r"output too (?:large|long)\s*\(\s*(\d[\d.,]*)\s*(KB|MB|B|bytes|chars|characters|lines|tokens)\s*\)",
                                        re.IGNORECASE)),
    ("truncation.marker", re.compile(r"output (?:was |has been )?truncated|\((?:output )?truncated\)|\[truncated\]|"
                                     r"<truncated>|output too (?:long|large)|content truncated|result (?:was )?truncated|"
                                     r"truncated to \d+ (?:bytes|chars|characters|lines|tokens)", re.IGNORECASE)),
]
_TOTAL_LINES = re.compile(r"^Total output lines:\s*(\d+)", re.MULTILINE)


def canonical_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return arguments.strip()


def shell_command(name: str, arguments: str) -> str | None:
    """The shell command a shell-like call runs, if it is one."""
    lowered = name.lower()
    try:
        args = json.loads(arguments)
    except (ValueError, TypeError):
        args = None
    if isinstance(args, dict):
        for key in _COMMAND_KEYS:
            value = args.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return shlex.join(value) if value[:2] not in (["bash", "-lc"], ["bash", "-c"]) else value[-1]
    m = _JS_CMD.search(arguments or "")
    if m:  # Codex code mode: JavaScript calling tools.exec_command({cmd: "..."})
        try:
            return json.loads(m.group(1)) if m.group(1).startswith('"') else m.group(1)[1:-1]
        except ValueError:
            return m.group(1)[1:-1]
    if lowered in SHELL_TOOLS and isinstance(arguments, str) and not arguments.lstrip().startswith("{"):
        return arguments.strip() or None
    return None


def split_compound(command: str) -> list[str]:
    """Split `a && b; c | d` into its commands, respecting quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote = None
    i = 0
    while i < len(command):
        ch = command[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(command):
                current.append(command[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif command.startswith(("&&", "||"), i):
            parts.append("".join(current))
            current = []
            i += 1
        elif ch in ";|\n":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


@dataclass(frozen=True)
class ResultReading:
    """What a tool result says about itself: its status by rule, and whether (and how much) it was cut."""

    status: str  # ok, error, denied, truncated, unknown
    rule: str
    truncated: bool = False
    truncation_rule: str | None = None
    truncation_region: str | None = None  # where the cut is: head (start dropped), middle, tail (end dropped)
    omitted_amount: int | None = None  # as stated by the client
    original_amount: int | None = None
    amount_unit: str | None = None  # bytes, chars, lines, tokens
    exit_code: int | None = None


def read_result(text: str, is_error: bool | None) -> ResultReading:
    """Classify a result by the first rule that applies: a denial, the structure the client gave
    (JSON exit code / `success` / `is_error`, the client's error flag), a stated exit status
    (`Exit Code: 0` is success even beside `Error: (none)`), error text, then a cut."""
    cut = _truncation(text)
    inner = _inner_text(text)
    head = (inner if inner is not None else text)[:4000]
    if _DENIED.search(head):
        return ResultReading("denied", "result.denied-text", **cut)
    structured = _structured(text)
    if structured is not None:
        ok, rule, code = structured
        if not ok:
            return ResultReading("error", rule, exit_code=code, **cut)
        if not is_error:
            return _ok(rule, cut, code)
    if is_error:
        return ResultReading("error", "result.client-error-flag", **cut)
    codes = [int(m.group(1)) for m in _EXIT_LINE.finditer(head)]
    if codes:
        code = codes[-1]
        if code != 0:
            return ResultReading("error", "result.exit-code-line", exit_code=code, **cut)
        return _ok("result.exit-code-line", cut, code)
    scrubbed = _NO_ERROR_LINE.sub("", head)
    if _ERROR.search(scrubbed):
        return ResultReading("error", "result.error-text", **cut)
    if not text.strip():
        return ResultReading("unknown", "result.empty", **cut)
    return _ok("result.no-error-signal", cut, None)


def result_status(text: str, is_error: bool | None) -> str:
    return read_result(text, is_error).status


def _ok(rule: str, cut: dict, code: int | None) -> ResultReading:
    if cut["truncated"]:
        return ResultReading("truncated", cut["truncation_rule"], exit_code=code, **cut)
    return ResultReading("ok", rule, exit_code=code, **cut)


def _structured(text: str) -> tuple[bool, str, int | None] | None:
    """(succeeded, rule, exit code) from a JSON result object, or None when it is not one."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    try:
        obj = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    for key in _JSON_EXIT_KEYS:
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value == 0, "result.json-exit-code", value
    for key in _JSON_ERROR_KEYS:
        if isinstance(obj.get(key), bool):
            return not obj[key], "result.json-is-error", None
    if isinstance(obj.get("success"), bool):
        return obj["success"], "result.json-success", None
    if isinstance(obj.get("ok"), bool):
        return obj["ok"], "result.json-success", None
    error = obj.get("error")
    if isinstance(error, str | dict) and error and error not in ("(none)", "none"):
        return False, "result.json-error", None
    return None


def _inner_text(text: str) -> str | None:
    """The text inside a JSON-wrapped result (`{"output": "...Exit Code: 0..."}`), so its lines can be read."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    try:
        obj = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    parts = [v for k in ("output", "result", "content", "stdout", "stderr", "llmContent") if isinstance(v := obj.get(k), str)]
    return "\n".join(parts) if parts else None


def _number(value: str | None) -> int | None:
    return int(value.replace(",", "")) if value else None


def _sized(amount: str, unit: str) -> tuple[int, str]:
    """`45.2`, `KB` -> (46285, "bytes"): a size as a client prints it."""
    scale = {"kb": 1024, "mb": 1024 * 1024, "b": 1}.get(unit.lower())
    if scale is None:
        return int(float(amount.replace(",", ""))), _unit(unit) or unit
    return int(float(amount.replace(",", "")) * scale), "bytes"


def _unit(value: str | None) -> str | None:
    if not value:
        return None
    value = value.lower().rstrip("s")
    return {"byte": "bytes", "char": "chars", "character": "chars", "line": "lines", "token": "tokens"}[value]


def _truncation(text: str) -> dict:
    """The cut a result states, if any: rule, region, omitted and original amounts as stated."""
    none = {"truncated": False, "truncation_rule": None, "truncation_region": None, "omitted_amount": None,
            "original_amount": None, "amount_unit": None}
    for rule, pattern in _TRUNCATION:
        m = pattern.search(text)
        if m is None:
            continue
        omitted = original = unit = None
        if rule == "truncation.omitted-of":
            omitted, original, unit = _number(m.group(1)), _number(m.group(2)), _unit(m.group(3))
        elif rule in ("truncation.n-omitted", "truncation.n-truncated"):
            omitted, unit = _number(m.group(1)), _unit(m.group(2))
        elif rule == "truncation.too-large":
            original, unit = _sized(m.group(1), m.group(2))
        total = _TOTAL_LINES.search(text)
        if original is None and total and unit in (None, "lines"):
            original, unit = int(total.group(1)), "lines"
        before, after = text[: m.start()].strip(), text[m.end():].strip()
        region = "middle" if before and after else ("tail" if before else "head")
        if rule == "truncation.too-large":
            region = "tail"  # a preview of the start is kept; the rest went to a file
        return {"truncated": True, "truncation_rule": rule, "truncation_region": region,
                "omitted_amount": omitted, "original_amount": original, "amount_unit": unit}
    return none
