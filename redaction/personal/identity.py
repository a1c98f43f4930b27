"""Who the recorded user is, learned from the traffic itself.

A bare `alice` in a tool result is only personal once something says that
alice is the local user: `/home/alice` in an environment block, `USER=alice`,
an `alice@alice-laptop:~$` prompt, `Git user: Alice Liddell`, a remote
`git@github.com:alice-liddell/repo.git`, a `X-Msh-Device-Name` header. This
module collects those facts so the pseudonymiser can replace the bare values
everywhere, including in texts seen before the fact was (publish runs learn
from the whole capture first, then rewrite).

Generic account names (`root`, `runner`, `user`...) and first names that are
also common words (`will`, `mark`) are learned but only replaced in the
contexts that identify them, never as bare words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

# A local account name as it appears in paths and prompts.
NAME = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}"
HOSTNAME = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63}){0,4}"
# `\n`/`\t` escapes in raw JSON bodies count as a boundary.
BOUNDARY = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtbf]))"
SLASH = r"(?:\\{1,2}|/)"

# Not personal: service, CI, image and documentation accounts, and the words
# placeholders are made of (so a placeholder can never be learned).
GENERIC_USERS = frozenset(
    """
    root admin administrator user users username usr me you your yourname your-name name guest public
    shared default all nobody daemon runner linuxbrew ubuntu debian fedora centos ec2-user vagrant docker
    node app www www-data jovyan codespace vscode dev developer test tester testuser demo example sample
    foo bar baz jdoe johndoe janedoe someone somebody person builder
    build ci jenkins gitlab-runner git svc service system local home tmp temp path host email session
    device request call uuid account ip phone installation
    """.split()
)
GENERIC_HOSTS = frozenset(
    """
    localhost localhost.localdomain local host hostname ubuntu debian fedora raspberrypi kali archlinux
    docker-desktop example.com example.org example.net ip6-localhost ip6-loopback broadcasthost
    """.split()
)
# First names that are also ordinary words: replaced in identifying contexts only.
AMBIGUOUS_NAMES = frozenset(
    """
    will mark bill rose may june april august grant max page jack frank art ray dean drew miles hope joy
    faith sky summer autumn guy pat sue rich don gene earl sandy penny ruby amber crystal holly ivy violet
    lily daisy iris jade pearl dawn eve grace chase hunter mason carter cook smith young king hill wood
    green white black brown gray grey long short little strong bell ford rust reed lane rock stone river
    case bond nick sam tom ben dan ken bob ted tim jim kim lee van art del
    """.split()
)
_NON_NAMES = frozenset(
    "claude codex github gitlab bot openai anthropic google copilot cursor kimi grok gemini your first last full"
    .split()
)
FORGE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "git.sr.ht", "ssh.dev.azure.com")
_FORGE_RESERVED = frozenset(
    "orgs settings features about pricing login join topics marketplace sponsors apps users explore"
    " notifications pulls issues search new enterprise contact security site".split()
)

CAPITAL = r"[A-ZÀ-ÖØ-Þ]"
_PARTICLE = r"(?:van|von|de|da|di|du|del|der|den|la|le|bin|al|ter|ten)"
FULL_NAME = rf"{CAPITAL}[\w'’-]*(?:[ ](?:{_PARTICLE}[ ])?{CAPITAL}[\w'’.-]*){{1,3}}"
_NOT_FIRST_WORDS = frozenset(
    "the a an by from to for and or of with at in on dear hi hello thanks cc re fwd see contributed support"
    " written maintained copyright author authors".split()
)
_NOT_HOSTS = frozenset("self str string int none null true false any bool optional unknown value val".split())

_HOME_RES = (
    re.compile(rf"/(?:home|Users)/(?P<n>{NAME})"),
    re.compile(rf"(?<![A-Za-z0-9_])[A-Za-z]:{SLASH}(?i:users|documents and settings){SLASH}(?P<n>{NAME})"),
    re.compile(r"(?<![\w~/])~(?P<n>[A-Za-z_][A-Za-z0-9._-]{0,31})(?=/)"),
)
# Env style (`USER=alice`, `"USER": "alice"`), not code (`USER = getpass.getuser()`).
_ENV_USER_RE = re.compile(
    rf"{BOUNDARY}(?:USER|LOGNAME|USERNAME)\\*[\"']?[ \t]*[=:][ \t]*\\*[\"']?(?P<n>{NAME})(?![(\w]|\.\w)"
)
_ENV_HOST_RE = re.compile(
    rf"{BOUNDARY}(?:(?:HOSTNAME|COMPUTERNAME)\\*[\"']?[ \t]*[=:]|\\*\"hostname\\*\"[ \t]*:"
    rf"|(?:^|(?<=\n)|(?<=\\n))[ \t-]*(?:Hostname|Host name|Device name|Computer name)[ \t]*:)"
    rf"[ \t]*\\*[\"']?(?P<h>{HOSTNAME})(?![(\w]|\.\w)"
)
_TMPDIR_RE = re.compile(rf"{BOUNDARY}(?:TMPDIR|TMP|TEMP)\\*[\"']?[ \t]*[=:][ \t]*\\*[\"']?(?P<p>/[^\s\"'\\:;,]+)")
# `alice@alice-laptop:~/work$`: found from the `@` (a regex starting at the user name would be
# tried at every letter of a body), the user name then read backwards.
_PROMPT_AT_RE = re.compile(
    r"@(?P<h>[A-Za-z0-9][A-Za-z0-9-]{1,62}(?:\.local)?)(?=:[~/]|[ ]?[$#%>]|[ ][^\s\]]{1,64}\][$#%])"
)
_PROMPT_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def iter_prompts(text: str) -> Iterator[tuple[int, int, int, int]]:
    """(user start, user end, host start, host end) of each `user@host:` shell prompt."""
    if "@" not in text:
        return
    for m in _PROMPT_AT_RE.finditer(text):
        start = m.start()
        while start > 0 and text[start - 1] in _PROMPT_USER_CHARS and m.start() - start < 32:
            start -= 1
        if m.start() - start < 2 or not (text[start].isalpha() or text[start] == "_") or not text[start].islower():
            continue
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.@/-"):
            continue
        yield start, m.start(), m.start("h"), m.end("h")


_GIT_NAME_RE = re.compile(
    rf"(?:Author|Commit|Committer|Co-authored-by|Co-Authored-By|Signed-off-by|Reviewed-by|Git user|"
    rf"user\.name|GIT_AUTHOR_NAME|GIT_COMMITTER_NAME)\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?(?P<name>{FULL_NAME}|{NAME})"
)
_GIT_CONFIG_NAME_RE = re.compile(rf"\[user\][^\[]{{0,200}}?\bname[ \t]*=[ \t]*(?P<name>{FULL_NAME})")
# `Alice Liddell <alice.liddell@example.com>`: found from the `<...@`, the name read backwards
# from a short window (a regex starting at the name backtracks on every capitalised word).
_ADDRESS_OPEN_RE = re.compile(r"(?:<|\\u003[cC]|&lt;)(?P<local>[A-Za-z0-9._%+-]{1,64})@")
_NAME_BEFORE_RE = re.compile(rf"(?<![\w'’-])(?P<name>{FULL_NAME})[ \t]*$")
_SCP_REMOTE_RE = re.compile(
    rf"@(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{{2,}}):(?P<owner>{NAME})/(?P<repo>[A-Za-z0-9_.-]+)"
)
_URL_REMOTE_RE = re.compile(
    rf"(?:ssh|https?|git)://(?:(?P<user>[A-Za-z0-9_.%-]+)@)?(?P<host>{HOSTNAME})(?::\d+)?/(?P<owner>{NAME})/"
    r"(?P<repo>[A-Za-z0-9_.-]+?)(?P<git>\.git)?(?![A-Za-z0-9_./-])"
)
_REMOTE_CONTEXT_RE = re.compile(
    r"(?i)(?:\b(?:origin|upstream)\b|remote\.[\w-]+\.url|\bgit (?:clone|remote add [\w-]+|push|pull|fetch)\b)"
    r"[^\n]{0,40}$"
)
# `alice-laptop`, `Alices-MacBook-Pro.local`: found from the `-laptop` tail, the name read backwards.
_HOST_SHAPE_TAIL_RE = re.compile(
    r"(?i)-(?:macbook(?:-pro|-air)?|imac|laptop|desktop|pc|workstation|thinkpad)(?:-\d{1,3})?"
    r"(?:\.local|\.lan|\.home)?(?![A-Za-z0-9_-])"
)
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def iter_host_shapes(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of host names shaped like personal machines."""
    for m in _HOST_SHAPE_TAIL_RE.finditer(text):
        start = m.start()
        while start > 0 and text[start - 1] in _HOST_CHARS and m.start() - start < 63:
            start -= 1
        while start < m.start() and text[start] == "-":
            start += 1
        if start == m.start() or (start > 0 and (text[start - 1] in "_." or text[start - 1].isalnum())):
            continue
        yield start, m.end()


_HOST_HEADER_RE = re.compile(r"(?i)(?:device|machine|computer|host)[-_]?name|hostname")
def is_generic_user(name: str) -> bool:
    low = name.lower()
    return low in GENERIC_USERS or len(low) < 2 or low.isdigit() or low.startswith(("$", "{", "<", "%"))


def _clean(name: str) -> str:
    return name.rstrip(".-_")


@dataclass
class Identity:
    """What the traffic says about its user. Every set holds the values as seen."""

    users: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # full names: "Alice Liddell"
    accounts: set[str] = field(default_factory=set)  # forge owners that look personal
    remote_owners: set[str] = field(default_factory=set)  # every owner seen in a remote
    tmpdirs: set[str] = field(default_factory=set)
    version: int = 0

    # --- learning -------------------------------------------------------------------------

    def learn_text(self, text: str) -> None:
        """Collect user, host, full-name, account and temp-dir facts from one text."""
        before = self._size()
        for regex, needle in zip(_HOME_RES, ("/", ":", "~"), strict=True):
            if needle in text:
                for m in regex.finditer(text):
                    self._add_user(m.group("n"))
        if "USER" in text or "LOGNAME" in text:
            for m in _ENV_USER_RE.finditer(text):
                if "." not in m.group("n"):
                    self._add_user(m.group("n"))
        if any(w in text for w in ("HOSTNAME", "COMPUTERNAME", "ostname", "ost name", "evice name", "omputer name")):
            for m in _ENV_HOST_RE.finditer(text):
                self._add_host(m.group("h"))
        if "-" in text:
            for start, end in iter_host_shapes(text):
                self._add_host(text[start:end])
        for u0, u1, h0, h1 in iter_prompts(text):
            self._add_user(text[u0:u1])
            self._add_host(text[h0:h1])
        for m in _TMPDIR_RE.finditer(text) if ("TMP" in text or "TEMP" in text) else ():
            path = m.group("p").rstrip("/.")
            if path.count("/") >= 2 and path not in ("/tmp", "/var/tmp"):
                self.tmpdirs.add(path)
        for regex in (_GIT_NAME_RE, _GIT_CONFIG_NAME_RE):
            for m in regex.finditer(text):
                self._add_person(m.group("name"))
        for m in _ADDRESS_OPEN_RE.finditer(text) if "@" in text else ():
            if m.group("local").lower() in ("noreply", "no-reply", "donotreply", "notifications"):
                continue
            named = _NAME_BEFORE_RE.search(text, max(0, m.start() - 80), m.start())
            if named is not None:
                self._add_person(named.group("name"))
        for m in _SCP_REMOTE_RE.finditer(text) if "@" in text else ():
            self._add_owner(m.group("owner"))
        for m in _URL_REMOTE_RE.finditer(text) if "://" in text else ():
            line_start = max(text.rfind("\n", 0, m.start()) + 1, m.start() - 60)
            context = text[line_start : m.start()]
            forge = m.group("host").lower() in FORGE_HOSTS
            remote_context = _REMOTE_CONTEXT_RE.search(context) is not None
            if (m.group("git") or forge) and (remote_context or (m.group("git") and forge)):
                self._add_owner(m.group("owner"))
            if m.group("user") and forge and m.group("user").lower() not in ("git", "oauth2", "x-access-token"):
                self._add_user(m.group("user"))
        if self._size() != before:
            self.version += 1

    def learn_facts(self, user: str | None, host: str | None, texts: Iterable[str] = ()) -> None:
        """What the recorder knew of the machine (a capture's private manifest): the user and host
        names as the machine gave them, so they are found wherever the traffic names them, not only
        where they look like a user or a host; paths and prompts are read as texts."""
        before = self._size()
        if user:
            self._add_user(user)
        if host:
            self._add_host(host.split(".", 1)[0])
            self._add_host(host)
        for text in texts:
            self.learn_text(text)
        if self._size() != before:
            self.version += 1

    def learn_headers(self, headers: Iterable[tuple[str, str]]) -> None:
        """Device-name headers (`X-Msh-Device-Name: alice-laptop`) name the host; values are texts too."""
        before = self._size()
        for name, value in headers:
            if _HOST_HEADER_RE.search(name or "") and value:
                self._add_host(value.strip())
            if value:
                self.learn_text(value)
        if self._size() != before:
            self.version += 1

    def merge(self, other: Identity) -> None:
        for attr in ("users", "hosts", "names", "accounts", "remote_owners", "tmpdirs"):
            getattr(self, attr).update(getattr(other, attr))
        self.version += 1

    # --- what gets replaced bare ----------------------------------------------------------

    def literals(self) -> dict[str, str]:
        """Lower-cased bare value -> kind, for values safe to replace wherever they stand."""
        out: dict[str, str] = {}
        for host in self.hosts:
            low = host.lower()
            if low not in GENERIC_HOSTS and len(low) >= 3:
                out.setdefault(low, "host")
                first = low.split(".", 1)[0]
                if first != low and len(first) >= 3 and first not in GENERIC_HOSTS and not first.isdigit():
                    out.setdefault(first, "host")
        for name in self.names:
            out.setdefault(name.lower(), "name")
            for slug in _name_slugs(name):
                out.setdefault(slug, "account")
        for account in self.accounts:
            if len(account) >= 3:
                out.setdefault(account.lower(), "account")
        for user in self.users:
            low = user.lower()
            if len(low) >= 3 and low not in AMBIGUOUS_NAMES and not is_generic_user(low):
                out.setdefault(low, "user")
        for name in self.names:
            for part in name.split():
                low = part.lower().strip(".'’-")
                if len(low) >= 3 and low not in AMBIGUOUS_NAMES and not is_generic_user(low):
                    out.setdefault(low, "name")
        return out

    # --- internals ------------------------------------------------------------------------

    def _size(self) -> int:
        return sum(len(s) for s in (self.users, self.hosts, self.names, self.accounts, self.remote_owners,
                                    self.tmpdirs))

    def _add_user(self, name: str) -> None:
        name = _clean(name)
        if name and not is_generic_user(name):
            self.users.add(name)

    def _add_host(self, host: str) -> None:
        host = host.strip().rstrip(".")
        low = host.lower()
        if (
            not host
            or low in GENERIC_HOSTS
            or low in _NOT_HOSTS
            or len(host) < 3
            or not re.fullmatch(HOSTNAME, host)
            or re.fullmatch(r"[0-9.]+", host)
            or low.startswith(("<", "[redacted"))
        ):
            return
        self.hosts.add(host)

    def _add_person(self, name: str) -> None:
        name = name.strip().strip("\"'")
        words = name.split()
        if not words or any(w.lower().strip(".") in _NON_NAMES for w in words):
            return
        if words[0].lower() in _NOT_FIRST_WORDS:
            return
        if len(words) == 1:
            self._add_user(name)
            return
        if name.lower() in ("john doe", "jane doe", "your name", "full name", "first last", "some one"):
            return
        self.names.add(name)

    def _add_owner(self, owner: str) -> None:
        owner = _clean(owner)
        if not owner or owner.lower() in _FORGE_RESERVED or is_generic_user(owner):
            return
        self.remote_owners.add(owner)
        if self._personal(owner):
            self.accounts.add(owner)

    def _personal(self, owner: str) -> bool:
        """A remote owner is replaced bare only when it echoes a known user or full name."""
        low = owner.lower()
        known = {u.lower() for u in self.users} | {
            p.lower() for n in self.names for p in n.split() if len(p) >= 3
        }
        parts = set(re.split(r"[-_.]", low))
        return bool(known & parts) or low in {s for n in self.names for s in _name_slugs(n)}

    def refresh_accounts(self) -> None:
        """Re-decide personal remote owners once more names are known (learning order varies)."""
        for owner in self.remote_owners:
            if self._personal(owner) and owner not in self.accounts:
                self.accounts.add(owner)
                self.version += 1


def _name_slugs(name: str) -> set[str]:
    """`Alice Liddell` -> alice-liddell, alice_liddell, aliceliddell, alice.liddell, aliddell."""
    words = [re.sub(r"[^\w]", "", w).lower() for w in name.split()]
    words = [w for w in words if w]
    if len(words) < 2:
        return set()
    first, last = words[0], words[-1]
    slugs = {"-".join(words), "_".join(words), "".join(words), ".".join(words), first[0] + last}
    return {s for s in slugs if len(s) >= 4}
