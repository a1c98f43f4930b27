"""Classify a flow at record time: is it model traffic, which provider, API and client sent it.

Pure functions over host, path, headers and (optionally) the first bytes of a
request body. This is the one place that knows provider hosts and client user
agents: the recording proxy uses it to decide what to record in full (it must not
import the analyzer), and the analyzer asks it whether a host carries model
traffic. Which protocol a recorded flow speaks is the analyzer's protocol
registry's call (`analysis.protocols.registry`); the `api` label here is only the
record-time guess stored with the flow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxtap.capture.headers import Headers, header_value, lower_headers

if TYPE_CHECKING:
    from ctxtap.capture.bodies import BodyView

# Known model-API hosts -> provider. Suffix match ("x.example.com" matches "example.com" entries
# written with a leading dot).
PROVIDER_HOSTS: dict[str, str] = {
    "api.anthropic.com": "anthropic",
    "api.openai.com": "openai",
    "chatgpt.com": "openai",
    ".openai.azure.com": "azure-openai",
    ".cognitiveservices.azure.com": "azure-openai",
    "api.x.ai": "xai",
    "api.moonshot.ai": "moonshot",
    "api.moonshot.cn": "moonshot",
    "api.kimi.com": "moonshot",
    "generativelanguage.googleapis.com": "google",
    "cloudcode-pa.googleapis.com": "google",
    "aiplatform.googleapis.com": "google-vertex",
    "-aiplatform.googleapis.com": "google-vertex",
    "api.deepseek.com": "deepseek",
    "openrouter.ai": "openrouter",
    "api.mistral.ai": "mistral",
    "api.groq.com": "groq",
    "api.together.xyz": "together",
    "api.fireworks.ai": "fireworks",
    "api.cerebras.ai": "cerebras",
    "dashscope.aliyuncs.com": "alibaba",
    "dashscope-intl.aliyuncs.com": "alibaba",
    "open.bigmodel.cn": "zhipu",
    "api.z.ai": "zhipu",
    "api.minimax.io": "minimax",
    "api.minimaxi.com": "minimax",
    "api.githubcopilot.com": "github-copilot",
    "models.github.ai": "github-models",
    "opencode.ai": "opencode",
    "ollama.com": "ollama",  # Ollama Cloud (a local or private server: `--model-host HOST=ollama`)
    # Claude Code's other platforms, all Anthropic Messages under `/v1/messages`: Microsoft Foundry
    # (`<resource>.services.ai.azure.com/anthropic`) and Anthropic on Google Cloud
    ".services.ai.azure.com": "azure-foundry",
    "claude.googleapis.com": "anthropic-google-cloud",
}

# Path patterns (matched against the path without query) -> API family.
_API_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"/messages(/count_tokens)?/?$"), "messages"),
    (re.compile(r"/responses(/compact)?/?$"), "responses"),
    (re.compile(r"/chat/completions/?$"), "chat-completions"),
    (re.compile(r":(stream)?[gG]enerateContent$|:countTokens$"), "gemini"),
    # Amazon Bedrock: Anthropic's Messages body through InvokeModel (Claude Code), the Converse API,
    # and other models' own bodies through InvokeModel
    (re.compile(r"/model/[^/]*anthropic\.claude[^/]*/invoke(?:-with-response-stream)?$"), "bedrock-messages"),
    (re.compile(r"/model/[^/]+/converse(?:-stream)?$"), "bedrock-converse"),
    (re.compile(r"/model/[^/]+/(?:invoke|invoke-with-response-stream)$"), "other"),
    # Google Vertex AI: Anthropic's Messages through rawPredict (Claude Code), other publishers' own
    (re.compile(r"/publishers/anthropic/models/[^/]+:(?:stream)?[rR]awPredict$"), "vertex-messages"),
    (re.compile(r"/publishers/[^/]+/models/[^/]+:(?:stream)?[rR]awPredict$"), "other"),
    (re.compile(r"^/api/(?:chat|generate)/?$"), "ollama"),  # Ollama's native API
    (re.compile(r"/completions/?$|/embeddings/?$"), "other"),
]

# A POST to a model host whose path names a model operation, though no known API matches it:
# recorded in full, so a protocol the analyzer learns later can still be read from the capture.
_MODEL_LOOKING = re.compile(
    r"(?:^|[/:._-])(?:generate|generation|completions?|complete|chat|messages|responses|converse|"
    r"conversations?|infer|inference|predict|invoke|prompt|sample|realtime)(?:$|[/:._?-])",
    re.I,
)

# Headers that carry a client's session/thread id: requests sharing one extend each other's bodies.
SESSION_HEADERS = ("x-claude-code-session-id", "session-id", "session_id", "thread-id", "x-session-id")


def stream_key(host: str, path: str, headers: Headers) -> str:
    """Requests of one conversation share a stream: host, bare path and session header."""
    session = next((v for name in SESSION_HEADERS if (v := header_value(headers, name))), "")
    return f"{host}{path.split('?', 1)[0]} {session}"

# Hosts whose non-model paths we know are side traffic (telemetry, settings).
_CODEX_BACKEND = re.compile(r"^/backend-api/codex/")


# Known vendor telemetry endpoints the clients send through the proxy: recorded in full (redacted)
# and decoded into the capture's telemetry tables. (host, path pattern) -> (name, signal).
TELEMETRY_ENDPOINTS: list[tuple[str, re.Pattern[str], str, str]] = [
    ("api.anthropic.com", re.compile(r"^/api/event_logging/(?:v\d+/)?batch/?$"), "claude-event-logging", "events"),
    ("ab.chatgpt.com", re.compile(r"^/otlp/v1/metrics/?$"), "codex-otlp-metrics", "metrics"),
]


def telemetry_endpoint(host: str, path: str, method: str = "POST") -> tuple[str, str] | None:
    """(endpoint name, signal) when this request is a known client's telemetry upload, else None."""
    if method.upper() != "POST":
        return None
    host, bare = host.lower().rstrip("."), path.split("?", 1)[0]
    for known, pattern, name, signal in TELEMETRY_ENDPOINTS:
        if host == known and pattern.match(bare):
            return name, signal
    return None


@dataclass(frozen=True)
class FlowClass:
    is_model: bool
    provider: str  # "unknown" when not a model-API host
    api: str  # messages | responses | responses-websocket | chat-completions | gemini | bedrock-messages
    #           | bedrock-converse | vertex-messages | ollama | other
    endpoint: str  # generate | count_tokens | compact | other


# Hosts that name their region in the middle: Bedrock's runtime (`bedrock-runtime.us-east-1.amazonaws.com`,
# its FIPS and China forms, a VPC endpoint's `vpce-….bedrock-runtime.<region>.vpce.amazonaws.com`), and
# the `<service>.<region>.api.aws` hosts Claude Code reaches Claude through on AWS.
PROVIDER_HOST_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?:[a-z0-9-]+\.)*bedrock-runtime(?:-fips)?\.[a-z0-9-]+\.(?:vpce\.)?amazonaws\.com(?:\.cn)?"),
     "aws-bedrock"),
    (re.compile(r"bedrock-mantle\.[a-z0-9-]+\.api\.aws"), "aws-bedrock"),  # Bedrock's Anthropic-compatible API
    (re.compile(r"aws-external-anthropic\.[a-z0-9-]+\.api\.aws"), "anthropic-aws"),  # Anthropic's API on AWS
]


def provider_for_host(host: str, extra_hosts: Mapping[str, str] | None = None) -> str | None:
    """The provider of a known (or user-added) model-API host, else None."""
    host = host.lower().rstrip(".")
    for table in (extra_hosts or {}, PROVIDER_HOSTS):
        for pattern, provider in table.items():
            pattern = pattern.lower()
            if pattern.startswith((".", "-")):
                if host.endswith(pattern):
                    return provider
            elif host == pattern:
                return provider
    for regex, provider in PROVIDER_HOST_PATTERNS:
        if regex.fullmatch(host):
            return provider
    return None


def model_host(host: str, path: str, extra_hosts: Mapping[str, str] | None = None) -> str | None:
    """The provider when this host (and, for shared hosts, this path) can carry model calls, else None."""
    provider = provider_for_host(host, extra_hosts)
    if provider is not None and host.lower() == "chatgpt.com" and not _CODEX_BACKEND.match(path.split("?", 1)[0]):
        return None  # chatgpt.com serves the web app too: only the Codex backend is model traffic
    return provider


def classify_flow(
    host: str,
    path: str,
    method: str = "POST",
    websocket: bool = False,
    extra_hosts: Mapping[str, str] | None = None,
) -> FlowClass:
    """Decide whether a flow is a model-API call and which API it speaks."""
    bare = path.split("?", 1)[0]
    provider = provider_for_host(host, extra_hosts)
    user_host = provider is not None and extra_hosts is not None and host.lower() in {
        h.lower() for h in extra_hosts
    }
    api = None
    for pattern, name in _API_PATTERNS:
        if pattern.search(bare):
            api = name
            break
    if provider is None:
        return FlowClass(False, "unknown", "other", "other")
    if model_host(host, bare, extra_hosts) is None:
        return FlowClass(False, provider, "other", "other")
    if api is None:
        # A user-added host is recorded in full whatever the path, and so is a POST to a
        # known host whose path names a model operation (an API this table does not know
        # yet); a known host's other paths (telemetry, settings, model lists) are side traffic.
        unknown_api = method.upper() == "POST" and bool(_MODEL_LOOKING.search(bare))
        return FlowClass(user_host or unknown_api, provider, "other", "other")
    endpoint = "generate"
    if bare.endswith(("/count_tokens", ":countTokens", "/count-tokens:rawPredict")):
        endpoint = "count_tokens"
    elif bare.rstrip("/").endswith("/compact"):
        endpoint = "compact"
    if api == "responses" and websocket:
        api = "responses-websocket"
    if method.upper() == "GET" and not websocket:
        return FlowClass(False, provider, api, "other")
    return FlowClass(True, provider, api, endpoint)


# --- clients ---------------------------------------------------------------------

_UA_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("claude-code", re.compile(r"\bclaude-(?:cli|code)/(\d[\w.\-+]*)", re.I)),
    ("codex", re.compile(r"\bcodex[_-](?:exec|cli_rs|cli|tui|vscode)/(\d[\w.\-+]*)", re.I)),
    ("kimi-code", re.compile(r"\bkimi-code-cli/(\d[\w.\-+]*)", re.I)),
    ("kimi-cli", re.compile(r"\bKimiCLI/(\d[\w.\-+]*)")),
    ("gemini-cli", re.compile(r"\bGeminiCLI(?:-[\w-]+)?/(\d[\w.\-+]*)")),
    ("opencode", re.compile(r"\bopencode/(\d[\w.\-+]*)", re.I)),
    ("grok-cli", re.compile(r"\bgrok-cli/(\d[\w.\-+]*)", re.I)),
    ("aider", re.compile(r"\baider/(\d[\w.\-+]*)", re.I)),
    ("cursor", re.compile(r"\bcursor/(\d[\w.\-+]*)", re.I)),
]

# Body markers for clients whose headers carry only a generic SDK user agent.
_BODY_RULES: list[tuple[str, bytes]] = [
    ("grok-cli", b"You are Grok CLI"),
    ("claude-code", b"You are Claude Code, Anthropic's official CLI"),
    ("claude-code", b"x-anthropic-billing-header: cc_version="),
    ("codex", b"You are Codex, "),
    ("kimi-code", b"You are Kimi Code CLI"),
    ("gemini-cli", b"You are Gemini CLI"),
    ("opencode", b"You are opencode"),
]


@dataclass(frozen=True)
class ClientClass:
    client: str
    version: str | None
    rule: str


def classify_client(headers: Iterable[tuple[str, str]], body_head: bytes | BodyView | None = None) -> ClientClass:
    """Identify the client from its headers, falling back to body markers."""
    h = lower_headers(headers)
    ua = h.get("user-agent", "")
    originator = h.get("originator")
    for name, pattern in _UA_RULES:
        m = pattern.search(ua)
        if m:
            return ClientClass(name, m.group(1), f"ua:{name}")
    if originator and originator.startswith("codex"):
        return ClientClass("codex", h.get("version"), "header:originator")
    if "x-claude-code-session-id" in h or h.get("x-app") == "cli":
        m = re.search(r"/(\d[\w.\-+]*)", ua)
        return ClientClass("claude-code", m.group(1) if m else None, "header:x-claude-code-session-id")
    if h.get("x-msh-platform"):
        platform = h["x-msh-platform"]
        name = "kimi-code" if "code" in platform else "kimi-cli"
        return ClientClass(name, h.get("x-msh-version"), "header:x-msh-platform")
    if body_head:
        for name, marker in _BODY_RULES:
            if marker in body_head:
                return ClientClass(name, None, f"body:{name}")
    named = _named_by_wire(h, ua)
    if named.rule in _UNNAMED_RULES and body_head:
        own = self_name(bytes(body_head[:SELF_NAME_BYTES]))
        if own is not None:
            return ClientClass(own, None, "body:self-name")
    return named


_UNNAMED_RULES = frozenset({"ua:generic", "header:x-stainless", "none"})
SELF_NAME_BYTES = 16384
# "You are Cline, an AI coding agent", "You are Qwen Code, ...": a client that names itself to the model
# at the start of an instruction string of the body itself (not inside a quoted history)
_SELF_NAME = re.compile(rb'"(?:text|content|system|instructions)"\s*:\s*"You are '
                        rb"([A-Z][A-Za-z0-9]*(?:[ -](?:[A-Z][A-Za-z0-9]*|CLI|Code|Agent))*)[,.:;!]")
# a model family is not a client ("You are Claude, a large language model"); a word is not a name
_NOT_CLIENT_NAMES = frozenset({
    "claude", "chatgpt", "gpt", "gemini", "grok", "qwen", "kimi", "llama", "mistral", "deepseek", "glm",
    "a", "an", "the", "ai", "assistant", "helpful", "now", "here", "this", "not", "my", "our", "your",
})


def self_name(body_head: bytes) -> str | None:
    """The name a client gives itself in its instructions (`You are Cline, ...`), or None: a model
    family's name or a plain word is no client's."""
    m = _SELF_NAME.search(body_head)
    if m is None:
        return None
    name = m.group(1).decode("ascii", "replace")
    if name.split()[0].lower() in _NOT_CLIENT_NAMES and len(name.split()) == 1:
        return None
    if name.lower() in _NOT_CLIENT_NAMES:
        return None
    return client_name(name.replace(" ", ""))


# Product tokens that name a library, SDK or runtime, not the program using it (compared lower-case,
# up to the first `/`); a client's own token is the first product token not in this list.
_GENERIC_PRODUCTS = frozenset({
    "mozilla", "applewebkit", "chrome", "safari", "gecko", "firefox", "edge", "electron", "khtml",
    "node", "nodejs", "node.js", "bun", "deno", "python", "cpython", "pypy", "java", "dart", "go", "ruby",
    "rust", "dotnet", ".net", "php", "perl", "darwin", "cfnetwork", "dalvik", "linux", "windows",
    "curl", "wget", "httpie", "axios", "undici", "node-fetch", "got", "superagent", "ky", "fetch",
    "python-requests", "requests", "python-urllib", "urllib", "httpx", "python-httpx", "aiohttp",
    "go-http-client", "okhttp", "reqwest", "hyper", "ureq", "isahc", "apache-httpclient", "faraday",
    "ktor-client", "dio", "restsharp", "guzzle", "libcurl", "urllib3", "httpclient",
    "openai", "openai-python", "openai-node", "openai-go", "openai-java", "asyncopenai", "azureopenai",
    "anthropic", "anthropic-sdk", "anthropic-typescript", "anthropic-python", "asyncanthropic",
    "stainless", "ai-sdk", "ai", "vercel", "langchain", "langchainjs", "langchain-core", "litellm",
    "google-genai-sdk", "genai-js", "google-api-nodejs-client", "google-api-python-client", "gl-node",
    "gl-python", "gccl", "gapic", "grpc-node-js", "grpc-python", "grpc-c", "grpc-java", "mistralai",
    "groq", "cohere", "ollama-python", "ollama-js", "together", "fireworks", "openrouter", "boto3",
    "botocore", "aws-sdk-js", "aws-sdk-go", "aws-sdk-rust", "aws-sdk-java", "md", "os", "lang", "ua",
    "exec-env", "api", "cfg", "sdk", "runtime", "google", "x",
})
# SDK families and the telemetry libraries a client ships (their exporters send their own user agent)
_LIBRARY_PREFIXES = ("openai", "anthropic", "google-", "gl-", "aws-sdk", "azure-", "otel", "opentelemetry",
                     "posthog", "sentry", "statsig", "datadog", "dd-trace", "segment", "amplitude", "mixpanel")
_PRODUCT = re.compile(r"(?<![\w.\-/])([A-Za-z@][\w.\-@]*(?:/[A-Za-z][\w.\-]*)?)/(v?\d[\w.\-+]*)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_URL_HOST = re.compile(r"^[a-z][a-z0-9+.\-]*://([^/:?#@]+)", re.I)


def _comment_free(ua: str) -> str:
    """A user agent without its `( ... )` comments (they hold platforms, not products)."""
    out, depth = [], 0
    for ch in ua:
        depth += ch == "("
        if not depth:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def client_name(product: str) -> str:
    """`QwenCode` -> `qwen-code`, `KimiCLI` -> `kimi-cli`: the form ctxtap's own client names take."""
    base = product.rsplit("/", 1)[-1].lstrip("@")
    name = re.sub(r"[^a-z0-9]+", "-", _CAMEL.sub("-", base).lower()).strip("-")
    return name or product.lower()


def ua_product(ua: str) -> tuple[str, str] | None:
    """The first product token of a user agent that is not a library or runtime, with its version."""
    for m in _PRODUCT.finditer(_comment_free(ua)):
        token = m.group(1)
        parts = [part.lstrip("@").lower() for part in token.split("/")]
        if any(part in _GENERIC_PRODUCTS or part.startswith(_LIBRARY_PREFIXES) for part in parts):
            continue
        return client_name(token), m.group(2).removeprefix("v")
    return None


def _named_by_wire(h: dict[str, str], ua: str) -> ClientClass:
    """A client no rule knows, named by what its requests say of it: its own user-agent product
    token, then OpenRouter's app attribution (`X-Title`, then `HTTP-Referer`'s host). An SDK's
    token (`OpenAI/Python`, `x-stainless-*`) names the SDK, never the client: `unknown (SDK)`."""
    found = ua_product(ua) if ua else None
    if found:
        return ClientClass(found[0], found[1], "ua:product")
    title = h.get("x-title", "").strip()
    if title and client_name(title):
        return ClientClass(client_name(title), None, "header:x-title")
    referer = _URL_HOST.match(h.get("http-referer", "") or h.get("referer", ""))
    if referer:
        host = referer.group(1).lower().removeprefix("www.")
        if host not in ("localhost", "127.0.0.1"):
            return ClientClass(host, None, "header:referer")
    sdk = re.match(r"([A-Za-z][\w.\-]*)/(?:\d|([A-Za-z]\w*))", ua) if ua else None
    if sdk:
        return ClientClass(f"unknown ({sdk.group(1)}{'/' + sdk.group(2) if sdk.group(2) else ''})", None, "ua:generic")
    if h.get("x-stainless-lang"):
        return ClientClass(f"unknown (stainless-{h['x-stainless-lang']})", None, "header:x-stainless")
    return ClientClass("unknown", None, "none")


# what starts a program rather than being one: interpreters, package runners, wrappers
_LAUNCHERS = frozenset({
    "python", "python3", "pypy", "pypy3", "node", "nodejs", "bun", "bunx", "deno", "npx", "pnpx", "pnpm", "yarn",
    "npm", "uv", "uvx", "pipx", "poetry", "pdm", "hatch", "env", "sudo", "nice", "nohup", "time", "timeout",
    "stdbuf", "exec", "run", "dlx", "x", "tsx", "ts-node", "ruby", "java", "dotnet",
})
_ENTRY_FILES = frozenset({"cli", "main", "index", "__main__", "bin", "run", "app", "entry"})


def program_of(command: list[str] | None) -> str | None:
    """The program a recorded command runs (`/opt/venv/bin/python3 /opt/venv/bin/aider ...` -> `aider`,
    `npx @scope/tool@1.2 ...` -> `tool`, `node .../qwen-code/cli.js` -> `qwen-code`), or None: the
    name a client gets when nothing on the wire names it."""
    args = list(command or [])
    i = 0
    while i < len(args):
        arg = args[i]
        base = arg.rstrip("/").rsplit("/", 1)[-1]
        stem = re.sub(r"(?:\d+(?:\.\d+)*)$", "", base) if base.startswith(("python", "pypy")) else base
        if arg == "-m" and i + 1 < len(args):
            return _program_name(args[i + 1].split(".", 1)[0])
        if arg.startswith("-") or "=" in arg.split("/", 1)[0] or stem in _LAUNCHERS:
            i += 1
            continue
        return _program_name(arg)
    return None


def _program_name(arg: str) -> str | None:
    parts = [p for p in arg.split("/") if p]
    if not parts:
        return None
    name = re.sub(r"\.(?:js|mjs|cjs|ts|py|sh|exe)$", "", parts[-1])
    if name in _ENTRY_FILES and len(parts) > 1:  # `.../qwen-code/cli.js`: the package, not its entry file
        name = parts[-2]
    name = name.split("@", 1)[0] if not name.startswith("@") else name.lstrip("@").split("@", 1)[0]
    return name or None


def client_evidence(rule: str) -> str:
    """The kind of evidence a client name rests on: a rule ctxtap has for that client, the user
    agent's product token, OpenRouter's `X-Title` or `HTTP-Referer`, the name it gives itself, the
    program the recorded command ran (`argv`), or nothing (`unattributed`)."""
    if rule == "ua:product":
        return "user-agent"
    if rule == "header:x-title":
        return "x-title"
    if rule == "header:referer":
        return "referer"
    if rule == "body:self-name":
        return "self-name"
    if rule == "argv:program":
        return "argv"
    if rule in ("none", "ua:generic", "header:x-stainless") or not rule:
        return "unattributed"
    return "rule"
