"""Deterministic fake credentials and the places agents leak them, for redaction tests.

Used by the redaction unit tests, the proxy integration tests (which split
planted bodies across network chunks) and the publish recall test, so every
helper is pure and seeded:

    secrets = generate_secrets(seed=7)            # every format, with its expected kind
    for planted in plant_everywhere(secrets):     # body placements: text, JSON, env, SSE, WS...
        out = redactor.redact_bytes(planted.data)
        assert not planted.leaks(out)
    headers, kind = plant_header(secret)          # header and URL placements
    url, kind = plant_url_query(secret)

`negative_corpus()` gives ordinary code, prose and agent traffic shapes with
no credentials in them, for measuring false positives.

All values are random and fake; none is a real credential.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import random
import string
import sys
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32 = string.ascii_uppercase + "234567"
PASSWORD_SYMBOLS = "!@#%^*-_=+.~"


@dataclass(frozen=True)
class Secret:
    """One fake credential.

    kind: the placeholder type expected when it is found.
    value: the secret itself (what must not survive redaction).
    env_name: a natural variable name for it, used by assignment placements.
    template: how it appears in text (`{}` is the value), e.g. inside a URL.
    standalone: recognisable by its format alone, without a name beside it.
    token: a single token (may be sent as a bearer token or an API-key header).
    """

    kind: str
    value: str
    env_name: str
    template: str = "{}"
    standalone: bool = True
    token: bool = True
    json_template: bool = False  # the template is a JSON document: the value goes in escaped

    @property
    def surface(self) -> str:
        value = json.dumps(self.value)[1:-1] if self.json_template else self.value
        return self.template.replace("{}", value, 1)

    @property
    def in_context(self) -> str:
        """Text that carries the secret and enough context to recognise it."""
        if self.standalone:
            return self.surface
        return f"{self.env_name}={_shell_quote(self.surface)}"

    @property
    def json_name(self) -> str:
        return self.env_name.lower()

    def fragments(self) -> list[str]:
        """Pieces of the secret whose presence in redacted output means a leak."""
        if "\n" in self.value:
            return [line for line in self.value.splitlines() if len(line) >= 16 and "-----" not in line]
        return [self.value]


@dataclass(frozen=True)
class Planted:
    """A body with one secret planted in it.

    `view` turns a body into the text a reader would see, when that is not
    the body itself (streamed deltas joined together).
    """

    placement: str
    data: bytes
    secret: Secret
    expected_kind: str
    view: Callable[[bytes], bytes] | None = field(default=None, compare=False)

    def leaks(self, redacted: bytes) -> list[str]:
        """The secret's fragments (raw or in an escaped form) still present in `redacted`."""
        seen = redacted if self.view is None else redacted + b"\n" + self.view(redacted)
        found = []
        for fragment in self.secret.fragments():
            for form in _escaped_forms(fragment):
                if form.encode("utf-8") in seen:
                    found.append(form)
                    break
        return found


def _escaped_forms(fragment: str) -> set[str]:
    once = json.dumps(fragment)[1:-1]
    twice = json.dumps(once)[1:-1]
    return {fragment, once, twice, quote(fragment, safe="")}


def _shell_quote(value: str) -> str:
    return f'"{value}"' if any(c in value for c in " !*^&;|<>()$`'\"") else value


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _password(rng: random.Random, symbols: str = PASSWORD_SYMBOLS) -> str:
    chars = [rng.choice(ALNUM) for _ in range(rng.randint(12, 18))]
    chars.insert(rng.randint(1, len(chars)), rng.choice(string.digits))
    chars.insert(rng.randint(1, len(chars)), rng.choice(symbols))
    return "".join(chars)


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}).encode())
    payload = {
        "sub": _r(rng, ALNUM, 12),
        "iat": rng.randint(1_700_000_000, 1_800_000_000),
        "exp": rng.randint(1_800_000_000, 1_900_000_000),
        "scope": rng.choice(["read", "read write", "admin"]),
    }
    body = _b64url(json.dumps(payload, separators=(",", ":")).encode())
    return f"{header}.{body}.{_r(rng, B64URL, 43)}"


def _pem(rng: random.Random, label: str) -> str:
    raw = base64.b64encode(rng.randbytes(rng.choice([121, 359, 1190]))).decode("ascii")
    lines = [raw[i : i + 64] for i in range(0, len(raw), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


def _gcp_template(rng: random.Random) -> str:
    project = f"demo-{_r(rng, string.ascii_lowercase, 6)}"
    doc = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": _r(rng, HEX, 40),
        "private_key": "@@PEM@@",
        "client_email": f"ci@{project}.iam.gserviceaccount.com",
    }
    return json.dumps(doc, indent=2).replace("@@PEM@@", "{}")


def _secret_makers() -> list[Callable[[random.Random], Secret]]:
    """One maker per format; each returns a fresh random secret."""
    S = Secret
    return [
        lambda g: S("anthropic-key", f"sk-ant-api03-{_r(g, B64URL, 93)}AA", "ANTHROPIC_API_KEY"),
        lambda g: S("anthropic-key", f"sk-ant-admin01-{_r(g, B64URL, 93)}AA", "ANTHROPIC_ADMIN_KEY"),
        lambda g: S("openai-key", f"sk-proj-{_r(g, B64URL, 156)}", "OPENAI_API_KEY"),
        lambda g: S(
            "openai-key", f"sk-svcacct-{_r(g, B64URL, 74)}T3BlbkFJ{_r(g, B64URL, 74)}", "OPENAI_API_KEY"
        ),
        lambda g: S("openai-key", f"sk-{_r(g, ALNUM, 20)}T3BlbkFJ{_r(g, ALNUM, 20)}", "OPENAI_API_KEY"),
        lambda g: S("sk-key", f"sk-{_r(g, HEX, 32)}", "DEEPSEEK_API_KEY"),
        lambda g: S("sk-key", f"sk-{_r(g, ALNUM, 48)}", "MOONSHOT_API_KEY"),
        lambda g: S("openrouter-key", f"sk-or-v1-{_r(g, HEX, 64)}", "OPENROUTER_API_KEY"),
        lambda g: S("xai-key", f"xai-{_r(g, ALNUM, 80)}", "XAI_API_KEY"),
        lambda g: S("groq-key", f"gsk_{_r(g, ALNUM, 52)}", "GROQ_API_KEY"),
        lambda g: S("perplexity-key", f"pplx-{_r(g, ALNUM, 48)}", "PERPLEXITY_API_KEY"),
        lambda g: S("cerebras-key", f"csk-{_r(g, ALNUM, 48)}", "CEREBRAS_API_KEY"),
        lambda g: S("fireworks-key", f"fw_{_r(g, ALNUM, 24)}", "FIREWORKS_API_KEY"),
        lambda g: S("replicate-token", f"r8_{_r(g, ALNUM, 37)}", "REPLICATE_API_TOKEN"),
        lambda g: S("tavily-key", f"tvly-dev-{_r(g, ALNUM, 32)}", "TAVILY_API_KEY"),
        lambda g: S("langsmith-key", f"lsv2_pt_{_r(g, HEX, 32)}_{_r(g, HEX, 10)}", "LANGSMITH_API_KEY"),
        lambda g: S("huggingface-token", f"hf_{_r(g, ALNUM, 34)}", "HF_TOKEN"),
        lambda g: S("google-api-key", f"AIza{_r(g, B64URL, 35)}", "GEMINI_API_KEY"),
        lambda g: S("google-oauth-token", f"ya29.{_r(g, B64URL, 150)}", "GOOGLE_ACCESS_TOKEN"),
        lambda g: S("google-client-secret", f"GOCSPX-{_r(g, B64URL, 28)}", "GOOGLE_CLIENT_SECRET"),
        lambda g: S("google-refresh-token", f"1//0{_r(g, B64URL, 99)}", "GOOGLE_REFRESH_TOKEN"),
        lambda g: S("firebase-server-key", f"AAAA{_r(g, B64URL, 7)}:APA91b{_r(g, B64URL, 134)}", "FCM_SERVER_KEY"),
        lambda g: S("aws-access-key", f"AKIA{_r(g, BASE32, 16)}", "AWS_ACCESS_KEY_ID"),
        lambda g: S("aws-access-key", f"ASIA{_r(g, BASE32, 16)}", "AWS_ACCESS_KEY_ID"),
        lambda g: S("aws-secret-key", _r(g, B64, 40), "AWS_SECRET_ACCESS_KEY", standalone=False, token=False),
        lambda g: S(
            "azure-storage-key",
            _r(g, B64, 86) + "==",
            "AZURE_STORAGE_CONNECTION_STRING",
            template="DefaultEndpointsProtocol=https;AccountName=demostore;AccountKey={};EndpointSuffix=core.windows.net",
            token=False,
        ),
        lambda g: S(
            "azure-connection-string",
            _r(g, B64, 43) + "=",
            "SERVICEBUS_CONNECTION_STRING",
            template="Endpoint=sb://demo.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={}",
            token=False,
        ),
        lambda g: S(
            "azure-sas-signature",
            quote(base64.b64encode(g.randbytes(32)).decode(), safe=""),
            "AZURE_BLOB_SAS_URL",
            template="https://demostore.blob.core.windows.net/data/report.csv?sv=2022-11-02&ss=b&srt=o&sp=r"
            "&se=2026-12-31T00:00:00Z&spr=https&sig={}",
            token=False,
        ),
        lambda g: S(
            "azure-client-secret",
            f"{_r(g, ALNUM, 3)}{g.choice(string.digits)}Q~{_r(g, ALNUM + '_-', 10)}.{_r(g, ALNUM + '_~-', 23)}",
            "AZURE_CLIENT_SECRET",
        ),
        lambda g: S("private-key", _pem(g, "RSA PRIVATE KEY"), "TLS_KEY", token=False),
        lambda g: S("private-key", _pem(g, "OPENSSH PRIVATE KEY"), "DEPLOY_KEY", token=False),
        lambda g: S("private-key", _pem(g, "EC PRIVATE KEY"), "SIGNING_KEY", token=False),
        lambda g: S(
            "gcp-sa-key",
            _pem(g, "PRIVATE KEY"),
            "GOOGLE_CREDENTIALS",
            template=_gcp_template(g),
            token=False,
            json_template=True,
        ),
        lambda g: S("github-token", f"ghp_{_r(g, ALNUM, 36)}", "GITHUB_TOKEN"),
        lambda g: S("github-token", f"gho_{_r(g, ALNUM, 36)}", "GH_TOKEN"),
        lambda g: S("github-token", f"ghs_{_r(g, ALNUM, 36)}", "GITHUB_APP_TOKEN"),
        lambda g: S("github-token", f"github_pat_{_r(g, ALNUM, 22)}_{_r(g, ALNUM, 59)}", "GITHUB_PAT"),
        lambda g: S("gitlab-token", f"glpat-{_r(g, B64URL, 20)}", "GITLAB_TOKEN"),
        lambda g: S(
            "slack-token",
            f"xoxb-{_r(g, string.digits, 12)}-{_r(g, string.digits, 13)}-{_r(g, ALNUM, 24)}",
            "SLACK_BOT_TOKEN",
        ),
        lambda g: S(
            "slack-token",
            f"xoxp-{_r(g, string.digits, 12)}-{_r(g, string.digits, 12)}-{_r(g, string.digits, 13)}-{_r(g, HEX, 32)}",
            "SLACK_USER_TOKEN",
        ),
        lambda g: S(
            "slack-webhook",
            f"T{_r(g, BASE32, 10)}/B{_r(g, BASE32, 10)}/{_r(g, ALNUM, 24)}",
            "SLACK_WEBHOOK_URL",
            template="https://hooks.slack.com/services/{}",
            token=False,
        ),
        lambda g: S(
            "discord-webhook",
            _r(g, B64URL, 68),
            "DISCORD_WEBHOOK_URL",
            template=f"https://discord.com/api/webhooks/{_r(g, string.digits, 18)}/{{}}",
            token=False,
        ),
        lambda g: S("stripe-key", f"sk_live_{_r(g, ALNUM, 99)}", "STRIPE_SECRET_KEY"),
        lambda g: S("stripe-key", f"rk_live_{_r(g, ALNUM, 99)}", "STRIPE_RESTRICTED_KEY"),
        lambda g: S("stripe-key", f"sk_test_{_r(g, ALNUM, 24)}", "STRIPE_TEST_KEY"),
        lambda g: S("stripe-key", f"whsec_{_r(g, ALNUM, 32)}", "STRIPE_WEBHOOK_SECRET"),
        lambda g: S("jwt", _jwt(g), "SESSION_JWT"),
        lambda g: S("npm-token", f"npm_{_r(g, ALNUM, 36)}", "NPM_TOKEN"),
        lambda g: S("pypi-token", f"pypi-AgEIcHlwaS5vcmc{_r(g, B64URL, 140)}", "PYPI_TOKEN"),
        lambda g: S("sendgrid-key", f"SG.{_r(g, B64URL, 22)}.{_r(g, B64URL, 43)}", "SENDGRID_API_KEY"),
        lambda g: S("twilio-key", f"SK{_r(g, HEX, 32)}", "TWILIO_API_KEY"),
        lambda g: S("digitalocean-token", f"dop_v1_{_r(g, HEX, 64)}", "DIGITALOCEAN_TOKEN"),
        lambda g: S("shopify-token", f"shpat_{_r(g, HEX, 32)}", "SHOPIFY_ACCESS_TOKEN"),
        lambda g: S("linear-key", f"lin_api_{_r(g, ALNUM, 40)}", "LINEAR_API_KEY"),
        lambda g: S("notion-token", f"ntn_{_r(g, string.digits, 11)}{_r(g, ALNUM, 35)}", "NOTION_TOKEN"),
        lambda g: S("vault-token", f"hvs.{_r(g, B64URL, 90)}", "VAULT_TOKEN"),
        lambda g: S("docker-hub-token", f"dckr_pat_{_r(g, B64URL, 27)}", "DOCKERHUB_TOKEN"),
        lambda g: S("grafana-token", f"glsa_{_r(g, ALNUM, 32)}_{_r(g, HEX, 8)}", "GRAFANA_TOKEN"),
        lambda g: S("sentry-token", f"sntrys_{_r(g, B64URL, 120)}", "SENTRY_AUTH_TOKEN"),
        lambda g: S("supabase-key", f"sbp_{_r(g, HEX, 40)}", "SUPABASE_ACCESS_TOKEN"),
        lambda g: S("postman-key", f"PMAK-{_r(g, HEX, 24)}-{_r(g, HEX, 34)}", "POSTMAN_API_KEY"),
        lambda g: S(
            "age-secret-key",
            f"AGE-SECRET-KEY-1{_r(g, string.ascii_uppercase + string.digits, 58)}",
            "SOPS_AGE_KEY",
        ),
        lambda g: S("databricks-token", f"dapi{_r(g, HEX, 32)}", "DATABRICKS_TOKEN"),
        lambda g: S("atlassian-token", f"ATATT3{_r(g, B64URL, 180)}", "JIRA_API_TOKEN"),
        lambda g: S("mailgun-key", f"key-{_r(g, HEX, 32)}", "MAILGUN_API_KEY"),
        lambda g: S(
            "telegram-bot-token", f"{g.randint(10**8, 10**9)}:AA{_r(g, B64URL, 33)}", "TELEGRAM_BOT_TOKEN"
        ),
        lambda g: S("heroku-key", f"HRKU-{_r(g, B64URL, 60)}", "HEROKU_API_KEY"),
        lambda g: S(
            "discord-token",
            f"M{_r(g, ALNUM, 25)}.{_r(g, B64URL, 6)}.{_r(g, B64URL, 38)}",
            "DISCORD_BOT_TOKEN",
        ),
        # Known only by their name: keys without a recognisable prefix, passwords.
        lambda g: S("generic-secret", _r(g, ALNUM, 32), "MISTRAL_API_KEY", standalone=False),
        lambda g: S("generic-secret", _r(g, ALNUM, 40), "COHERE_API_KEY", standalone=False),
        lambda g: S("generic-secret", _r(g, HEX, 64), "TOGETHER_API_KEY", standalone=False),
        lambda g: S("generic-secret", _r(g, HEX, 32), "AZURE_OPENAI_API_KEY", standalone=False),
        lambda g: S("generic-secret", _r(g, ALNUM + "-_", 48), "JWT_SECRET", standalone=False),
        lambda g: S("generic-secret", _r(g, ALNUM, 40), "CI_REFRESH_TOKEN", standalone=False),
        lambda g: S("password", _password(g), "DB_PASSWORD", standalone=False),
        lambda g: S("password", _password(g), "SMTP_PASSWORD", standalone=False),
        lambda g: S("password", _password(g), "REDIS_PASS", standalone=False),
        lambda g: S(
            "url-password",
            _password(g, symbols="-_.~!*"),
            "DATABASE_URL",
            template="postgres://app:{}@db.internal:5432/app",
            token=False,
        ),
    ]


def generate_secrets(seed: int = 0, copies: int = 1) -> list[Secret]:
    """`copies` random secrets of every format, the same for the same seed."""
    rng = random.Random(seed)
    makers = _secret_makers()
    return [make(rng) for _ in range(copies) for make in makers]


def secret_kinds() -> list[str]:
    """The distinct placeholder kinds the corpus covers."""
    return sorted({s.kind for s in generate_secrets(0)})


# --- body placements -----------------------------------------------------------------


def _url_surface(secret: Secret) -> str:
    """The secret's surface with the value percent-encoded, as it would be inside a URL."""
    if secret.template.startswith(("postgres://", "https://")) and secret.kind == "url-password":
        return secret.template.replace("{}", quote(secret.value, safe=""), 1)
    return secret.surface


def plant_text(secret: Secret) -> Planted:
    """Prose with the secret in it, as a user might paste into a prompt."""
    text = f"The deploy failed again. Config I used:\n{secret.in_context}\nCan you see what is wrong?\n"
    return Planted("text", text.encode(), secret, secret.kind)


def plant_json(secret: Secret) -> Planted:
    """A chat request whose user message carries the secret."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": f"Why does this fail?\n{secret.in_context}"}],
    }
    return Planted("json", json.dumps(body).encode(), secret, secret.kind)


def plant_json_field(secret: Secret) -> Planted:
    """A config object with the secret under its natural name: `{"openai_api_key": "sk-..."}`."""
    body = {"name": "demo", "settings": {secret.json_name: secret.surface, "timeout": 30}}
    return Planted("json-field", json.dumps(body, indent=2).encode(), secret, secret.kind)


def plant_nested_json(secret: Secret) -> Planted:
    """A tool result whose content is itself a JSON document: quotes arrive as `\\"`."""
    inner = json.dumps({"env": {secret.env_name: secret.surface}, "ok": True})
    body = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": inner}],
    }
    return Planted("nested-json", json.dumps(body).encode(), secret, secret.kind)


def plant_double_nested_json(secret: Secret) -> Planted:
    """JSON inside JSON inside JSON (a logged request in a tool result): quotes arrive as `\\\\\\"`."""
    inner = json.dumps({"request": json.dumps({secret.json_name: secret.surface})})
    body = {"type": "function_call_output", "call_id": "call_1", "output": inner}
    return Planted("double-nested-json", json.dumps(body).encode(), secret, secret.kind)


def plant_env_file(secret: Secret, style: str = "env") -> Planted:
    """`cat .env` output inside a tool result (newlines are the two characters `\\n`)."""
    name, value = secret.env_name, secret.surface
    line = {
        "env": f"{name}={_shell_quote(value)}",
        "export": f'export {name}="{value}"',
        "yaml": f"  {name.lower()}: {json.dumps(value) if chr(10) in value else value}",
        "toml": f"{name.lower()} = {json.dumps(value)}",
        "ini": f"{name.lower()} = {value}",
    }[style]
    if "\n" in value and style in ("env", "ini"):
        line = f'{name}="{value}"'
    content = f"# settings -- DO NOT COMMIT\nAPP_ENV=development\nLOG_LEVEL=debug\n{line}\nPORT=8080\n"
    body = {"role": "tool", "tool_call_id": "call_7", "content": content}
    return Planted(f"env-{style}", json.dumps(body).encode(), secret, secret.kind)


def plant_raw_env_file(secret: Secret) -> Planted:
    """A `.env` file as raw bytes (an upload, a WebSocket binary frame)."""
    content = f"APP_ENV=development\n{secret.env_name}={_shell_quote(secret.surface)}\nPORT=8080\n"
    return Planted("env-raw", content.encode(), secret, secret.kind)


def plant_sse(secret: Secret) -> Planted:
    """A model echoing the secret back in a streamed text delta."""
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": secret.in_context},
    }
    events = [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01","usage":{"input_tokens":12}}}\n\n',
        f"event: content_block_delta\ndata: {json.dumps(delta)}\n\n",
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ]
    return Planted("sse", "".join(events).encode(), secret, secret.kind)


def _chunks(text: str, seed: str) -> list[str]:
    rng = random.Random(zlib.crc32(seed.encode()))
    out, i = [], 0
    while i < len(text):
        n = rng.randint(2, 7)
        out.append(text[i : i + n])
        i += n
    return out


def sse_joined_text(body: bytes) -> bytes:
    """The streamed text of an SSE body: every delta string, joined in order."""
    parts: list[str] = []
    for line in body.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        delta = event.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("text"), str):
            parts.append(delta["text"])  # Anthropic Messages
        elif isinstance(delta, str):
            parts.append(delta)  # OpenAI Responses
        for choice in event.get("choices") or []:
            content = (choice.get("delta") or {}).get("content")
            if isinstance(content, str):
                parts.append(content)  # Chat Completions
    return "".join(parts).encode("utf-8")


def plant_sse_split(secret: Secret, style: str = "anthropic") -> Planted:
    """A model streaming the secret back a few characters per event (no event holds all of it)."""
    text = f"Found it in the config: {secret.in_context} -- rotate it."
    events = []
    for chunk in _chunks(text, secret.value):
        if style == "anthropic":
            event = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": chunk},
            }
            events.append(f"event: content_block_delta\ndata: {json.dumps(event)}\n\n")
        elif style == "responses":
            event = {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "delta": chunk,
            }
            events.append(
                f"event: response.output_text.delta\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"
            )
        else:
            event = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": chunk}}]}
            events.append(f"data: {json.dumps(event, separators=(',', ':'))}\n\n")
    events.append(
        "data: [DONE]\n\n" if style == "chat" else 'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    return Planted(f"sse-split-{style}", "".join(events).encode(), secret, secret.kind, view=sse_joined_text)


def plant_ws_frame(secret: Secret) -> Planted:
    """A Codex-style WebSocket `response.create` frame carrying a tool output with the secret."""
    frame = {
        "type": "response.create",
        "previous_response_id": "resp_01",
        "input": [
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": f"$ cat config\n{secret.in_context}\n",
            }
        ],
    }
    return Planted("ws-frame", json.dumps(frame, separators=(",", ":")).encode(), secret, secret.kind)


def plant_url_in_body(secret: Secret) -> Planted | None:
    """A URL with the secret as a query parameter or password, inside a JSON body."""
    if secret.token:
        encoded = quote(secret.value, safe="")
        url = f"https://api.example.com/v1/items?api_key={encoded}&limit=10"
        expected = secret.kind if secret.standalone and encoded == secret.value else "generic-secret"
    elif secret.kind in ("url-password", "password"):
        url = f"https://deploy:{quote(secret.value, safe='')}@git.example.com/org/repo.git"
        expected = "url-password"
    else:
        return None
    body = {"role": "tool", "content": f"fetching {url} ..."}
    return Planted("url-in-body", json.dumps(body).encode(), secret, expected)


# Placements whose bodies can be concatenated into one larger body.
MIXABLE_PLACEMENTS: tuple[Callable[[Secret], Planted], ...] = (
    plant_text,
    plant_json,
    plant_json_field,
    plant_nested_json,
    plant_double_nested_json,
    lambda s: plant_env_file(s, "env"),
    lambda s: plant_env_file(s, "export"),
    lambda s: plant_env_file(s, "yaml"),
    lambda s: plant_env_file(s, "toml"),
    lambda s: plant_env_file(s, "ini"),
    plant_raw_env_file,
    plant_sse,
    plant_ws_frame,
)
BODY_PLACEMENTS: tuple[Callable[[Secret], Planted | None], ...] = (
    *MIXABLE_PLACEMENTS,
    lambda s: plant_sse_split(s, "anthropic"),
    lambda s: plant_sse_split(s, "responses"),
    lambda s: plant_sse_split(s, "chat"),
    plant_url_in_body,
)


def plant_everywhere(secrets: Iterable[Secret]) -> list[Planted]:
    """Every applicable body placement of every secret."""
    out = []
    for secret in secrets:
        for place in BODY_PLACEMENTS:
            planted = place(secret)
            if planted is not None:
                out.append(planted)
    return out


def plant_many(secrets: list[Secret], seed: int = 0, per_body: int = 5) -> list[tuple[bytes, list[Secret]]]:
    """Bodies each holding several secrets in mixed placements (for recall over realistic bodies)."""
    rng = random.Random(seed)
    out = []
    pool = list(secrets)
    rng.shuffle(pool)
    for i in range(0, len(pool), per_body):
        group = pool[i : i + per_body]
        parts = [rng.choice(MIXABLE_PLACEMENTS)(s) for s in group]
        data = b"\n".join(p.data for p in parts)
        out.append((data, group))
    return out


# --- header and URL placements -------------------------------------------------------


def plant_header(secret: Secret, style: str = "bearer") -> tuple[list[tuple[str, str]], str]:
    """Request headers carrying a token secret, and the kind expected for it."""
    default = {"bearer": "authorization", "x-api-key": "api-key", "cookie": "cookie", "basic": "basic-auth"}[
        style
    ]
    expected = secret.kind if secret.standalone and secret.token and style != "basic" else default
    if style == "bearer":
        value = f"Bearer {secret.value}"
        header = ("Authorization", value)
    elif style == "x-api-key":
        header = ("x-api-key", secret.value)
    elif style == "cookie":
        header = ("Cookie", f"theme=dark; session={secret.value}; lang=en")
    else:
        header = ("Authorization", "Basic " + base64.b64encode(f"deploy:{secret.value}".encode()).decode())
    headers = [
        ("Host", "api.example.com"),
        header,
        ("Content-Type", "application/json"),
        ("x-client-request-id", "4f1c2a9e-8a57-4bb0-9a9c-2f1d9b1f0c11"),
    ]
    return headers, expected


def plant_url_query(secret: Secret, param: str = "api_key") -> tuple[str, str]:
    """A URL with the secret as a query parameter, and the kind expected for it."""
    defaults = {"api_key": "api-key", "key": "api-key", "access_token": "token", "password": "password"}
    url = f"https://api.example.com/v1/models?{param}={quote(secret.value, safe='')}&page=2#top"
    expected = secret.kind if secret.standalone and secret.token else defaults[param]
    return url, expected


def plant_url_userinfo(secret: Secret) -> tuple[str, str]:
    """`scheme://user:<secret>@host/` and the kind expected for it."""
    url = f"https://deploy:{quote(secret.value, safe='')}@git.example.com/org/repo.git?ref=main"
    expected = secret.kind if secret.standalone and secret.token else "url-password"
    return url, expected


# --- negative corpus ------------------------------------------------------------------

_PROSE = [
    "Set max_tokens to 4096 and watch input_tokens and cache_read_input_tokens in the usage block.",
    "The tokenizer splits text into tokens; a token is roughly four characters of English text.",
    "Rotate your API key every 90 days and never commit secrets to git. Use a password manager.",
    "Use the key parameter to choose the sort key; the primary key is the id column.",
    "The access token expires after one hour, after which the client uses its refresh token.",
    "Pass the secret name, not the secret itself, to the deployment template.",
    "Connection: postgres://user:<password>@localhost:5432/app (replace user and password).",
    "Example: export OPENAI_API_KEY=your-api-key-here, then run the script.",
    "See commit 3f2a1c9e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 for the fix; it touched auth.py.",
    "Session 0030e94e-4049-46f0-9e37-62b791f0b167 started at 19:23:51 and sent 14 requests.",
    "The signature of the function is def f(key: str, token: str | None = None) -> bytes.",
    "Authentication uses OAuth 2.0; the authorization header carries a bearer token.",
]

_SNIPPETS = [
    'import os\napi_key = os.environ["OPENAI_API_KEY"]\nclient = OpenAI(api_key=api_key)\n',
    "def login(user, password):\n    token = create_token(user)\n    return {'token': token, 'expires': 3600}\n",
    "class Settings(BaseModel):\n    api_key: str\n    secret_key: SecretStr = Field(default=None)\n    password: Optional[str] = None\n",
    "interface Config {\n  apiKey: string;\n  token?: string;\n  password: string | undefined;\n}\nconst cfg = { apiKey: process.env.API_KEY, token };\n",
    "OPENAI_API_KEY=\nANTHROPIC_API_KEY=${ANTHROPIC_API_KEY}\nDB_PASSWORD=changeme\nSECRET_KEY=<generate one>\nGITHUB_TOKEN=xxxxxxxxxxxx\n",
    "token:\n  type: string\n  description: The access token.\npassword:\n  type: string\n  format: password\n",
    '{"bos_token": "<s>", "eos_token": "</s>", "pad_token": "[PAD]", "unk_token": "<unk>", "model_max_length": 8192}\n',
    "for key, value in sorted(d.items()):\n    if key == 'password':\n        continue\n    print(f'{key}={value}')\n",
    "const hash = crypto.createHash('sha256').update(secret).digest('hex');\nheaders['Authorization'] = `Bearer ${token}`;\n",
    'fn main() {\n    let key = Key::new(&bytes);\n    let token = Token::from_str(s)?;\n    println!("{:?}", key);\n}\n',
    "curl -H \"Authorization: Bearer $GITHUB_TOKEN\" -H 'x-api-key: ${API_KEY}' https://api.github.com/user\n",
    'git log --format="%H %an" | head\n9fceb02d0ae598e95dc970b74767f19372d61af8 Alice Liddell\n',
]


def _agent_json_samples(rng: random.Random) -> list[tuple[str, bytes]]:
    uuid = lambda: "-".join(_r(rng, HEX, n) for n in (8, 4, 4, 4, 12))  # noqa: E731
    image = base64.b64encode(rng.randbytes(30_000)).decode()
    request = {
        "model": "gpt-5.1-codex",
        "prompt_cache_key": uuid(),
        "max_output_tokens": 32000,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_image", "image_url": f"data:image/png;base64,{image}"}],
            },
            {"type": "reasoning", "encrypted_content": base64.b64encode(rng.randbytes(2_000)).decode()},
        ],
        "metadata": {"session_id": uuid(), "thread_id": uuid(), "idempotency_key": uuid()},
    }
    anthropic = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "Let me list the files.",
                        "signature": base64.b64encode(rng.randbytes(300)).decode(),
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_" + _r(rng, ALNUM, 24),
                        "name": "Bash",
                        "input": {"command": "ls"},
                    },
                ],
            }
        ],
        "metadata": {"user_id": "user_" + _r(rng, HEX, 64) + "_account__session_" + uuid()},
    }
    usage = {
        "usage": {
            "input_tokens": 1520,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 14336,
            "output_tokens": 87,
            "max_completion_tokens": None,
        },
        "next_page_token": _r(rng, B64URL, 40),
        "commit": _r(rng, HEX, 40),
        "sha256": hashlib.sha256(rng.randbytes(8)).hexdigest(),
    }
    otlp = {
        "resourceMetrics": [
            {"attributes": [{"key": "session.id", "value": {"stringValue": uuid()}} for _ in range(40)]}
        ]
    }
    return [
        ("agent/responses-request.json", json.dumps(request).encode()),
        ("agent/messages-request.json", json.dumps(anthropic).encode()),
        ("agent/usage.json", json.dumps(usage).encode()),
        ("agent/otlp.json", json.dumps(otlp).encode()),
    ]


_STDLIB_MODULES = (
    "json",
    "base64",
    "hashlib",
    "hmac",
    "secrets",
    "inspect",
    "argparse",
    "configparser",
    "email.utils",
    "http.cookies",
    "http.client",
    "urllib.parse",
    "urllib.request",
    "smtplib",
    "ftplib",
    "imaplib",
    "netrc",
    "getpass",
    "ssl",
    "tokenize",
    "token",
    "shlex",
    "string",
    "textwrap",
    "logging",
    "subprocess",
    "tempfile",
    "pathlib",
    "dataclasses",
    "typing",
)


def _stdlib_sources(limit: int) -> list[tuple[str, bytes]]:
    """Python stdlib source files on disk: real code that is full of key/token/password words."""
    import importlib

    out = []
    for name in _STDLIB_MODULES:
        try:
            module = importlib.import_module(name)
            out.append((f"stdlib/{name}", inspect.getsource(module).encode("utf-8")))
        except (ImportError, OSError, TypeError):
            continue
    lib = Path(inspect.getsourcefile(json) or "").resolve().parent.parent
    for path in sorted(lib.glob("*.py")) + sorted(lib.glob("*/*.py")):
        if len(out) >= limit:
            break
        if "test" in path.parts[-2:] or path.name.startswith("test") or "site-packages" in str(path):
            continue
        key = f"stdlib/{path.relative_to(lib)}"
        if any(k == key for k, _ in out):
            continue
        try:
            out.append((key, path.read_bytes()))
        except OSError:
            continue
    return out[:limit]


def negative_corpus(seed: int = 0, stdlib_files: int = 200) -> list[tuple[str, bytes]]:
    """(name, content) documents with no credentials: prose, code, agent JSON, stdlib sources."""
    rng = random.Random(seed)
    docs: list[tuple[str, bytes]] = []
    docs += [(f"prose/{i}", p.encode()) for i, p in enumerate(_PROSE)]
    docs += [(f"snippet/{i}", s.encode()) for i, s in enumerate(_SNIPPETS)]
    docs += _agent_json_samples(rng)
    docs += [
        (f"json-snippet/{i}", json.dumps({"role": "tool", "content": s}).encode())
        for i, s in enumerate(_SNIPPETS)
    ]
    docs += _stdlib_sources(stdlib_files)
    return docs


if __name__ == "__main__":  # a quick look: python -m tests.secret_corpus
    for s in generate_secrets(int(sys.argv[1]) if len(sys.argv) > 1 else 0):
        print(f"{s.kind:24s} {s.surface[:90]!r}")
