"""How to run ctxtap again, the way the user just did: the commands ctxtap prints as hints must
work when pasted. After `make demo`, `ctxtap` is `.venv/bin/ctxtap` and not on the PATH."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it lies inside it (`.venv/bin/ctxtap`), else absolute."""
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        relative = absolute.relative_to(Path.cwd())
    except ValueError:
        return str(absolute)
    return str(relative) if relative.parent != Path(".") else f"./{relative}"


def invoked_as(argv0: str | None = None, executable: str | None = None) -> str:
    """The command prefix to print in hints: `ctxtap` when that is what the PATH finds, else the path
    of the script that runs (or `python -m ctxtap.cli` when run as a module), shell-quoted."""
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    if script.suffix == ".py":  # python -m ctxtap.cli(.main)
        python = Path(executable or sys.executable)
        return f"{shlex.quote(_shown(python))} -m ctxtap.cli"
    on_path = shutil.which("ctxtap")
    if not script.is_file() or (on_path and Path(on_path).resolve() == script.resolve()):
        return "ctxtap"
    return shlex.quote(_shown(script))
