"""The real CLIs under test: package pins, command lines, credentials and what ctxtap should see.

Pins, command lines and settings follow ../shared/real-clients/README.md, which recorded
these exact versions against the same fake model server; keeping them equal means a
failure here is a ctxtap regression, not a CLI upgrade. Override a pin with
`CTXTAP_REALCLI_<NAME>=<npm spec or pip requirement>` (e.g.
CTXTAP_REALCLI_CODEX=@openai/codex@0.172.0); bump pins on purpose, never to "latest" in CI.
"""

from __future__ import annotations

import json
import os
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TASK = (
    "Read the current directory, list up to five entries from its first level, "
    "do not modify any files, and do not access the network."
)
_ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def anthropic_key() -> str:
    return f"sk-ant-api03-{_rand(93, _ALNUM + '-_')}AA"


def openai_key() -> str:
    return f"sk-proj-{_rand(74, _ALNUM + '-_')}T3BlbkFJ{_rand(74, _ALNUM + '-_')}"


def xai_key() -> str:
    return f"xai-{_rand(80)}"


def google_key() -> str:
    return f"AIza{_rand(35, _ALNUM + '-_')}"


def moonshot_key() -> str:
    return f"sk-{_rand(48)}"


def bedrock_key() -> str:
    """A long-lived Amazon Bedrock API key's shape (`ABSK` + base64 of the key id and secret)."""
    return f"ABSK{_rand(132, _ALNUM + '+/')}"


@dataclass(frozen=True)
class Setup:
    """What one run needs besides the common environment: variables, files under HOME, secrets."""

    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # path relative to HOME -> text
    secrets: tuple[str, ...] = ()  # every dummy credential: none may appear in the capture


@dataclass(frozen=True)
class CliSpec:
    name: str  # test id and cache sub-directory
    package: str  # default npm spec, or pip requirement when installer == "pip" (pinned)
    command: str  # the bin (npm) or console script (pip) the package provides
    args: Callable[[Path], list[str]]  # given the repo directory
    setup: Callable[[Path], Setup]  # given HOME
    client: str  # the client id ctxtap must assign
    api: str  # the model API ctxtap must see
    hosts: tuple[str, ...]  # provider hosts routed to the model server
    websocket: bool = True  # False: the model server refuses WebSocket upgrades (426)
    node22: bool = False  # needs Node >= 22 (engines field / NODE_USE_ENV_PROXY); others run on any Node
    state_dirs: tuple[str, ...] = ()  # directories the CLI itself creates in the repository
    installer: str = "npm"  # "npm", or "pip" (a virtualenv made by Python `python`)
    python: str | None = None  # the Python minor version a pip-installed CLI needs, e.g. "3.13"
    title_model: str | None = None  # the CLI also asks this (smaller) model for a title, with no tools
    # False: the CLI's shell tool loses its output in the sandbox (Qwen Code's node-pty answers `ls` with
    # "Output: (empty)" here, as in ../shared/real-clients-2): the listing is not checked, the loop is
    shell_output: bool = True
    # the tool call the CLI needs before it stops (mini-swe-agent ends only on its submit command): the
    # scripted final step makes it, with the final text, and no request carries its result
    finish: str | None = None
    # the name a bare import gives it, where only the recorded command names the client (pi, mini)
    wire_client: str | None = None

    @property
    def imported_client(self) -> str:
        """The client a `ctxtap import` of its traffic (no command line) must name."""
        return self.wire_client or self.client

    @property
    def install_spec(self) -> str:
        return os.environ.get(f"CTXTAP_REALCLI_{self.name.upper().replace('-', '_')}", self.package)


def _claude(home: Path) -> Setup:
    key = anthropic_key()
    return Setup(env={"ANTHROPIC_API_KEY": key}, secrets=(key,))


def _anthropic_key_only(home: Path) -> Setup:
    """A CLI that reads ANTHROPIC_API_KEY and nothing else (pi, mini-swe-agent)."""
    key = anthropic_key()
    return Setup(env={"ANTHROPIC_API_KEY": key, "MSWEA_CONFIGURED": "true"}, secrets=(key,))


def _qwen(home: Path) -> Setup:
    """Qwen Code on DashScope's OpenAI-compatible endpoint, as a DashScope key is configured."""
    key = f"sk-{_rand(32, string.hexdigits.lower()[:16])}"
    return Setup(env={"OPENAI_API_KEY": key, "OPENAI_BASE_URL": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
                      "OPENAI_MODEL": "qwen3-coder-plus", "QWEN_CODE_NO_RELAUNCH": "true"}, secrets=(key,))


def _cline(home: Path) -> Setup:
    """Cline's provider settings as `cline auth -p anthropic -k KEY -m claude-sonnet-4-5` writes them
    (read off that command, run offline in a throwaway HOME)."""
    key = anthropic_key()
    settings = {"version": 1, "lastUsedProvider": "anthropic", "modes": {}, "providers": {"anthropic": {
        "settings": {"provider": "anthropic", "apiKey": key, "model": "claude-sonnet-4-5"},
        "updatedAt": "2026-12-01T10:00:00.000Z", "tokenSource": "manual"}}}
    return Setup(files={".cline/data/settings/providers.json": json.dumps(settings, indent=2)}, secrets=(key,))


def _claude_bedrock(home: Path) -> Setup:
    """Claude Code on Amazon Bedrock with a Bedrock API key (a bearer token, no request signing):
    the same Messages body, the model in the path, the stream as AWS event-stream frames."""
    key = bedrock_key()
    return Setup(env={"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_BEARER_TOKEN_BEDROCK": key, "AWS_REGION": "us-east-1"},
                 secrets=(key,))


def _claude_vertex(home: Path) -> Setup:
    """Claude Code on Google Vertex AI, its Google auth off (as behind a gateway that takes a key
    header instead): the Messages body to `:streamRawPredict`, Anthropic's own SSE back."""
    key = google_key()
    return Setup(env={"CLAUDE_CODE_USE_VERTEX": "1", "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1",
                      "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "alice-project",
                      "ANTHROPIC_CUSTOM_HEADERS": f"x-goog-api-key: {key}"}, secrets=(key,))


def _claude_foundry(home: Path) -> Setup:
    """Claude Code on Microsoft Foundry: Messages at `<resource>.services.ai.azure.com/anthropic`."""
    key = _rand(84)
    return Setup(env={"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "alice",
                      "ANTHROPIC_FOUNDRY_API_KEY": key}, secrets=(key,))


def _claude_aws(home: Path) -> Setup:
    """Claude Code on Anthropic's API on AWS (`aws-external-anthropic.<region>.api.aws`), with a key."""
    key = anthropic_key()
    return Setup(env={"CLAUDE_CODE_USE_ANTHROPIC_AWS": "1", "ANTHROPIC_AWS_API_KEY": key, "AWS_REGION": "us-east-1",
                      "ANTHROPIC_AWS_WORKSPACE_ID": "wrkspc_alice"}, secrets=(key,))


def _claude_google_cloud(home: Path) -> Setup:
    """Claude Code on Anthropic's API on Google Cloud (`claude.googleapis.com`), its Google auth off
    and a key header instead."""
    key = google_key()
    return Setup(env={"CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD": "1", "CLAUDE_CODE_SKIP_ANTHROPIC_GOOGLE_CLOUD_AUTH": "1",
                      "ANTHROPIC_GOOGLE_CLOUD_PROJECT": "alice-project", "ANTHROPIC_GOOGLE_CLOUD_LOCATION": "global",
                      "ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID": "wrkspc_alice",
                      "ANTHROPIC_CUSTOM_HEADERS": f"x-goog-api-key: {key}"}, secrets=(key,))


def _codex(home: Path) -> Setup:
    key = openai_key()
    return Setup(env={"OPENAI_API_KEY": key, "CODEX_API_KEY": key, "CODEX_HOME": str(home / ".codex")},
                 files={".codex/.keep": ""}, secrets=(key,))  # CODEX_HOME must exist


def _grok(home: Path) -> Setup:
    key = xai_key()
    return Setup(env={"GROK_API_KEY": key}, secrets=(key,))


def _kimi(home: Path) -> Setup:
    key = moonshot_key()
    config = f"""default_model = "kimi-for-coding"
default_permission_mode = "auto"

[providers.kimi-for-coding]
type = "kimi"
base_url = "https://api.kimi.com/coding/v1"
api_key = "{key}"

[models.kimi-for-coding]
provider = "kimi-for-coding"
model = "kimi-for-coding"
max_context_size = 262144
"""
    return Setup(env={"KIMI_CODE_NO_AUTO_UPDATE": "1"}, files={".kimi-code/config.toml": config}, secrets=(key,))


def _gemini(home: Path) -> Setup:
    key = google_key()
    return Setup(env={"GEMINI_API_KEY": key, "GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true"},
                 secrets=(key,))


def _opencode(home: Path) -> Setup:
    """Anthropic Messages through opencode's own config: key from the environment, nothing fetched.

    The models catalogue comes from the snapshot inside the binary (no models.dev fetch),
    the default plugins (installed from npm at start) are off, and so are autoupdate and
    sharing. `small_model` pins the title model so the side request is deterministic.
    """
    key = anthropic_key()
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-haiku-4-5",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"anthropic": {"options": {"apiKey": "{env:ANTHROPIC_API_KEY}"}}},
    }
    env = {"ANTHROPIC_API_KEY": key, "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
           "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1"}
    return Setup(env=env, files={".config/opencode/opencode.json": json.dumps(config, indent=2) + "\n"},
                 secrets=(key,))


def _opencode_bedrock(home: Path) -> Setup:
    """opencode on Amazon Bedrock (the AI SDK's provider speaks the Converse API), a Bedrock API key."""
    key = bedrock_key()
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "amazon-bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0",
        "small_model": "amazon-bedrock/anthropic.claude-haiku-4-5-20251001-v1:0",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"amazon-bedrock": {"options": {"region": "us-east-1"}}},
    }
    env = {"AWS_BEARER_TOKEN_BEDROCK": key, "AWS_REGION": "us-east-1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1"}
    return Setup(env=env, files={".config/opencode/opencode.json": json.dumps(config, indent=2) + "\n"},
                 secrets=(key,))


def _kimi_cli(home: Path) -> Setup:
    """The legacy Python kimi-cli: kimi-code's provider config in ~/.kimi/, yolo, no telemetry or updates."""
    key = moonshot_key()
    config = f"""default_model = "kimi-for-coding"
default_yolo = true
telemetry = false

[providers.kimi-for-coding]
type = "kimi"
base_url = "https://api.kimi.com/coding/v1"
api_key = "{key}"

[models.kimi-for-coding]
provider = "kimi-for-coding"
model = "kimi-for-coding"
max_context_size = 262144
"""
    return Setup(env={"KIMI_CLI_NO_AUTO_UPDATE": "1"}, files={".kimi/config.toml": config}, secrets=(key,))


def _claude_args(repo: Path) -> list[str]:
    return ["-p", TASK, "--allowedTools", "Bash(pwd)", "Bash(ls)", "Bash(ls:*)", "Bash(cat:*)", "Bash(wc:*)",
            "--output-format", "stream-json", "--verbose"]


def _codex_args(repo: Path) -> list[str]:
    return ["exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--json", TASK]


# chatgpt.com too: Codex fetches its model catalogue there before the first request and, when
# the offline proxy answers 502, retries with back-off for ~8 s; the model server answers at once.
_CODEX_HOSTS = ("api.openai.com", "chatgpt.com")

CLIS: dict[str, CliSpec] = {
    spec.name: spec
    for spec in (
        CliSpec(
            name="claude", package="@anthropic-ai/claude-code@2.1.332", command="claude",
            args=_claude_args,
            setup=_claude, client="claude-code", api="messages", hosts=("api.anthropic.com",),
        ),
        CliSpec(
            name="claude-bedrock", package="@anthropic-ai/claude-code@2.1.332", command="claude",
            args=_claude_args,
            setup=_claude_bedrock, client="claude-code", api="bedrock-messages",
            hosts=("bedrock-runtime.us-east-1.amazonaws.com",),
        ),
        CliSpec(
            name="claude-vertex", package="@anthropic-ai/claude-code@2.1.332", command="claude",
            args=_claude_args,
            setup=_claude_vertex, client="claude-code", api="vertex-messages",
            hosts=("us-east5-aiplatform.googleapis.com", "aiplatform.googleapis.com"),
        ),
        *(CliSpec(name=f"claude-{platform}", package="@anthropic-ai/claude-code@2.1.332", command="claude",
                  args=_claude_args, setup=setup, client="claude-code", api="messages", hosts=(host,))
          for platform, setup, host in (
              ("foundry", _claude_foundry, "alice.services.ai.azure.com"),
              ("aws", _claude_aws, "aws-external-anthropic.us-east-1.api.aws"),
              ("google-cloud", _claude_google_cloud, "claude.googleapis.com"))),
        CliSpec(
            name="codex", package="@openai/codex@0.171.0", command="codex",
            args=_codex_args, setup=_codex, client="codex", api="responses-websocket", hosts=_CODEX_HOSTS,
        ),
        CliSpec(
            name="codex-sse", package="@openai/codex@0.171.0", command="codex",
            # The model server refuses the WebSocket upgrade (426): Codex falls back to POST + SSE.
            args=_codex_args, setup=_codex, client="codex", api="responses", hosts=_CODEX_HOSTS, websocket=False,
        ),
        CliSpec(
            name="kimi-code", package="@moonshot-ai/kimi-code@2.1.0", command="kimi",
            args=lambda repo: ["-p", TASK],
            setup=_kimi, client="kimi-code", api="chat-completions", hosts=("api.kimi.com",), node22=True,
        ),
        CliSpec(
            name="grok", package="@vibe-kit/grok-cli@0.0.34", command="grok",
            args=lambda repo: ["--prompt", TASK, "--directory", str(repo)],
            setup=_grok, client="grok-cli", api="chat-completions", hosts=("api.x.ai",), node22=True,
            state_dirs=(".grok",),
        ),
        CliSpec(
            name="gemini", package="@google/gemini-cli@0.61.0", command="gemini",
            args=lambda repo: ["-p", TASK, "--yolo", "--output-format", "json"],
            setup=_gemini, client="gemini-cli", api="gemini", hosts=("generativelanguage.googleapis.com",),
        ),
        CliSpec(
            name="opencode", package="opencode-ai@1.18.33", command="opencode",  # a Bun binary
            args=lambda repo: ["run", "--model", "anthropic/claude-sonnet-4-5", TASK],
            setup=_opencode, client="opencode", api="messages", hosts=("api.anthropic.com",),
            title_model="claude-haiku-4-5",
        ),
        CliSpec(
            name="opencode-bedrock", package="opencode-ai@1.18.33", command="opencode",
            args=lambda repo: ["run", "--model", "amazon-bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", TASK],
            setup=_opencode_bedrock, client="opencode", api="bedrock-converse",
            hosts=("bedrock-runtime.us-east-1.amazonaws.com",), title_model="us.anthropic.claude-haiku-4-5-20251001-v1:0",
        ),
        CliSpec(
            # pi names itself nowhere on the wire (the Anthropic SDK's user agent, no session header):
            # the program its recorded command ran names it (evidence `argv`)
            name="pi", package="@mariozechner/pi-coding-agent@0.73.1", command="pi",
            args=lambda repo: ["-p", "--mode", "json", "--provider", "anthropic", "--model", "claude-sonnet-4-5",
                               TASK],
            setup=_anthropic_key_only, client="pi", wire_client="unknown (Anthropic/JS)", api="messages", hosts=("api.anthropic.com",),
        ),
        CliSpec(
            name="qwen-code", package="@qwen-code/qwen-code@0.24.4", command="qwen",
            args=lambda repo: ["--auth-type", "openai", "--yolo", "--output-format", "json", TASK],
            setup=_qwen, client="qwen-code", api="chat-completions", hosts=("dashscope-intl.aliyuncs.com",),
            node22=True, state_dirs=(".qwen",), shell_output=False,
        ),
        CliSpec(
            # a Bun binary on the Vercel AI SDK: the user agent names the SDK, the system prompt names Cline
            name="cline", package="cline@3.0.65", command="cline", args=lambda repo: ["--json", TASK],
            setup=_cline, client="cline", api="messages", hosts=("api.anthropic.com",), state_dirs=(".cline",),
        ),
        CliSpec(
            # litellm's Anthropic client, non-streaming; the task inside the client's own template
            name="mini-swe-agent", package="mini-swe-agent==2.4.6", command="mini", installer="pip", python="3.12",
            args=lambda repo: ["--model", "anthropic/claude-sonnet-4-5", "--yolo", "--exit-immediately", "-t", TASK],
            setup=_anthropic_key_only, client="mini", wire_client="unknown (litellm)", api="messages",
            hosts=("api.anthropic.com",),
            finish="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
        ),
        CliSpec(
            # 1.50.0 is the last real release: 1.51 and 1.52 only download a remote install script.
            # It needs Python 3.13 (it crashed on 3.12.1). stream-json: the text output wraps lines.
            name="kimi-cli", package="kimi-cli==1.50.0", command="kimi", installer="pip", python="3.13",
            args=lambda repo: ["--print", "--yolo", "--output-format", "stream-json", "-p", TASK],
            setup=_kimi_cli, client="kimi-cli", api="chat-completions", hosts=("api.kimi.com",),
        ),
    )
}


def _openai_key_only(home: Path) -> Setup:
    key = openai_key()
    return Setup(env={"OPENAI_API_KEY": key}, secrets=(key,))


# A CLI without tool calling: its loop is "the reply names repository files -> it adds them to the chat
# (`--yes-always`) -> it asks again". The scripted answer names README.md; the second request carries
# the file. Histories and the gitignore line it would add go nowhere (the repository must stay unchanged).
AIDER_ANSWER = "The first level holds README.md, pyproject.toml, src, docs and config. I need README.md for the rest."
NO_TOOL_CLIS: dict[str, CliSpec] = {
    "aider": CliSpec(
        name="aider", package="aider-chat==0.86.2", command="aider", installer="pip", python="3.12",
        args=lambda repo: ["--model", "gpt-4.1", "--yes-always", "--no-auto-commits", "--no-check-update",
                           "--no-pretty", "--no-fancy-input", "--no-gitignore", "--no-show-model-warnings",
                           "--analytics-disable", "--chat-history-file", "/dev/null", "--input-history-file",
                           "/dev/null", "--message", TASK],
        setup=_openai_key_only, client="aider", api="chat-completions", hosts=("api.openai.com",),
        state_dirs=(".aider.tags.cache.v4",),
    ),
}


def install_name(spec: CliSpec) -> str:
    """Cache sub-directory: codex and codex-sse share one install."""
    if spec.installer == "pip":
        return "pypi__" + spec.install_spec.split("==")[0].split("[")[0].strip()
    return spec.install_spec.rsplit("@", 1)[0].lstrip("@").replace("/", "__")
