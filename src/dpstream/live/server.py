"""``dpstream live SOURCE``: serve the page and the releases read so far over HTTP, on this machine by default.

``GET /`` is the page (``page.html``, self-contained); ``GET /releases?since=N`` is a JSON object with the releases
of index N on (``Releases.since``: ``first``, ``next``, ``ended``, ``releases``, each release as its line held it)
and the ``source``'s name. The page asks for the new ones once a second. Bad input (a missing file, a port in use,
a line that is not a release, also one written while the page is served) prints one line and exits 2.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

from dpstream import live
from dpstream.errors import command_args, one_line
from dpstream.live.releases import Releases

DEFAULT_PORT = 8765
DEFAULT_KEEP = 17280
"""Releases kept for the page: a day of releases at the watcher's default of one every 5 s."""
POLL = 0.25
"""Seconds between looks at a followed file that has no new line."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit code 2 (no usage block)."""

    def error(self, message: str) -> Any:
        """Print ``error: message`` and exit 2."""
        self.exit(2, f"error: {message}; see {self.prog} --help\n")


def parser() -> argparse.ArgumentParser:
    """The command's options."""
    summary, examples = (live.__doc__ or "").split("\n\n")[:2]
    p = OneLineParser(prog="dpstream live", description=f"{summary.split(': ', 1)[1]}\n\n{examples}".replace("``", ""),
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="the JSON lines of dpstream watch: a file (followed while it grows) or '-' (stdin)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0: any free one)")
    p.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--keep", type=int, default=DEFAULT_KEEP,
                   help=f"releases kept for the page, the latest (default {DEFAULT_KEEP}: a day at one every 5 s)")
    return p


def handler(releases: Releases, source: str, page: bytes) -> type[BaseHTTPRequestHandler]:
    """The request handler: the page, the releases since an index, 404 for anything else."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            url = urlsplit(self.path)
            if url.path in ("/", "/index.html"):
                self.send(200, "text/html; charset=utf-8", page)
                return
            if url.path != "/releases":
                self.send(404, "text/plain; charset=utf-8", b"not found: / (the page) or /releases?since=N\n")
                return
            since = parse_qs(url.query).get("since", ["0"])[-1]
            if not since.isdigit():
                self.send(400, "text/plain; charset=utf-8", b"since: a release index, an integer >= 0\n")
                return
            body = {**releases.since(int(since)), "source": source}
            self.send(200, "application/json", json.dumps(body, separators=(",", ":")).encode())

        def send(self, code: int, kind: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Requests are not logged: stderr keeps the command's own lines."""

    return Handler


class LiveServer:
    """The releases of ``stream`` (named ``source``) and an HTTP server of the page and the releases.

    ``follow``: ``stream`` is a file that may grow (read on at its end); otherwise a pipe, read to its end.
    """

    def __init__(self, stream: IO[bytes], source: str, follow: bool, port: int = DEFAULT_PORT,
                 bind: str = "127.0.0.1", keep: int = DEFAULT_KEEP) -> None:
        """Listen on ``bind``:``port`` (an OSError when it cannot); nothing is read before ``serve``."""
        self.stream, self.source, self.follow = stream, source, follow
        self.releases = Releases(keep)
        self.stop = threading.Event()
        page = files("dpstream.live").joinpath("page.html").read_bytes()
        self.httpd = ThreadingHTTPServer((bind, port), handler(self.releases, source, page))
        self.httpd.daemon_threads = True
        host, bound = self.httpd.socket.getsockname()[:2]  # the port chosen for --port 0
        self.url = f"http://{host}:{bound}/"

    def _read(self) -> None:
        try:
            self.releases.read(self.stream, self.source, self.follow, POLL, self.stop)
        except ValueError as exc:  # a line that is not a release, a file that shrank
            self.releases.error = " ".join(str(exc).split())
            self.httpd.shutdown()
            return
        if self.releases.ended:
            print(f"end of input: {self.releases.total} release(s) read; still serving them (Ctrl-C stops)",
                  file=sys.stderr, flush=True)

    def serve(self) -> str | None:
        """Read and serve until ``shutdown`` or a bad line; the bad line's one-line error, else None."""
        threading.Thread(target=self._read, name="dpstream-live-reader", daemon=True).start()
        self.httpd.serve_forever(poll_interval=0.1)
        return self.releases.error

    def shutdown(self) -> None:
        """Stop serving and reading (from another thread than ``serve``'s)."""
        self.stop.set()
        self.httpd.shutdown()

    def close(self) -> None:
        """Release the port and the stream."""
        self.stop.set()
        self.httpd.server_close()
        if self.stream is not sys.stdin.buffer:
            self.stream.close()


def open_server(args: argparse.Namespace) -> LiveServer:
    """The server of the options: the source opened, the port bound (ValueError naming the value when not)."""
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: allowed: 0 to 65535 (0: any free port)")
    if args.keep < 1:
        raise ValueError(f"--keep {args.keep}: allowed: an integer >= 1")
    if args.source == "-":
        stream: IO[bytes] = sys.stdin.buffer
    else:
        stream = open(Path(args.source), "rb")  # held by the server, closed by its close()
    follow = stream is not sys.stdin.buffer and stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    try:
        return LiveServer(stream, "stdin" if args.source == "-" else args.source, follow, args.port, args.bind,
                          args.keep)
    except OSError as exc:
        if stream is not sys.stdin.buffer:
            stream.close()
        taken = " (another program listens there)" if exc.errno == errno.EADDRINUSE else ""
        raise ValueError(f"--bind {args.bind} --port {args.port}: {exc.strerror or exc}{taken}; allowed: a free "
                         "port of an address of this machine (--port 0: any free port)") from None


def main(argv: list[str]) -> int:
    """``dpstream live ...``: 2 on bad input (one line), 130 on Ctrl-C; it serves until then."""
    args = command_args(parser(), argv)
    if isinstance(args, int):
        return args
    try:
        server = open_server(args)
    except (ValueError, OSError) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    print(f"serving {server.url} : the releases of {server.source} (Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        error = server.serve()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    finally:
        server.close()
    if error is not None:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
