"""`python -m ctxtap.modelserver`: serve the fake provider until SIGINT/SIGTERM.

Prints its URL on the first line of stdout so a benchmark or a shell script
can read it after starting the process with `--port 0`.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType

from ctxtap.wire.httpbody import MAX_BODY_BYTES

from .script import Script
from .server import ModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctxtap.modelserver", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = pick a free one)")
    parser.add_argument("--script", default="basic", help="builtin name (basic, long, quirks), JSON file or JSON text")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between stream events")
    parser.add_argument("--no-websocket", action="store_true", help="refuse WebSocket upgrades with 426")
    parser.add_argument("--cache-ttl", type=float, default=300.0, help="prompt-cache TTL in seconds")
    parser.add_argument("--min-cache-tokens", type=int, default=1024, help="shortest cacheable prefix")
    parser.add_argument("--chat-usage-style", choices=("auto", "openai", "moonshot"), default="auto")
    parser.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES,
                        help="refuse a request body over this many bytes with 413 (default: 64 MiB)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    if args.max_body_bytes < 1:
        parser.error("--max-body-bytes must be 1 or more")
    if args.verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")

    server = ModelServer(Script.load(args.script), port=args.port, chunk_delay_s=args.chunk_delay,
                         websocket=not args.no_websocket, cache_ttl_s=args.cache_ttl,
                         min_cache_tokens=args.min_cache_tokens, chat_usage_style=args.chat_usage_style,
                         verbose=args.verbose, max_body_bytes=args.max_body_bytes)
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Handlers before the URL is printed: a caller may signal as soon as it has the URL.
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    server.start()
    print(server.url, flush=True)
    while not stop.wait(0.2):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
