"""An experiment run's conditions and gates: what the runner keeps beside the command, and the verdict.

The spec's `gates` are `ctxtap check`'s flags (`gates = ["--no-writes", "--allow-write answer.json"]`)
and are zero tolerance: a run that breaks one fails whatever its answer (`RunRecord.passed` is false,
`answer_passed` keeps the check's own verdict), so pass@k and pass^k count only runs that kept them.
A gate the run's capture cannot judge fails too, as in `ctxtap check`: silence is not proof.

`RunWatch` is the runner's part: before the command it takes the machine's facts of the run's work
directory (`ctxtap.capture.environment`: git commit, dirty flag, ...) and, when the spec has gates,
the effect receipt's before-snapshot of it; after the command (before the check, which may write
files of its own) the after-snapshot; once the capture is finalized it keeps the facts, the command
and the gates in the capture (so `run_conditions`, `effects` and its report see them), and judges.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxtap.analysis.rules.constraints import Gates

FLAGS = ("--no-writes", "--no-network", "--no-secrets-sent", "--no-outside-workspace")
VALUE_FLAGS = {"--allow-write": "allow_write", "--allow-host": "allow_host"}
MAX_WHAT = 5  # violations named per broken gate in run.json (the capture's report has them all)


def parse_gates(entries: list[str]) -> Gates:
    """The spec's `gates` list as `Gates`; ValueError names a flag `ctxtap check` does not take here."""
    words: list[str] = []
    for entry in entries:
        words += shlex.split(entry)
    gates = Gates()
    i = 0
    while i < len(words):
        name, eq, value = words[i].partition("=")
        if name in FLAGS and not eq:
            setattr(gates, name[2:].replace("-", "_"), True)
        elif name in VALUE_FLAGS:
            if not eq:
                i += 1
                if i >= len(words) or words[i].startswith("--"):
                    raise ValueError(f"{name} needs a value ({name} GLOB)")
                value = words[i]
            getattr(gates, VALUE_FLAGS[name]).append(value)
        elif name == "--workspace":
            raise ValueError("--workspace is set by the runner: every run's working directory is its own copy")
        else:
            raise ValueError(f"unknown gate {words[i]!r}: use {', '.join(FLAGS)}, --allow-write GLOB, "
                             "--allow-host HOST (ctxtap check's flags)")
        i += 1
    if gates.allow_write and not gates.no_writes:
        raise ValueError("--allow-write is an exception to --no-writes: add --no-writes")
    if gates.allow_host and not gates.no_network:
        raise ValueError("--allow-host is an exception to --no-network: add --no-network")
    return gates


@dataclass
class RunWatch:
    """One run's facts, receipt and gates, from before the command to the verdict."""

    work: Path
    gates: Gates | None
    facts: Any = None
    receipt: Any = None
    receipt_error: str | None = None
    _written: bool = field(default=False, repr=False)

    @classmethod
    def start(cls, work: Path, gates: Gates | None) -> RunWatch:
        from ctxtap.capture import environment

        watch = cls(work.resolve(), gates)
        watch.facts = environment.collect(watch.work)
        if gates is not None:
            from ctxtap.capture.effects import Receipt

            watch.receipt = Receipt([(watch.work, "workspace")]).start()
        return watch

    def command_ended(self, capture: Path) -> None:
        """The after-snapshot, written into the capture being recorded (its manifest names its id)."""
        if self.receipt is None or self._written:
            return
        self._written = True
        try:
            capture_id = json.loads((capture / "manifest.json").read_text())["capture_id"]
            self.receipt.finish(capture, capture_id)
        except (OSError, ValueError, KeyError) as exc:
            self.receipt_error = f"the effect receipt could not be written: {exc}"

    def keep(self, capture: Path, command: list[str]) -> None:
        """Into the finalized capture: the machine's facts and the (redacted) command in its manifest, the gates
        beside it."""
        from ctxtap.capture.effects import write_gates
        from ctxtap.capture.manifest import Manifest

        manifest = Manifest.load(capture)
        if self.facts is not None:
            manifest.environment = self.facts.model_dump(exclude_none=True)
        manifest.command = list(command)  # the run's command (the proxy's own is `ctxtap experiment run`)
        manifest.save(capture)
        if self.gates is not None:
            write_gates(capture, self.gates.model_dump())

    def judge(self, capture: Path) -> tuple[bool, list[dict[str, Any]]]:
        """(every gate kept, the broken ones: [{gate, judged, violations, what, how}]) over the analysed capture."""
        from ctxtap.analysis.db import connect
        from ctxtap.analysis.rules.constraints import check

        assert self.gates is not None
        gates = self.gates.model_copy(update={"workspace": str(self.work)})
        con = connect([capture])
        try:
            report = check(con, gates)
        finally:
            con.close()
        broken = [{"gate": r.gate, "judged": r.judged, "violations": len(r.violations),
                   "what": [v.what for v in r.violations[:MAX_WHAT]], "how": r.how}
                  for r in report.results if not r.ok]
        return report.ok, broken

