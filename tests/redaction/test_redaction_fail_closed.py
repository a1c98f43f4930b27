"""Fail closed next to a strong credential name; stay open in code (issue 12, "Fail closed where uncertain").

A value beside a strong name (`*_API_KEY`, `*password`, `*secret`) is redacted
unless it is clearly not a secret value: empty, a reference (`${VAR}`), a mask
made only of mask characters, a short number, a word, or code (a call, an
attribute, a type annotation). Each near miss below is a shape the upstream
scanners' examples hold; each counterpart is what source code holds. Run on
both engines, raw and JSON-escaped (via `_assert_redacted`).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtap.redaction import Redactor
from tests.redaction.rule_checks import BACKENDS, KEY, _assert_redacted


@pytest.fixture(params=BACKENDS)
def redactor(request: pytest.FixtureRequest) -> Redactor:
    return Redactor(KEY, "fail-closed", backend=request.param)


def _kept(redactor: Redactor, text: str) -> None:
    assert redactor.redact_text(text) == text


def test_long_digit_runs_under_a_strong_name(redactor: Redactor) -> None:
    for text in ("DISCORD_API_KEY=740969285179606295\n", '{"client_secret": "40884296071505466145987236037162"}',
                 "asana_api_key: 2390517206283163\n"):
        _assert_redacted(redactor, text, text.split("=")[-1].split(":")[-1].strip(' "}\n'))
    for text in ('{"api_key_version": 20240101}', "PASSWORD_MIN_LENGTH=12\n", '{"api_key": "1.2.3"}',
                 '{"token": "12345678901234"}'):  # a weak name needs a random-looking value
        _kept(redactor, text)


def test_partly_masked_and_letter_run_values_under_a_strong_name(redactor: Redactor) -> None:
    _assert_redacted(redactor, "//registry.npmjs.org/:_authToken=npm_xxxxxxxxxxx\n", "npm_xxxxxxxxxxx")
    _assert_redacted(redactor, '{"cloudant_api_key": "abcdefghijabcdefghijabcd"}', "abcdefghijabcdefghijabcd")
    for text in ("API_KEY=xxxxxxxxxxxx\n", '{"password": "********"}', '{"password": "unreserved"}',
                 "SECRET_KEY=...\n"):
        _kept(redactor, text)


def test_json_escapes_inside_a_quoted_value(redactor: Redactor) -> None:
    secret = 'sq0csp-f\\ooiKy\\nCMIwe"5bafEY^'
    body = json.dumps({"square_secret": secret})
    out = redactor.redact_text(body)
    assert "ooiKy" not in out and "5bafEY" not in out and json.loads(out)["square_secret"].startswith("[REDACTED:")
    out = redactor.redact_text(json.dumps({"payload": body}))  # one level deeper
    assert "ooiKy" not in out and "5bafEY" not in out
    _assert_redacted(redactor, json.dumps({"db_password": "A,.:-\u00a8@*\u00bf?!"}), "A,.:-\u00a8@*\u00bf?!")
    # an escaped newline or a space ends the search: prose after a name is not swallowed
    _kept(redactor, json.dumps({"text": 'the "password": "is \\ then long prose follows" here'}))


def test_env_and_yaml_lines_hold_their_value_to_the_end(redactor: Redactor) -> None:
    _assert_redacted(redactor, "APP=1\nKEYWORD_API_KEY=A,.:-\u00a8@*\u00bf?!\nPORT=8080\n", "A,.:-\u00a8@*\u00bf?!")
    _assert_redacted(redactor, "NUGET_API_KEY=TestSource-Password\n", "TestSource-Password")
    _assert_redacted(redactor, "service:\n  aws_secret_access_key: value with quotes and spaces\n",
                     "value with quotes and spaces")
    _assert_redacted(redactor, "square_api_key: sq0csp-f\\ooiKyQCiyDoJBkH7Wuplp2d9JA\n", "sq0csp-f\\ooiKyQCiyDoJBkH7Wuplp2d9JA")
    _assert_redacted(redactor, "Found it: KEYWORD_API_KEY=A,.:-\u00a8@*\u00bf?! -- rotate it.", "A,.:-\u00a8@*\u00bf?!")
    out = redactor.redact_text(json.dumps({"type": "text_delta", "text": "KEYWORD_API_KEY=A,.:-\u00a8@*\u00bf?!"}))
    assert "\\u00bf" not in out and "[REDACTED:" in out  # a JSON string's first line is a line
    for text in ("    password: The password to use.\n", "    api_key: str = Field(default=None)\n",
                 "    password: PasswordType\n", "api_key = get_key(name)\n", "  secret: ${SECRET}\n",
                 "x = f(api_key=api_key, b=1)\n", 'API_KEY=os.environ["X"]\n', "f(API_KEY=some_value, b=1)\n"):
        _kept(redactor, text)


def test_a_word_filling_an_env_properties_or_yaml_line_after_a_password_name(redactor: Redactor) -> None:
    """`DB_PASSWORD=postgres` in a .env file, a compose file, a Dockerfile, my.cnf or gradle.properties is the
    password, however guessable: the line is data, as a quoted string in code is. A call's argument, a
    reference, a placeholder word, a word that echoes the name and a class field's type stay."""
    for text, secret in (("REACT_APP_PASSWORD=whiteduke\n", "whiteduke"),
                         ("export DB_PASSWORD=dev_admin\n", "dev_admin"),
                         ("services:\n  db:\n    environment:\n      - POSTGRES_PASSWORD=postgres\n", "postgres"),
                         ("    environment:\n      POSTGRES_PASSWORD: postgres\n", "postgres"),
                         ("FROM postgres:16\nENV POSTGRES_PASSWORD=change-it-soon\n", "change-it-soon"),
                         ("set DB_PASSWORD=whiteduke\r\n", "whiteduke"),
                         ("[client]\nuser=root\npassword=whiteduke\n", "whiteduke"),  # my.cnf
                         ("ossrhUsername=deploy\nossrhPassword=whiteduke\n", "whiteduke"),  # gradle.properties
                         ("db:\n  host: db.internal\n  password: dev_admin\n", "dev_admin")):
        _assert_redacted(redactor, text, secret)
    for text in ("f(PASSWORD=pw_value, b=1)\n", "x = f(password=user_pw)\n", "DB_PASSWORD=${DB_PASSWORD}\n",
                 "PASSWORD=changeme\n", "DB_PASSWORD=required\n", "SMTP_PASSWORD=smtp_password\n",
                 "  password: string\n", "PASSWORD: str = Field(default=None)\n", "export PATH=$HOME/bin\n",
                 'LEARNER_STATS_KEY = "learner_stats"\n', "CACHE_KEY=build_cache\n",
                 "class Login(BaseModel):\n    password: SecretStr\n    token: bytes\n", "password=user_password\n"):
        _kept(redactor, text)



_STYLES = ("read", "cat", "grep", "grep-files", "colon-space", "bar")


def _numbered(text: str, style: str) -> str:
    """`text` as a tool shows a file it read: Claude Code's Read (`     3→line`), `cat -n` (`     3\tline`),
    `grep -n` over one file (`3:line`) or several (`config/app.env:3:line`), opencode's read (`3: line`), a
    zero-padded number and a bar (`00003| line`)."""
    shown = {"read": "{n:>6}\u2192{line}", "cat": "{n:>6}\t{line}", "grep": "{n}:{line}", "grep-files": "config/app.env:{n}:{line}",
             "colon-space": "{n}: {line}", "bar": "{n:05d}| {line}"}
    return "".join(shown[style].format(n=n, line=line) for n, line in enumerate(text.splitlines(True), start=3))


def test_a_word_after_a_password_name_in_a_file_a_tool_read_with_line_numbers(redactor: Redactor) -> None:
    """The file lines of the test above as a tool result shows them, each after its number: still the file's
    lines, so the same words go and the same code stays."""
    for style in _STYLES:
        for text, secret in (("REACT_APP_PASSWORD=whiteduke\n", "whiteduke"),
                             ("export DB_PASSWORD=dev_admin\n", "dev_admin"),
                             ("    environment:\n      POSTGRES_PASSWORD: postgres\n", "postgres"),
                             ("[client]\nuser=root\npassword=whiteduke\n", "whiteduke"),
                             ("db:\n  host: db.internal\n  password: dev_admin\n", "dev_admin")):
            _assert_redacted(redactor, _numbered(text, style), secret)
        for text in ("f(PASSWORD=pw_value, b=1)\n", "DB_PASSWORD=${DB_PASSWORD}\n", "PASSWORD=changeme\n",
                     "SMTP_PASSWORD=smtp_password\n", "  password: string\n",
                     "class Login(BaseModel):\n    password: SecretStr\n", "password=user_password\n"):
            _kept(redactor, _numbered(text, style))
    # a value on the lines below its name, each line after its own number
    block = "db:\n  password: |\n    q7Xk2Rt9pWm4Lz8vB3\n  host: db.internal\n"
    for style in _STYLES:
        _assert_redacted(redactor, _numbered(block, style), "q7Xk2Rt9pWm4Lz8vB3")
        _kept(redactor, _numbered("db:\n  password:\n    host: db.internal\n    port: 5432\n", style))
    # a number inside a line is no line's number: `ratio 3:password=...` stays prose's; a table's cell the same
    _kept(redactor, "see the ratio 3:password=whiteduke in the log\n")
    _kept(redactor, "| step | 3| password=whiteduke |\n")



def test_a_word_after_a_password_name_on_a_diff_line(redactor: Redactor) -> None:
    """A patch's added and removed lines (`git diff`, Codex's apply_patch) are the file's lines after one
    character: the word goes from both; a context line (a space) as before. Code and references stay."""
    patch = ("diff --git a/.env b/.env\n--- a/.env\n+++ b/.env\n@@ -1,3 +1,3 @@\n APP_ENV=dev\n"
             "-DB_PASSWORD=dev_admin\n+DB_PASSWORD=whiteduke\n")
    for secret in ("dev_admin", "whiteduke"):
        _assert_redacted(redactor, patch, secret)
    for text, secret in (("*** Begin Patch\n*** Add File: config/app.env\n+REACT_APP_PASSWORD=whiteduke\n*** End Patch",
                          "whiteduke"),
                         ("@@ db:\n+  password: whiteduke\n", "whiteduke"),
                         ("+export DB_PASSWORD=whiteduke\n", "whiteduke"),
                         ("+db:\n+  password: |\n+    q7Xk2Rt9pWm4Lz8vB3\n+  host: db\n", "q7Xk2Rt9pWm4Lz8vB3")):  # a block
        _assert_redacted(redactor, text, secret)
    for text in ("+f(PASSWORD=pw_value, b=1)\n", "+DB_PASSWORD=${DB_PASSWORD}\n", "+PASSWORD=changeme\n",
                 "+    password: SecretStr\n", "a+DB_PASSWORD=whiteduke\n", "+db:\n+  password:\n+    host: db\n"):
        _kept(redactor, text)



def test_a_password_written_as_a_configuration_directive(redactor: Redactor) -> None:
    """A line that is a password's name, spaces and one value (redis, slapd, nslcd, keepalived, a Dockerfile's
    `ENV name value`): the value goes, a word too, raw and as a tool shows the file numbered. A name that is an
    English word (`password`, `Pass`) begins prose as often; headings, wrapped prose, references, Python's
    `pass` and words ending in `pass` stay."""
    for text, secret in (("# redis.conf\nbind 127.0.0.1\nrequirepass foobared77\n", "foobared77"),
                         ("database mdb\nrootpw whiteduke\n", "whiteduke"),
                         ("uri ldap://ldap.example.com\nbindpw 'q7Xk2Rt9pWm4'\n", "q7Xk2Rt9pWm4"),
                         ("  authentication {\n    auth_type PASS\n    auth_pass whiteduke\n  }\n", "whiteduke"),
                         ("FROM postgres:16\nENV POSTGRES_PASSWORD whiteduke\n", "whiteduke"),
                         ("+masterpassword whiteduke\n", "whiteduke")):
        _assert_redacted(redactor, text, secret)
        _assert_redacted(redactor, _numbered(text, "read"), secret)
    for text in ("Password hashing\n================\n", "Pass through\n", "requirepass ${REDIS_PASSWORD}\n",
                 "bypass proxy\ncompass north\n", "    pass\n", "    pass  # nothing to do\n",
                 "Set the password whiteduke in the form below.\n", 'PassCmd "pass show mail"\n',
                 "Pass `orient=\"row\"` to silence this warning.\n", "requirepass\n",
                 "Accept the username and\n    password combination.\n", "password manager\n",
                 "requirepass accept_downloads=True\n"):
        _kept(redactor, text)


def test_a_word_after_a_password_variable_set_inside_a_command(redactor: Redactor) -> None:
    """`NAME=value` as a word of a command line (an environment prefix, `env`, `-e`, a platform's `config:set`,
    `echo 'NAME=...'`) holds data, as the same line at a file's start does; a call's keyword argument stays code."""
    for text in ("cd app && DB_PASSWORD=whiteduke npm start", "env DB_PASSWORD=whiteduke ./run.sh",
                 "docker compose run -e POSTGRES_PASSWORD=whiteduke db", "heroku config:set DB_PASSWORD=whiteduke",
                 "echo 'DB_PASSWORD=whiteduke' >> .env", "fly secrets set SMTP_PASSWORD=whiteduke --app web"):
        _assert_redacted(redactor, text, "whiteduke")
    for text in ("f(a, PASSWORD=pw_value)", "x = g(1, DB_PASSWORD=default_pw)", "echo DB_PASSWORD=$DB_PASSWORD",
                 "echo DB_PASSWORD=changeme", "run(cmd, PASSWORD=user_password)", "echo db_password=whiteduke"):
        _kept(redactor, text)


def test_a_word_in_a_password_field_of_a_data_format(redactor: Redactor) -> None:
    """A connection string's, a query's, an XML element's and a .netrc line's password field holds data, never
    a variable's name: a word there is the password. References and placeholder words stay."""
    for text, secret in (("Server=db;Database=app;User Id=sa;Pwd=whiteduke;", "whiteduke"),
                         ("Data Source=db;Initial Catalog=app;User ID=sa;Password=dev_admin", "dev_admin"),
                         ("DSN=app;UID=sa;PWD=whiteduke", "whiteduke"),
                         ("jdbc:mysql://db:3306/app?user=app&password=whiteduke", "whiteduke"),
                         ("<server><id>nexus</id><username>deploy</username><password>whiteduke</password></server>",
                          "whiteduke"),
                         ("machine api.example.com\nlogin bob\npassword whiteduke\n", "whiteduke")):
        _assert_redacted(redactor, text, secret)
    for text in ("Server=db;User Id=sa;Password=${DB_PASSWORD};", "jdbc:mysql://db/app?user=app&password=secret",
                 "<password>required</password>", "machine h login bob password $NETRC_PASSWORD\n",
                 "Server=db;Database=app;Integrated Security=true;"):
        _kept(redactor, text)


def test_brackets_no_expression_closes(redactor: Redactor) -> None:
    secret = "m{{h}o)p${e]nob(ody[finds>-_$#thisone}}"
    _assert_redacted(redactor, f"apikey = {secret}\n", secret)
    for text in ("api_key = os.environ[KEY]\n", "password = prompt(text)\n", "token = tokens[0]\n",
                 'api_key = os.environ["API_KEY"]\n', "password = get(a, b)\n", "x(api_key=g(x))\n",
                 "token = f(x,\n    y)\n",
                 # a call over lines whose string holds brackets that do not pair up: still code
                 'API_TOKEN = re.compile(\n    rb"""\\x[0-9a-f]{2}  # a byte\n    | \\.  # an escape\n'
                 '    | \\[\\^?\\]?(?:\\[:[a-z]+:\\]|\\.|[^\\]])*\\]   # a class\n""")\n'):
        _kept(redactor, text)


def test_a_strong_name_compared_with_a_literal(redactor: Redactor) -> None:
    secret = "m{{h}o)p${e]nob(ody[finds>-_$#thisone}}"
    _assert_redacted(redactor, f'if (api_key != "{secret}") {{', secret)
    _assert_redacted(redactor, f'if (db_pass === "{secret}") {{', secret)
    for text in ("if password == other:\n", 'if token == "abc":\n', 'if api_key == "":\n',
                 "if (password !== confirm) {\n"):
        _kept(redactor, text)


def test_discord_token_a_few_bytes_into_its_run(redactor: Redactor) -> None:
    token = "MyOTQ4MTN5OTU5MTDwMEcxNg.GSwJyi.sbaw8msOR3Wi6vPUzeIWy_P0vJbB0UuRVjH8l8"
    _assert_redacted(redactor, f"see AT{token} here", token, "discord-token")
    # deep inside a longer run, no Discord token starts; the run as a whole is a payload, a time of issue
    # and a signature, so it goes whole, prefix and all, as a timestamp-signed value
    longer = f"xyzabcdefgAT{token}"
    placeholder = redactor.placeholder("vendor-token", longer.encode()).decode()
    assert redactor.redact_text(f"see {longer} here") == f"see {placeholder} here"


def test_a_key_with_a_long_fixed_head_glued_to_what_comes_before(redactor: Redactor) -> None:
    """`x-sk-ant-...`, `TOKEN_sk-ant-...`, `Bearersk-ant-...` (a concatenation that lost its space): a
    head of 7+ fixed bytes does not occur by accident, even in a base64url blob, so it counts glued
    to anything; heads of an alternative or a group of words count too (`github_pat_`, `sk-proj-`);
    short heads (`ghp_`, `AIza`) still need a start."""
    key = "sk-ant-api03-" + "Vb7" * 30 + "AA"
    pat = "github_pat_11" + "ABCDEFG0123456789_" + "k2Q9" * 16
    for glued in (f"x-debug-{key}", f"ANTHROPIC_KEY_{key}", f"GOOGLE_GOCSPX-{'k2Q9' * 7}", f"Bearer{key}",
                  f"token{pat}", f"Xsk-proj-{'a1B2c3D4' * 6}", f"key9sk-svcacct-{'a1B2c3D4' * 6}"):
        out = redactor.redact_text(f"header {glued} end")
        assert glued[-20:] not in out and "[REDACTED:" in out, out
    _kept(redactor, "id abcdefghij_ghp_" + "a1B2" * 9 + " end")
    _kept(redactor, "blob " + "Qm9v" * 8 + "-AIza" + "x" * 35 + " end")


def test_gitleaks_name_rules_take_digit_free_values(redactor: Redactor) -> None:
    """A gitleaks `name = value` rule has no name of ctxtap's to echo: `cafebabe:deadbeef` is a value."""
    _assert_redacted(redactor, 'BUNDLE_GEMS__CONTRIBSYS__COM: "cafebabe:deadbeef"\n', "cafebabe:deadbeef",
                     "sidekiq-secret")
    _kept(redactor, '{"password": "unreserved"}')  # a word, with its quotes in the rule's secret group


def test_a_string_literal_with_escapes_is_one_value(redactor: Redactor) -> None:
    secret = "sq0csp-f\\ooiKyQCiyDoJBkH7Wuplp2d9JA\\nCMIwe\\5bafEY^"  # backslashes as the source wrote them
    _assert_redacted(redactor, f'square_api_token = "{secret}"\n', secret)


def test_the_shapes_code_writes_a_credential_in(redactor: Redactor) -> None:
    value = "m{{h}o)p${e]nob(ody[finds>-_$#thisone}}"
    for text in (
        f'if ("{value}" === private_key) {{',  # the literal first, the name after the comparison
        f'if ("{value}" != my_password_sec) {{',
        f'password_super_secure = "{value}"',  # words after the keyword
        f'apikey_myservice: "{value}"',
        f"db_pass_secure := {value}",
        f'char secrete[25] = "{value}";',  # an index, and the misspelling people write
        f'password "{value}";',  # no separator before the quoted value
        f'password = @"{value}";',  # C#'s verbatim string
    ):
        _assert_redacted(redactor, text, value)
    _assert_redacted(redactor, 'cloudant_pw="abcd1234abcd1234abcd1234"', "abcd1234abcd1234abcd1234")
    _assert_redacted(redactor, "secrete = A,.:-\u00a8@*\u00bf?!\n", "A,.:-\u00a8@*\u00bf?!")  # INI: to the space
    _assert_redacted(redactor, 'password       = "rootpasswd"\n', "rootpasswd")  # one word, assigned in code
    _assert_redacted(redactor, '  password: "rootpasswd"\n', "rootpasswd")  # ... or on a YAML line
    key = "abcd1234" * 8
    _assert_redacted(redactor, f"http://api.softlayer.com/soap/v3.1/{key}", key, "softlayer-api-key")


def test_code_that_only_names_a_credential_is_kept(redactor: Redactor) -> None:
    for text in (
        "if (name == password) {",  # two variables
        'if ("expected" == get_password()) {',  # a call
        'print("Enter password " + name)',  # a space before a quote ends a literal, not a value
        'password_length = "12"',  # words after the keyword that describe it
        'secret_name = "prod-db"',
        "password = generated_password\n",  # a variable, on a line of its own
        'token_password = get_secret("db")\n',
        '{"password": "unreserved"}',  # a JSON key's one-word value
    ):
        _kept(redactor, text)


def test_a_kubernetes_secret_inside_a_json_string(redactor: Redactor) -> None:
    doc = "apiVersion: v1\nkind: Secret\ndata:\n  .dockercfg: |\n    eyJhdXRocyI6eyJodHRwczovL2V4YW1wbGUifX0=\n"
    out = redactor.redact_text(json.dumps({"content": doc}))
    assert "eyJhdXRocyI6eyJodHRwczovL2V4YW1wbGUifX0" not in out and json.loads(out)["content"].startswith("apiVersion")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b"key=", b" ", b'"', b"&", b"x" * 1500, b"\\"]), max_size=40).map(b"".join),
    st.lists(st.integers(0, 70_000), max_size=30),
)
def test_value_runs_measured_once_end_where_measured_alone(data: bytes, starts: list[int]) -> None:
    """A run of one class is measured once and reused for the values inside it (`key=key=...` made
    every hit scan 4 KB of the same run); in the order values are read (last to first) and in any
    other, each value ends where measuring it alone ends it, too-long runs (4 KB) included."""
    from ctxtap.redaction import assignments

    def alone(regex, start: int) -> int | None:
        end = regex.match(data, start, start + assignments._MAX_VALUE + 1).end()
        return None if end == start or end - start > assignments._MAX_VALUE else end

    positions = [min(s, len(data)) for s in starts]
    try:
        for order in (sorted(positions, reverse=True), positions):
            assignments._last_runs.clear()
            for start in order:
                for regex in (assignments._BARE_RUN_RE, assignments._QUOTED_RUN_RE):
                    assert assignments._run_end(regex, data, start) == alone(regex, start)
    finally:
        assignments._last_runs.clear()
