"""Session fixtures for the real-CLI tier: namespace support, cached installs, timings.

Nothing here runs unless a `realcli` test is selected (`pytest -m realcli`): the
default run deselects the tier, so no fixture below ever starts npm or unshare.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realcli.sandbox import unshare_prefix
from tests.realcli.toolbox import Timings, Toolbox, install_all, selected_specs

TIMINGS_FILE = Path(__file__).resolve().parents[2] / "test-artifacts" / "realcli" / "timings.json"
_TIMINGS = Timings()


@pytest.fixture(scope="session")
def realcli_timings() -> Timings:
    return _TIMINGS


@pytest.fixture(scope="session")
def netns_available() -> list[str]:
    """The unshare command prefix; skips the tier when no loopback-only namespace can be made."""
    prefix, reason = unshare_prefix()
    if prefix is None:
        pytest.skip(f"real CLIs only run inside a loopback-only network namespace: {reason}")
    return prefix


@pytest.fixture(scope="session")
def realcli_tools(request: pytest.FixtureRequest, netns_available: list[str]) -> Toolbox:
    """The selected CLIs and Node 22, installed into the cache (`install.cache_root()`) or reused from it.

    Without npm the npm-installed CLIs skip one by one (saying so); kimi-cli comes from PyPI.
    """
    return install_all(selected_specs(request.session.items), _TIMINGS)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how long the tier took; nothing at all when the tier did not run."""
    if not _TIMINGS.install and not _TIMINGS.runs:
        return
    terminalreporter.section("realcli timings")
    for line in _TIMINGS.lines():
        terminalreporter.write_line(line)
    try:
        _TIMINGS.write(TIMINGS_FILE)
    except OSError as exc:  # a read-only checkout must not turn a green run red
        terminalreporter.write_line(f"(timings not written to {TIMINGS_FILE}: {exc})")
