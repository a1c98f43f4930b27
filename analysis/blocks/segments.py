"""Segments: the sections inside one text block, found by structure alone.

Clients pack several sources into one block — rules, then an `# Environment` section, a
`<system-reminder>`, a skills list, a quoted AGENTS.md. `split_units` cuts a text into
structural units (markdown heading sections, XML-like tag blocks, fenced code, paragraphs)
without knowing the client; `analysis.detectors` then says what each unit is. Units never
overlap and always tile the text: their concatenation is the text, byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxtap.analysis.rules.detectors import Detection, catalogue_intro, detect, fact_line, looks_like_list
from ctxtap.analysis.threads.runfacts import (
    current,
    has_entries,
    lists_entries,
    names_entry,
    quoted_file,
    recorded_files,
    stated_fact,
    states_facts,
)

_HEADING = re.compile(r"^(#{1,6})[ \t]+(\S.*?)[ \t#]*$")
_OPEN_TAG = re.compile(r"^[ \t]*<([A-Za-z][\w.:-]*)(?:[ \t][^<>]*)?>")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
MAX_TAG_LINES = 5000  # a tag left open this long is text, not a section


@dataclass(frozen=True)
class Unit:
    """A structural piece of a text: character offsets [start, end), what it is, and its heading."""

    start: int
    end: int
    kind: str  # "heading", "tag", "fence", "paragraph", "blank"
    label: str = ""  # heading text or tag name
    level: int = 0  # heading level (1-6); 0 for other units
    section: str = ""  # the nearest heading above the unit (its own text for a heading)
    outer: tuple[str, ...] = ()  # the headings that enclose that one, innermost first


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, the end including its newline."""
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        out.append((pos, pos + len(line)))
        pos += len(line)
    return out


def _closing(lines: list[str], i: int, tag: str) -> int | None:
    """Index of the line that closes `<tag>` opened on line i (the same line counts)."""
    close = f"</{tag}>"
    if close in lines[i]:
        return i
    for j in range(i + 1, min(len(lines), i + MAX_TAG_LINES)):
        if close in lines[j]:
            return j
    return None


def _fence_end(lines: list[str], i: int, marker: str) -> int:
    for j in range(i + 1, len(lines)):
        if lines[j].strip().startswith(marker[0] * len(marker)) and not lines[j].strip().strip(marker[0]):
            return j
    return len(lines) - 1


def split_units(text: str) -> list[Unit]:
    """Cut `text` into units that tile it: headings, tag blocks, fences, paragraphs, blank runs."""
    spans = _lines(text)
    lines = [text[s:e] for s, e in spans]
    units: list[Unit] = []
    section, i, n = "", 0, len(lines)
    para_start: int | None = None
    stack: list[tuple[int, str]] = []  # enclosing headings, outermost first

    def outer() -> tuple[str, ...]:
        return tuple(label for _, label in reversed(stack[:-1]))

    def flush(upto: int) -> None:
        nonlocal para_start
        if para_start is not None:
            units.append(Unit(spans[para_start][0], spans[upto - 1][1], "paragraph", section=section,
                              outer=outer()))
            para_start = None

    while i < n:
        line = lines[i].rstrip("\r\n")
        if not line.strip():
            flush(i)
            j = i
            while j < n and not lines[j].strip():
                j += 1
            units.append(Unit(spans[i][0], spans[j - 1][1], "blank", section=section, outer=outer()))
            i = j
            continue
        heading = _HEADING.match(line)
        if heading:
            flush(i)
            section, level = heading.group(2).strip(), len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, section))
            units.append(Unit(spans[i][0], spans[i][1], "heading", section, level, section, outer()))
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            flush(i)
            j = _fence_end(lines, i, fence.group(1))
            units.append(Unit(spans[i][0], spans[j][1], "fence", section=section, outer=outer()))
            i = j + 1
            continue
        tag = _OPEN_TAG.match(line)
        if tag:
            j = _closing(lines, i, tag.group(1))
            # a tag block starts a unit; inside a paragraph only a block over several lines does
            if j is not None and (para_start is None or j > i):
                flush(i)
                units.append(Unit(spans[i][0], spans[j][1], "tag", tag.group(1), section=section, outer=outer()))
                i = j + 1
                continue
        if para_start is None:
            para_start = i
        i += 1
    flush(n)
    if not units and text:
        units.append(Unit(0, len(text), "paragraph"))
    return units


def inner_text(text: str, unit: Unit) -> str:
    """A tag unit's content without its opening and closing tag lines (other units: as they are)."""
    body = text[unit.start:unit.end]
    if unit.kind != "tag":
        return body
    body = re.sub(rf"^[ \t]*<{re.escape(unit.label)}(?:[ \t][^<>]*)?>", "", body, count=1)
    return body.rsplit(f"</{unit.label}>", 1)[0]


def byte_offsets(text: str, char_offsets: list[int]) -> list[int]:
    """UTF-8 byte offsets of ascending character offsets into `text` (one pass)."""
    out, pos, bytes_ = [], 0, 0
    for c in char_offsets:
        bytes_ += len(text[pos:c].encode("utf-8", "surrogatepass"))
        pos = c
        out.append(bytes_)
    return out


@dataclass(frozen=True)
class Piece:
    """A run of units with one reading: character range, what the detectors found (None: nothing)."""

    start: int
    end: int
    source: str | None
    rule_id: str | None
    evidence: str = ""
    label: str = ""


def _reading(text: str, unit: Unit, before: str = "") -> Detection | None:
    """What the detectors make of a unit: the recorded file it quotes first, then what it says under
    its own heading, then under the enclosing ones."""
    if unit.kind != "heading":
        quoted = quoted_file(inner_text(text, unit))
        if quoted is not None:
            path, instruction = quoted
            return Detection("project_instructions" if instruction else "runtime_environment",
                             "detect.recorded-file", f"quotes {path}")
    for label in (unit.section, *unit.outer):
        if unit.kind == "fence":
            found = detect(text[unit.start:unit.end], label=label, intro=before)
        elif unit.kind == "tag":
            found = detect(inner_text(text, unit), label=label, tag=unit.label)
        elif unit.kind == "heading":
            found = detect("", label=label)
        else:
            found = detect(text[unit.start:unit.end], label=label)
        if found is not None:
            return found
    return _recorded_fact(text, unit)


def _recorded_fact(text: str, unit: Unit) -> Detection | None:
    """A unit of value lines stating a fact the recorder kept (analysis.runfacts): environment on
    the recorder's evidence, whatever its keys are called."""
    if unit.kind in ("heading", "fence"):
        return None
    whole = text[unit.start:unit.end]
    fact = states_facts(whole) or (states_facts(inner_text(text, unit)) if unit.kind == "tag" else None)
    if fact is None and lists_entries(inner_text(text, unit)):
        fact = "working directory's entries"
    return Detection("runtime_environment", "detect.recorded-fact", f"states the recorded {fact}") if fact else None


def _environment_sections(units: list[Unit], readings: list) -> None:
    """Commentary that follows the environment inside its section is environment too (`The tree only
    shows the first two levels...` after a directory listing); anything else breaks the run. A tag's
    section ends at its closing tag: what follows `</env>` is not the environment."""
    previous = None
    for i, unit in enumerate(units):
        if unit.kind == "blank":
            continue
        if unit.kind == "heading":
            previous = readings[i]
            continue
        if (readings[i] is None and previous is not None and previous.rule_id == "detect.environment-section"
                and unit.kind != "tag"):
            readings[i] = previous
        previous = None if unit.kind == "tag" else readings[i]


def _quoted_files(units: list[Unit], readings: list) -> None:
    """After a line that introduces a quoted instruction file, the file runs on (its own headings
    included) until something else is recognised."""
    quoting = None
    for i, unit in enumerate(units):
        if unit.kind == "blank":
            continue
        found = readings[i]
        if found is not None and found.rule_id == "detect.project-file" and unit.kind != "tag":
            quoting = found
        elif found is None and quoting is not None:
            readings[i] = quoting
        elif found is not None:
            quoting = None


MAX_DEPTH = 3  # tags inside tags read this deep
_LINE_READ = frozenset({"detect.environment", "detect.environment-line", "detect.recorded-fact"})
PROSE_WORDS = 4  # a line of four words or more that states no fact is a sentence, not a value


_WEAK_FACTS = frozenset({"env-phrase", "run-condition"})  # a sentence that states a value: only inside what reads as environment


def _line_fact(line: str, weak: bool) -> Detection | None:
    """The environment a single line states (a recorded fact first), or None."""
    facts = current()
    recorded = stated_fact(line.strip(), facts) if facts else None
    if recorded is not None:
        return Detection("runtime_environment", "detect.recorded-fact", f"states the recorded {recorded}")
    kind = fact_line(line)
    if kind is None or (kind in _WEAK_FACTS and not weak):
        return None
    return Detection("runtime_environment", "detect.environment-line", kind)


def _line_reads(text: str, unit: Unit, found: Detection | None) -> tuple[list, list, list] | None:
    """Each line of a paragraph read on its own: (spans, fact readings, is-a-sentence), or None when
    the paragraph's reading is not one lines can refine (a section, a catalogue, a quoted file)."""
    if unit.kind != "paragraph" or (found is not None and found.rule_id not in _LINE_READ):
        return None
    spans = [(unit.start + a, unit.start + b) for a, b in _lines(text[unit.start:unit.end])]
    reads = [_line_fact(text[a:b], found is not None) for a, b in spans]
    prose = [r is None and len(text[a:b].split()) >= PROSE_WORDS for (a, b), r in zip(spans, reads, strict=True)]
    return spans, reads, prose


def _demote(text: str, units: list[Unit], readings: list) -> None:
    """A paragraph read as environment by its words in which no line states a fact, and which is
    mostly sentences (rules that mention a repository, a sandbox or a path), is not the environment."""
    for i, unit in enumerate(units):
        found = readings[i]
        if found is None or found.source != "runtime_environment":
            continue
        lines = _line_reads(text, unit, found)
        if lines is not None and not any(lines[1]) and sum(lines[2]) * 2 >= len(lines[0]):
            readings[i] = None


def _listings(text: str, units: list[Unit], readings: list) -> None:
    """Units of one entry each, one after another (`README.md`, blank, `src/app.py:` and its outline...),
    that name the recorded working directory's entries: together a listing of it, the environment.
    Without recorded entries, units that each start with a bare file path are such a listing, by pattern."""
    run: list[int] = []
    recorded = has_entries()
    names = names_entry if recorded else _bare_path
    found = (Detection("runtime_environment", "detect.recorded-fact", "lists the recorded working directory")
             if recorded else Detection("runtime_environment", "detect.path-listing", "a listing of file paths"))

    def close() -> None:
        if len(run) >= MIN_LISTING_UNITS:
            for i in run:
                readings[i] = found
        run.clear()

    for i, unit in enumerate(units):
        if unit.kind == "blank":
            continue
        first = text[unit.start:unit.end].lstrip().split("\n", 1)[0]
        if readings[i] is None and unit.kind in ("paragraph", "fence") and names(first):
            run.append(i)
        else:
            close()
    close()


MIN_LISTING_UNITS = 3
_BARE_PATH = re.compile(r"^\.?[\w@+-]+(?:[./][\w@+-]+)+/?:?$")


def _bare_path(line: str) -> bool:
    """The line is a file path and nothing else (`README.md`, `src/app.py:`), not a URL."""
    return bool(_BARE_PATH.match(line.strip())) and "://" not in line


def _unquoted_projects(readings: list) -> None:
    """With the workspace's files recorded, project instructions are where an instruction file is
    quoted: a marker or a section name that quotes none of them (a rule that names AGENTS.md, a
    slot left empty) is not."""
    if recorded_files() is None:
        return  # no record of the files: the markers are all there is
    if any(r is not None and r.rule_id == "detect.recorded-file" and r.source == "project_instructions"
           for r in readings):
        return
    for i, found in enumerate(readings):
        if found is not None and found.source == "project_instructions" and found.rule_id.startswith("detect.project"):
            readings[i] = None


def _fact_lines(text: str, unit: Unit, found: Detection | None) -> list[tuple[int, int, Detection | None]]:
    """A paragraph of sentences with fact lines among them (`Current date: ...` after the rules): the
    environment is the lines that state the facts, the sentences keep the paragraph's other reading.
    A paragraph of fact lines (and short entries between them) is environment whole."""
    whole = [(unit.start, unit.end, found)]
    lines = _line_reads(text, unit, found)
    if lines is None:
        return whole
    spans, reads, prose = lines
    first = next((r for r in reads if r is not None), None)
    if first is None:
        return whole
    if not any(prose):
        return [(unit.start, unit.end, found or first)]
    for k in range(len(spans) - 1):  # a line that introduces the facts below it (`... running in:`) is theirs
        if prose[k] and reads[k + 1] is not None and text[spans[k][0]:spans[k][1]].rstrip().endswith(":"):
            reads[k], prose[k] = reads[k + 1], False
    out: list[tuple[int, int, Detection | None]] = []
    label: Detection | None = None
    for (a, b), r, is_prose in zip(spans, reads, prose, strict=True):
        label = r if r is not None else None if is_prose else label  # a short entry goes with the line above
        if out and (out[-1][2] is None) == (label is None):
            out[-1] = (out[-1][0], b, out[-1][2])
        else:
            out.append((a, b, label))
    return out


def _nested(text: str, unit: Unit, found: Detection | None, depth: int) -> list[tuple[int, int, Detection | None]]:
    """A tag block's own sections when it holds some (`<session_context>` ending in a quoted
    `<project_context>`); otherwise the unit as one reading. Sections read as nothing take the tag's."""
    whole = [(unit.start, unit.end, found)]
    if unit.kind != "tag" or depth >= MAX_DEPTH:
        return whole
    open_end = text.find("\n", unit.start, unit.end) + 1
    close = text.rfind(f"</{unit.label}>", unit.start, unit.end)
    if open_end <= 0 or close < open_end or text[unit.start:open_end].strip().endswith(f"</{unit.label}>"):
        return whole
    inner = text[open_end:close]
    if "<" not in inner and "#" not in inner and "from" not in inner.lower():
        return whole
    parts = read_pieces(inner, depth + 1)
    if all(p.source is None for p in parts):
        return whole
    out = [(unit.start, open_end, found)]
    for p in parts:
        reading = Detection(p.source, p.rule_id, p.evidence) if p.source else found
        out.append((open_end + p.start, open_end + p.end, reading))
    out.append((close, unit.end, found))
    return out


def read_pieces(text: str, depth: int = 0) -> list[Piece]:
    """The text's units, each read by the detectors, merged into runs of the same reading.

    Blank runs join the piece before them; a short intro line ending in `:` joins the piece it
    introduces; a heading whose section reads as nothing takes the reading of its first unit.
    The pieces tile the text.
    """
    units = split_units(text)
    readings = []
    before = ""  # the last line of the previous non-blank unit (what introduces a fence)
    for u in units:
        readings.append(None if u.kind == "blank" else _reading(text, u, before))
        if u.kind != "blank":
            before = text[u.start:u.end].strip().splitlines()[-1]
    _demote(text, units, readings)
    _unquoted_projects(readings)
    _listings(text, units, readings)
    content = [i for i, u in enumerate(units) if u.kind != "blank"]
    for k in range(len(content) - 2, -1, -1):  # headings take what follows them, nested ones too
        i, nxt = content[k], content[k + 1]
        if units[i].kind == "heading" and readings[i] is None and readings[nxt] is not None:
            readings[i] = readings[nxt]
    for k, i in enumerate(content[:-1]):
        nxt = content[k + 1]
        body = text[units[i].start:units[i].end].rstrip()
        intro = units[i].kind == "paragraph" and body.endswith(":") and len(body) < 300
        if intro:  # an intro announces what follows: a catalogue, a quoted project file
            announced = catalogue_intro(body.splitlines()[-1])
            if announced is not None and looks_like_list(text[units[nxt].start:units[nxt].end]):
                readings[nxt] = announced
            elif readings[i] is not None and readings[i].source == "project_instructions" and (
                    readings[nxt] is None or readings[nxt].rule_id.endswith("-section")):
                readings[nxt] = readings[i]
        if (intro or units[i].kind == "heading") and readings[nxt] is not None:
            if readings[i] is None or (intro and readings[nxt].source != readings[i].source):
                readings[i] = readings[nxt]
    _environment_sections(units, readings)
    _quoted_files(units, readings)
    pieces: list[Piece] = []
    for unit, found in zip(units, readings, strict=True):
        if unit.kind == "blank" and pieces:
            last = pieces[-1]
            pieces[-1] = Piece(last.start, unit.end, last.source, last.rule_id, last.evidence, last.label)
            continue
        label = unit.label if unit.kind in ("tag", "heading") else unit.section
        parts = _fact_lines(text, unit, found) if unit.kind == "paragraph" else _nested(text, unit, found, depth)
        for start, end, reading in parts:
            source = reading.source if reading else None
            rule = reading.rule_id if reading else None
            if pieces and pieces[-1].source == source and pieces[-1].rule_id == rule:
                last = pieces[-1]
                pieces[-1] = Piece(last.start, end, source, rule, last.evidence, last.label)
            else:
                pieces.append(Piece(start, end, source, rule, reading.evidence if reading else "", label))
    if pieces and pieces[0].start > 0:  # a leading blank run
        first = pieces[0]
        pieces[0] = Piece(0, first.end, first.source, first.rule_id, first.evidence, first.label)
    return pieces or [Piece(0, len(text), None, None)]
