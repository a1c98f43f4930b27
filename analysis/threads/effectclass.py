"""The effect class of a proposed tool call: what it would do if it ran, on the evidence it carries.

Classes: `read` (looks, changes nothing), `write` (creates or changes files or state), `destructive`
(deletes, overwrites history, kills), `network` (reaches another machine), `execute` (runs code whose
effects its name does not tell: interpreters, build tools, scripts, programs not listed here). A call
may have several; the primary one is the first present in `PRIMARY_ORDER`. `unknown` when nothing in the
call says what it does: an unfamiliar tool name with no verb, no telling argument and no description
is never guessed from.

Evidence, in order, each with its rule id:

- a shell command (`toolloop.shell_command`: a `command`/`cmd`/`script` argument or a shell tool's
  free-form input) is parsed with tree-sitter's Bash grammar (`tree-sitter-bash`, the grammar Codex and
  other clients use for their own command checks) into simple commands: lists (`&&`, `||`, `;`),
  pipes, subshells, command and process substitutions, `if`/`for`/`while` bodies, `bash -c STRING` and
  heredocs fed to a shell are split, each simple command classified by its program (`shell.read.cat`,
  `shell.destructive.rm`, `shell.network.git-push`, `shell.execute.unlisted`), wrappers (`sudo`, `env`,
  `xargs`, `timeout`, ...) stepped over, redirections (`>`, `>>`, `&>`) writes of their target and `<`
  a read. `cd DIR` moves the base later paths are resolved against. A command the parser cannot read
  is `unparsed`, with the reason, and classed only as `execute` (`shell.unparsed`);
- a patch in the `*** Begin Patch` format (Codex's `apply_patch`, as a tool's input or a command's
  heredoc): `Add File`/`Update File` writes, `Delete File` destructive (`patch.*`);
- the tool's name, split into words (`mcp__fs__write_file` -> write, file; `WebFetch` -> web, fetch),
  matched against known verbs (`name.write`, `name.network`, ...);
- the arguments: path-like keys (`path`, `file_path`, `notebook_path`, `dir`, ..., or a property
  whose schema description calls it a path/file/directory) name the paths touched; `url`/`uri` keys
  holding a URL are network (`arg.url`); content beside a path (`content`, `new_string`, `patch`,
  ...) is a write (`arg.content-with-path`);
- only when the name says nothing: the first sentence of the tool's offered description
  (`description.<class>`).

Paths are resolved against the recorded working directory (`~` against the recorded home, `..`,
absolute paths, `cd`, a shell tool's `cwd`/`workdir` argument); `$VAR` other than `$HOME`/`$PWD` is
left unresolved. Each path is `inside` or `outside` the workspace, or unknown.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ctxtap.analysis.threads.toolloop import SHELL_TOOLS, shell_command

PRIMARY_ORDER = ("destructive", "write", "network", "execute", "read")
MAX_DEPTH = 4  # nested `bash -c` strings followed
MAX_COMMAND_CHARS = 100_000
DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero", "/dev/random",
           "/dev/urandom")
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish"}

# --- verbs in tool names and descriptions -------------------------------------------------------
NAME_VERBS: dict[str, str] = {}
for _cls, _words in {
    "read": "read view cat get list ls glob grep search find open show head tail stat inspect lookup query "
            "describe outline tree count print display peek scan locate explore diff check status info",
    "write": "write edit create update patch apply replace insert append save put set modify rename move copy "
             "mkdir touch multiedit overwrite change add commit upsert store replace_all attach undo",
    "destructive": "delete remove rm rmdir drop destroy purge truncate kill wipe erase unlink terminate "
                   "uninstall cancel stop shutdown abort revoke reset clean cleanup clear",
    "network": "fetch http https url web browse browser download upload request curl wget navigate crawl "
               "scrape internet online websearch webfetch push post send publish email install",
    "execute": "run exec execute shell bash terminal cmd eval spawn launch script python powershell repl "
               "invoke",
}.items():
    for _w in _words.split():
        NAME_VERBS[_w] = _cls

# --- programs of shell commands --------------------------------------------------------------------
PROGRAMS: dict[str, str] = {}
for _cls, _words in {
    "read": "cat tac less more head tail grep egrep fgrep rg ag ack ls ll la dir tree find fd wc stat file du df "
            "pwd echo printf diff cmp comm sort uniq cut awk gawk jq yq xxd hexdump od strings basename dirname "
            "realpath readlink which whereis type nl column tr test [ [[ printenv id uname hostname ps lsof "
            "sha1sum sha256sum sha512sum md5sum cksum base64 true false : date whoami env export set unset "
            "alias history sleep wait clear seq yes fold fmt paste join expand look rev tput locale getconf "
            "nproc free uptime top htop vmstat iostat lscpu lsblk mount tty groups users w who last man info "
            "help cal bc expr let read declare local shift return exit break continue shopt ulimit umask "
            "zcat zgrep bzcat xzcat sed",
    "write": "touch mkdir cp install ln tee chmod chown chgrp patch unzip gunzip gzip bzip2 xz zip tar "
             "apply_patch mktemp rsync",
    "destructive": "rm rmdir shred unlink kill pkill killall truncate dd mkfs wipefs reboot shutdown halt",
    "network": "curl wget ssh scp sftp ftp nc ncat netcat telnet ping dig nslookup host http https gh aria2c "
               "traceroute whois",
    "execute": "python python2 python3 node deno ruby perl php java javac gcc g++ cc clang make cmake ninja "
               "pytest tox nox bash sh zsh dash ksh fish source . eval go cargo rustc dotnet mvn gradle "
               "npx bunx tsc tsx ts-node jest vitest mocha ruff black mypy eslint prettier pylint flake8 "
               "isort osascript open xdg-open",
}.items():
    for _w in _words.split():
        PROGRAMS[_w] = _cls
PROGRAMS["mv"] = "write"

WRAPPERS = {"sudo", "doas", "env", "nohup", "time", "timeout", "nice", "ionice", "command", "builtin", "exec",
            "stdbuf", "xargs", "watch", "strace", "caffeinate", "unbuffer", "chronic", "then", "do"}
_WRAPPER_VALUE_OPTS = {  # options of a wrapper that take the next word as their value
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D"}, "doas": {"-u", "-C"},
    "env": {"-u", "-C", "-S"}, "nice": {"-n"}, "ionice": {"-c", "-n", "-p"}, "timeout": {"-s", "-k"},
    "xargs": {"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"}, "stdbuf": set(), "watch": {"-n", "-d"},
    "strace": {"-o", "-e", "-p"},
}
# options whose next word is a value, not a path, for the common file programs
_VALUE_OPTS = {
    "head": {"-n", "-c"}, "tail": {"-n", "-c"}, "grep": {"-e", "-f", "-A", "-B", "-C", "-m", "--include",
                                                          "--exclude", "--exclude-dir"},
    "rg": {"-e", "-g", "-t", "-T", "-A", "-B", "-C", "-m", "--glob", "--type"}, "sort": {"-k", "-t", "-o"},
    "cut": {"-d", "-f", "-c", "-b"}, "ls": {"-I", "--ignore"}, "find": set(), "tar": {"-C"},
    "du": {"-d", "--max-depth"}, "tree": {"-L", "-I", "-P"}, "diff": {"-U"}, "wc": set(), "sed": {"-e", "-f"},
    "awk": {"-F", "-v", "-f"}, "jq": {"--arg", "--argjson"}, "cp": {"-t"}, "mv": {"-t"}, "install": {"-m", "-o",
                                                                                                       "-g"},
    "chmod": set(), "xargs": set(), "tee": set(), "touch": {"-d", "-t", "-r"}, "mkdir": {"-m"},
    "ln": {"-t"}, "unzip": {"-d"}, "zip": set(), "rm": set(), "cat": set(), "stat": {"-c", "-f", "--format"},
}
_PATTERN_FIRST = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "jq", "yq", "zgrep", "look"}
_NOT_PATHS = {"echo", "printf", "test", "[", "[[", "export", "set", "unset", "alias", "read", "declare", "local",
              "sleep", "date", "seq", "yes", "expr", "let", "bc", "kill", "pkill", "killall", "exit", "return",
              "shift", "true", "false", ":", "which", "whereis", "type", "help", "man", "id", "uname", "tput",
              "ps", "hostname", "whoami", "env", "printenv", "history", "ulimit", "umask", "shopt", "wait",
              "break", "continue", "ping", "dig", "nslookup", "host", "whois", "traceroute", "nproc", "locale",
              "getconf", "cal", "clear", "top", "htop", "free", "uptime", "gh", "ssh"}
# subcommands of multi-tools: (program, subcommand) -> classes
SUBCOMMANDS: dict[str, dict[str, tuple[str, ...]]] = {
    "git": {
        **dict.fromkeys("status log diff show blame ls-files ls-tree rev-parse grep describe shortlog reflog "
                        "cat-file rev-list show-ref name-rev whatchanged help version --version count-objects "
                        "for-each-ref merge-base check-ignore".split(), ("read",)),
        **dict.fromkeys("add commit checkout switch merge rebase stash apply am cherry-pick restore tag init mv "
                        "revert notes config worktree sparse-checkout bisect submodule".split(), ("write",)),
        **dict.fromkeys("push".split(), ("network",)),
        **dict.fromkeys("pull fetch clone ls-remote remote".split(), ("network", "write")),
        **dict.fromkeys("reset clean rm gc prune filter-branch".split(), ("destructive",)),
        "branch": ("read",),
    },
    "npm": {**dict.fromkeys("install i add ci update upgrade up uninstall remove rm publish audit outdated view "
                            "info search login".split(), ("network", "write")),
            **dict.fromkeys("run test start exec x run-script t".split(), ("execute",)),
            **dict.fromkeys("ls list config help root bin prefix --version -v".split(), ("read",))},
    "pip": {**dict.fromkeys("install download wheel".split(), ("network", "write")),
            **dict.fromkeys("uninstall".split(), ("destructive",)),
            **dict.fromkeys("list show freeze check help --version -V config inspect".split(), ("read",))},
    "uv": {**dict.fromkeys("add sync lock pip tool venv init remove python".split(), ("network", "write")),
           "run": ("execute",), "tree": ("read",), "--version": ("read",)},
    "poetry": {**dict.fromkeys("install add update lock remove publish".split(), ("network", "write")),
               "run": ("execute",), "show": ("read",)},
    "cargo": {**dict.fromkeys("install fetch add update publish search".split(), ("network", "write")),
              **dict.fromkeys("build run test check bench clippy fmt doc".split(), ("execute",)),
              "clean": ("destructive",), "tree": ("read",), "metadata": ("read",)},
    "go": {**dict.fromkeys("get install".split(), ("network", "write")),
           **dict.fromkeys("build run test generate vet fmt".split(), ("execute",)),
           **dict.fromkeys("env version list doc".split(), ("read",)), "mod": ("network", "write"),
           "clean": ("destructive",)},
    "docker": {**dict.fromkeys("pull push login search".split(), ("network",)),
               **dict.fromkeys("run exec build compose start restart".split(), ("execute",)),
               **dict.fromkeys("rm rmi kill stop prune".split(), ("destructive",)),
               **dict.fromkeys("ps images inspect logs version info".split(), ("read",))},
    "kubectl": {**dict.fromkeys("apply create patch edit scale set label annotate rollout".split(),
                                ("network", "write")),
                **dict.fromkeys("delete drain".split(), ("network", "destructive")),
                **dict.fromkeys("get describe logs top explain version config".split(), ("network", "read")),
                "exec": ("network", "execute")},
    "brew": {**dict.fromkeys("install upgrade update reinstall tap".split(), ("network", "write")),
             **dict.fromkeys("uninstall remove rm".split(), ("destructive",)),
             **dict.fromkeys("list info search --version".split(), ("read",))},
    "systemctl": {**dict.fromkeys("status show list-units is-active cat".split(), ("read",)),
                  **dict.fromkeys("start restart enable reload".split(), ("execute",)),
                  **dict.fromkeys("stop disable kill mask".split(), ("destructive",))},
}
for _alias, _base in {"pnpm": "npm", "yarn": "npm", "bun": "npm", "pip3": "pip", "apt": "brew", "apt-get": "brew",
                      "yum": "brew", "dnf": "brew", "apk": "brew", "gem": "pip", "podman": "docker"}.items():
    SUBCOMMANDS[_alias] = SUBCOMMANDS[_base]
_SUB_DEFAULT = {"git": ("read",), "npm": ("execute",), "pnpm": ("execute",), "yarn": ("network", "write"),
                "bun": ("execute",), "pip": ("read",), "pip3": ("read",), "uv": ("execute",), "poetry": ("execute",),
                "cargo": ("execute",), "go": ("execute",), "docker": ("execute",), "podman": ("execute",),
                "kubectl": ("network",), "brew": ("read",), "apt": ("read",), "apt-get": ("read",),
                "yum": ("read",), "dnf": ("read",), "apk": ("read",), "gem": ("read",), "systemctl": ("read",)}
# options of a multi-tool taking a value before its subcommand (`git -C dir status`)
_TOOL_VALUE_OPTS = {"git": {"-C", "-c", "--git-dir", "--work-tree"}, "docker": {"-H", "--context"},
                    "kubectl": {"-n", "--namespace", "--context"}, "npm": {"--prefix"}, "uv": {"--directory"},
                    "cargo": {"--manifest-path"}}

# --- argument keys ------------------------------------------------------------------------------------
_PATH_WORDS = {"path", "paths", "file", "files", "filepath", "filename", "filenames", "dir", "dirs", "directory",
               "directories", "folder", "notebook", "dirpath", "pathname"}
_PATH_KEYS = {"cwd", "workdir"}
# keys that name a path only sometimes (`target: prod`, `source: web`): their value must look like one
_MAYBE_PATH_KEYS = {"src", "dst", "dest", "source", "destination", "target", "from", "to", "root", "location",
                    "output", "input"}
_PATH_SHAPE = re.compile(r"^(?:~|\.{1,2})?/|^\.{1,2}$|^[\w.@+-]+(?:/[\w.@+*?-]+)+/?$|^[\w@+-]+\.[A-Za-z0-9]{1,8}$")
_CWD_KEYS = {"cwd", "workdir", "working_directory", "workingdirectory", "working_dir", "dir_path", "directory",
             "dir", "cwd_path"}
_CONTENT_KEYS = {"content", "contents", "new_string", "old_string", "newstring", "oldstring", "new_str", "old_str",
                 "patch", "diff", "edits", "new_source", "file_text", "text", "code", "replacement", "data",
                 "insert_text", "new_content", "new_text", "old_text"}
_URL_KEYS = {"url", "uri", "urls", "href", "link", "endpoint", "website"}
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
_PATH_DESC = re.compile(r"\b(?:file|directory|folder|dir)\b[^.]{0,40}\bpath\b|\bpath\b[^.]{0,40}\b(?:file|"
                        r"directory|folder)\b|\babsolute path\b|\bpath to\b", re.I)
_PATCH_HEAD = re.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


@dataclass
class PathUse:
    path: str  # as the call names it
    access: str  # read, write, destructive, execute, cwd, unknown
    rule: str
    resolved: str | None = None  # absolute, normalised; None when it cannot be resolved
    inside: bool | None = None  # inside the workspace; None when unknown
    device: bool = False  # /dev/null and the like: neither inside nor outside


@dataclass
class CallEffect:
    classes: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    paths: list[PathUse] = field(default_factory=list)
    parse_status: str = "not_shell"  # parsed, unparsed, not_shell
    parse_detail: str | None = None
    commands: list[str] = field(default_factory=list)  # each simple command: "rm:destructive"

    @property
    def primary(self) -> str:
        return next((c for c in PRIMARY_ORDER if c in self.classes), "unknown")

    @property
    def scope(self) -> str:
        """inside, outside, mixed, unknown (a path could not be placed), none (no path named)."""
        seen = [p.inside for p in self.paths if not p.device and p.access != "cwd"]
        if not seen:
            return "none"
        if False in seen:
            return "mixed" if True in seen else "outside"
        return "unknown" if None in seen else "inside"

    def add(self, cls: str, rule: str) -> None:
        if cls not in self.classes:
            self.classes.append(cls)
        if rule not in self.rules:
            self.rules.append(rule)


@dataclass
class _Where:
    workspace: str | None
    home: str | None
    cwd: str | None  # the shell's current directory (moves with `cd`)


def resolve(path: str, where: _Where) -> tuple[str | None, bool | None, bool]:
    """(absolute path, inside the workspace, is a device) of a path as named."""
    text = path.strip()
    if text.startswith("file://"):
        text = text[7:]
    if text in DEVICES or text.startswith(("/dev/fd/", "/proc/self/fd/")):
        return text, None, True
    for var in ("$HOME", "${HOME}"):
        if text == var or text.startswith(var + "/"):
            text = "~" + text[len(var):]
    for var in ("$PWD", "${PWD}"):
        if (text == var or text.startswith(var + "/")) and where.cwd:
            text = where.cwd + text[len(var):]
    if "$" in text or "`" in text:
        return None, None, False
    if text == "~" or text.startswith("~/"):
        if not where.home:
            return None, None, False
        text = where.home + text[1:]
    elif text.startswith("~"):
        return None, None, False  # another user's home
    if not os.path.isabs(text):
        if not where.cwd:
            return None, None, False
        text = os.path.join(where.cwd, text)
    full = os.path.normpath(text)
    if full.startswith("//"):
        full = "/" + full.lstrip("/")
    if not where.workspace:
        return full, None, False
    ws = os.path.normpath(where.workspace)
    return full, os.path.commonpath([full, ws]) == ws, False


# --- the tool's name and description -----------------------------------------------------------------
def name_words(name: str) -> list[str]:
    """`mcp__github__create_issue` -> [create, issue]; `WebFetch` -> [web, fetch]; `str_replace_editor` -> ..."""
    last = name.split("__")[-1] if name.startswith("mcp__") else name
    last = re.split(r"[./:]", last)[-1] or last
    parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", last)
    return [p.lower() for p in parts]


def _stems(word: str) -> Iterable[str]:
    yield word
    if word.endswith("ies"):
        yield word[:-3] + "y"
    if word.endswith("es"):
        yield word[:-2]
    if word.endswith("s"):
        yield word[:-1]
    if word.endswith("ing"):
        yield word[:-3]
        yield word[:-3] + "e"
    if word.endswith("ed"):
        yield word[:-2]
        yield word[:-1]


def verbs_of(words: Iterable[str], stem: bool = False) -> list[str]:
    """Classes of the known verbs among words. A tool name's verbs are base forms (`list_runs`: list, and
    `runs` is a noun), so names are matched exactly; descriptions (`Reads a file`) are stemmed."""
    out = []
    for w in words:
        for s in (_stems(w) if stem else (w,)):
            cls = NAME_VERBS.get(s)
            if cls:
                if cls not in out:
                    out.append(cls)
                break
    return out


def name_classes(words: list[str]) -> list[str]:
    """A tool name's classes: its first verb is the action (`get_terminal_output` reads, `list_runs` lists,
    `search_and_replace` searches first); a network word anywhere (`web`, `fetch`, `url`) adds network, and a
    read over the network is network alone (`read_web_page`, `web_search`)."""
    found = verbs_of(words)
    action = next((c for c in found if c != "network"), None)
    out = [action] if action else []
    if "network" in found:
        out = ["network"] if action in (None, "read") else [*out, "network"]
    return out


def _description_class(description: str | None) -> str | None:
    """The class of the verb a description's first sentence leads with (`Reads a file ...`, `Fetch content
    from a URL`) or names after `to` (`Use this tool to delete ...`); a verb elsewhere in the sentence
    (`... when you have finished writing your plan`) is not the tool's action."""
    if not description:
        return None
    first = re.split(r"(?<=[.!?])\s|\n", description.strip(), maxsplit=1)[0]
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", first)[:40]]
    candidates = words[:1] + [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("to", "you")]
    for word in candidates:
        for s in _stems(word):  # stemmed: descriptions say "Reads", "Deletes"
            cls = NAME_VERBS.get(s)
            if cls and s not in {"set", "check", "info", "status", "count"}:
                return cls
    return None


# --- arguments and schema ----------------------------------------------------------------------------
def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _key_words(key: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", key)]


def _schema_path_keys(schema: dict | None) -> set[str]:
    """Properties the offered schema describes as paths (`"description": "The file to modify, as a path"`)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    out = set()
    if isinstance(props, dict):
        for key, spec in props.items():
            desc = spec.get("description") if isinstance(spec, dict) else None
            if isinstance(desc, str) and _PATH_DESC.search(desc[:300]):
                out.add(key)
            if isinstance(spec, dict) and spec.get("format") in ("uri-reference", "path"):
                out.add(key)
    return out


def _is_path_key(key: str, schema_paths: set[str], value: str | None = None) -> bool:
    if key in schema_paths:
        return True
    words = _key_words(key)
    if set(words) & _PATH_WORDS or _norm_key(key) in {_norm_key(k) for k in _PATH_KEYS | _PATH_WORDS}:
        return True
    return _norm_key(key) in _MAYBE_PATH_KEYS and value is not None and bool(_PATH_SHAPE.match(value.strip()))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v.strip()]
    return []


# --- patches -----------------------------------------------------------------------------------------
def _patch_effect(text: str, where: _Where, effect: CallEffect) -> bool:
    heads = _PATCH_HEAD.findall(text)
    if "*** Begin Patch" not in text or not heads:
        return False
    for kind, path in heads:
        access = {"Add File": "write", "Update File": "write", "Move to": "write", "Delete File": "destructive"}[kind]
        rule = "patch." + kind.lower().replace(" ", "-")
        effect.add(access, rule)
        _path(effect, path, access, rule, where)
    return True


def _path(effect: CallEffect, path: str, access: str, rule: str, where: _Where) -> None:
    resolved, inside, device = resolve(path, where)
    effect.paths.append(PathUse(path, access, rule, resolved, inside, device))


# --- shell -------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


class _Unparsed(Exception):
    pass


def _word(node) -> tuple[str, bool]:
    """(literal text, fully literal) of an argument node."""
    t = node.type
    text = node.text.decode("utf-8", "replace")
    if t == "word":
        return re.sub(r"\\(.)", r"\1", text), True
    if t == "raw_string":
        return text[1:-1], True
    if t == "ansi_c_string":
        return text[2:-1], True
    if t == "number":
        return text, True
    if t == "string":
        parts = [c for c in node.named_children]
        if all(c.type == "string_content" for c in parts):
            return "".join(c.text.decode("utf-8", "replace") for c in parts), True
        inner = text[1:-1] if text.startswith('"') else text
        return inner, False
    if t == "concatenation":
        out, literal = [], True
        for c in node.named_children:
            s, lit = _word(c)
            out.append(s)
            literal = literal and lit
        return "".join(out), literal
    if t in ("simple_expansion", "expansion"):
        return text, False
    return text, False


_SUBSTITUTIONS = ("command_substitution", "process_substitution")


class _Shell:
    def __init__(self, effect: CallEffect, where: _Where) -> None:
        self.effect = effect
        self.where = where

    def parse(self, command: str, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise _Unparsed(f"nested shell strings deeper than {MAX_DEPTH}")
        data = command.encode("utf-8", "replace")
        tree = _parser().parse(data)
        if tree.root_node.has_error:
            bad = _first_error(tree.root_node)
            at = bad.start_byte if bad is not None else 0
            raise _Unparsed(f"syntax error at byte {at}: {data[at:at + 40].decode('utf-8', 'replace')!r}")
        self.walk(tree.root_node, depth)

    def walk(self, node, depth: int) -> None:
        t = node.type
        if t == "command":
            self.command(node, [], depth)
        elif t == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = [c for c in node.named_children if c is not body]
            if body is not None and body.type == "command":
                self.command(body, redirects, depth)
            else:
                if body is not None:
                    self.walk(body, depth)
                # the grammar hangs a redirection after `a && b` on the list; bash binds it to the last command
                last = _last_program(body) if body is not None and body.type in ("list", "pipeline") else None
                for r in redirects:
                    self.redirect(r, last, depth)
        elif t == "subshell":
            saved = self.where.cwd
            for c in node.named_children:
                self.walk(c, depth)
            self.where.cwd = saved
        elif t in ("function_definition",):
            return  # defined, not run
        elif t == "variable_assignment" or t == "variable_assignments":
            for c in node.named_children:
                self._substitutions(c, depth)
        else:
            for c in node.named_children:
                self.walk(c, depth)

    def _substitutions(self, node, depth: int) -> None:
        if node.type in _SUBSTITUTIONS:
            for c in node.named_children:
                self.walk(c, depth)
            return
        for c in node.named_children:
            self._substitutions(c, depth)

    def redirect(self, node, program: str | None, depth: int) -> None:
        if node.type == "heredoc_redirect":
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            fed = [c for c in node.named_children if c.type not in ("heredoc_body", "heredoc_start", "heredoc_end")]
            targets = [program] + [_program_of(c) for c in fed]
            for c in fed:
                if c.type == "file_redirect":
                    self.redirect(c, program, depth)
                else:
                    self.walk(c, depth)
            if body is not None:
                text = body.text.decode("utf-8", "replace")
                if "apply_patch" in targets or "applypatch" in targets:
                    _patch_effect(text, self.where, self.effect)
                elif any(p in SHELLS for p in targets if p):
                    self.parse(text, depth + 1)
            return
        if node.type == "herestring_redirect":  # `bash <<< "rm x"`: a string fed to a shell is a script
            value = next((c for c in node.named_children), None)
            if value is not None and program in SHELLS:
                text, literal = _word(value)
                if literal:
                    self.parse(text, depth + 1)
            return
        if node.type != "file_redirect":
            return
        op = "".join(c.text.decode() for c in node.children if not c.is_named)
        target = next((c for c in node.named_children if c.type != "file_descriptor"), None)
        if target is None or ("&" in op and target.type == "number"):
            return  # 2>&1, >&2: a descriptor copied, no file
        path, _lit = _word(target)
        if op.startswith("<"):
            self.effect.add("read", "shell.redirect-in")
            _path(self.effect, path, "read", "shell.redirect-in", self.where)
        else:
            rule = "shell.redirect-append" if ">>" in op else "shell.redirect-write"
            resolved, inside, device = resolve(path, self.where)
            if device:
                return
            self.effect.add("write", rule)
            self.effect.paths.append(PathUse(path, "write", rule, resolved, inside, device))

    def command(self, node, redirects: list, depth: int) -> None:
        words: list[tuple[str, bool]] = []
        for c in node.named_children:
            if c.type == "variable_assignment":
                self._substitutions(c, depth)
                continue
            if c.type == "command_name":
                inner = c.named_children[0] if c.named_children else c
                words.append(_word(inner))
                self._substitutions(c, depth)
                continue
            if c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.append(c)
                continue
            if c.type in _SUBSTITUTIONS:
                self._substitutions(c, depth)
                words.append((c.text.decode("utf-8", "replace"), False))
                continue
            self._substitutions(c, depth)
            words.append(_word(c))
        program = self.simple(words, depth)
        for r in redirects:
            self.redirect(r, program, depth)

    def simple(self, words: list[tuple[str, bool]], depth: int) -> str | None:
        """Classify one simple command; returns the program it runs (after wrappers)."""
        wrappers = []
        while words and os.path.basename(words[0][0]) in WRAPPERS:
            wrapper = os.path.basename(words[0][0])
            wrappers.append(wrapper)
            i = 1
            value_opts = _WRAPPER_VALUE_OPTS.get(wrapper, set())
            while i < len(words):
                w = words[i][0]
                if wrapper == "env" and re.match(r"^[A-Za-z_]\w*=", w):
                    i += 1
                elif w.startswith("-") and w != "-":
                    i += 2 if w in value_opts else 1
                elif wrapper == "timeout" and re.match(r"^\d+(\.\d+)?[smhd]?$", w):
                    i += 1
                    break
                elif wrapper == "nice" and re.match(r"^-?\d+$", w):
                    i += 1
                else:
                    break
            words = words[i:]
        for w in wrappers:
            if w in ("sudo", "doas") and f"shell.wrapper.{w}" not in self.effect.rules:
                self.effect.rules.append(f"shell.wrapper.{w}")  # runs as another user: said, not a class
        if not words:
            return None
        program_text, literal = words[0]
        program = os.path.basename(program_text)
        args = words[1:]
        if not literal:
            self._one("execute", "shell.execute.dynamic-program", program_text)
            return None
        if program == "cd":
            target = args[0][0] if args else "~"
            if target != "-":
                resolved, _inside, _dev = resolve(target, self.where)
                self.where.cwd = resolved
            self.effect.commands.append("cd:read")
            return program
        if program in SHELLS and len(args) >= 2 and any(a[0] in ("-c", "-lc", "-ic", "-cl") for a in args[:-1]):
            script = args[-1][0]
            self._one("execute", f"shell.execute.{program}-c", program, quiet=True)
            self.parse(script, depth + 1)
            return program
        if program_text.startswith(("./", "../", "/")) and program not in PROGRAMS:
            self._one("execute", "shell.execute.path-program", program)
            return program
        if program in SUBCOMMANDS:
            self._multi(program, args)
            return program
        cls = PROGRAMS.get(program)
        if cls is None:
            self._one("execute", "shell.execute.unlisted", program)
            return program
        self._program(program, cls, args, depth)
        return program

    def _one(self, cls: str, rule: str, program: str, quiet: bool = False) -> None:
        self.effect.add(cls, rule)
        if not quiet:
            self.effect.commands.append(f"{program}:{cls}")

    def _multi(self, program: str, args: list[tuple[str, bool]]) -> None:
        opts = _TOOL_VALUE_OPTS.get(program, set())
        i = 0
        base = self.where.cwd
        while i < len(args) and args[i][0].startswith("-") and args[i][0] not in SUBCOMMANDS[program]:
            if program == "git" and args[i][0] == "-C" and i + 1 < len(args):
                base = resolve(args[i + 1][0], self.where)[0]
            i += 2 if args[i][0] in opts else 1
        sub = args[i][0] if i < len(args) else ""
        rest = [a[0] for a in args[i + 1:]]
        classes = SUBCOMMANDS[program].get(sub) or _SUB_DEFAULT.get(program, ("execute",))
        key = f"{program}-{sub}" if sub in SUBCOMMANDS[program] else program
        if program == "git":
            if sub == "push" and any(r in ("-f", "--force", "--force-with-lease", "--delete", "-d") for r in rest):
                classes = ("network", "destructive")
            elif sub == "branch" and any(r in ("-d", "-D", "--delete") for r in rest):
                classes = ("destructive",)
            elif sub == "branch" and rest and not all(r.startswith("-") for r in rest):
                classes = ("write",)
            elif sub == "checkout" and ("--" in rest or "." in rest):
                classes = ("destructive",)
            elif sub == "stash" and rest[:1] in (["drop"], ["clear"]):
                classes = ("destructive",)
            elif sub == "config" and (not rest or rest[0] in ("--get", "--list", "-l", "--get-all")):
                classes = ("read",)
            elif sub == "remote" and (not rest or rest[0] in ("-v", "show", "get-url")):
                classes = ("read",)
            elif sub in ("tag", "worktree", "notes") and (not rest or rest[0] in ("-l", "--list", "list")):
                classes = ("read",)
        for cls in classes:
            self.effect.add(cls, f"shell.{cls}.{key}")
        self.effect.commands.append(f"{program} {sub}".strip() + ":" + "+".join(classes))
        if program == "git" and sub in ("add", "rm", "mv", "checkout", "restore", "clean"):
            saved = self.where.cwd
            self.where.cwd = base
            access = "destructive" if "destructive" in classes or sub == "rm" else "write"
            for r in rest:
                if not r.startswith("-") and r != "--":
                    _path(self.effect, r, access if sub != "add" else "read", f"shell.{access}.git-{sub}", self.where)
            self.where.cwd = saved

    def _program(self, program: str, cls: str, args: list[tuple[str, bool]], depth: int) -> None:
        words = [a[0] for a in args]
        rule = f"shell.{cls}.{program}"
        classes = [cls]
        value_opts = _VALUE_OPTS.get(program, set())
        operands: list[str] = []
        i = 0
        ended = False
        while i < len(words):
            w = words[i]
            if not ended and w == "--":
                ended = True
            elif not ended and w.startswith("-") and w != "-":
                if w in value_opts and i + 1 < len(words):
                    i += 1
            else:
                operands.append(w)
            i += 1
        flags = [w for w in words if w.startswith("-")]
        if program in _PATTERN_FIRST and operands and not any(f in ("-e", "-f") for f in flags):
            operands = operands[1:]
        if program == "find":
            operands = []
            for w in words:
                if w.startswith(("-", "(", "!")):
                    break
                operands.append(w)
            if "-delete" in words:
                classes.append("destructive")
                rule = "shell.destructive.find-delete"
            for opt in ("-exec", "-execdir", "-ok", "-okdir"):
                if opt in words:
                    start = words.index(opt) + 1
                    end = next((k for k in range(start, len(words)) if words[k] in (";", "\\;", "+")), len(words))
                    self.simple([(w, True) for w in words[start:end] if w != "{}"] or [], depth)
        if program in ("sed", "perl") and any(f.startswith("-i") or (program == "perl" and "i" in f[1:] and
                                                                      f.startswith("-") and not f.startswith("--"))
                                               for f in flags):
            classes = ["write"]
            rule = f"shell.write.{program}-in-place"
            if program == "perl":
                operands = operands[1:] if not any(f.startswith("-e") or "e" in f[1:] for f in flags) else operands
        if program == "tar":
            mode = (flags[0] if flags else (words[0] if words else "")).lstrip("-")
            if "x" in mode:
                classes, rule = ["write"], "shell.write.tar-extract"
            elif "c" in mode:
                classes, rule = ["write"], "shell.write.tar-create"
            else:
                classes, rule = ["read"], "shell.read.tar-list"
            operands = [w for w in operands if w != (words[0] if words and not words[0].startswith("-") else None)]
        if program in ("curl", "wget", "aria2c"):
            self.effect.add("network", f"shell.network.{program}")
            outs = _option_values(words, ("-o", "--output", "-O" if program == "wget" else "--output-document",
                                          "--output-document"))
            for o in outs:
                if o != "-":
                    self.effect.add("write", f"shell.write.{program}-output")
                    _path(self.effect, o, "write", f"shell.write.{program}-output", self.where)
            if program == "wget" and not outs:
                self.effect.add("write", "shell.write.wget-download")
            for u in _option_values(words, ("-T", "--upload-file")):
                _path(self.effect, u, "read", f"shell.read.{program}-upload", self.where)
            self.effect.commands.append(f"{program}:network")
            return
        if program in ("scp", "rsync"):
            remote = any(re.match(r"^[\w.@-]+:", w) and "://" not in w for w in operands)
            if remote or program == "scp":
                classes = ["network", "write"]
                rule = f"shell.network.{program}"
            operands = [w for w in operands if not re.match(r"^[\w.@-]+:", w)]
        if program == "dd":
            for w in words:
                if w.startswith("of="):
                    _path(self.effect, w[3:], "destructive", "shell.destructive.dd-of", self.where)
                elif w.startswith("if="):
                    _path(self.effect, w[3:], "read", "shell.read.dd-if", self.where)
            operands = []
        if program in ("chmod", "chown", "chgrp") and operands:
            operands = operands[1:]
        if program in SHELLS | {"python", "python2", "python3", "node", "ruby", "perl", "php", "deno", "source",
                                ".", "bash"}:
            # the script; the rest are its arguments (none with -c/-e/-m: the code is inline or a module)
            inline = any(f in ("-c", "-e", "-m", "-p", "--eval", "--print", "-E") or f.startswith("-c") for f in flags)
            operands = [] if inline else operands[:1]
        for c in classes:
            self.effect.add(c, rule if c == classes[-1] or len(classes) == 1 else f"shell.{c}.{program}")
        self.effect.commands.append(f"{program}:{'+'.join(classes)}")
        if program in _NOT_PATHS or program in ("curl", "wget"):
            return
        access = {"read": "read", "write": "write", "destructive": "destructive", "execute": "execute",
                  "network": "read"}[classes[-1] if "destructive" not in classes else "destructive"]
        for k, w in enumerate(operands):
            if _URL.match(w) or not w.strip() or w in ("{}", "-"):
                continue
            a = access
            if program in ("cp", "install", "ln", "rsync", "scp") and k < len(operands) - 1:
                a = "read"
            elif program == "mv" and k < len(operands) - 1:
                a = "destructive"
            _path(self.effect, w, a, rule, self.where)


def _option_values(words: list[str], names: tuple[str, ...]) -> list[str]:
    out = []
    for i, w in enumerate(words):
        if w in names and i + 1 < len(words):
            out.append(words[i + 1])
        for n in names:
            if n.startswith("--") and w.startswith(n + "="):
                out.append(w[len(n) + 1:])
    return out


def _program_of(node) -> str | None:
    if node.type == "command":
        name = node.child_by_field_name("name")
        if name is not None:
            return os.path.basename(name.text.decode("utf-8", "replace"))
    for c in node.named_children:
        found = _program_of(c)
        if found:
            return found
    return None


def _last_program(node) -> str | None:
    """The program of the last command of a list or pipeline."""
    while node is not None and node.type in ("list", "pipeline") and node.named_children:
        node = node.named_children[-1]
    return _program_of(node) if node is not None and node.type == "command" else None


def _first_error(node):
    if node.type == "ERROR" or node.is_missing:
        return node
    for c in node.children:
        if c.has_error:
            found = _first_error(c)
            if found is not None:
                return found
    return None


def classify_shell(command: str, workspace: str | None, home: str | None = None, cwd: str | None = None,
                   effect: CallEffect | None = None) -> CallEffect:
    """Classify a shell command: every simple command in it, redirections and paths."""
    effect = effect if effect is not None else CallEffect()
    where = _Where(workspace, home, cwd or workspace)
    if len(command) > MAX_COMMAND_CHARS:
        effect.parse_status, effect.parse_detail = "unparsed", f"longer than {MAX_COMMAND_CHARS} characters"
        effect.add("execute", "shell.unparsed")
        return effect
    try:
        _Shell(effect, where).parse(command)
        effect.parse_status = "parsed"
    except _Unparsed as exc:
        effect.parse_status, effect.parse_detail = "unparsed", str(exc)
        effect.classes.clear()
        effect.paths.clear()
        effect.commands.clear()
        effect.rules = [r for r in effect.rules if r.startswith("tool.")]
        effect.add("execute", "shell.unparsed")
    except RecursionError:
        effect.parse_status, effect.parse_detail = "unparsed", "nested too deeply"
        effect.add("execute", "shell.unparsed")
    if effect.parse_status == "parsed" and not effect.classes:
        effect.add("read", "shell.no-command")  # only assignments or comments
    return effect


# --- one call ----------------------------------------------------------------------------------------
def classify_call(name: str | None, arguments: str | None, *, schema: dict | None = None,
                  description: str | None = None, workspace: str | None = None,
                  home: str | None = None) -> CallEffect:
    """The effect class of one proposed call, from its name, arguments and offered schema/description."""
    effect = CallEffect()
    name = name or ""
    arguments = arguments or ""
    where = _Where(workspace, home, workspace)
    try:
        args = json.loads(arguments) if arguments.lstrip().startswith("{") else None
    except ValueError:
        args = None
    if not isinstance(args, dict):
        args = None
    # a patch: Codex's apply_patch, as free-form input or inside an argument
    patch_text = arguments if "*** Begin Patch" in arguments else None
    if args is not None and patch_text is not None:
        patch_text = next((v for v in args.values() if isinstance(v, str) and "*** Begin Patch" in v), None)
        if patch_text is None:
            patch_text = next((v for v in args.values() if isinstance(v, list) and any(
                isinstance(x, str) and "*** Begin Patch" in x for x in v)), None)
            patch_text = next((x for x in patch_text if "*** Begin Patch" in x), None) if patch_text else None
    command = shell_command(name, arguments)
    action = _action(args, schema, name) if args is not None else None
    if action is not None and command is not None and command == action[1]:
        command = None  # `{"command": "view"}`: an action selector of the tool (Anthropic's text editor), not a shell
    if command is not None and patch_text is not None and args is not None and any(
            isinstance(v, list) and patch_text in v for v in args.values()):
        command = None  # ["apply_patch", "*** Begin Patch..."] as an exec argv (a heredoc is left to the shell)
    cwd_uses: list[PathUse] = []
    base = workspace
    if args is not None and (command is not None or patch_text is not None):  # the directory a command runs in
        for key, value in args.items():
            if _norm_key(key) in {_norm_key(k) for k in _CWD_KEYS} and isinstance(value, str) and value.strip():
                base, inside, device = resolve(value, where)
                cwd_uses.append(PathUse(value, "cwd", "arg.cwd", base, inside, device))
    if command is None and patch_text is not None:
        effect.paths.extend(cwd_uses)
        if _patch_effect(patch_text, _Where(workspace, home, base), effect):
            return effect
    if command is None and args is not None:
        listed = next((v for k, v in args.items() if _norm_key(k) in ("commands", "cmds", "shellcommands")
                       and isinstance(v, list) and v and all(isinstance(x, str) for x in v)), None)
        if listed:
            command = "\n".join(listed)  # a list of shell commands run one after another (Cline's run_commands)
    if command is not None:
        effect.rules.append("tool.shell-command")
        effect.paths.extend(cwd_uses)
        return classify_shell(command, workspace, home, base, effect)
    words = name_words(name)
    found = name_classes(words)
    source = "name"
    if action is not None:  # the action argument says what this call does, over the name's general verb
        acted = name_classes(name_words(action[1]))
        if acted:
            found, source = acted, f"arg.{action[0]}"
    for cls in found:
        effect.add(cls, f"{source}.{cls}")
    schema_paths = _schema_path_keys(schema)
    path_values: list[tuple[str, str]] = []
    has_content = has_url = False
    if args is not None:
        for key, value in args.items():
            nk = _norm_key(key)
            if nk in {_norm_key(k) for k in _URL_KEYS} and any(_URL.match(v) for v in _strings(value)):
                has_url = True
                continue
            if nk in {_norm_key(k) for k in _CONTENT_KEYS} and value not in (None, "", []):
                has_content = True
                continue
            if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
                for item in value[:100]:  # `files: [{path, content}]`: the paths of each entry
                    for k2, v2 in item.items():
                        if isinstance(v2, str) and v2.strip() and _is_path_key(k2, set(), v2):
                            if _URL.match(v2) and not v2.startswith("file://"):
                                has_url = True
                            else:
                                path_values.append((f"{key}[].{k2}", v2))
                        elif _norm_key(k2) in {_norm_key(k) for k in _URL_KEYS} and _URL.match(str(v2)):
                            has_url = True
                        elif _norm_key(k2) in {_norm_key(k) for k in _CONTENT_KEYS}:
                            has_content = True
                continue
            for v in _strings(value):
                if _is_path_key(key, schema_paths, v):
                    if _URL.match(v) and not v.startswith("file://"):
                        has_url = True
                    else:
                        path_values.append((key, v))
    if has_url and "network" not in effect.classes:
        effect.add("network", "arg.url")
    if not effect.classes and path_values and has_content:
        effect.add("write", "arg.content-with-path")
    if not effect.classes:
        cls = _description_class(description)
        if cls:
            effect.add(cls, f"description.{cls}")
    access = effect.primary if effect.classes else "unknown"
    if access == "network":
        access = "read"
    for key, value in path_values:
        rule = f"arg.path.{key}"
        a = access
        if access in ("write", "destructive") and _norm_key(key) in ("source", "src", "from") and "copy" in words:
            a = "read"
        _path(effect, value, a, rule, where)
    return effect


_ACTION_KEYS = ("command", "action", "operation", "op", "mode", "method", "subcommand")


def _action(args: dict, schema: dict | None, name: str) -> tuple[str, str] | None:
    """(key, value) of an argument that selects the tool's action: its schema lists the values (`enum`), or the
    value is one identifier (`view`, `str_replace`, `create`) naming a known verb and the tool's own name has a
    verb that is not execute (`str_replace_based_edit_tool`; `Bash` with `ls` runs ls)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    name_verbs = verbs_of(name_words(name))
    shell_like = name.lower() in SHELL_TOOLS or "execute" in name_verbs
    for key in _ACTION_KEYS:
        value = args.get(key)
        if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z][\w-]{0,40}", value):
            continue
        spec = props.get(key) if isinstance(props, dict) else None
        listed = isinstance(spec, dict) and isinstance(spec.get("enum"), list) and value in spec["enum"]
        # a verb that is also a program (`ls`, `cat`) is run by a verb-less tool; `view`, `str_replace` are not programs
        verb = verbs_of(name_words(value)) and (name_verbs or value not in PROGRAMS)
        if listed or (not shell_like and verb):
            return key, value
    return None


def tool_description(definition: dict) -> str | None:
    """An offered tool definition's description, whichever protocol's shape it has."""
    for holder in (definition, definition.get("function"), definition.get("toolSpec")):
        if isinstance(holder, dict) and isinstance(holder.get("description"), str):
            return holder["description"]
    return None
