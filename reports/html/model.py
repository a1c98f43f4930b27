"""The report's data model: what templates read (dataclasses and row dicts, never queries).

Rows are the views' own columns as dicts; a section adds fields only where a
template needs something the views do not say (a request's number in its
session, its ribbon row).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ctxtap.analysis.db import fetch_rows
from ctxtap.reports.html.blockdata import BlockData, Ribbon
from ctxtap.reports.html.budget import Detail

Row = dict[str, Any]

# The only fields a section adds to view rows: what the views cannot know about the page.
ROW_EXTRAS = {
    "num": "a request's 1-based number in its session, the view's request_number (also set on tool calls: the "
           "proposing request's)",
    "result_num": "on tool calls: the number of the request that carried the result",
    "ribbon": "id of the ribbon that draws the request",
    "row": "the request's row in that ribbon (None: the ribbon leaves it out)",
    "merged": "the request shares its ribbon row with neighbours that only appended blocks (the row draws the last)",
    "parent_num": "on subagent_prefix rows: the number of the parent's request at the delegation",
}
LARGE_TABLE = 60  # tables longer than this start collapsed


fetch = fetch_rows


REQUESTS_SQL = """
SELECT r.request_id, r.request_number, r.session_id, r.session_source, r.thread_id, r.thread_kind, r.seq_in_session,
       r.seq_in_thread,
       r.turn_index, r.ts_start, r.ts_end, r.ttfb_ms, r.duration_ms, r.client, r.client_version, r.provider, r.api,
       r.transport, r.endpoint, r.model, r.purpose, r.purpose_rule, r.purpose_evidence, r.status, r.error_layer,
       r.error_code, r.error_message, r.retryable, r.retry_after_s, r.parse_status, r.parse_error,
       r.input_tokens_reported, r.input_uncached_tokens, r.cache_read_tokens, r.cache_write_tokens, r.output_tokens,
       r.reasoning_tokens, r.usage_status, r.cache_semantics, r.input_tokens_estimated, r.n_blocks, r.n_new_blocks,
       r.n_tools, r.body_bytes, r.stop_reason, r.n_tool_calls, r.response_text, r.cost_usd,
       r.cumulative_input_tokens,
       p.gap_s, p.divergence_kind, p.divergence_summary, p.first_divergent_path, p.first_divergent_source,
       p.common_prefix_tokens, p.expected_cached_tokens, p.cache_status, p.miss_cause, p.miss_explanation,
       p.prefix_changed, p.divergence_label, g.fitted_cumulative_tokens
FROM requests r LEFT JOIN prefix p USING (request_id) LEFT JOIN growth_points g USING (request_id)
ORDER BY r.session_id, r.seq_in_session, r.ts_start
"""


@dataclass
class LeftOut:
    """The rows a long table leaves out between its first and last ones, and how to list them."""

    count: int
    first: str  # what the first left-out row is, e.g. "#201"
    last: str
    command: str  # the exact `ctxtap sql CAPTURE "SELECT ..."` that lists them


@dataclass
class Shown:
    """A table's rows as shown: all of them, or the first and last with the rest left out."""

    head: list
    tail: list
    left_out: LeftOut | None = None

    @property
    def total(self) -> int:
        return len(self.head) + len(self.tail) + (self.left_out.count if self.left_out else 0)


@dataclass
class CaptureInfo:
    path: Path
    capture_id: str
    name: str
    source: str
    started_at: float | None
    ended_at: float | None
    n_requests: int


@dataclass
class CacheEvent:
    """A cache miss or a prefix change, in words, with the requests it happened at."""

    kind: str  # "miss" or "prefix"
    text: str
    count: int
    requests: list[int]
    example: str = ""


@dataclass
class CacheViews:
    """A session's cache beyond its charts (`reports.html.cacheviews`): each miss's three witnesses
    (cache_verdicts rows, disagreements first), subagents against their parent, cold batches in
    flight, and the session's cache-key variants."""

    verdicts: list[Row]
    left_out: LeftOut | None
    n_disagree: int
    n_agree: int
    n_provider: int  # rows with the provider's diagnostics
    n_client: int  # rows with the client's claim
    subagents: list[Row]
    cold: list[Row]
    n_cold_batches: int
    cold_extra_usd: float | None
    variants: list[Row]


@dataclass
class ThreadView:
    thread_id: str
    label: str
    kind: str
    rows: list[Row]
    growth: Row | None
    growth_svg: Markup
    cache_svg: Markup
    events: list[CacheEvent]
    has_usage: bool
    open: bool = True  # the first threads start expanded; many subagent threads start collapsed
    bin_size: int = 1  # requests per chart column (1: one column per request)
    generations: list[Row] = field(default_factory=list)  # context_generations rows: compactions, trimmings
    delegation: Row | None = None  # a subagent's delegations row: its packet, context and tools


@dataclass
class ToolLoop:
    svg: Markup
    calls: list[Row]
    stats: Row  # the tool_loop view row of the session (counts, gaps)
    by_name: list[tuple[str, int, int]]  # (tool, calls, errors), most used first
    table: Shown = field(default_factory=lambda: Shown([], []))  # the calls the table shows
    bin_s: float | None = None  # the timeline's bin width in seconds (None: one bar per request and call)


@dataclass
class EventsView:
    """A session's events timeline (the Evidence section's part drawn from the `events` view)."""

    svg: Markup
    evidence: dict[str, int]  # evidence -> number of events
    n_events: int
    efficiency: Row  # the session's process_efficiency row
    tool_rows: list[Row]  # the first tool_finished events
    n_tool_rows: int
    decisions: list[Row]  # the first permission_decided events
    left_out: LeftOut | None = None  # runs beyond what the timeline draws


@dataclass
class SessionView:
    anchor: str
    capture: CaptureInfo
    session_id: str
    short: str  # the session id without its client prefix, shortened, for navigation
    client: str
    client_versions: str
    models: str
    apis: str
    session_source: str
    totals: Row
    duration_s: float | None
    requests: list[Row]
    threads: list[ThreadView]
    side: list[Row]
    errors: list[Row]
    toolloop: ToolLoop
    ribbon: Ribbon
    side_ribbon: Ribbon | None
    purposes: list[tuple[str, int]]
    requests_table: Shown  # the rows of the requests table (all, or the first and last)
    side_table: Shown
    errors_table: Shown
    timeline: EventsView | None = None  # the events timeline, where the dataset has the events view
    cache: CacheViews | None = None  # the three witnesses, subagents, cold batches, key variants


@dataclass
class ClientRow:
    client: str
    versions: str
    apis: str
    sessions: int
    requests: int
    main: int
    side: int
    input_reported: int | None
    cache_read: int | None
    output: int | None
    cost: float | None
    errors: int


@dataclass
class Overview:
    totals: Row
    clients: list[ClientRow]
    purposes: list[tuple[str, int, float]]
    error_layers: list[tuple[str, int, str]]


@dataclass
class ComparisonRow:
    label: str
    client: str
    capture: str
    capture_id: str
    layout: Row
    first_request: Row | None
    first_by_source: dict[str, int]
    total_by_source: dict[str, int]
    cache: Row  # the client_summary view row


@dataclass
class Comparison:
    rows: list[ComparisonRow]
    composition_svg: Markup
    cache_svg: Markup
    sources: list[str]
    ribbon: Ribbon


@dataclass
class RetryLine:
    """A failed model request and its retry, numbered in their session."""

    row: Row  # the retries view row
    failed_num: int | None
    retry_num: int | None


@dataclass
class SessionEvidence:
    """What one session's run shows beyond the context: secrets it sent, results cut, retries."""

    anchor: str  # the session's section
    client: str
    session_id: str
    headlines: list[str]  # exposures in words, most requests first
    exposures: list[Row]  # exposure_summary rows (with `num`: the first request's number)
    exposures_left_out: int
    truncated: list[Row]  # tool_calls rows whose result was cut (with `num` and `result_num`)
    truncated_left_out: int
    retries: list[RetryLine]
    retries_left_out: int


@dataclass
class CaptureNetwork:
    capture: CaptureInfo
    rows: list[Row]  # network view rows
    left_out: int
    command: str  # the `ctxtap sql` that lists every row


@dataclass
class Evidence:
    sessions: list[SessionEvidence]  # only sessions with something to show
    network: list[CaptureNetwork]
    not_seen: str  # what the proxy cannot see, said plainly
    n_credentials: int
    n_personal: int
    n_truncated: int
    n_retries: int
    n_destinations: int


@dataclass
class GateLine:
    """One gate the run was judged by, in a sentence: `Breaks --no-writes: .gitignore (modified)`."""

    text: str
    broken: bool  # broken, or not judgeable (which fails it too)


@dataclass
class CaptureEffects:
    """One capture's effects and constraints, in sentences (reports/html/effects.py)."""

    capture: CaptureInfo
    has_receipt: bool
    changes: list[str]  # "2 files written in the working directory: .gitignore (modified), ..."
    coverage: str  # which places were snapshotted, and that others are not seen
    gates: list[GateLine]  # "Breaks --no-writes: ...", "Keeps --no-network": the gates the run was judged by
    tool_checks: list[str]  # calls to tools never offered, arguments their schema refused
    command: str  # the `ctxtap sql` that lists every changed path
    call_summary: str = ""  # "12 tool calls proposed: 8 read, 2 write, 1 destructive, 1 unknown."
    call_classes: list[Markup] = field(default_factory=list)  # each call that is not a plain read, in a sentence
    call_receipts: list[str] = field(default_factory=list)  # proposed writes against the receipt, both ways


@dataclass
class Effects:
    captures: list[CaptureEffects]
    n_changed: int  # paths changed, all captures
    n_broken: int  # gates broken, all captures


@dataclass
class ReportContext:
    title: str
    captures: list[CaptureInfo]
    overview: Overview
    sessions: list[SessionView]
    comparison: Comparison | None
    blocks: BlockData
    notes: list[str] = field(default_factory=list)  # what the report aggregated or left out, in words
    detail: Detail = field(default_factory=Detail.full)
    evidence: Evidence | None = None
    effects: Effects | None = None


# --- per capture ------------------------------------------------------------------------------------


def sum_present(values) -> int | float | None:
    """Sum of the known values; None when none is known (unknown is not zero)."""
    values = [v for v in values if v is not None]
    return sum(values) if values else None
