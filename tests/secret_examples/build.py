"""Build `examples.jsonl` from checkouts of gitleaks and detect-secrets (run by hand, not by tests).

    python -m tests.secret_examples.build --gitleaks PATH --detect-secrets PATH

Tests and the scoring command use only the vendored `examples.jsonl`; this
script is kept so the corpus can be refreshed from newer upstream versions and
so anyone can see how every example was obtained.

gitleaks keeps its examples in Go (`cmd/generate/config/rules/*.go`: the `tps`
and `fps` of each rule). A small evaluator reads the expressions those files
use (string literals, `+`, `[]string{...}`, `append`, `fmt.Sprintf`,
`utils.GenerateSampleSecret(s)`, `utils.AlphaNumeric("32")`-style regex
helpers, `secrets.NewSecret(regex)`). `secrets.NewSecret` draws a random
string from a regex at gitleaks' test time; here `generate_from_regex` draws
it with a seeded random generator (uniform characters, like gitleaks'
`reggen`), so the values are the same on every build. Statements it cannot
read are skipped and counted. Where a `tp` is a literal line rather than
`GenerateSampleSecrets(name, secret)`, the secret inside it is found with the
rule's own regex from `config/gitleaks.toml`.

detect-secrets keeps its examples in its pytest modules (`tests/plugins/*`:
`pytest.mark.parametrize` lists of `(line, should_flag)` or, for the keyword
plugin, `(line, expected_secret)`); they are read by importing those modules.
The secret inside a flagged line is what detect-secrets itself reports for
it (its `scan_line`), or the line itself when it is a single token.

Classes (decided afterwards by `annotate.py`, from each scanner's own rule): `self-identifying` (a format that says what it is), `name-marked`
(only the credential name next to it marks it: gitleaks' semi-generic rules,
keyword/name plugins) and `unmarked` (high-entropy strings: neither).
"""

from __future__ import annotations

import argparse
import codecs
import hashlib
import importlib
import importlib.util
import inspect
import json
import random
import re
import subprocess
import sys
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.secret_examples.annotate import annotate

try:  # the builder runs on CPython 3.11+; the parser module was renamed there
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
OUT = HERE / "examples.jsonl"


@dataclass
class Example:
    id: str
    source: str  # gitleaks | detect-secrets
    family: str  # gitleaks rule id / detect-secrets plugin
    label: str  # tp | fp
    cls: str  # self-identifying | name-marked | unmarked
    text: str  # the example as upstream has it
    secret: str | None  # what must not reach disk (tp only)
    name: str  # identifier to use where a placement names the secret
    file: str
    line: int
    generated: list[str] | None = None  # regexes parts of the value were drawn from (secrets.NewSecret)


# --- a seeded generator for secrets.NewSecret(regex) -----------------------------------------

_CATEGORY_CHARS = {
    sre_parse.CATEGORY_DIGIT: "0123456789",
    sre_parse.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
    sre_parse.CATEGORY_SPACE: " ",
}
_PRINTABLE = [chr(c) for c in range(0x21, 0x7F)]
_UNBOUNDED_EXTRA = 10


def generate_from_regex(pattern: str, rng: random.Random) -> str:
    """A random string matching `pattern` (uniform choices; open repeats get up to 10 more)."""
    return _gen(sre_parse.parse(pattern), rng, {})


def _class_chars(items) -> list[str]:
    chars: set[str] = set()
    negate = False
    for op, av in items:
        if op is sre_parse.NEGATE:
            negate = True
        elif op is sre_parse.LITERAL:
            chars.add(chr(av))
        elif op is sre_parse.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op is sre_parse.CATEGORY:
            chars.update(_CATEGORY_CHARS.get(av, ""))
    if negate:
        return [c for c in _PRINTABLE if c not in chars]
    return sorted(chars)


def _gen(tree, rng: random.Random, groups: dict) -> str:
    out = []
    for op, av in tree:
        if op is sre_parse.LITERAL:
            out.append(chr(av))
        elif op is sre_parse.NOT_LITERAL:
            out.append(rng.choice([c for c in _PRINTABLE if c != chr(av)]))
        elif op is sre_parse.ANY:
            out.append(rng.choice(_PRINTABLE))
        elif op is sre_parse.IN:
            out.append(rng.choice(_class_chars(av)))
        elif op is sre_parse.CATEGORY:
            out.append(rng.choice(_CATEGORY_CHARS.get(av, "x")))
        elif op is sre_parse.BRANCH:
            out.append(_gen(rng.choice(av[1]), rng, groups))
        elif op is sre_parse.SUBPATTERN:
            text = _gen(av[-1], rng, groups)
            if av[0] is not None:
                groups[av[0]] = text
            out.append(text)
        elif op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)):
            low, high, sub = av
            high = low + _UNBOUNDED_EXTRA if high is sre_parse.MAXREPEAT else high
            out.extend(_gen(sub, rng, groups) for _ in range(rng.randint(low, high)))
        elif op is sre_parse.GROUPREF:
            out.append(groups.get(av, ""))
        # AT (anchors), ASSERT/ASSERT_NOT (lookarounds) produce nothing
    return "".join(out)


# --- gitleaks: a tiny evaluator for the Go the rule files use ---------------------------------

_GO_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:[^"\\\n]|\\.)*")"""
    r"""|(?P<num>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>\.\.\.|:=|[(){}\[\],+=:;*&!<>|-])""",
    re.S,
)


class Unknown(Exception):
    """An expression the evaluator does not read."""


@dataclass
class Tok:
    kind: str
    text: str
    line: int


def go_tokens(src: str) -> list[Tok]:
    out = []
    line = 1
    for m in _GO_TOKEN.finditer(src):
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            out.append(Tok(kind, m.group(), line))
        line += m.group().count("\n")
    return out


def _go_string(tok: Tok) -> str:
    if tok.kind == "raw":
        return tok.text[1:-1]
    return codecs.decode(tok.text[1:-1].encode("latin-1", "backslashreplace"), "unicode_escape")


class Value:
    """An evaluated Go value: a string or a list of strings, remembering generated parts."""

    def __init__(self, v, generated: list[str] | None = None, pairs=None) -> None:
        self.v = v
        self.generated = generated or []
        self.pairs = pairs  # for tps built by GenerateSampleSecrets: [(text, secret, name)]


SAMPLE_TEMPLATE = '{i}_api_token = "{s}"'


class GoRules:
    """Evaluates one rule function's statements and collects its tps and fps."""

    def __init__(self, toks: list[Tok], seed: str) -> None:
        self.toks = toks
        self.pos = 0
        self.env: dict[str, Value] = {}
        self.rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))
        self.skipped = 0

    def peek(self, k: int = 0) -> Tok | None:
        return self.toks[self.pos + k] if self.pos + k < len(self.toks) else None

    def take(self, text: str | None = None) -> Tok:
        tok = self.toks[self.pos]
        if text is not None and tok.text != text:
            raise Unknown(f"expected {text!r} at line {tok.line}, got {tok.text!r}")
        self.pos += 1
        return tok

    def skip_balanced(self) -> None:
        """Skip one expression-ish run up to the end of the statement."""
        depth = 0
        start_line = self.peek().line if self.peek() else 0
        while self.peek() is not None:
            t = self.peek()
            if t.text in "([{":
                depth += 1
            elif t.text in ")]}":
                if depth == 0:
                    return
                depth -= 1
            elif depth == 0 and t.line != start_line and t.text not in ("+", ",", "..."):
                return
            self.pos += 1

    # expressions
    def expr(self) -> Value:
        left = self.primary()
        while self.peek() is not None and self.peek().text == "+":
            self.take("+")
            right = self.primary()
            if not isinstance(left.v, str) or not isinstance(right.v, str):
                raise Unknown("+ on non-strings")
            left = Value(left.v + right.v, left.generated + right.generated)
        return left

    def args(self) -> list[Value]:
        self.take("(")
        out = []
        while self.peek().text != ")":
            value = self.expr()
            if self.peek().text == "...":
                self.take("...")
                value.spread = True  # type: ignore[attr-defined]
            out.append(value)
            if self.peek().text == ",":
                self.take(",")
        self.take(")")
        return out

    def primary(self) -> Value:
        tok = self.take()
        if tok.kind in ("raw", "str"):
            return Value(_go_string(tok))
        if tok.text == "[" and self.peek().text == "]":  # []string{...}
            self.take("]")
            self.take()  # string
            return self.composite()
        if tok.text == "map":
            depth = 0
            while True:  # map[string]string
                t = self.take()
                depth += t.text == "["
                depth -= t.text == "]"
                if depth == 0 and t.kind == "name":
                    break
            return self.composite(is_map=True)
        if tok.kind == "name":
            name = tok.text
            if self.peek() is not None and self.peek().text == "(":
                return self.call(name, self.args())
            if name in self.env:
                return self.env[name]
            raise Unknown(f"unknown name {name}")
        if tok.kind == "num":
            return Value(tok.text)
        raise Unknown(f"unexpected {tok.text!r} at line {tok.line}")

    def composite(self, is_map: bool = False) -> Value:
        self.take("{")
        items: list[str] = []
        pairs: list = []
        generated: list[str] = []
        while self.peek().text != "}":
            try:
                value = self.expr()
                if is_map and self.peek().text == ":":
                    self.take(":")
                    value = self.expr()
            except Unknown:
                self.skipped += 1
                self.skip_balanced()
                if self.peek().text == ",":
                    self.take(",")
                continue
            if isinstance(value.v, list):
                items.extend(value.v)
                pairs.extend(value.pairs or [(t, None, None, []) for t in value.v])
            else:
                items.append(value.v)
                pairs.append((value.v, None, None, value.generated))
            generated += value.generated
            if self.peek().text == ",":
                self.take(",")
        self.take("}")
        return Value(items, generated, pairs)

    def call(self, name: str, args: list[Value]) -> Value:
        short = name.rsplit(".", 1)[-1]
        strs = [a.v for a in args]
        helpers = {
            "Numeric": "[0-9]{%s}", "Hex": "[a-f0-9]{%s}", "AlphaNumeric": "[a-z0-9]{%s}",
            "AlphaNumericExtendedShort": "[a-z0-9_-]{%s}", "AlphaNumericExtended": r"[a-z0-9=_\-]{%s}",
            "AlphaNumericExtendedLong": r"[a-z0-9\/=_\+\-]{%s}",
        }
        if short in helpers:
            return Value(helpers[short] % strs[0])
        if short == "Hex8_4_4_4_12":
            return Value("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        if name == "secrets.NewSecret":
            pattern = strs[0].replace(r"\/", "/")
            value = generate_from_regex(pattern, self.rng)
            return Value(value, [pattern])
        if short == "GenerateSampleSecret":
            text = SAMPLE_TEMPLATE.format(i=strs[0], s=strs[1])
            return Value(text, args[1].generated, [(text, strs[1], strs[0], args[1].generated)])
        if short == "GenerateSampleSecrets":
            text = SAMPLE_TEMPLATE.format(i=strs[0], s=strs[1])  # one per call; upstream varies the syntax
            return Value([text], args[1].generated, [(text, strs[1], strs[0], args[1].generated)])
        if name == "append":
            base = args[0]
            items = list(base.v)
            pairs = list(base.pairs or [(t, None, None, []) for t in base.v])
            generated = list(base.generated)
            for a in args[1:]:
                if isinstance(a.v, list):
                    items += a.v
                    pairs += a.pairs or [(t, None, None, []) for t in a.v]
                else:
                    items.append(a.v)
                    pairs.append((a.v, None, None, a.generated))
                generated += a.generated
            return Value(items, generated, pairs)
        if name == "fmt.Sprintf":
            fmt = strs[0]
            rest = [str(s) for s in strs[1:]]
            text = re.sub(r"%[sdvq]", lambda m: rest.pop(0) if rest else m.group(), fmt)
            return Value(text, sum((a.generated for a in args[1:]), []))
        if name == "strings.Repeat":
            return Value(strs[0] * int(strs[1]))
        raise Unknown(f"call {name}")

    # statements
    def run(self) -> tuple[Value | None, Value | None]:
        tps = fps = None
        while self.peek() is not None:
            tok = self.peek()
            if tok.text == "return":
                self.take()
                ret = self.take()
                if ret.text in ("utils.Validate", "utils.ValidateWithPaths"):
                    self.take("(")
                    self.take()  # r
                    self.take(",")
                    tps = self.env.get(self.take().text)
                    self.take(",")
                    fps = self.env.get(self.take().text)
                return tps, fps
            if tok.text == "var" and self.peek(1).text == "(":
                self.take()
                self.take("(")
                while self.peek().text != ")":
                    self.assignment()
                self.take(")")
                continue
            if tok.text == "var":
                self.take()
            self.assignment()
        return tps, fps

    def assignment(self) -> None:
        start = self.pos
        tok = self.peek()
        nxt = self.peek(1)
        if tok.kind == "name" and nxt is not None and nxt.text in (":=", "=") and not tok.text.startswith("r."):
            self.pos += 2
            try:
                self.env[tok.text] = self.expr()
                return
            except Unknown:
                self.skipped += 1
                self.pos = start + 2
        elif tok.kind == "name" and nxt is not None and nxt.kind == "name" and self.peek(2).text == "=":
            self.pos += 3  # var x T = ...
            try:
                self.env[tok.text] = self.expr()
                return
            except Unknown:
                self.skipped += 1
                self.pos = start + 3
        else:
            self.pos += 1
        self.skip_balanced()


def _rule_functions(toks: list[Tok]):
    """(body tokens, rule id) of every `func X() *config.Rule { ... }`, braces matched by token."""
    i = 0
    while i < len(toks):
        if toks[i].text == "func" and i + 6 < len(toks) and toks[i + 5].text == "config.Rule":
            j = i + 6
            while toks[j].text != "{":
                j += 1
            depth, k = 0, j
            while k < len(toks):
                depth += toks[k].text == "{"
                depth -= toks[k].text == "}"
                if depth == 0:
                    break
                k += 1
            body = toks[j + 1 : k]
            rid = next((body[n + 2].text for n in range(len(body) - 2)
                        if body[n].text == "RuleID" and body[n + 1].text == ":"), None)
            if rid is not None:
                yield body, _go_string(Tok("str", rid, 0)) if rid.startswith('"') else rid
            i = k
        i += 1


def _python_regex(go: str):
    import regex  # the `regex` module reads RE2-style patterns Python's `re` does not (a tiktoken dependency)

    return regex.compile(go.replace(r"\z", r"\Z"))


def gitleaks_examples(root: Path) -> tuple[list[Example], dict]:
    config = tomllib.loads((root / "config" / "gitleaks.toml").read_text())
    rules = {r["id"]: r for r in config["rules"]}
    out: list[Example] = []
    stats = {"skipped_expressions": 0, "tp_without_secret": 0, "rules": 0}
    rules_dir = root / "cmd" / "generate" / "config" / "rules"
    for path in sorted(rules_dir.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        src = path.read_text()
        rel = str(path.relative_to(root))
        for toks, rid in _rule_functions(go_tokens(src)):
            rule = rules.get(rid, {})
            line0 = toks[0].line - 1 if toks else 0
            ev = GoRules(toks, seed=f"gitleaks:{rid}")
            try:
                tps, fps = ev.run()
            except (Unknown, IndexError, AttributeError):
                tps = fps = None
            stats["skipped_expressions"] += ev.skipped
            stats["rules"] += 1
            cls = "name-marked" if (r"[\w.-]{0,50}?" in rule.get("regex", "") or rid.startswith("generic")) \
                else "self-identifying"
            secret_re = None
            try:
                secret_re = _python_regex(rule["regex"]) if rule.get("regex") else None
            except Exception:
                secret_re = None
            for label, value in (("tp", tps), ("fp", fps)):
                if value is None:
                    continue
                for n, (text, secret, name, generated) in enumerate(value.pairs or []):
                    line = _line_of(src, text, secret, line0)
                    if label == "tp" and secret is None:
                        secret = _secret_in(text, secret_re, rule.get("secretGroup", 0))
                        if secret is None:
                            stats["tp_without_secret"] += 1
                    out.append(Example(
                        id=f"gitleaks:{rid}:{label}:{n}", source="gitleaks", family=rid, label=label, cls=cls,
                        text=text, secret=secret if label == "tp" else None,
                        name=(name or rid.split("-")[0]).replace(" ", "_"), file=rel, line=line, generated=generated,
                    ))
    return out, stats


def _secret_in(text: str, regex, group: int) -> str | None:
    if regex is None:
        return None
    m = regex.search(text)
    if m is None:
        return None
    if group:
        return m.group(group)
    for g in m.groups():
        if g and len(g) >= 8:  # the rule's secret group (inner groups of a URL shape are too short)
            return g
    return m.group(0)


def _line_of(src: str, text: str, secret: str | None, default: int) -> int:
    for needle in (secret, text):
        if needle:
            probe = needle[:24]
            i = src.find(probe)
            if i >= 0 and len(probe) >= 8:
                return src[:i].count("\n") + 1
    return default + 1


# --- detect-secrets: the parametrized examples of its plugin tests ----------------------------

NAME_PLUGINS = {
    "KeywordDetector", "AWSKeyDetector:secret", "CloudantDetector", "IbmCloudIamDetector",
    "IbmCosHmacDetector", "SoftlayerDetector", "AzureStorageKeyDetector",
}
UNMARKED_PLUGINS = {"Base64HighEntropyString", "HexHighEntropyString"}


def detect_secrets_examples(root: Path) -> tuple[list[Example], dict]:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    sys.path.insert(0, str(root))
    out: list[Example] = []
    stats = {"modules": 0, "cases": 0}
    for path in sorted((root / "tests" / "plugins").glob("*_test.py")):
        rel = str(path.relative_to(root))
        module = _load_test_module(path)
        stats["modules"] += 1
        src = path.read_text()
        plugin = path.stem[: -len("_test")]
        n = 0
        for obj in _test_functions(module):
            for mark in getattr(obj, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                names = [s.strip() for s in mark.args[0].split(",")] if isinstance(mark.args[0], str) \
                    else list(mark.args[0])
                for case in mark.args[1]:
                    values = getattr(case, "values", case)
                    values = values if isinstance(values, tuple | list) else (values,)
                    row = dict(zip(names, values, strict=False))
                    line = next((row[k] for k in ("line", "payload", "content", "file_content", "token")
                                 if isinstance(row.get(k), str)), None)
                    if line is None or len(line) > 20000:
                        continue
                    flag = next((row[k] for k in ("should_flag", "expected", "expected_secret", "is_secret")
                                 if k in row), None)
                    if flag is None:
                        continue
                    stats["cases"] += 1
                    with default_settings():
                        found = [s for s in scan_line(line)]
                    kinds = sorted({s.type for s in found})
                    label = "tp" if flag else "fp"
                    secret = None
                    if label == "tp":
                        secret = flag if isinstance(flag, str) else (found[0].secret_value if found else None)
                        if secret is None and " " not in line.strip():
                            secret = line.strip()
                    family = kinds[0] if kinds else plugin
                    out.append(Example(
                        id=f"detect-secrets:{plugin}:{label}:{n}", source="detect-secrets", family=plugin,
                        label=label, cls=_ds_class(plugin, family), text=line, secret=secret,
                        name=plugin.split("_")[0], file=rel, line=_line_of(src, line, secret, obj_line(obj)),
                    ))
                    n += 1
    return out, stats


def _load_test_module(path: Path):
    """Import one upstream test module; test-only dependencies it lacks here are stubbed."""
    from unittest import mock

    for _ in range(8):
        spec = importlib.util.spec_from_file_location(f"_ds_tests_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            return module
        except ModuleNotFoundError as exc:
            sys.modules[exc.name] = mock.MagicMock(name=exc.name)
    raise ImportError(f"cannot import {path}")


def _ds_class(plugin: str, family: str) -> str:
    if plugin in ("keyword", "cloudant", "ibm_cloud_iam", "ibm_cos_hmac", "softlayer", "azure_storage_key"):
        return "name-marked"
    if plugin == "high_entropy_strings":
        return "unmarked"
    return "self-identifying"


def obj_line(obj) -> int:
    try:
        return inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return 0


def _test_functions(module):
    for _, obj in inspect.getmembers(module):
        if inspect.isclass(obj):
            for _, fn in inspect.getmembers(obj, inspect.isfunction):
                yield fn
        elif inspect.isfunction(obj):
            yield obj


# --- main --------------------------------------------------------------------------------------


def _commit(repo: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gitleaks", type=Path, required=True, help="a gitleaks checkout")
    parser.add_argument("--detect-secrets", type=Path, required=True, help="a detect-secrets checkout")
    parser.add_argument("--gitleaks-version", default="", help="tag or commit, recorded in the header")
    parser.add_argument("--detect-secrets-version", default="")
    args = parser.parse_args(argv)
    gl, gl_stats = gitleaks_examples(args.gitleaks)
    ds, ds_stats = detect_secrets_examples(args.detect_secrets)
    header = {
        "corpus": "ctxtap secret examples",
        "gitleaks": args.gitleaks_version or _commit(args.gitleaks), "gitleaks_stats": gl_stats,
        "detect_secrets": args.detect_secrets_version or _commit(args.detect_secrets), "detect_secrets_stats": ds_stats,
    }
    with OUT.open("w") as fh:
        fh.write(json.dumps({"header": header}) + "\n")
        for row in annotate([asdict(ex) for ex in gl + ds]):  # classes by each scanner's own rule
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(json.dumps(header, indent=2))
    print(f"{len(gl)} gitleaks and {len(ds)} detect-secrets examples -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
