"""The experiment spec (TOML): one command, its variants, repeats; refused before anything runs.

    name = "cache-policy"
    command = "python -m ctxtap.demo claude --clock {clock}"   # or a list of arguments
    repeats = 5
    timeout = 120                  # seconds per run (and per check)
    fixture = "fixture"            # optional: copied fresh into every run's work directory
    check = "test -s answer.json"  # optional: run in the work directory after the command, exit 0 = pass
    parallel = 1                   # runs at once (--parallel overrides)
    pass_k = [1, 3]                # k for pass@k and pass^k
    routes = []                    # --route HOST=URL for the recording proxy
    diagnostics = false            # ask providers why their cache missed, where ctxtap sends (replay --send)
    push = "s3://bucket/prefix"    # optional, with --ray: every run's node pushes its capture to this store
    gates = ["--no-writes", "--allow-write answer.json"]   # optional: `ctxtap check`'s flags, zero tolerance

    [server]                       # optional: ctxtap's scripted model server on loopback,
    script = "default"             # with the provider hosts routed to it ({server_url})

    [variants.system]              # keys are placeholder values; [variants.NAME.env] sets variables
    clock = "system"
    [variants.message]
    clock = "message"

A string command is split like a shell would (no shell runs it); placeholders are filled per
argument, so a value with spaces stays one argument (and an argument that is a lone placeholder
with an empty value is left out). Built-in placeholders: {variant}, {repeat},
{run_id}, {work_dir}, {run_dir}, {server_url} (with [server]) and {python}
(the interpreter ctxtap runs on).

With `gates`, a run that breaks one fails whatever its check says (run.json keeps the check's own
verdict as `answer_passed` and the broken gates as `gate_failures`), so pass@k and pass^k count only
runs that kept every gate; the runner takes an effect receipt of each run's work directory for them
(`ctxtap.experiment.gates`).

With `diagnostics` (or `ctxtap experiment run --diagnostics`) every run's environment has
CTXTAP_CACHE_DIAGNOSTICS=1: a command that is ctxtap's own sender (`ctxtap replay CAPTURE --send`)
then asks the provider for its cache diagnostics. A client's own traffic is never changed.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import string
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ctxtap.analysis.rules.constraints import Gates
from ctxtap.experiment.gates import parse_gates

BUILTINS = ("variant", "repeat", "run_id", "work_dir", "run_dir", "server_url", "python")
DEMO_HOSTS = ("api.anthropic.com", "api.openai.com", "api.kimi.com", "generativelanguage.googleapis.com")


class SpecError(ValueError):
    """A spec that cannot run, with the file and line it is about."""


class ServerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    script: str | None = None
    hosts: list[str] = Field(default_factory=lambda: list(DEMO_HOSTS))
    retry_after_s: float = 1.0


class VariantSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    vars: dict[str, str | int | float | bool] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    command: str | list[str]
    variants: list[VariantSpec]
    repeats: int = Field(default=1, ge=1, le=10_000)
    timeout: float = Field(default=600.0, gt=0)
    fixture: str | None = None
    check: str | list[str] | None = None
    parallel: int = Field(default=1, ge=1, le=64)
    pass_k: list[int] = Field(default_factory=lambda: [1])
    routes: list[str] = Field(default_factory=list)
    diagnostics: bool = False
    server: ServerSpec | None = None
    push: str | None = None  # a store URL the runs' captures are pushed to (`run --ray`; --push overrides)
    gates: list[str] = Field(default_factory=list)  # `ctxtap check` flags every run must keep (zero tolerance)
    # set by load_spec, not by the file
    path: Path | None = None
    digest: str = ""
    text: str = ""

    @field_validator("variants")
    @classmethod
    def _names(cls, value: list[VariantSpec]) -> list[VariantSpec]:
        if not value:
            raise ValueError("at least one variant is needed")
        for v in value:
            if not re.fullmatch(r"[A-Za-z0-9_.]+", v.name):
                raise ValueError(f"variant name {v.name!r}: use letters, digits, '_' and '.' only")
        return value

    @field_validator("pass_k")
    @classmethod
    def _ks(cls, value: list[int]) -> list[int]:
        if not value or any(k < 1 for k in value):
            raise ValueError("pass_k must list whole numbers >= 1")
        return value

    def argv(self, which: str = "command") -> list[str]:
        raw = getattr(self, which)
        return shlex.split(raw) if isinstance(raw, str) else list(raw)

    def gate_set(self) -> Gates | None:
        """The gates as `ctxtap check` judges them; None when the spec sets none."""
        return parse_gates(self.gates) if self.gates else None

    def fixture_dir(self) -> Path | None:
        if self.fixture is None:
            return None
        base = self.path.parent if self.path else Path.cwd()
        return (base / self.fixture).resolve()


def _line_of(text: str, key: str, after: int = 0) -> int:
    """1-based line where `key = ...` or `[...key...]` first appears at or after line `after`."""
    pattern = re.compile(rf"^\s*(\[\[?[^\]]*\b{re.escape(key)}\b[^\]]*\]\]?|\"?{re.escape(key)}\"?\s*=)")
    for n, line in enumerate(text.splitlines(), 1):
        if n >= after and pattern.search(line):
            return n
    return 1


def placeholders(argv: list[str]) -> set[str]:
    names = set()
    for arg in argv:
        for _, field, _, _ in string.Formatter().parse(arg):
            if field is not None:
                if field == "" or not field.isidentifier():
                    raise ValueError(f"placeholder {{{field}}} in {arg!r}: name it, e.g. {{clock}}")
                names.add(field)
    return names


def fill(argv: list[str], values: dict[str, Any]) -> list[str]:
    """The arguments with their placeholders filled; an argument that is one placeholder whose
    value is empty is dropped (so `fault = ""` leaves a flag out instead of passing '')."""
    text = {k: str(v) for k, v in values.items()}
    out = []
    for arg in argv:
        filled = arg.format(**text)
        if filled == "" and re.fullmatch(r"\{\w+\}", arg):
            continue
        out.append(filled)
    return out


def load_spec(path: Path) -> Spec:
    """Parse and check a spec; SpecError names the file and line of the first problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None
    variants = raw.pop("variants", None)
    if not isinstance(variants, dict):
        raise SpecError(f"{path}:{_line_of(text, 'variants')}: no variants: add [variants.A] and [variants.B] tables "
                        "(their keys are placeholder values, [variants.A.env] sets environment variables)")
    parsed = []
    for name, body in variants.items():
        if not isinstance(body, dict):
            raise SpecError(f"{path}:{_line_of(text, name)}: variants.{name} must be a table ([variants.{name}])")
        body = dict(body)
        env = body.pop("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise SpecError(f"{path}:{_line_of(text, name)}: variants.{name}.env: give each variable a string value")
        for key, value in body.items():
            if not isinstance(value, str | int | float | bool):
                raise SpecError(f"{path}:{_line_of(text, key, _line_of(text, name))}: variants.{name}.{key}: "
                                "a placeholder value must be a string, number or boolean")
        parsed.append({"name": name, "vars": body, "env": env})
    raw["variants"] = parsed
    for key in ("path", "digest", "text"):
        if key in raw:
            raise SpecError(f"{path}:{_line_of(text, key)}: unknown key {key!r}")
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(x) for x in err["loc"]]
        key = next((x for x in reversed(loc) if not x.isdigit()), loc[0] if loc else "")
        if loc[:1] == ["variants"] and len(loc) > 1 and loc[1].isdigit():
            key = parsed[int(loc[1])]["name"]
        what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise SpecError(f"{path}:{_line_of(text, key)}: {'.'.join(loc)}: {what}") from None
    spec.path, spec.text = path.resolve(), text
    spec.digest = hashlib.sha256(text.encode()).hexdigest()
    _check_placeholders(spec, path, text)
    try:
        spec.gate_set()
    except ValueError as exc:
        raise SpecError(f"{path}:{_line_of(text, 'gates')}: gates: {exc}") from None
    fixture = spec.fixture_dir()
    if fixture is not None and not fixture.is_dir():
        raise SpecError(f"{path}:{_line_of(text, 'fixture')}: fixture {spec.fixture!r} is not a directory "
                        f"(looked for {fixture})")
    return spec


def _check_placeholders(spec: Spec, path: Path, text: str) -> None:
    for which in ("command", "check"):
        if getattr(spec, which) is None:
            continue
        line = _line_of(text, which)
        try:
            argv = spec.argv(which)
            names = placeholders(argv)
        except ValueError as exc:  # shlex: unbalanced quotes; or an unnamed placeholder
            raise SpecError(f"{path}:{line}: {which}: {exc}") from None
        if not argv:
            raise SpecError(f"{path}:{line}: {which} is empty")
        if "server_url" in names and spec.server is None:
            raise SpecError(f"{path}:{line}: {which} uses {{server_url}} but the spec has no [server] table")
        for variant in spec.variants:
            unknown = sorted(names - set(BUILTINS) - set(variant.vars))
            if unknown:
                raise SpecError(f"{path}:{line}: {which} uses {', '.join('{' + u + '}' for u in unknown)}, which "
                                f"variant {variant.name!r} (line {_line_of(text, variant.name)}) does not set; "
                                f"built-in placeholders: {', '.join(BUILTINS)}")


def fixture_digest(directory: Path | None) -> str | None:
    """SHA-256 over the fixture's relative paths and bytes, so runs can show they started alike."""
    if directory is None:
        return None
    h = hashlib.sha256()
    for p in sorted(directory.rglob("*")):
        if p.is_file() and not p.is_symlink():
            h.update(str(p.relative_to(directory)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()
