"""The live view's HTTP server (Tornado: mitmproxy already brings it, so no new dependency).

Bound to 127.0.0.1 only, on a random free port unless one is asked for. Every
request needs the access token: the printed URL carries it once, the first visit
turns it into an HttpOnly, SameSite=Strict cookie and redirects to the same page
without it. Requests for any other Host (DNS rebinding) are refused too. No CORS
headers are ever sent, and the CSP lets a page load nothing but its own origin.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote, urlencode

import tornado.httpserver
import tornado.netutil
import tornado.web

from ctxtap.reports.live import pages, queries
from ctxtap.reports.live.sources import CaptureSource, DatasetError

CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
QUERY_THREADS = 4
SHUTDOWN_S = 5  # open connections get this long to close when the server stops
# The view answers GETs only: a body over 64 KiB is refused (400, connection closed) from its
# Content-Length or chunk sizes, before it is read; Tornado's defaults would buffer 100 MB.
MAX_BODY_BYTES = 64 << 10
MAX_BUFFER_BYTES = 1 << 20
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


class PortInUse(Exception):
    """The UI port asked for is taken."""


def new_token() -> str:
    return secrets.token_urlsafe(24)


def same_origin(path: str) -> str:
    """The request's path as a redirect target on this origin.

    A path such as `//evil.example/` or `/\\evil.example/` taken as it came would send the browser
    to another host (a protocol-relative URL; browsers read `\\` as `/` and drop tabs and line ends).
    Everything outside the path characters is percent-encoded (the path is the request line's bytes
    read as latin-1), and the result starts with exactly one `/`.
    """
    quoted = quote(path.encode("latin-1", "replace"), safe="/%:@!$&'()*+,;=-._~")
    return "/" + quoted.lstrip("/")


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities (which JSON cannot carry) become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


class Base(tornado.web.RequestHandler):
    @property
    def live(self) -> LiveUI:
        return self.application.settings["live_ui"]

    def set_default_headers(self) -> None:
        self.set_header("Content-Security-Policy", CSP)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Cross-Origin-Resource-Policy", "same-origin")
        self.set_header("Cache-Control", "no-store")
        self.clear_header("Server")

    def prepare(self) -> None:
        ui = self.live
        ui.busy += 1  # a stopping server lets the requests under way finish first
        self._counted = True
        if self.request.host not in ui.allowed_hosts:
            self._refuse(f"this live view answers only at 127.0.0.1:{ui.port}")
            return
        given = self.get_query_argument("token", None)
        if given is not None:
            if not hmac.compare_digest(given.encode(), ui.token.encode()):
                self._refuse("wrong access token")
                return
            self.set_cookie(ui.cookie, ui.token, httponly=True, samesite="Strict", path="/")
            rest = [(k, v) for k, vs in self.request.query_arguments.items() if k != "token"
                    for v in (x.decode("utf-8", "replace") for x in vs)]
            self.redirect(same_origin(self.request.path) + (f"?{urlencode(rest)}" if rest else ""))
            return
        cookie = self.get_cookie(ui.cookie) or self.request.headers.get("X-Ctxtap-Token") or ""
        if not hmac.compare_digest(cookie.encode(), ui.token.encode()):
            self._refuse("this live view needs its access token: open the URL ctxtap printed (it ends in ?token=...)")

    def on_finish(self) -> None:
        self._uncount()

    def on_connection_close(self) -> None:
        self._uncount()

    def _uncount(self) -> None:
        if getattr(self, "_counted", False):
            self._counted = False
            self.live.busy -= 1

    def _refuse(self, why: str) -> None:
        self.set_status(403)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"403 forbidden: {why}\n")

    async def run(self, fn, *args):
        """Queries run in the server's thread pool: a slow one (a long thread's charts) never holds up
        the others, and the event loop keeps answering."""
        return await asyncio.get_running_loop().run_in_executor(self.live.pool, fn, *args)

    def source(self, c: str) -> CaptureSource:
        try:
            return self.live.sources[int(c)]
        except (ValueError, IndexError):
            raise tornado.web.HTTPError(404, reason="no such capture") from None

    def page(self, template: str, **ctx: Any) -> None:
        html = self.live.env.get_template(template).render(ui=self.live, **ctx)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(html.encode("utf-8", "replace"))  # a lone surrogate in captured text: "?"

    def json(self, data: Any) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(_clean(data), default=str, ensure_ascii=True))

    def log_exception(self, typ, value, tb) -> None:
        """One line, never a traceback in the recorder's terminal (CTXTAP_DEBUG=1 shows it)."""
        if isinstance(value, tornado.web.HTTPError):
            return
        if os.environ.get("CTXTAP_DEBUG"):
            super().log_exception(typ, value, tb)
            return
        sys.stderr.write(f"ctxtap live view: {self.request.method} {self.request.path} failed: "
                         f"{typ.__name__}: {str(value).splitlines()[0] if str(value) else ''}\n")

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        exc = kwargs.get("exc_info", (None, None))[1]
        why = getattr(exc, "reason", None) or self._reason
        if isinstance(exc, DatasetError):
            why = f"the analysis dataset cannot be read: {exc}. Rebuild it: ctxtap analyze --force CAPTURE"
        self.finish(f"{status_code} {why}\n")


class Index(Base):
    async def get(self) -> None:
        rows = await self.run(lambda: [queries.capture_row(s) for s in self.live.sources])
        self.page("index.html.j2", captures=rows)


class Sessions(Base):
    async def get(self, c: str) -> None:
        src = self.source(c)
        self.page("sessions.html.j2", c=int(c), src=src, cap=await self.run(queries.capture_row, src))


class Session(Base):
    async def get(self, c: str) -> None:
        src = self.source(c)
        s = await self.run(queries.session, src, self.get_query_argument("id", ""))
        if s is None:
            raise tornado.web.HTTPError(404, reason="no such session (yet)")
        self.page("session.html.j2", c=int(c), src=src, s=s)


class Request(Base):
    async def get(self, c: str) -> None:
        src = self.source(c)
        rid = self.get_query_argument("id", "")

        def load() -> tuple[dict, dict] | None:
            r = queries.request(src, rid)
            return None if r is None else (r, pages.request_ribbon(src, r))

        found = await self.run(load)
        if found is None:
            raise tornado.web.HTTPError(404, reason="no such request (yet)")
        r, ribbon = found
        self.page("request.html.j2", c=int(c), src=src, r=r, ribbon=ribbon, response=queries.clip(r.get("response_text")))


class Diff(Base):
    async def get(self, c: str) -> None:
        src = self.source(c)
        b_ref, typed = self.get_query_argument("b", ""), self.get_query_argument("a", "").strip()

        def load() -> tuple[bool, dict]:
            b = queries.resolve_request(src, b_ref)
            a = queries.resolve_request(src, typed) if typed else None
            if b is None or (typed and a is None):
                raise tornado.web.HTTPError(404, reason="no such request (give a full request id, or a start of "
                                                        "one that only one request has)")
            try:
                return a is None, queries.request_pair_diff(src, b, a)
            except LookupError as exc:
                raise tornado.web.HTTPError(404, reason=str(exc)) from None

        predecessor, data = await self.run(load)
        self.page("requestdiff.html.j2", c=int(c), src=src, predecessor=predecessor, **data)


class ApiState(Base):
    """The live state, answered from memory on the loop.

    With `since` (the `mark` of the last answer) it is a long poll: the answer waits until the
    mark changes (a new dataset version, the asked-for session grown, a request under way for a
    while) or `LiveUI.long_poll_s` pass. A page then wakes only when there is something to show, instead
    of polling: the browser and this process stay idle while the proxy is busy.
    """

    async def get(self) -> None:
        since = self.get_argument("since", None)
        loop = asyncio.get_running_loop()
        start = loop.time()
        while True:
            out = self._state()
            now = loop.time() - start
            if (since is None or out["mark"] != since or now >= self.live.long_poll_s or self.live.stopping
                    or (out["ticking"] and now >= TICK_S)):
                break
            await asyncio.sleep(STATE_CHECK_S)
            if self.request.connection is None or self.request.connection.stream.closed():  # type: ignore[attr-defined]
                return  # the page went away
        self.json(out)

    def _state(self) -> dict[str, Any]:
        states = [s.state() for s in self.live.sources]
        out: dict[str, Any] = {"version": sum(s.version for s in states), "live": any(s.live for s in states),
                               "captures": [{k: v for k, v in s.__dict__.items() if k != "sessions"} for s in states]}
        c, session = self.get_argument("c", None), self.get_argument("session", None)
        data = f"v{out['version']}"
        if c is not None and c.isdigit() and int(c) < len(states) and session is not None:
            # a session page refreshes only when its own session grew, not on every request elsewhere
            out["session_requests"] = states[int(c)].sessions.get(session)
            if out["session_requests"] is not None:
                data = f"s{out['session_requests']}"
        # requests under way for a moment (a 5 ms one is over before a page could show it)
        now = time.time()
        shown = []
        for i, cap in enumerate(out["captures"]):
            cap["in_progress"] = [p for p in cap["in_progress"] if now - (p["ts_start"] or now) >= IN_PROGRESS_AFTER_S]
            shown += [(i, p["flow_id"], p["ts_first_chunk"] is not None) for p in cap["in_progress"]]
        out["data_mark"] = data
        out["mark"] = f"{data}|{hash(tuple(shown)) & 0xFFFFFFFF:x}"
        out["ticking"] = bool(shown)  # its "started N s ago" counts on: answer at least every TICK_S
        return out


LONG_POLL_S = 15.0
STATE_CHECK_S = 0.05
TICK_S = 1.0
IN_PROGRESS_AFTER_S = 0.3


class ApiSessions(Base):
    async def get(self, c: str) -> None:
        offset, limit = queries.page_args(self.get_query_argument("offset", "0"), self.get_query_argument("limit", "100"))
        self.json(await self.run(queries.sessions_page, self.source(c), offset, limit))


class ApiRequests(Base):
    async def get(self, c: str) -> None:
        offset, limit = queries.page_args(self.get_query_argument("offset", "0"), self.get_query_argument("limit", "100"))
        self.json(await self.run(queries.requests_page, self.source(c), self.get_query_argument("session", ""),
                                 offset, limit, self.get_query_argument("cards", "") == "1"))


class ApiSession(Base):
    async def get(self, c: str) -> None:
        self.json(await self.run(queries.session, self.source(c), self.get_query_argument("id", "")) or {})


class ApiCharts(Base):
    async def get(self, c: str) -> None:
        svg = await self.run(queries.session_charts, self.source(c), self.get_query_argument("session", ""))
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(str(svg).encode("utf-8", "replace"))


class NotFound(Base):
    """Anything else: refused without the token like every route, then 404."""

    def prepare(self) -> None:
        super().prepare()
        if not self._finished:
            raise tornado.web.HTTPError(404)


class Static(Base):
    def get(self, name: str) -> None:
        data = pages.static_file(name)
        kind = STATIC_TYPES.get(name[name.rfind("."):]) if "." in name else None
        if data is None or kind is None or "/" in name:
            raise tornado.web.HTTPError(404)
        self.set_header("Content-Type", kind)
        self.finish(data)


HANDLERS: list[tuple[str, type]] = [
    (r"/", Index), (r"/c/(\d+)", Sessions), (r"/c/(\d+)/session", Session), (r"/c/(\d+)/request", Request),
    (r"/c/(\d+)/diff", Diff),
    (r"/api/state", ApiState), (r"/api/c/(\d+)/sessions", ApiSessions), (r"/api/c/(\d+)/requests", ApiRequests),
    (r"/api/c/(\d+)/charts", ApiCharts),
    (r"/api/c/(\d+)/session", ApiSession), (r"/static/([A-Za-z0-9_.-]+)", Static),
]


class LiveUI:
    """The server over some capture sources; `start` binds, `serve_forever` or `start_thread` runs it."""

    def __init__(self, sources: Sequence[CaptureSource], token: str | None = None, host: str = "127.0.0.1",
                 extra_handlers: Sequence[tuple[str, type]] = ()) -> None:
        self.sources = list(sources)
        self.token = token or new_token()
        self.host = host
        self.port = 0
        self.env = pages.environment()
        logging.getLogger("tornado.access").disabled = True  # no line per request in the recorder's terminal
        self.extra_handlers = list(extra_handlers)
        self.pool = ThreadPoolExecutor(max_workers=QUERY_THREADS, thread_name_prefix="ctxtap-live-query")
        self.long_poll_s = LONG_POLL_S  # how long `/api/state?since=` waits for a change at most
        self.stopping = False
        self.busy = 0  # requests under way
        self._sockets: list[socket.socket] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: tornado.httpserver.HTTPServer | None = None

    @property
    def cookie(self) -> str:
        return f"ctxtap_live_{self.port}"

    @property
    def allowed_hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def bind(self, port: int = 0) -> int:
        try:
            self._sockets = tornado.netutil.bind_sockets(port, self.host, family=socket.AF_INET)
        except OSError as exc:
            if exc.errno in (98, 48):  # EADDRINUSE on Linux / macOS
                raise PortInUse(f"port {port} on {self.host} is in use") from None
            raise
        self.port = self._sockets[0].getsockname()[1]
        return self.port

    def _app(self) -> tornado.web.Application:
        return tornado.web.Application([*self.extra_handlers, *HANDLERS], live_ui=self, xsrf_cookies=False,
                                       compress_response=False, default_handler_class=NotFound)

    async def _run(self, started: threading.Event | None = None, signals: Sequence[int] = ()) -> None:
        self._loop = asyncio.get_running_loop()
        self._server = tornado.httpserver.HTTPServer(self._app(), xheaders=False, max_body_size=MAX_BODY_BYTES,
                                                     max_buffer_size=MAX_BUFFER_BYTES)
        self._server.add_sockets(self._sockets)
        self._stopped = asyncio.Event()
        for sig in signals:
            self._loop.add_signal_handler(sig, self._stopped.set)
        if started is not None:
            started.set()
        await self._stopped.wait()
        self.stopping = True  # a held long poll answers now
        self._server.stop()
        deadline = self._loop.time() + SHUTDOWN_S
        while self.busy and self._loop.time() < deadline:  # a query under way gets a moment
            await asyncio.sleep(STATE_CHECK_S)
        try:
            await asyncio.wait_for(self._server.close_all_connections(), SHUTDOWN_S)
        except TimeoutError:
            pass
        self.pool.shutdown(wait=False, cancel_futures=True)

    def serve_forever(self) -> None:
        """Serve until SIGINT or SIGTERM. The event loop takes the signals itself: an exception raised
        into it from a Python signal handler can land inside a callback and leave the shutdown waiting
        on a future nobody completes (`ctxtap serve` once hung on SIGTERM that way)."""
        asyncio.run(self._run(signals=(signal.SIGINT, signal.SIGTERM)))

    def start_thread(self) -> threading.Thread:
        started = threading.Event()
        thread = threading.Thread(target=lambda: asyncio.run(self._run(started)), name="ctxtap-live-ui", daemon=True)
        thread.start()
        started.wait(10)
        return thread

    def stop(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stopped.set)
