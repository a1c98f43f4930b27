"""Colours for business sources and chart series, safe for colour-blind readers.

Base hues are the Okabe-Ito palette (distinguishable under the common forms of
colour blindness). There are twelve sources and eight hues, so four sources
reuse the hue of a related source with a hatch pattern on top: the pattern,
not a tint, tells them apart, and it survives greyscale printing.
"""

from __future__ import annotations

from dataclasses import dataclass

# Okabe-Ito
BLACK = "#000000"
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
GREY = "#BBBBBB"


@dataclass(frozen=True)
class SourceStyle:
    name: str
    label: str
    fill: str
    hatch: str | None  # stripe colour drawn over `fill`, or None for a solid fill
    meaning: str


SOURCES: tuple[SourceStyle, ...] = (
    SourceStyle("tool_catalogue", "tool catalogue", SKY, None, "tool definitions offered to the model"),
    SourceStyle("plugin_catalogue", "plugin catalogue", SKY, BLUE, "plugin, skill and MCP catalogues"),
    SourceStyle("platform_rules", "platform rules", BLUE, None, "the client's own system / developer rules"),
    SourceStyle("project_instructions", "project instructions", GREEN, None, "AGENTS.md, CLAUDE.md and the like"),
    SourceStyle("runtime_environment", "runtime environment", YELLOW, None, "cwd, date, OS, shell, git status"),
    SourceStyle("system_reminder", "system reminder", YELLOW, VERMILLION, "reminders the client injects into turns"),
    SourceStyle("user_task", "user task", VERMILLION, None, "what the terminal user typed"),
    SourceStyle("summary", "summary", BLACK, None, "compaction summaries replacing history"),
    SourceStyle("assistant_output", "assistant output", PURPLE, None, "the model's earlier answers"),
    SourceStyle("tool_call", "tool call", ORANGE, BLACK, "tool calls the model proposed"),
    SourceStyle("tool_result", "tool result", ORANGE, None, "tool output returned to the model"),
    SourceStyle("unknown", "unknown", GREY, None, "not attributed by any rule"),
    SourceStyle("mixed", "several sources", GREY, BLACK, "a block holding sections of several sources (drawn as sub-stripes)"),
)
SOURCE_INDEX = {s.name: i for i, s in enumerate(SOURCES)}
UNKNOWN = SOURCE_INDEX["unknown"]

# Series of the cache chart and of request kinds.
CACHE_READ = BLUE
CACHE_WRITE = ORANGE
UNCACHED = GREY
REPORTED = BLACK
FIT = VERMILLION
ERROR = VERMILLION
SIDE = PURPLE
MAIN = BLUE
SUBAGENT = GREEN

RESULT_STATUS = {"ok": SKY, "truncated": YELLOW, "unknown": PURPLE, "error": VERMILLION, "denied": BLACK,
                 "missing": GREY}


def source_index(name: str | None) -> int:
    return SOURCE_INDEX.get(name or "unknown", UNKNOWN)


def pattern_id(source: str) -> str:
    return f"hatch-{source}"


def source_fill(name: str) -> str:
    """SVG fill for a source: a colour, or a url() to its hatch pattern (see `svg_defs`)."""
    style = SOURCES[source_index(name)]
    return f"url(#{pattern_id(style.name)})" if style.hatch else style.fill


def svg_defs() -> str:
    """<defs> with one hatch pattern per hatched source; included once per report."""
    out = ['<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>']
    for s in SOURCES:
        if s.hatch:
            out.append(
                f'<pattern id="{pattern_id(s.name)}" width="6" height="6" patternUnits="userSpaceOnUse" '
                f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{s.fill}"/>'
                f'<rect width="2" height="6" fill="{s.hatch}"/></pattern>'
            )
    out.append("</defs></svg>")
    return "".join(out)


def js_palette() -> list[dict[str, str | None]]:
    """The palette as the inline script draws it on canvas."""
    return [{"name": s.name, "label": s.label, "fill": s.fill, "hatch": s.hatch} for s in SOURCES]
