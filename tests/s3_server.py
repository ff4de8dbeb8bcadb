"""A real S3-compatible server on loopback for the tests and the benchmark, with a counting proxy in front of it.

:class:`S3Server` starts moto in server mode (``moto.server.ThreadedMotoServer``)
on ``127.0.0.1`` and a free port, waits until it answers, and puts a tiny
threaded HTTP proxy (:class:`CountingProxy`) on another free loopback port in
front of it. Clients talk to the proxy, which forwards every request to moto
unchanged and counts, per request, the method, the object path, the ``Range``
asked and the body bytes answered. Tests assert those counts: they count what
went over the wire to a real server, never what a mock of fsspec or s3fs says.

::

    with S3Server() as server:
        bucket = server.bucket()                   # a new, empty bucket
        server.upload(local_file, f"s3://{bucket}/ds.h5")
        with server.counting() as log:
            ds = h5ml.open(f"s3://{bucket}/ds.h5", storage_options=server.storage_options)
        log.gets()                                 # GET requests made while opening
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import itertools
import os
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CountingProxy", "Request", "RequestLog", "S3Server", "free_port", "time_limit"]

_BUCKETS = itertools.count()
#: Headers a proxy never forwards (RFC 9110 §7.6.1 hop-by-hop headers; Expect, since the body is read already).
_HOP = frozenset(
    {"connection", "expect", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
)


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in the main thread after ``seconds`` (SIGALRM): a read from the server must never hang CI."""
    import signal

    def expire(_signum: int, _frame: Any) -> None:
        import faulthandler
        import sys

        faulthandler.dump_traceback(sys.stderr, all_threads=True)  # where each thread waits, in the test's report
        raise TimeoutError(f"test ran past {seconds} s: a request to the loopback S3 server hangs?")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _forget_s3_clients() -> None:
    """Drop s3fs's cached file systems (one per set of options), so that none points at a stopped server."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Request:
    """One request the proxy forwarded: method, path (bucket/key), Range header (or ''), body bytes answered."""

    method: str
    path: str
    range: str
    nbytes: int


@dataclass
class RequestLog:
    """The requests forwarded while a :meth:`S3Server.counting` block ran."""

    requests: list[Request] = field(default_factory=list)

    def gets(self, path: str | None = None) -> list[Request]:
        """The GET requests (of objects whose path ends with ``path``, when given)."""
        return [r for r in self.requests if r.method == "GET" and (path is None or r.path.endswith(path))]

    def get_bytes(self, path: str | None = None) -> int:
        """The body bytes of the GET requests."""
        return sum(r.nbytes for r in self.gets(path))

    def ranges(self, path: str | None = None) -> dict[tuple[str, str], int]:
        """The distinct ranges GET asked for, ``(object, Range) -> body bytes``: a request the client retried
        (botocore retries a read that timed out, as on a loaded machine) counts once.
        """
        return {(r.path, r.range): r.nbytes for r in self.gets(path)}


class _Quiet(http.server.ThreadingHTTPServer):
    """A threaded HTTP server that says nothing when a client hangs up early (s3fs closes streams it has read)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class CountingProxy:
    """A threaded HTTP proxy on loopback that forwards to ``upstream`` and records every request.

    Parameters
    ----------
    upstream_port
        The loopback port of the server behind it.
    access_key
        The only access key let through, as S3 checks it (moto's server accepts any): a signed request with
        another gets S3's 403 ``InvalidAccessKeyId``, so that tests can meet refused credentials.
    """

    def __init__(self, upstream_port: int, access_key: str | None = None) -> None:
        self._lock = threading.Lock()
        self._logs: list[RequestLog] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _body(self) -> bytes | None:
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    parts = []
                    while True:  # HTTP/1.1 chunked transfer coding: hex size line, data, CRLF; size 0 ends
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailer fields
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else None

            def _refuse(self) -> None:
                text = (
                    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS '
                    b"Access Key Id you provided does not exist in our records.</Message></Error>"
                )
                proxy._record(Request(self.command, self.path.split("?")[0], self.headers.get("Range", ""), 0))
                self.send_response(403, "Forbidden")
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(text)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(text)

            def _forward(self) -> None:
                body = self._body()
                signed = self.headers.get("Authorization", "")
                if access_key is not None and signed and f"Credential={access_key}/" not in signed:
                    self._refuse()
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    payload = answer.read()
                    # recorded before the answer is sent: a client that has its bytes has been counted
                    proxy._record(
                        Request(self.command, self.path.split("?")[0], self.headers.get("Range", ""), len(payload))
                    )
                    self.send_response(answer.status, answer.reason)
                    for key, value in answer.getheaders():
                        if key.lower() not in _HOP and key.lower() != "content-length":
                            self.send_header(key, value)
                    # a HEAD answer has no body but says the object's length: pass moto's on
                    length = answer.getheader("Content-Length") if self.command == "HEAD" else None
                    self.send_header("Content-Length", length or str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                finally:
                    upstream.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self._server = _Quiet(("127.0.0.1", free_port()), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="counting-proxy", daemon=True)
        self._thread.start()

    def _record(self, request: Request) -> None:
        with self._lock:
            for log in self._logs:
                log.requests.append(request)

    @contextlib.contextmanager
    def counting(self) -> Iterator[RequestLog]:
        """Record the requests forwarded while the block runs."""
        log = RequestLog()
        with self._lock:
            self._logs.append(log)
        try:
            yield log
        finally:
            with self._lock:
                self._logs.remove(log)

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


class S3Server:
    """moto's S3 server on a free loopback port, behind a :class:`CountingProxy`, with test credentials.

    Start it with ``with S3Server() as server`` (or :meth:`start` and :meth:`stop`).
    """

    KEY = "h5ml-test-key"
    SECRET = "h5ml-test-secret"

    def __init__(self) -> None:
        self._moto: Any = None
        self._moto_port = 0
        self.proxy: CountingProxy | None = None
        self.endpoint = ""

    def start(self, timeout: float = 30.0) -> S3Server:
        """Start moto and the proxy, and wait (at most ``timeout`` seconds) until moto answers."""
        import logging

        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request otherwise

        port = free_port()
        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self._moto_port = port
        self._moto.start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2):
                    break
            except OSError as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"moto's S3 server on 127.0.0.1:{port} did not answer within {timeout} s"
                    ) from exc
                time.sleep(0.05)
        self.proxy = CountingProxy(port, self.KEY)
        self.endpoint = f"http://127.0.0.1:{self.proxy.port}"
        _forget_s3_clients()
        return self

    def stop(self) -> None:
        """Stop the proxy and moto, and forget the s3fs clients made for them.

        s3fs keeps one client per set of options: a client made from the environment's credentials (no
        options) would otherwise outlive this server, and a later server's test would reach this one's
        closed port through it (connection refused, then reads that never end).
        """
        _forget_s3_clients()
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None
        if self._moto is not None:
            self._moto.stop()
            self._moto = None

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def storage_options(self) -> dict[str, Any]:
        """The s3fs options that reach this server (through the proxy) with its credentials."""
        return {
            "key": self.KEY,
            "secret": self.SECRET,
            "client_kwargs": {"endpoint_url": self.endpoint},
            "skip_instance_cache": True,
        }

    @property
    def environment(self) -> dict[str, str]:
        """The same as environment variables (as boto3 and s3fs read them), for a CLI run."""
        return {
            "AWS_ACCESS_KEY_ID": self.KEY,
            "AWS_SECRET_ACCESS_KEY": self.SECRET,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def filesystem(self, *, counted: bool = True) -> Any:
        """A new ``s3fs.S3FileSystem`` for this server: through the counting proxy, or (``counted=False``) straight to moto.

        Uploads go straight to moto: the proxy is for the reads the tests count.
        """
        import s3fs

        options = self.storage_options
        if not counted:
            options = {**options, "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{self._moto_port}"}}
        return s3fs.S3FileSystem(**options)

    def bucket(self) -> str:
        """Create a new empty bucket and return its name."""
        name = f"h5ml-{os.getpid()}-{next(_BUCKETS)}"
        self.filesystem(counted=False).mkdir(name)
        return name

    def upload(self, local: str | os.PathLike[str], url: str) -> str:
        """Upload a local file to ``url`` (``s3://bucket/key``) and return the URL."""
        self.filesystem(counted=False).put_file(os.fspath(local), url)
        return url

    @contextlib.contextmanager
    def counting(self) -> Iterator[RequestLog]:
        """Record the requests that reach the server while the block runs (:meth:`CountingProxy.counting`)."""
        assert self.proxy is not None, "start the server first"
        with self.proxy.counting() as log:
            yield log
