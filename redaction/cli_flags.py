"""Credentials passed on a command line: `--password x`, `mysql -pX`, `curl -u user:pass`.

Agents run shell commands and send them, with their output, to the model, so
command lines from shell history, scripts and READMEs reach the recorder.
`--password=x` is an assignment (see `redaction.assignments`); this module
covers what is not: a flag and its value separated by a space or as the next item of an argument list
(`["--password", "x"]`, a compose file's or a pod's exec form), its word glued to another
(`--requirepass x`, `--rootpassword x`), the short
flags of clients whose `-p`/`-a`/`-w` means a password (MySQL, MongoDB, sshpass, Redis, the
LDAP tools, `docker login`, `az login`), Java's and OpenSSL's single-dash options
(`keytool -storepass x`, `-passout pass:x`), `user:password` after `-u`/`--user`, Samba's
`-U user%password`, the archivers' `-pX` and `zip -P x`, `ssh-keygen -N x`, PowerShell's
`ConvertTo-SecureString 'x' -AsPlainText`, and a literal piped into a command that reads a secret
from its standard input (`echo pw | docker login --password-stdin`, `echo pw | sudo -S ...`,
`chpasswd`, `passwd --stdin`, `gh auth login --with-token`, a secret store's setter such as `gh secret set X`
or `wrangler secret put X`, `cryptsetup`, a flag naming a secret's file or descriptor given standard input
(`--key-file=-`, `--passphrase-fd 0`, `--password-file /dev/stdin`), or a here-string `<<< pw` after one),
and a literal handed to such a flag by a process substitution (`--vault-password-file <(echo pw)`).
Some tools' own flags and positions: OpenSSL's `-k pw` and raw `-K key`, lftp's `-u user,pw`, `net user NAME pw`,
`htpasswd -b`, `rabbitmqctl add_user`, `mc alias set`.

A class rather than a list for remote execution and database tools: a command that names its user with a
flag (`-u admin`, `-U sa`, `--username alice`, `/u:alice`) takes the password with the short flag beside
it (`-p`, `-P`, `-pw`, `/p:`) — psexec, sqlcmd, plink, xfreerdp, mosquitto, rabbitmqadmin and whatever
tool comes next; a login named with `-l` (hydra, medusa) is a user too. Values that are ports, paths or
URLs stay, and so do the container runtimes and `sudo`, whose `-u`/`-p` mean a uid, published ports and a
prompt.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_password, is_non_secret_value, looks_random
from ctxtap.redaction.json_escapes import string_end
from ctxtap.redaction.names import NOT_GLUED_PASS
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

_LONG_WORDS = rb"(?:password|passwd|passphrase|pass|pwd|token|secret|api-?key|key|auth|credentials?)"
# The same words glued to the one before (`--requirepass`, `--rootpassword`, `--clientsecret`); `key` and
# `auth` glued are other words too often (`--hotkey`, `--oauth`), and so is a `pass` of `names.NOT_GLUED_PASS`
_GLUED_WORDS = rb"[a-z0-9]{2,20}(?:pass(?:word|wd|phrase)?|pwd|secret|token)"
# Between a flag and its value: spaces, or the next item of an argument list (`["--password", "x"]`, the exec
# form of a compose file's `command:` or a pod's `args:`), its quotes perhaps JSON-escaped.
_ARGV_ITEM = rb"\\{0,3}[\"'][ \t]*,[ \t]*"  # the flag's closing quote and the comma (Hyperscan: no lookahead)
_ARGV_GAP = rb"(?:[ \t]+|" + _ARGV_ITEM + rb"(?=\\{0,3}[\"']))"  # ... up to the value's opening quote
_STRONG_LONG = re.compile(rb"(?i)pass|pwd|secret|token|api-?key|credential")
_PASSWORD_LONG = re.compile(rb"(?i)pass|pwd")

# Clients whose short flag takes the password: attached (`mysql -pX`) or after a space (`sshpass -p X`).
_ATTACHED_P = (rb"mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mysqlpump|mariadb|mariadb-dump"
               rb"|7z|7za|7zz|7zr|rar|unrar")  # the archivers' `-pSECRET` too
# Tools whose password flag is a capital or another letter (`zip -P x`, `ssh-keygen -N x`, `openssl enc -k x` and
# its raw key `-K hex`): the tool, then its flags, each with what comes before the password in its value (lftp's
# `-u user,password`)
_OTHER_FLAG_TOOLS: dict[bytes, tuple[tuple[bytes, bytes], ...]] = {
    b"zip": ((b"-P", b""),), b"unzip": ((b"-P", b""),), b"ssh-keygen": ((b"-N", b""), (b"-P", b"")),
    b"openssl": ((b"-k", b""), (b"-K", b"")), b"lftp": ((b"-u", b","),),
}


class _Positional(NamedTuple):
    """Where a command takes its password as a positional argument, with no flag before it."""

    which: int  # the positional word (after the command's own words)
    needs: bytes = b""  # a letter an option must hold (`htpasswd` reads it only in batch mode, `-b`)
    one_earlier: bytes = b""  # a letter of an option that puts it one place earlier (`htpasswd -n`: no file)
    with_value: frozenset[bytes] = frozenset()  # options that take the next word
    slash_options: bool = False  # Windows' `/user:NAME`, `/delete` are options too


_POSITIONAL_PASSWORD: dict[bytes, _Positional] = {
    b"htpasswd": _Positional(3, b"b", b"n"),  # `htpasswd -b[c] FILE USER PW`, `htpasswd -nb USER PW`
    b"wpa_passphrase": _Positional(2),  # `wpa_passphrase SSID PASSPHRASE`
    b"rabbitmqctl add_user": _Positional(2, with_value=frozenset((b"-n", b"--node"))),  # `add_user USER PW`
    b"rabbitmqctl change_password": _Positional(2, with_value=frozenset((b"-n", b"--node"))),
    b"rabbitmqctl authenticate_user": _Positional(2, with_value=frozenset((b"-n", b"--node"))),
    # MinIO's client: `mc alias set ALIAS URL ACCESS-KEY SECRET-KEY`
    b"mc alias set": _Positional(4, with_value=frozenset((b"--api", b"--path"))),
    b"mc config host add": _Positional(4, with_value=frozenset((b"--api", b"--lookup"))),
    b"net use": _Positional(2, slash_options=True),  # `net use [Z:] SHARE PW /user:NAME` (`*` prompts)
    b"openssl passwd": _Positional(1, with_value=frozenset((b"-salt", b"-in"))),  # `openssl passwd -6 -salt S PW`
    b"net user": _Positional(2, slash_options=True),  # Windows' `net user NAME PW /add` (`*` prompts)
}
_DRIVE_RE = re.compile(rb"[A-Za-z]:\Z")  # `net use Z: ...`: a drive letter, no positional of the password's
_DELIMITER_QUOTE_RE = re.compile(rb'(?<!\\)(?:\\\\)*"')  # a quote after an even run of backslashes
# their words: quoted, or bare up to a space (a Windows share, backslashes and all, is one word)
_POSITIONAL_WORD_RE = re.compile(rb"(?P<q>\\*[\"'])(?P<qv>[^\"'\\\n]{1,256})(?P=q)|(?P<bv>[^\s\"'`;|&<>()]{1,256})")
_POSITIONAL = rb"(?:^|[^A-Za-z0-9_.\-/])(?P<cmd>" + b"|".join(
    re.escape(c) for c in sorted(_POSITIONAL_PASSWORD, key=len, reverse=True)) + rb")[ \t]"
_POSITIONAL_RE = re.compile(rb"(?i)" + _POSITIONAL)
_SPACED_P = (rb"sshpass|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|ldapsearch|ldapadd|ldapmodify"
             rb"|ldapdelete|ldapwhoami|ldappasswd|ldapcompare|ldapmodrdn")

TRIGGERS: tuple[Trigger, ...] = (
    # `--password x`, `--auth-token x`, `--api-key x`
    Trigger(
        rb"--(?:[a-z0-9]+[-_])*(?:" + _LONG_WORDS + rb"|" + _GLUED_WORDS + rb")(?:[ \t]+|" + _ARGV_ITEM + rb")",
        literals=(b"--",),
        window=60,
        som=True,
        caseless=True,
    ),
    Trigger(rb"(?:" + _ATTACHED_P + rb")[ \t]", literals=(b"mysql", b"mariadb", b"7z", b"rar"), window=20, som=True,
            caseless=True),
    Trigger(
        rb"(?:" + _SPACED_P + rb"|(?:docker|podman|az)[ \t]+login|redis-cli)[ \t]",
        literals=(b"sshpass", b"mongo", b"login", b"redis-cli", b"ldap"),
        window=30,
        som=True,
        caseless=True,
    ),
    # `-u user:pass`, `--user=user:pass`, `-u 'user:pass'`
    Trigger(rb"(?:^|[ \t])(?:-u|--user)(?:[ \t]+|=)", literals=(b"-u",), window=12, caseless=True),
    # Java's and OpenSSL's single-dash options: `keytool -storepass x`, `openssl ... -passout pass:x`
    Trigger(rb"[ \t]-(?:[a-z]*pass(?:word|wd|phrase|out|in)?|pwd?)[ \t]+", literals=(b"pass", b"-pw"), window=30,
            som=True, caseless=True),
    # commands that read a secret from their standard input: the literal piped or fed into them
    Trigger(
        rb"--[a-z0-9\-]*(?:pass|pwd|token|secret)[a-z0-9\-]*-stdin|--stdin-pass[a-z]*|--with-token",
        literals=(b"stdin", b"--with-token"),
        window=60,
        som=True,
        caseless=True,
    ),
    # ... and a secret store's setter, any CLI's (`gh secret set X`, `wrangler secret put X`, `gcloud secrets create
    # X --data-file=-`, `docker secret create X -`, `firebase functions:secrets:set X`): its words say what it reads
    Trigger(rb"sudo[ \t]+-|chpasswd|passwd[ \t]+--stdin|secrets?(?:[ \t]+|:)(?:set|put|create|add)[ \t]"
            rb"|cryptsetup[ \t]", literals=(b"sudo", b"chpasswd", b"passwd", b"secret", b"cryptsetup"), window=20,
            som=True),
    # ... and a flag naming a secret's file or descriptor given standard input (`--key-file=-`,
    # `--passphrase-fd 0`, `--password-file /dev/stdin`): what is piped in is the secret (the flag's name is
    # read back in Python: a secret's word before the trigger widened the engine's pass by a twentieth)
    Trigger(rb"-(?:file|fd)(?:[ \t]+|=)(?:-|0|/dev/stdin|/dev/fd/0)", literals=(b"-file", b"-fd"), window=30,
            caseless=True),
    # a literal handed to a flag naming a secret as a file by process substitution (`--password-file <(echo pw)`)
    Trigger(rb"<\([ \t]*(?:echo|printf)[ \t]", literals=(b"<(",), window=30),
    # Samba's `-U [domain\\]user%password` (smbclient, rpcclient, smbcacls, smbget, ...)
    Trigger(rb"(?:smbclient|rpcclient|smbcacls|smbget|smbtree|smbmap|smbpasswd)[ \t]", literals=(b"smb", b"rpcclient"),
            window=20, som=True),
    # a user named by a flag: its password flag beside it in the same command (`-u admin -p pw`)
    # (`-l`: a login, as hydra, medusa and ssh name it; ssh's `-p` is a port and stays)
    Trigger(rb"[ \t](?:-[uUl][ \t]|--(?:user(?:name)?|login)[ \t=]|[/-]u(?:ser)?:)",
            literals=(b"-u", b"-U", b"-l", b"--user", b"--login", b"/u"),
            window=12, caseless=True),
    # PowerShell's `ConvertTo-SecureString 'pw' -AsPlainText`: the literal made into a credential
    Trigger(rb"ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?\\*[\"']", literals=(b"convertto-securestring",),
            window=40, caseless=True, opens=False),
    # (read raw, `opens=False`: "a zip file" in a tool's description would open its JSON string in every request)
    Trigger(rb"(?:^|[^A-Za-z0-9_.\-])(?:" + b"|".join(_OTHER_FLAG_TOOLS) + rb")[ \t]",
            literals=(b"zip", b"ssh-keygen", b"openssl", b"lftp"), window=16, som=True, opens=False),
    # a password as a positional argument (`htpasswd -b f user pw`, `rabbitmqctl add_user u pw`, `net use`)
    Trigger(_POSITIONAL, literals=tuple(c.split(b" ")[-1] for c in _POSITIONAL_PASSWORD), window=40,
            som=True, caseless=True, opens=False),
)

# A shell word: quoted (possibly JSON-escaped quotes) or bare up to a space, quote or escape.
_WORD_RE = re.compile(rb"(?P<q>\\*[\"'])(?P<qv>[^\"'\\\n]{1,256})(?P=q)|(?P<bv>[^\s\"'`\\;|&<>()]{1,256})")
_LONG_RE = re.compile(rb"(?i)--(?:[a-z0-9]+[-_])*(?P<kw>" + _LONG_WORDS + rb"|" + _GLUED_WORDS + rb")" + _ARGV_GAP)
_LINE_END_RE = re.compile(rb"\n|\\n|\\r|;|&&|\|\|")
_ATTACHED_RE = re.compile(rb"[ \t]-p(?P<v>\\*[\"'][^\"'\\\n]{1,256}\\*[\"']|[^\s\"'`\\;|&<>()]{1,256})")
_SPACED_RE = re.compile(rb"[ \t](?:-p|-a|-w|--pass|--password)[ \t]+")  # `-w`: the ldap tools' bind password
_SINGLE_DASH_RE = re.compile(rb"(?i)[ \t]-(?P<name>[a-z]*pass(?:word|wd|phrase|out|in)?|pwd?)[ \t]+")
_OPENSSL_SOURCE_RE = re.compile(rb"(?i)pass:")  # `pass:x`
_OPENSSL_ELSEWHERE_RE = re.compile(rb"(?i)(?:env|file|fd):|stdin\Z")  # where OpenSSL reads it: no secret
_USER_RE = re.compile(
    rb"(?i)(?:-u|--user)(?:[ \t]+|=)(?P<q>\\*[\"'])?[^\s:\"'\\@/]{1,64}:(?P<pw>[^\s\"'\\]{1,256})"
)


def _word(data: bytes, pos: int) -> tuple[int, int, bool] | None:
    m = _WORD_RE.match(data, pos)
    if m is None:
        return None
    if m.group("qv") is not None:
        return (*m.span("qv"), True)
    return (*m.span("bv"), False)


def _line_end(data: bytes, pos: int) -> int:
    m = _LINE_END_RE.search(data, pos, pos + 2048)
    return m.start() if m is not None else min(len(data), pos + 2048)


# A shell word of a producer's arguments: quoted (the quotes possibly JSON-escaped; escapes such as
# printf's `\\n` inside) or bare.
_ARG = rb"(?:\\*\"(?:[^\"\\\n]|\\+[^\"\\\n])*\\*\"|'[^'\n]*'|\\+'[^'\n]*?\\+'|[^\s\"'`\\;|&<>()]+)"
# `echo [-n|-e|-E...] WORD |` or `printf [FORMAT] WORD |`, then the consuming command up to its trigger
# (no separator, line end or JSON-escaped line end in between).
_PIPED_RE = re.compile(
    rb"(?:^|(?<=[\s;&|(`{\"'])|(?<=\\[nt]))(?P<cmd>echo|printf)(?P<opts>(?:[ \t]+-[neE]{1,3})*)(?P<args>(?:[ \t]+" + _ARG
    + rb"){1,2})[ \t]*\|(?!\|)(?P<mid>(?:[^|;&\n\\]|\\+[^n\\])*)\Z"
)
_ARG_RE = re.compile(_ARG)
_HERE_STRING_RE = re.compile(rb"<<<[ \t]*")
_TRAILING_LINE_END_RE = re.compile(rb"(?:\\+[nr])+\Z")  # printf's `\n` after the value
_SUDO_ARG_OPTIONS = frozenset(b"ugpCDhrtTU")  # sudo's options that take an argument
_SAMBA_USER_RE = re.compile(rb"[ \t](?:-U[ \t]*|--user(?:name)?[= \t][ \t]*)(?P<q>\\*[\"'])?(?P<u>[^\s%\"']{1,128})%")
_PIPE_REACH = 600  # how far before the consumer the producer may begin
_PAIR_PASS_RE = re.compile(rb"[ \t](?:(?:-p|-P|-pw|--pw)[ \t]+|[/-](?:p|pw|pass|password):)")  # `/p:`, winrs' `-p:`
# What ends the command before a flag: a line end, a shell operator, or the JSON string that opens it.
_COMMAND_SEP_RE = re.compile(rb"\n|\\+[nr]|;|&&|\|\|?|`|\$\(|\\*\"[ \t]*[:,\[][ \t]*\\*\"")
_COMMAND_REACH = 512  # bytes before a user flag its command may begin
# Where `-u` is a uid and `-p`/`-P` publish ports or set a prompt: never a user and password pair.
_NOT_PAIRED_RE = re.compile(rb"[ \t\"']*(?:\S*/)?(?:sudo|doas|runuser|su|docker|podman|nerdctl|kubectl|crictl|ctr|uv|pip3?|pipx)\b")
_PORTISH_RE = re.compile(rb"[0-9.:,\-]+(?:/(?:tcp|udp|sctp))?")


_OPEN_QUOTE_RE = re.compile(rb"\\*[\"']")
_CLOSE_QUOTE_RE = re.compile(rb"\\*[\"']\Z")


def _unquoted(word: re.Match[bytes]) -> tuple[int, int]:
    """The span of a shell word's value inside its quotes (JSON-escaped quotes included)."""
    start, end = word.span()
    opened = _OPEN_QUOTE_RE.match(word.group())
    if opened is None:
        return start, end
    close = _CLOSE_QUOTE_RE.search(word.group())
    return start + opened.end(), end - (len(close.group()) if close else 0)


def _sudo_reads_stdin(data: bytes, start: int) -> bool:
    """`sudo` at `start` is given `-S` (read the password from standard input) among its own options."""
    words = data[start + 4 : _line_end(data, start + 4)].split()
    i = 0
    while i < len(words) and words[i].startswith(b"-") and len(words[i]) > 1:
        flags = words[i][1:]
        if words[i].startswith(b"--"):
            if words[i] == b"--stdin":
                return True
            i += 1
            continue
        if b"S" in flags:
            return True
        i += 2 if flags[-1:] and flags[-1] in _SUDO_ARG_OPTIONS else 1
    return False


def _piped_secret(data: bytes, consumer: int, out: list[Span], user_colon: bool = False) -> None:
    """The literal piped into the command whose secret-reading part begins at `consumer`, or fed
    to it by a here-string after it (`<<< pw`); `user_colon`: it is `user:password` (chpasswd)."""
    spans: list[tuple[int, int]] = []
    m = _PIPED_RE.search(data, max(0, consumer - _PIPE_REACH), consumer)
    if m is not None:
        words = list(_ARG_RE.finditer(data, m.start("args"), m.end("args")))
        if m.group("cmd") == b"echo":  # what echo prints: every word
            spans += [_unquoted(w) for w in words]
        elif len(words) == 1 and b"%" not in words[0].group():  # `printf 'pw\n'`
            spans.append(_unquoted(words[0]))
        elif len(words) == 2 and b"%" in words[0].group():  # `printf '%s\n' pw`
            spans.append(_unquoted(words[1]))
    here = _HERE_STRING_RE.search(data, consumer, _line_end(data, consumer))
    if here is not None:
        word = _ARG_RE.match(data, here.end())
        if word is not None:
            spans.append(_unquoted(word))
    for v_start, v_end in spans:
        value = _TRAILING_LINE_END_RE.sub(b"", data[v_start:v_end])
        if user_colon:
            colon = value.find(b":")
            if colon < 0:
                continue
            v_start, value = v_start + colon + 1, value[colon + 1 :]
        if value and not value.startswith(b"-") and not is_non_secret_password(value):  # only a password goes there
            out.append(Span(v_start, v_start + len(value), "password", PRIORITY_ASSIGNMENT))


def find_cli_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of passwords and tokens given to command-line flags; `hits[i]` match `TRIGGERS[i]`."""
    (long_flags, attached, spaced, user, single_dash, stdin_flags, stdin_commands, stdin_files, substituted, samba,
     user_named, secure, other, positional) = hits
    for start, end in other:
        _other_flag(data, start, end, out)
    for start, _ in positional:
        _positional_password(data, start, out)
    for _, end in secure:
        m = _SECURE_STRING_RE.match(data, end)
        if m is not None and not is_non_secret_value(m.group("v"), True, b"pass"):
            out.append(Span(m.start("v"), m.end("v"), "password", PRIORITY_ASSIGNMENT))
    done = -1  # every user flag of one command reads the same command once
    for _start, end in user_named:  # (no start of match: the flag's end is inside its command)
        if end > done:
            done = _paired_password(data, end, out)
    for start, _ in stdin_flags:
        _piped_secret(data, start, out)
    for _, end in stdin_files:
        if end == len(data) or data[end] in _WORD_END:  # `-` itself, not `-v` or `0600`
            flag = _SECRET_FILE_FLAG_RE.search(data, max(0, end - 80), end)
            if flag is not None:
                _piped_secret(data, flag.start(), out)
    for _, end in substituted:
        if _SECRET_FILE_FLAG_RE.search(data, max(0, end - 80), end) is not None:
            _substituted_secret(data, end, out)
    for start, end in stdin_commands:
        word = data[start:end]
        if not word.startswith(b"sudo") or _sudo_reads_stdin(data, start):
            _piped_secret(data, start, out, user_colon=word == b"chpasswd")
    for _start, end in samba:
        stop = _line_end(data, end)
        for m in _SAMBA_USER_RE.finditer(data, end - 1, stop):
            v_start = m.end()
            if m.group("q"):  # `-U 'user%pw'`: the password runs to the closing quote
                close = data.find(m.group("q"), v_start, stop)
                v_end = close if close >= 0 else stop
            else:
                word = _word(data, v_start)
                v_end = word[1] if word is not None and word[0] == v_start else v_start
            value = data[v_start:v_end]
            if value and not is_non_secret_password(value):  # after `%`: only a password
                out.append(Span(v_start, v_end, "password", PRIORITY_ASSIGNMENT))
    for start, _ in long_flags:
        m = _LONG_RE.match(data, start)
        if m is None or (start > 0 and data[start - 1] not in b" \t\"'`(=\n\\n"):
            continue
        word = _word(data, m.end())
        if word is None:
            continue
        v_start, v_end, quoted = word
        value = data[v_start:v_end]
        kw = m.group("kw")
        if kw.lower().endswith(NOT_GLUED_PASS) or value.startswith(b"-") or is_non_secret_value(
                value, quoted, kw.lower()):
            continue  # (a word stays: prose names flags too, `the --username and --password options`)
        if not _STRONG_LONG.search(kw) and not looks_random(value):
            continue
        kind = "password" if _PASSWORD_LONG.search(kw) else "generic-secret"
        out.append(Span(v_start, v_end, kind, PRIORITY_ASSIGNMENT))
    for _start, end in attached:
        stop = _line_end(data, end)
        for m in _ATTACHED_RE.finditer(data, end - 1, stop):
            value = m.group("v").strip(b"\\\"'")
            if value and not is_non_secret_password(value):  # `mysql -pwhiteduke`: glued, only a password
                v_start = m.start("v") + (len(m.group("v")) - len(m.group("v").lstrip(b"\\\"'")))
                out.append(Span(v_start, v_start + len(value), "password", PRIORITY_ASSIGNMENT))
    for _start, end in spaced:
        stop = _line_end(data, end)
        for m in _SPACED_RE.finditer(data, end - 1, stop):
            word = _word(data, m.end())
            if word is None:
                continue
            value = data[word[0] : word[1]]
            if not value.startswith(b"-") and not is_non_secret_password(value):  # these tools' flag: a password
                out.append(Span(word[0], word[1], "password", PRIORITY_ASSIGNMENT))
    for _start, end in user:
        m = _USER_RE.search(data, max(0, end - 12), min(len(data), end + 400))
        if m is None or m.start() > end:
            continue
        password = m.group("pw")
        quote = m.group("q")
        if quote is not None and password.endswith(quote):
            password = password[: -len(quote)]
        if password and not is_non_secret_value(password, True, b"pass"):
            s = m.start("pw")
            out.append(Span(s, s + len(password), "basic-auth", PRIORITY_ASSIGNMENT))
    for start, _ in single_dash:
        m = _SINGLE_DASH_RE.match(data, start)
        if m is None or m.group("name").lower() in (b"bypass", b"compass"):
            continue
        word = _word(data, m.end())
        if word is None:
            continue
        v_start, v_end, quoted = word
        if _OPENSSL_ELSEWHERE_RE.match(data, v_start, v_end):
            continue
        source = _OPENSSL_SOURCE_RE.match(data, v_start, v_end)
        if source is not None:
            v_start = source.end()  # OpenSSL's `pass:x`
        value = data[v_start:v_end]
        if value and not value.startswith(b"-") and not is_non_secret_value(value, quoted, b"pass"):
            out.append(Span(v_start, v_end, "password", PRIORITY_ASSIGNMENT))


_TOOL_RE = re.compile(rb"[A-Za-z0-9\-]+")
# after `ConvertTo-SecureString '`: the literal, its closing quote (escaped or not), then `-AsPlainText`
_SECURE_STRING_RE = re.compile(rb"(?P<v>[^\"'\\\n]{1,256})\\*[\"'][ \t]+-AsPlainText", re.I)


def _other_flag(data: bytes, start: int, end: int, out: list[Span]) -> None:
    """`zip -P x`, `ssh-keygen -N x`, `lftp -u user,x`: the value of the tool's own password flag in the same
    command."""
    m = _TOOL_RE.search(data, start, end)
    flags = _OTHER_FLAG_TOOLS.get(m.group(0)) if m is not None else None
    if not flags:
        return
    stop = _line_end(data, end)
    for flag, after in flags:
        at = data.find(b" " + flag + b" ", end - 1, stop)
        word = _word(data, at + len(flag) + 2) if at >= 0 else None
        if word is None:
            continue
        v_start, v_end = word[0], word[1]
        if after:
            cut = data.find(after, v_start, v_end)
            if cut < 0:
                continue  # `lftp -u user`: it prompts
            v_start = cut + len(after)
        value = data[v_start:v_end]
        if value and not value.startswith(b"-") and not is_non_secret_password(value):  # the tool's password flag
            out.append(Span(v_start, v_end, "password", PRIORITY_ASSIGNMENT))


# A flag naming a secret's file or descriptor, then standard input or a process substitution, up to the trigger's end
_SECRET_FILE_FLAG_RE = re.compile(
    rb"(?i)-[a-z0-9_\-]*(?:pass|pwd|secret|token|key|cred)[a-z0-9_\-]*(?:[ \t]+|=|:)"
    rb"(?:-|0|/dev/stdin|/dev/fd/0|<\([ \t]*(?:echo|printf)[ \t])\Z")
_WORD_END = frozenset(b" \t\n\r\"'\\;|&)")
# `<(echo [-n] WORD)`, `<(printf [FORMAT] WORD)` from its parenthesis: the command substituted, up to its closing one
_SUBSTITUTED_RE = re.compile(rb"\([ \t]*(?P<cmd>echo|printf)(?:[ \t]+-[neE]{1,3})*(?P<args>(?:[ \t]+" + _ARG
                             + rb"){1,2})[ \t]*\)")


def _substituted_secret(data: bytes, end: int, out: list[Span]) -> None:
    """The literal a process substitution (its trigger ending at `end`) hands to a secret's file flag
    (`--vault-password-file <(echo pw)`)."""
    m = _SUBSTITUTED_RE.match(data, data.rfind(b"(", 0, end), min(len(data), end + 600))
    if m is None:
        return
    words = list(_ARG_RE.finditer(data, m.start("args"), m.end("args")))
    if m.group("cmd") == b"printf":
        if len(words) == 2 and b"%" in words[0].group():  # `printf '%s' pw`
            words = words[1:]
        elif len(words) != 1 or b"%" in words[0].group():
            return
    for w in words:
        v_start, v_end = _unquoted(w)
        value = _TRAILING_LINE_END_RE.sub(b"", data[v_start:v_end])
        if value and not value.startswith(b"-") and not is_non_secret_password(value):
            out.append(Span(v_start, v_start + len(value), "password", PRIORITY_ASSIGNMENT))


def _positional_password(data: bytes, start: int, out: list[Span]) -> None:
    """The password a command takes as a positional argument (`_POSITIONAL_PASSWORD`), counted among the
    command's words up to the line's end (or its JSON string's), options apart."""
    m = _POSITIONAL_RE.match(data, start)
    if m is None:
        return
    rule = _POSITIONAL_PASSWORD[b" ".join(m.group("cmd").lower().split())]
    stop = _string_end(data, m.start("cmd"), _line_end(data, m.end()))
    words: list[tuple[int, int, bool]] = []
    options, takes_value = b"", False
    for w in _POSITIONAL_WORD_RE.finditer(data, m.end(), stop):
        quoted = w.group("qv") is not None
        v_start, v_end = w.span("qv" if quoted else "bv")
        text = data[v_start:v_end]
        if takes_value:
            takes_value = False
        elif not quoted and (text.startswith(b"-") or (rule.slash_options and text.startswith(b"/"))):
            options += text
            takes_value = text in rule.with_value
        elif not _DRIVE_RE.match(text):
            words.append((v_start, v_end, quoted))
            if len(words) == rule.which:
                break  # (options come before the positionals these commands read)
    options = options.lower()
    which = rule.which - bool(rule.one_earlier and rule.one_earlier in options)
    if (rule.needs and rule.needs not in options) or len(words) < which:
        return
    v_start, v_end, quoted = words[which - 1]
    value = data[v_start:v_end]
    # a word too when an option asked for the password there (`htpasswd -b`: no prose writes it); else a word
    # may be a sentence's (`the net use command maps a share`)
    if value != b"*" and not (is_non_secret_password(value) if rule.needs else is_non_secret_value(value, quoted, b"pass")):
        out.append(Span(v_start, v_end, "password", PRIORITY_ASSIGNMENT))


def _string_end(data: bytes, start: int, stop: int) -> int:
    """Where a command written inside a JSON string (`"command": "htpasswd ..."`: an odd number of unescaped
    quotes on its line before it) ends: at the string's closing quote; otherwise `stop`."""
    line = max(data.rfind(b"\n", 0, start) + 1, start - 2048)
    if len(_DELIMITER_QUOTE_RE.findall(data, line, start)) % 2 == 0:
        return stop
    end = string_end(data, start)
    return end if 0 <= end < stop else stop


def _command_start(data: bytes, pos: int) -> int:
    """Where the command holding `pos` begins: after the last separator or line end before it."""
    lo = begin = max(0, pos - _COMMAND_REACH)
    for m in _COMMAND_SEP_RE.finditer(data, lo, pos):
        begin = m.end()
    return begin


def _paired_password(data: bytes, end: int, out: list[Span]) -> int:
    """The password flag's value in a command whose user flag (ending at `end`) names a user; returns
    where the command ends (or the flag, when it names no user)."""
    pos = end
    while data[pos : pos + 1] in (b" ", b"\t"):
        pos += 1
    if _word(data, pos) is None or data[pos : pos + 1] == b"-":
        return end  # `cp -u -p`: a flag, not a user
    begin, stop = _command_start(data, end), _line_end(data, end)
    if _NOT_PAIRED_RE.match(data, begin, stop):
        return stop
    for m in _PAIR_PASS_RE.finditer(data, begin, stop):
        word = _word(data, m.end())
        if word is None:
            continue
        value = data[word[0] : word[1]]
        if (value.startswith((b"-", b"/", b"./", b"~")) or b"://" in value or _PORTISH_RE.fullmatch(value)
                or is_non_secret_value(value, word[2], b"pass")):
            continue
        out.append(Span(word[0], word[1], "password", PRIORITY_ASSIGNMENT))
    return stop


DETECTOR = Detector(
    "command-lines",
    TRIGGERS,
    find_cli_spans,
    examples=samples(
        "redis-server --requirepass <mixed:14> --port 6380",  # the flag's word glued to the one before
        'command: ["vault", "server", "--root-token", "<mixed:14>"]',  # an argument list (exec form)
        'args: ["--registry-pass", "<mixed:12>"]',
        "mysql -u root -p<mixed:12> mydb",
        "sshpass -p <mixed:10> ssh user@host",
        "curl -u admin:<mixed:14> https://example.com",
        "docker login --username bob --password <mixed:12> registry.example",
        "keytool -genkeypair -keystore k.jks -storepass <mixed:12>",
        'echo "<mixed:12>" | docker login -u bob --password-stdin registry.example',
        "smbclient -U bob%<mixed:12> //fs/share",
        "psexec \\\\host -u admin -p <mixed:14> cmd",
        "hydra -l admin -p <mixed:12> ssh://10.0.0.9",  # a login named with `-l`
        "7z a -p<mixed:12> backup.7z data/",  # an archiver's attached `-p`
        "zip -P <mixed:12> backup.zip data",
        "ssh-keygen -t ed25519 -N '<mixed:14>' -f key",
        "$pw = ConvertTo-SecureString '<mixed:14>' -AsPlainText -Force",  # PowerShell
        "htpasswd -bc /etc/nginx/.htpasswd admin <mixed:12>",  # a password as a positional argument
        '{"command": "rabbitmqctl add_user deploy <mixed:14>", "cwd": "/srv"}',
        "net use Z: \\\\fs\\share <mixed:12> /user:CORP\\alice",
        "mc alias set --api S3v4 store http://127.0.0.1:9000 minio <mixed:16>",
        "winrs -r:host -u:admin -p:<mixed:12> ipconfig",  # Windows' colon form
        "sshpass -p dev_admin ssh deploy@host && mysql -u root -pwhiteduke app",  # a word where only a password goes
        "echo whiteduke | sudo -S apt update && smbclient -U bob%dev_admin //fs/share",  # piped; after Samba's `%`
        "openssl enc -aes-256-cbc -salt -k <mixed:14> -in db.sql -out db.enc",  # OpenSSL's legacy `-k`
        "lftp -u deploy,<mixed:14> sftp://files.example.com",  # lftp's `user,password`
        "net user svc_backup <mixed:14> /add /domain",
        "ansible-playbook site.yml --vault-password-file <(echo <mixed:14>)",  # a process substitution
        "echo -n <mixed:14> | cryptsetup luksOpen /dev/sdb1 vault",
        "echo <mixed:14> | gpg --batch --passphrase-fd 0 -c notes.txt",  # a secret's descriptor given stdin
    ),
    near_misses=(
        "chromium --bypass 10.0.0.0/8 && ffmpeg --twopass 1 && tool --compass north",  # words ending in `pass`
        'args: ["--password", "--verbose"]',  # the next item is a flag
        "mkdir -p build/out && docker run -p 8080:80 app",
        "ssh -p 2222 user@host",
        "ssh -l admin -p 2222 host && ls -l -p build && grep -l -P 'x+' file",
        "curl -u $USER:$PASS https://example.com",
        "tool --password-file ./secret.txt --token-type bearer",
        "mysql -u root -p mydb",  # prompts for the password
        "openssl rsa -in key.pem -passin env:KEY_PASS -out plain.pem",
        "echo $REGISTRY_PASSWORD | docker login -u bob --password-stdin",
        "sudo -u postgres -p 'Password: ' psql",
        "unzip -p site.zip index.html && gzip -N notes.txt && ssh-keygen -N '' -f key && unrar x -p- a.rar",
        "htpasswd -c .htpasswd alice && net use * /delete && net use Z: \\\\fs\\share * /user:alice",  # prompts
        "rabbitmqctl add_user deploy $RABBIT_PASSWORD && openssl passwd -stdin < pw.txt",
        "pass them with the --username and --password options && journalctl -u nginx -p warning",
        "echo y | sudo -S apt install curl && zip -P password backup.zip data",  # an answer; a placeholder
        "lftp -u deploy sftp://files.example.com && net user bob * /add && net user bob /delete",  # they prompt
        "cat key.bin | tool --key-file - --verbose && docker run --env-file <(echo A=b) img",  # no literal; no secret
        "openssl enc -d -k $PASSPHRASE -in a && openssl enc -K $KEY -iv $IV -in a",  # references
    ),
)
