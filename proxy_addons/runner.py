"""Run mitmproxy with ctxtap's addons, in the foreground or on a background thread."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import certifi
from mitmproxy import exceptions
from mitmproxy.master import Master
from mitmproxy.options import Options

from ctxtap.capture.paths import ca_dir
from ctxtap.proxy_addons.base_urls import reverse_modes
from ctxtap.proxy_addons.recorder import Recorder, make_addons

log = logging.getLogger(__name__)

CA_CERT_NAME = "mitmproxy-ca-cert.pem"
CA_BUNDLE_NAME = "ctxtap-ca-bundle.pem"


class ProxyStartError(RuntimeError):
    """The proxy could not start; the message says why (e.g. the port is taken)."""


@dataclass
class ProxyConfig:
    listen_host: str = "127.0.0.1"
    port: int = 0  # 0: pick a free port
    out: Path | None = None
    routes: list[str] = field(default_factory=list)
    model_hosts: list[str] = field(default_factory=list)
    record_all: bool = False
    offline: bool = False
    redact: list[str] = field(default_factory=list)  # extra redaction modes, e.g. ["pii"]
    command: list[str] | None = None
    confdir: Path | None = None  # where the CA lives (default: the user's config dir)
    replay: dict | None = None  # the run replays a capture: {source_capture_id, source, mode, trace_id}
    telemetry: bool = False  # run the loopback OTLP receiver for the client's own telemetry
    reverse: dict[str, int] = field(default_factory=dict)  # provider URL -> loopback port (record --base-url)


def proxy_core_addons() -> list:
    """The mitmproxy addons a recording proxy needs, and no others.

    mitmdump's defaults add some twenty more (playback, map/modify rules, sticky cookies,
    onboarding, HAR/flow saving, ...) that ctxtap never configures; each is still called on
    every hook of every flow, which costs about a tenth of the proxy's CPU under load.
    Kept: options and commands, listening, protocol detection, TLS and certificates, the
    guard against clients from public addresses (--listen-host 0.0.0.0), stripping h2c
    upgrades, DNS resolution and the startup error check.
    """
    from mitmproxy.addons import (
        block,
        core,
        disable_h2c,
        dns_resolver,
        errorcheck,
        next_layer,
        proxyserver,
        tlsconfig,
    )

    return [core.Core(), block.Block(), disable_h2c.DisableH2C(), proxyserver.Proxyserver(),
            dns_resolver.DnsResolver(), next_layer.NextLayer(), tlsconfig.TlsConfig(), errorcheck.ErrorCheck()]


def _master(config: ProxyConfig) -> tuple[Master, Recorder]:
    confdir = config.confdir or ca_dir()
    opts = Options(listen_host=config.listen_host, listen_port=config.port)
    master = Master(opts, with_termlog=False)
    addons = make_addons()
    master.addons.add(*proxy_core_addons(), *addons)
    try:
        _configure(opts, config, confdir)
    except exceptions.OptionsError as exc:
        raise ProxyStartError(f"invalid proxy option: {exc}") from None
    return master, addons[0]


def _configure(opts: Options, config: ProxyConfig, confdir: Path) -> None:
    opts.update(
        confdir=str(confdir),
        connection_strategy="lazy",  # never connect upstream before --route has been applied
        upstream_cert=False,
        ctxtap_out=str(config.out) if config.out else "",
        ctxtap_route=list(config.routes),
        ctxtap_model_hosts=list(config.model_hosts),
        ctxtap_record_all=config.record_all,
        ctxtap_offline=config.offline,
        ctxtap_redact=list(config.redact),
        ctxtap_command=json.dumps(config.command) if config.command else "",
        ctxtap_replay=json.dumps(config.replay) if config.replay else "",
        ctxtap_telemetry=config.telemetry,
    )
    if config.reverse:  # a reverse listener per provider beside the forward proxy (proxy_addons.base_urls)
        opts.update(mode=["regular", *reverse_modes(config.reverse)])


def ca_files(confdir: Path | None = None) -> tuple[Path, Path]:
    """(CA certificate, bundle of system roots plus the CA), creating the bundle if needed."""
    directory = confdir or ca_dir()
    cert = directory / CA_CERT_NAME
    bundle = directory / CA_BUNDLE_NAME
    if cert.exists():
        roots = Path(certifi.where()).read_bytes()
        wanted = roots.rstrip(b"\n") + b"\n" + cert.read_bytes()
        if not bundle.exists() or bundle.read_bytes() != wanted:
            bundle.write_bytes(wanted)
    return cert, bundle


def _secure_ca(directory: Path) -> None:
    """The CA private key must be readable by the user only."""
    for path in directory.glob("mitmproxy-ca*.pem"):
        if "cert" not in path.name:
            path.chmod(0o600)
    for path in directory.glob("*.p12"):
        path.chmod(0o600)


def client_env(port: int, host: str = "127.0.0.1", confdir: Path | None = None) -> dict[str, str]:
    """Variables that make common CLIs use the proxy and trust its CA."""
    cert, bundle = ca_files(confdir)
    proxy = f"http://{host}:{port}"
    env = {name: proxy for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                                     "ALL_PROXY", "all_proxy")}
    env.update({
        "NO_PROXY": "localhost,127.0.0.1,::1",
        "no_proxy": "localhost,127.0.0.1,::1",
        "NODE_EXTRA_CA_CERTS": str(cert),
        "SSL_CERT_FILE": str(bundle),
        "REQUESTS_CA_BUNDLE": str(bundle),
        "CURL_CA_BUNDLE": str(bundle),
        "CODEX_CA_CERTIFICATE": str(bundle),
        "NODE_USE_ENV_PROXY": "1",
    })
    return env


def _startup_errors(master: Master) -> str:
    """What mitmproxy logged as errors while starting (its errorcheck addon keeps them)."""
    check = master.addons.get("errorcheck")
    records = getattr(getattr(check, "logger", None), "has_errored", None) or []
    return "; ".join(record.getMessage() for record in records)


async def _run_master(master: Master) -> None:
    """master.run(), with a startup failure as ProxyStartError instead of mitmproxy's sys.exit()."""
    try:
        await master.run()
    except SystemExit as exc:
        raise ProxyStartError(_startup_errors(master) or f"mitmproxy exited while starting (status {exc.code})") \
            from None


async def _wait_listening(master: Master, task: asyncio.Task, reverse_ports: Iterable[int] = ()) -> tuple[str, int]:
    """The forward proxy's address once it listens (and every reverse listener of `reverse_ports` too)."""
    server = master.addons.get("proxyserver")
    wanted = set(reverse_ports)
    for _ in range(3000):
        addrs = [a for a in server.listen_addrs() if len(a) >= 2]
        forward = [a for a in addrs if a[1] not in wanted]
        if forward and wanted <= {a[1] for a in addrs}:
            return forward[0][0], forward[0][1]
        if task.done():
            task.result()  # raises why it stopped
            raise ProxyStartError("mitmproxy stopped before it listened")
        await asyncio.sleep(0.01)
    raise ProxyStartError(_startup_errors(master) or "mitmproxy did not start listening within 30 s")


def _start_writer(recorder: Recorder):
    try:
        return recorder._ensure_writer()
    except (OSError, RuntimeError) as exc:
        raise ProxyStartError(f"cannot start recording: {exc}") from exc


def _quiet_cancelled(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """A client connection's handler cancelled by shutdown is expected: asyncio's default handler
    would print its traceback (18 lines under the demo's first output). Anything else is reported."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)


class BackgroundProxy:
    """mitmproxy on its own thread and event loop (used by `ctxtap record` and tests)."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.port: int | None = None
        self.host: str | None = None
        self.capture_dir: Path | None = None
        self.telemetry_endpoint: str | None = None
        self._recorder: Recorder | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._master: Master | None = None
        self._thread = threading.Thread(target=self._run, name="ctxtap-proxy", daemon=True)

    def start(self, timeout: float = 30) -> BackgroundProxy:
        self._thread.start()
        if not self._ready.wait(timeout) or self._error:
            if isinstance(self._error, ProxyStartError):
                raise self._error
            raise ProxyStartError(f"the proxy failed to start: {self._error or 'timed out'}")
        return self

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._loop.set_exception_handler(_quiet_cancelled)
            master, recorder = _master(self.config)
            self._master = master
            task = asyncio.create_task(_run_master(master))
            try:
                self.host, self.port = await _wait_listening(master, task, self.config.reverse.values())
                _start_writer(recorder)
            except BaseException as exc:
                self._error = exc
                self._ready.set()
                master.shutdown()
                try:
                    await task
                except BaseException:  # already reported through self._error
                    pass
                return
            self.capture_dir = recorder.capture_dir
            self.telemetry_endpoint = recorder.telemetry_endpoint
            self._recorder = recorder
            _secure_ca(self.config.confdir or ca_dir())
            self._ready.set()
            await task

        try:
            asyncio.run(main())
        except BaseException as exc:  # surfaced through start()/stop()
            self._error = exc
            self._ready.set()

    def note(self, key: str, value: object, timeout: float = 30) -> None:
        """Put a fact into the capture's manifest (e.g. what telemetry settings were injected)."""
        from ctxtap.capture.events import ManifestNote

        if self._loop is None or self._recorder is None or self._recorder.writer is None:
            return
        writer = self._recorder.writer

        async def submit() -> None:
            fut = writer.submit(ManifestNote(key, value))
            await (fut if isinstance(fut, asyncio.Future) else asyncio.wrap_future(fut))

        asyncio.run_coroutine_threadsafe(submit(), self._loop).result(timeout)

    def stop(self, timeout: float = 120) -> None:
        """Stop accepting, let addons finalize the capture, join the thread."""
        if self._loop is not None and self._master is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._master.shutdown)
        self._thread.join(timeout)

    def __enter__(self) -> BackgroundProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound (not listening) to the port mitmproxy is to listen on, `port` 0 choosing one.

    It holds the port while the writer starts and the announcement goes out, so nothing else
    takes it meanwhile (mitmproxy's own pick for port 0 binds, closes and binds again); being
    bound and not listening, it refuses connections instead of accepting them."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ProxyStartError(f"cannot listen on {host or '*'}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's server socket does
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        raise ProxyStartError(f"cannot listen on {host or '*'}:{port}: {exc}") from None
    return sock


def _just_before_listening(master: Master, action, failed: list[BaseException]) -> None:
    """Run `action()` right before mitmproxy binds and listens; if it raises, stop instead.

    Master.run() (mitmproxy 11 and 12) looks up the proxyserver addon and awaits its
    setup_servers(), which binds and listens: wrapping it on the instance puts `action`
    immediately ahead of that, after every option and certificate is in place."""
    server = master.addons.get("proxyserver")
    setup = server.setup_servers

    async def setup_servers() -> bool:
        try:
            action()
        except BaseException as exc:  # reported by run_foreground; mitmproxy would drop it
            failed.append(exc)
            master.shutdown()
            return False
        return await setup()

    server.setup_servers = setup_servers


def run_foreground(config: ProxyConfig, on_ready) -> Path | None:
    """Run until SIGINT/SIGTERM; `on_ready(host, port, capture_dir)` is called just before listening.

    The writer child is started and `on_ready` has returned (its announcement flushed) before
    the port accepts a connection: a script that waits for the port then finds the announcement,
    and the first burst of clients finds the writer ready rather than waiting out its start-up.
    A client that connects in the moment between the two is refused, not accepted: wait for the
    port, not for the announcement alone."""

    async def main() -> Path | None:
        master, recorder = _master(config)
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_quiet_cancelled)
        reserved = _reserve_port(config.listen_host, config.port)
        host = config.listen_host or "0.0.0.0"
        port = reserved.getsockname()[1]
        try:
            master.options.update(listen_port=port)
            _start_writer(recorder)
        except BaseException:
            reserved.close()
            recorder.done()
            raise
        _secure_ca(config.confdir or ca_dir())

        def announce() -> None:
            try:
                on_ready(host, port, recorder.capture_dir)
            finally:
                reserved.close()  # mitmproxy binds the port next, in the same callback

        failed: list[BaseException] = []
        _just_before_listening(master, announce, failed)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, master.shutdown)
        task = asyncio.create_task(_run_master(master))
        try:
            await _wait_listening(master, task)
        except BaseException:
            reserved.close()
            master.shutdown()
            try:
                await task
            except BaseException:  # the first error is the one to report
                pass
            recorder.done()  # mitmproxy stopped before its `running`, so never called `done`
            if failed:
                raise failed[0] from None
            raise
        await task
        return recorder.capture_dir

    return asyncio.run(main())
