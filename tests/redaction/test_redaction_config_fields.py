"""Credentials in configuration files an agent reads: XML elements, PHP defines, connection
strings, .netrc, .pgpass, environment lists of name and value fields, Terraform defaults, cookie
lines of an HTTP exchange printed as text — each raw and inside a JSON tool result, on both engines."""

from __future__ import annotations

import json

import pytest

from ctxtap.redaction import Redactor
from ctxtap.redaction.engine import hyperscan_available
from tests.redaction_checks import assert_kept_everywhere, assert_redacted_everywhere

BACKENDS = ["python"] + (["hyperscan"] if hyperscan_available() else [])

FOUND = [
    ("<connection><user>app</user><password>Xk9mP2qR7vL4zz</password></connection>", "Xk9mP2qR7vL4zz"),
    ("<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>Xk9&amp;mP2qR7vL4</password>\n"
     "</server>", "Xk9&amp;mP2qR7vL4"),
    ("<spring:clientSecret>Zt8Qm2Vx9Lp4Rk7W</spring:clientSecret>", "Zt8Qm2Vx9Lp4Rk7W"),
    # an element's whole text: a passphrase, a value with a token among its words, Jenkins' stored secret
    ("<server><id>corp</id><password>correct horse battery staple</password></server>", "correct horse battery staple"),
    ("<secret>prod Zt8Qm2Vx9Lp4Rk7W</secret>", "prod Zt8Qm2Vx9Lp4Rk7W"),
    ("<com.cloudbees.plugins.credentials.impl.StringCredentialsImpl>\n  <scope>GLOBAL</scope>\n  <id>deploy</id>\n"
     "  <secret>{AQAAABAAAAAQwsx5Hd7ztr1uDBBEa5MDL1EhPXgk+DeTX3cY3pN1+5k=}</secret>\n",
     "AQAAABAAAAAQwsx5Hd7ztr1uDBBEa5MDL1EhPXgk+DeTX3cY3pN1+5k="),
    ("define('DB_PASSWORD', 'Xk9mP2qR7vL4zz');", "Xk9mP2qR7vL4zz"),
    ("define( 'NONCE_SALT',       'k@Zt8Q]m2V%x9Lp4Rk7W!c3&Bn6^Hj1#Ds5' );", "k@Zt8Q]m2V%x9Lp4Rk7W!c3&Bn6^Hj1#Ds5"),
    ('define("AUTH_KEY", "k@Zt8Q]m2V%x9Lp4Rk7W!c3&Bn6^Hj1#Ds5");', "k@Zt8Q]m2V%x9Lp4Rk7W!c3&Bn6^Hj1#Ds5"),
    ("Server=tcp:db.example.net;Database=app;User ID=svc;Password=Qz&8<rT4>wK2;", "Qz&8<rT4>wK2"),
    ("Driver={ODBC Driver 18};Server=db;Uid=svc;Pwd={Qz;8rT4wK2};", "Qz;8rT4wK2"),
    ("machine api.example.com login bot password Xk9mP2qR7vL4zz", "Xk9mP2qR7vL4zz"),
    ("machine github.com\n  login octocat\n  password gho_Xk9mP2qR7vL4zz\n", "gho_Xk9mP2qR7vL4zz"),
    ("$ cat ~/.pgpass\ndb.internal:5432:appdb:appuser:Xk9mP2qR7vL4\n", "Xk9mP2qR7vL4"),
    ("# ~/.pgpass\n*:*:*:postgres:Zq8&vL4<Wn2Tt\n", "Zq8&vL4<Wn2Tt"),
    ("/home/dev/.pgpass:10.0.3.7:6432:*:svc:hunter2-staging\n", "hunter2-staging"),
    ("PGPASSFILE=/run/creds/pg\nlocalhost:5432:app:me:correct horse battery", "correct horse battery"),
    # environment lists: Kubernetes, docker-compose-like YAML, ECS task definitions, Terraform
    ("env:\n- name: DB_PASSWORD\n  value: Xk9mP2qR7vL4zz\n- name: LOG_LEVEL\n  value: debug\n", "Xk9mP2qR7vL4zz"),
    ('        env:\n          - name: "STRIPE_SECRET_KEY"\n            value: "Zt8Qm2Vx9Lp4Rk7W"\n', "Zt8Qm2Vx9Lp4Rk7W"),
    ('{"environment": [{"name": "PORT", "value": "8080"}, {"name": "DB_PASSWORD", "value": "Qz&8<rT4>wK2"}]}',
     "Qz&8<rT4>wK2"),
    ('{"environment": [{"value": "Xk9mP2qR7vL4zz", "name": "API_TOKEN"}]}', "Xk9mP2qR7vL4zz"),
    ('env = [{ name = "DB_PASSWORD", value = "Xk9mP2qR7vL4zz" }]', "Xk9mP2qR7vL4zz"),
    # key and value fields: .NET appSettings (sections joined by `:`), key-value exports
    ('<appSettings>\n  <add key="Theme" value="dark" />\n  <add key="Stripe:SecretKey" value="Zt8Qm2Vx9Lp4Rk7W" />',
     "Zt8Qm2Vx9Lp4Rk7W"),
    ('[{"key": "DB_PASSWORD", "value": "Qz&8<rT4>wK2"}]', "Qz&8<rT4>wK2"),
    ('variable "db_password" {\n  type      = string\n  sensitive = true\n  default   = "Qz&8<rT4>wK2"\n}\n',
     "Qz&8<rT4>wK2"),
    # `curl -v`, an HTTP log: cookie lines printed as text
    ("> GET / HTTP/1.1\n> Host: api\n> Cookie: theme=dark; sid=Zt8Qm2Vx9Lp4Rk7W\n", "Zt8Qm2Vx9Lp4Rk7W"),
    ("< HTTP/1.1 302 Found\n< Set-Cookie: _gh_sess=Zt8Qm2Vx9Lp4Rk7W%3D%3D; path=/; secure; HttpOnly\n",
     "Zt8Qm2Vx9Lp4Rk7W"),
    ("Cookie: JSESSIONID=Xk9mP2qR7vL4zz8f\r\n", "Xk9mP2qR7vL4zz8f"),
]

LEFT = [
    "<password>${DB_PASSWORD}</password>",
    "<password></password><passwordPolicy>strict</passwordPolicy>",
    "<password>{password}</password><secret>{{ db.secret }}</secret><token>{env:API_TOKEN}</token>",  # templates
    "<password>Enter your password</password><token>The token of the session</token>",
    "<secretKey>my secret key</secretKey><password> padded </password>",
    "define('DB_NAME', 'wordpress'); define('DB_PASSWORD', 'changeme');",
    "Server=db;Database=app;Integrated Security=true;",
    "Please log in with your login name and password to continue.",
    "<keyboard>us</keyboard><primaryKey>id</primaryKey>",
    "~/.pgpass holds lines like host:port:db:user:password\n12:30:45:00:12\nfe80:0:0:0:1",
    "see .pgpass\n10.0.0.1:5432:x:y:\nlocalhost:5432:app:me:*\n2024-01-01 12:30:45:00:ab",
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password\n",
    "- name: DB_PASSWORD\n  value: ${DB_PASSWORD}\n- name: LOG_LEVEL\n  value: Xk9mP2qR7vL4zz\n",
    "- name: DB_PASSWORD\n- name: RELEASE\n  value: Xk9mP2qR7vL4zz\n",  # another entry's value
    '{"name": "api_key", "type": "string", "value": "string"}',
    '<input type="hidden" name="authenticity_token" value="7SWa-Fo1_hsC6oovfBsJFLGPUl2EhkSWPbJhWANwg">',
    'variable "db_password" {\n  type = string\n}\nvariable "region" {\n  default = "Xk9mP2qR7vL4zz"\n}\n',
    'variable "api_key" {\n  default = ""\n}\n',
    "Cookie: theme=dark; lang=en-US\n< Set-Cookie: consent=accepted; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT\n",
    "The Cookie: header carries pairs like session=abcdefghijklmnop; document.cookie: foo=barbazquux",
    '{"attributes": [{"key": "api_key_present", "value": {"boolValue": true}}, {"key": "sort_key", "value": "Xk9mP2qR7"}]}',
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text, secret", FOUND)
def test_a_credential_in_a_config_file_is_redacted(backend, text, secret):
    assert_redacted_everywhere(Redactor(b"k" * 32, "cfg", backend=backend), text, secret)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text", LEFT)
def test_names_placeholders_and_prose_are_left_alone(backend, text):
    assert_kept_everywhere(Redactor(b"k" * 32, "cfg", backend=backend), text)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pgpass_lines_in_a_tool_result_and_a_json_string_in_it(backend):
    """`.pgpass` lines have no name, only their shape: found near a mention of the file, in the
    tool result after a `cat ~/.pgpass` call and in a JSON string nested in one."""
    redactor = Redactor(b"k" * 32, "cfg", backend=backend)
    lines = "db.internal:5432:appdb:appuser:Xk9mP2qR7vL4\n*:*:*:postgres:Zq8vL4Wn2Tt\n"
    body = json.dumps({"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "input": {"command": "cat ~/.pgpass"}}]},
        {"role": "user", "content": [{"type": "tool_result", "content": lines}]},
        {"role": "user", "content": [{"type": "tool_result", "content": json.dumps({"stdout": lines})}]},
    ]})
    out = redactor.redact_bytes(body.encode()).decode()
    assert "Xk9mP2qR7vL4" not in out and "Zq8vL4Wn2Tt" not in out
    assert out.count("[REDACTED:password:") == 4 and "db.internal:5432:appdb:appuser:" in out
