"""Client-independent detectors: what a unit of text is, from its words and shape alone.

A client never seen before still gets its layout read: a cwd line, a directory tree or an
`<env>` tag is runtime environment whoever sends it; a quoted AGENTS.md is project
instructions; a `<system-reminder>` is a reminder; a list of skills is a catalogue. Each
detector returns the source it found with a rule id (`detect.<what>`) and the evidence, or
None — the caller keeps the block's own attributes then (or `unknown` where nothing says
more). Client rules refine; they are not needed for a client to be read right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# --- signals ------------------------------------------------------------------------------

_ENV_LINE = re.compile(
    r"(?im)^[\s>*•-]*(?:the\s+)?(?:(?:current|primary|present)\s+)?(?:working\s+director(?:y|ies)|workspace(?:\s+root)?"
    r"|cwd|platform|os(?:\s+version)?|operating\s+system|shell|time\s*zone|timezone|hostname|host|architecture|arch"
    r"|kernel|node(?:\.js)?\s+version|python\s+version|git\s+branch|current\s+branch|main\s+branch|branch"
    r"|is\s+a\s+git\s+repo(?:sitory)?|today'?s\s+date|current\s+date|date|current\s+time|local\s+time"
    r"|sandbox(?:\s+mode)?|approval(?:\s+policy)?|permission\s+mode|network\s+access|username|home\s+directory)"
    r"\s*(?:is\s*)?[:=]\s*\S")
_ENV_TAG_CONTENT = re.compile(r"(?i)<(cwd|shell|current_date|timezone|os|platform|date|sandbox_mode|approval_policy"
                              r"|network_access|git_branch|workspace)>")
_ENV_PHRASE = re.compile(
    r"(?i)\b(?:current working directory is|working directory is|you are (?:running|working|operating) (?:on|in)"
    r"|today'?s date is|the (?:current )?date is|the current time is|is a git repository|git status"
    r"|current branch|recent commits|sandbox_mode|sandbox mode|approval policy|approval_policy|permission mode"
    r"|network access is (?:enabled|disabled|restricted)|running on \*{0,2}(?:linux|macos|darwin|windows)"
    r"|(?:running|operating) (?:outside|inside) (?:of )?a sandbox|sandbox container|not (?:running )?in a sandbox"
    r"|(?:directory|folder) is (?:being managed by|under) (?:a )?git|is a git repo(?:sitory)?"
    r"|operating system is|the os is|directory listing|directory structure|folder structure|file tree)\b")
_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d(?!\d)|\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? "
                   r"(?:\d{1,2} )?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d")
_TREE = re.compile(r"(?m)^[\s│|]*(?:├──|└──|├─|└─|\|--|`--)")
_UNAME = re.compile(r"\b(?:Linux|Darwin) (?:\S+ )?\d+\.\d+\.\d+\S* .*(?:GNU/Linux|x86_64|arm64|aarch64)")
_ABS_PATH = re.compile(r"(?<![\w.$])(?:/home/|/Users/|/root/|/tmp/|/workspace|/mnt/|/var/|/opt/|/srv/|[A-Z]:\\)[\w.~/\\-]*")

_PROJECT_FILE = re.compile(r"(?i)\b(?:AGENTS|CLAUDE|GEMINI|QWEN|CRUSH|CONVENTIONS|COPILOT)\.md\b|\.cursorrules\b"
                           r"|copilot-instructions\.md|\.windsurfrules|\.clinerules")
# a line that introduces a quoted instruction file: what follows it is that file
_PROJECT_INTRO = re.compile(r"(?im)^\s*(?:-{2,}\s*)?(?:contents? of|context from|instructions from|from|loaded from"
                            r"|project instructions from)\s*:?\s*\S*(?:AGENTS|CLAUDE|GEMINI|QWEN|CRUSH|CONVENTIONS"
                            r"|COPILOT)\.md\b.*$")
_PROJECT_PHRASE = re.compile(r"(?i)\b(?:project instructions|repository guidelines|project guidelines|project rules"
                             r"|instructions for this (?:project|repository|repo)|project memory|project context"
                             r"|contents of [^\n]*\.md)\b")
_SUMMARY = re.compile(r"(?i)this session is being continued from a previous conversation|summary of (?:the|our) "
                      r"(?:previous |earlier )?conversation|conversation summary|the conversation (?:so far )?"
                      r"(?:is|was) summari[sz]ed|context (?:was|has been) compacted|previous context compacted")
_CATALOGUE_WORD = re.compile(r"(?i)\b(skills?|plugins?|slash commands?|commands|agents?|subagents?|sub-agents?"
                             r"|agent types|tools?|mcp servers?|mcp tools?|extensions?|prompts?)\b")
_PLUGIN_WORD = re.compile(r"(?i)\b(skills?|plugins?|slash commands?|commands|extensions?|prompts?)\b")
# a catalogue entry names something: `- name: what it does`, `- name (...)` or a bare name; numbered
# steps and bold `**Word:**` bullets are how rules are written, not catalogues
_ITEM = re.compile(r"^\s*(?:[-*•+]\s+)?[`\"']?(?!\*)[A-Za-z@/][\w.:/@-]{1,63}[`\"']?\s*(?:$|[:—–(]|-\s)")
_ITEM_CONT = re.compile(r"^\s{2,}\S")  # a wrapped or indented continuation of the item above

ENV_SECTION = re.compile(r"(?i)^(?:env|environment(?:[ _]?(?:context|info|details|information))?|session[ _]context"
                         r"|(?:working|runtime|execution|current|your)[ _]environment|operating[ _]system"
                         r"|sandbox[ _](?:mode|status)|repository[ _]status"
                         r"|system[ _]?info(?:rmation)?|workspace(?:[ _]info)?|runtime(?:[ _]context)?|machine"
                         r"|context[ _]?info|gitstatus|git[ _]status|directory[ _](?:structure|listing)|os|working[ _]directory"
                         r"|date(?:[ _]and[ _]time)?|current[ _]date|time)$")
PROJECT_SECTION = re.compile(r"(?i)^(?:project[ _](?:information|instructions|context|rules|guidelines|memory)"
                             r"|user[ _]instructions|agents\.md.*|claude\.md.*|gemini\.md.*)$")
# a heading that names an instruction file by itself (`## /repo/AGENTS.md`, `## Workspace AGENTS.md`): the
# file's text follows it
FILE_HEADING = re.compile(r"(?i)^(?:[\w'-]+ ){0,3}`?(?:[\w.~-]*/)*(?:AGENTS|CLAUDE|GEMINI|QWEN|KIMI|CRUSH|CONVENTIONS)"
                          r"(?:\.local)?\.md`?:?$")  # `## Workspace AGENTS.md` too
CATALOGUE_SECTION = re.compile(r"(?i)^(?:available[ _])?(?:(?:agent[ _])?skills?|plugins?|agents?|agent[ _]types"
                               r"|sub[ _]?agents?|tools"
                               r"|deferred[ _]tools|commands|slash[ _]commands|mcp(?:[ _]servers)?|extensions)"
                               r"(?:[ _](?:instructions|list|catalog(?:ue)?))?$")
FILE_TAG = re.compile(r"(?i)^(?:file|document|attachment|file_content|source_file|repository_file)$")
_FILE_INTRO = re.compile(r"(?im)^\s*(?:contents? of |file:\s*|here is (?:the )?(?:file )?|path:\s*)?[`'\"]?"
                         r"(?:[\w.-]+/)*[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cc|cpp|hpp|cs|php|sh|md|txt|toml"
                         r"|ya?ml|json|ini|cfg|csv|sql|html|css|lock|env|example)[`'\"]?\s*:?\s*$")
REMINDER_TAG = re.compile(r"(?i)^system[-_]?reminder$|^reminder$")
SUMMARY_SECTION = re.compile(r"(?i)^(?:summary|conversation[ _]summary|compacted[ _]context|previous[ _]context)$")


@dataclass(frozen=True)
class Detection:
    source: str  # platform_rules, runtime_environment, project_instructions, system_reminder, tool_catalogue,
    #              plugin_catalogue, summary
    rule_id: str
    evidence: str


def _env_score(text: str) -> tuple[int, str]:
    """How many distinct environment signals the text carries, and the first one as evidence."""
    hits: list[str] = []
    for name, pattern in (("env-line", _ENV_LINE), ("env-tag", _ENV_TAG_CONTENT), ("env-phrase", _ENV_PHRASE),
                          ("directory-tree", _TREE), ("uname", _UNAME)):
        found = pattern.findall(text)
        if found:
            hits.extend([name] * min(len(found), 4))
    if _DATE.search(text):
        hits.append("date")
    if _ABS_PATH.search(text):
        hits.append("absolute-path")
    return len(hits), (hits[0] if hits else "")


def looks_like_list(text: str) -> bool:
    """Mostly items: bullets, numbered entries, `name: description` lines or bare identifiers."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 3:
        return False
    items = sum(1 for ln in lines if _ITEM.match(ln))
    continued = sum(1 for ln in lines if not _ITEM.match(ln) and _ITEM_CONT.match(ln))
    return items >= 3 and (items + continued) >= 0.7 * len(lines) - 1


def environment(text: str, label: str = "") -> Detection | None:
    """Runtime environment: cwd, OS, shell, date, git state, sandbox or permission mode, a tree."""
    score, first = _env_score(text)
    if label and ENV_SECTION.match(label.strip().strip("#").strip()) and score >= 1:
        # a section named for the environment, whose text carries it (not static product notes)
        return Detection("runtime_environment", "detect.environment-section", f"section {label!r}")
    lines = max(1, sum(1 for ln in text.splitlines() if ln.strip()))
    if score >= 2 and (score >= lines / 4 or score >= 6):
        return Detection("runtime_environment", "detect.environment", first)
    if score >= 1 and lines <= 3 and len(text) < 400 and first not in ("absolute-path", "env-phrase"):
        return Detection("runtime_environment", "detect.environment-line", first)
    return None


# a run condition stated as a value inside a sentence: "`sandbox_mode` is `workspace-write`",
# "Approval policy is currently never", "network access is restricted"
_CONDITION = re.compile(r"(?i)\b(?:sandbox[ _]mode|approval[ _]policy|permission[ _]mode|network[ _]access)`?\s+is\s+"
                        r"(?:currently\s+|set\s+to\s+)?[`'\"]?[\w-]+")
_NUMBERED = re.compile(r"^\d{1,2}[.)]\s+")
_VALUE_WORDS_MAX = 8  # `Platform: linux`, not `Platform: use the tool the user's platform offers`
_FACT_VALUE = re.compile(r"(?i)(?:^|[\s`'\"(])(?:/|~/|[A-Z]:\\)\S*|\b(?:linux|darwin|macos|windows|win32|bash|zsh|fish"
                         r"|powershell|x86_64|arm64|aarch64)\b|\d")


def fact_line(line: str) -> str | None:
    """What environment fact a single line states as a value, or None: `Working directory: /x`,
    `<cwd>/x</cwd>`, a `uname` line, a tree line, `Today's date is 2026-12-01`. A sentence of rules
    that names the platform or the date in passing states nothing."""
    text = _NUMBERED.sub("", line.strip(), count=1)
    if not text or len(text) > 240:
        return None
    m = _ENV_LINE.match(text)
    if m is not None:
        value = text[m.end() - 1:]
        if len(value.split()) <= _VALUE_WORDS_MAX:
            return "env-line"
    if _ENV_TAG_CONTENT.match(text) and re.search(r"</\w+>\s*$", text):
        return "env-tag"
    if _UNAME.search(text):
        return "uname"
    if _TREE.match(text):
        return "directory-tree"
    phrase = _ENV_PHRASE.search(text)
    if phrase is not None and len(text.split()) <= 16 and _FACT_VALUE.search(text[phrase.end():]):
        return "env-phrase"
    if _DATE.fullmatch(text.rstrip(".")):
        return "date"
    if _CONDITION.search(text):
        return "run-condition"
    return None


def project_intro(text: str) -> Detection | None:
    """A line that introduces a quoted instruction file (`Contents of .../CLAUDE.md ...:`, `--- Context
    from: GEMINI.md ---`, `Instructions from: .../AGENTS.md`): the text from it on is that file."""
    match = _PROJECT_INTRO.search(text)
    if match and len(match.group(0)) < 240:
        return Detection("project_instructions", "detect.project-file", match.group(0).strip()[:80])
    return None


def project_instructions(text: str, label: str = "") -> Detection | None:
    """Project instructions: a quoted AGENTS.md / CLAUDE.md / GEMINI.md or a project-rules section."""
    if label and not text and FILE_HEADING.match(label.strip()):
        return Detection("project_instructions", "detect.project-file", f"heading {label.strip()!r}")
    if label and PROJECT_SECTION.match(label.strip()):
        return Detection("project_instructions", "detect.project-section", f"section {label!r}")
    intro = project_intro("\n".join(text.lstrip().splitlines()[:1]))
    if intro is not None:
        return intro
    lines = text.lstrip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > 200:  # a long sentence that mentions AGENTS.md in passing quotes nothing
        return None
    match = _PROJECT_FILE.search(first) or _PROJECT_PHRASE.search(first)
    if match and (len(lines) > 1 or first.rstrip().endswith(":")):
        return Detection("project_instructions", "detect.project-file", match.group(0))
    return None


def catalogue(text: str, label: str = "") -> Detection | None:
    """A list of skills, agents, tools or commands (a catalogue the client offers)."""
    clean = label.strip().replace("_", " ").replace("-", " ")
    if clean and CATALOGUE_SECTION.match(clean):
        kind = "plugin_catalogue" if _PLUGIN_WORD.search(clean) else "tool_catalogue"
        return Detection(kind, "detect.catalogue-section", f"section {label!r}")
    if not looks_like_list(text):
        return None
    intro = "\n".join(text.strip().splitlines()[:2])
    word = _CATALOGUE_WORD.search(intro) or (_CATALOGUE_WORD.search(clean) if clean else None)
    if not word:
        return None
    kind = "plugin_catalogue" if _PLUGIN_WORD.search(intro) or _PLUGIN_WORD.search(clean) else "tool_catalogue"
    return Detection(kind, "detect.catalogue-list", word.group(0))


def workspace_file(text: str, tag: str = "", intro: str = "") -> Detection | None:
    """A repository file pasted into the context by the client: data about the workspace."""
    if tag and FILE_TAG.match(tag):
        return Detection("runtime_environment", "detect.workspace-file", f"<{tag}>")
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    if _FILE_INTRO.match(intro or "") or (first.startswith(("```", "~~~")) and _FILE_INTRO.match(first.strip("`~ "))):
        return Detection("runtime_environment", "detect.workspace-file", (intro or first).strip()[:80])
    return None


_CATALOGUE_INTRO = re.compile(r"(?i)\b(?:available|following|you can use|you have access to|can be (?:used|invoked))\b")


def catalogue_intro(line: str) -> Detection | None:
    """A line that announces a catalogue (`The following skills are available ...:`)."""
    line = line.strip()
    if not line.endswith(":") or len(line) > 300 or not _CATALOGUE_INTRO.search(line):
        return None
    word = _CATALOGUE_WORD.search(line)
    if not word:
        return None
    kind = "plugin_catalogue" if _PLUGIN_WORD.search(word.group(0)) else "tool_catalogue"
    return Detection(kind, "detect.catalogue-list", word.group(0))


def reminder(tag: str) -> Detection | None:
    if tag and REMINDER_TAG.match(tag):
        return Detection("system_reminder", "detect.system-reminder", f"<{tag}>")
    return None


def summary(text: str, label: str = "") -> Detection | None:
    if label and SUMMARY_SECTION.match(label.strip()):
        return Detection("summary", "detect.summary-section", f"section {label!r}")
    match = _SUMMARY.search(text[:800])
    if match:
        return Detection("summary", "detect.summary", match.group(0))
    return None


def detect(text: str, label: str = "", tag: str = "", intro: str = "") -> Detection | None:
    """The first detector that recognises `text` (with its section heading or tag name, and for a
    fenced block the line that introduces it)."""
    name = tag or label
    pasted = workspace_file(text, tag, intro)
    if pasted is not None:
        return pasted
    found = reminder(tag)
    if found is not None:  # a reminder that quotes an instruction file, or carries the environment
        quoted = project_intro(text)
        if quoted is not None:
            return quoted
        score, first = _env_score(text)
        return Detection("runtime_environment", "detect.environment", first) if score >= 2 else found
    listed = None if text.lstrip().startswith(("```", "~~~")) else catalogue(text, name)  # a fence is an example
    return summary(text, name) or project_instructions(text, name) or listed or environment(text, name)
