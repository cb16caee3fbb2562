"""The suite's own small HTTP client for the contract, on ``requests``.

It never raises on an HTTP status: every call returns a :class:`Reply` so tests can assert
the status and the error code themselves. Each call is also logged to a :class:`Trail`,
which becomes the "steps" of a failure in the report. No connection is kept between calls,
so nothing needs closing and parallel ranged GETs are safe; every call ends by the run's
``--request-deadline``, body included (:mod:`conformance.transport`).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin
from urllib.parse import urlsplit

import requests

from conformance.model import Place
from conformance.transport import bounded_request

__all__ = [
    "SENT",
    "Client",
    "Reply",
    "TargetUnreachable",
    "Trail",
    "normalize_base",
    "parse_time",
]

_UNSET: Any = object()

#: Small records of the contract that tests compare whole, by the key that holds them, with
#: the fields the contract gives them. Extra fields an implementation adds (the contract
#: allows them) are left out of ``Reply.body`` so that a comparison never fails on them;
#: a missing field stays missing. The bytes as sent stay in ``Reply.content``.
RECORDS: dict[str, tuple[str, ...]] = {
    "fenced": ("epoch", "holder"),
    "forked_from": ("artifact", "version"),
    "location": ("cloud", "region"),
    "write_location": ("cloud", "region", "route"),
    "place": ("cloud", "region"),
}


def contract_view(value: Any, key: str | None = None) -> Any:
    """``value`` with every record of :data:`RECORDS` cut to the contract's fields."""
    if isinstance(value, list):
        return [contract_view(v) for v in value]
    if not isinstance(value, dict):
        return value
    if key in RECORDS:
        return {k: value[k] for k in RECORDS[key] if k in value}
    return {k: contract_view(v, k) for k, v in value.items()}


def normalize_base(target: str) -> str:
    """Accept a target with or without the ``/api/v1`` suffix; return the API base."""
    base = target.rstrip("/")
    return base if base.endswith("/api/v1") else base + "/api/v1"


def parse_time(value: Any) -> float | None:
    """A timestamp from a response (ISO 8601 string or epoch seconds) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


class TargetUnreachable(ConnectionError):
    """The target did not answer at all (refused, reset, never connected): a transport failure,
    not a response, so the report never charges it to a contract rule."""

    def __init__(self, method: str, url: str, cause: BaseException) -> None:
        self.url = url
        super().__init__(f"{method} {url} got no answer: {type(cause).__name__}: {cause}")


class _Sent:
    """How many requests the suite has sent (thread-safe): per test, the report's
    fingerprint of what was exercised, equal across runs when the examples are."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self) -> None:
        with self._lock:
            self.count += 1


SENT = _Sent()


def _send(method: str, url: str, **kwargs: Any) -> requests.Response:
    SENT.add()
    try:
        return bounded_request(method, url, **kwargs)
    except requests.ConnectionError as exc:  # refused, reset, connect timeout; a read
        # timeout or a passed deadline stays a failure of the test: the target took the
        # request and hung on it
        raise TargetUnreachable(method, url, exc) from exc


class Trail:
    """The last requests of one test, one line each, to replay a failure by hand."""

    def __init__(self, maxlen: int = 60) -> None:
        self.lines: deque[str] = deque(maxlen=maxlen)

    def add(self, line: str) -> None:
        self.lines.append(line)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.lines))


@dataclass
class Reply:
    """One HTTP exchange: what was asked, and status, JSON body, headers and bytes back."""

    method: str
    target: str
    status: int
    body: Any
    headers: dict[str, str]
    content: bytes = b""
    request: Any = None
    received_at: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def code(self) -> str | None:
        """The error code of a contract error body, else None."""
        try:
            return str(self.body["error"]["code"])
        except (KeyError, TypeError):
            return None

    @property
    def server_time(self) -> float:
        """The server's clock at the reply (its Date header), else ours."""
        try:
            return parsedate_to_datetime(self.headers["Date"]).timestamp()
        except (KeyError, TypeError, ValueError):
            return self.received_at

    def brief(self) -> str:
        """One line: the status and the interesting part of the body."""
        if self.code is not None:
            return f"{self.status} {self.code}"
        if isinstance(self.body, dict):
            keys = ("epoch", "version", "upload", "latest", "code")
            bits = [f"{k}={self.body[k]!r}" for k in keys if k in self.body]
            return f"{self.status} " + " ".join(bits)
        return f"{self.status} ({len(self.content)} bytes)"

    def line(self) -> str:
        req = ""
        if self.request is not None:
            req = " " + json.dumps(self.request, sort_keys=True, default=str)[:240]
        return f"{self.method} {self.target}{req} -> {self.brief()}"


class Client:
    """Calls ``{base}/...`` with ``Authorization: Bearer <key>``; fetches signed URLs bare."""

    def __init__(
        self,
        base: str,
        key: str | None,
        *,
        trail: Trail | None = None,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base = normalize_base(base)
        self.key = key
        self.trail = trail if trail is not None else Trail()
        self.timeout = timeout
        self.headers = dict(headers or {})

    def with_key(self, key: str | None) -> Client:
        """The same target and trail with another key (None: no Authorization header)."""
        return Client(self.base, key, trail=self.trail, timeout=self.timeout)

    def with_headers(self, headers: dict[str, str]) -> Client:
        """The same client sending extra headers on every API call (e.g. bad credentials)."""
        return Client(self.base, self.key, trail=self.trail, timeout=self.timeout, headers=headers)

    # --- control plane -------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = _UNSET,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """One API call; ``path`` is relative to the base, e.g. ``/artifacts/open``."""
        hdrs = {**self.headers, **(headers or {})}
        if self.key is not None and "Authorization" not in hdrs:
            hdrs["Authorization"] = f"Bearer {self.key}"
        kwargs: dict[str, Any] = {"params": params, "headers": hdrs, "deadline": self.timeout}
        if body is not _UNSET:
            kwargs["json"] = body
        resp = _send(method, self.base + path, **kwargs)
        try:
            parsed: Any = contract_view(resp.json())
        except ValueError:
            parsed = None
        shown = path
        if params:
            shown += "?" + "&".join(f"{k}={v}" for k, v in params.items() if v is not None)
        reply = Reply(
            method,
            shown,
            resp.status_code,
            parsed,
            dict(resp.headers),
            resp.content,
            None if body is _UNSET else body,
        )
        self.trail.add(reply.line())
        return reply

    def verbatim(self, url: str) -> Reply:
        """A GET of ``url`` exactly as written, query unencoded (the page's own call), with
        the key, and bounded by the request deadline like every other call."""
        resp = _send("GET", url, headers={"Authorization": f"Bearer {self.key}"},
                     deadline=self.timeout)
        try:
            parsed: Any = contract_view(resp.json())
        except ValueError:
            parsed = None
        reply = Reply("GET", url, resp.status_code, parsed, dict(resp.headers), resp.content)
        self.trail.add(reply.line())
        return reply

    def open(
        self,
        artifact: str,
        resume: str | None = "latest",
        place: Place | str | None = None,
        holder: str | None = None,
    ) -> Reply:
        if isinstance(place, str):
            place = Place.parse(place)
        body: dict[str, Any] = {
            "artifact": artifact,
            "resume": resume,
            "place": place.as_json() if place else None,
        }
        if holder is not None:
            body["holder"] = holder
        return self.call("POST", "/artifacts/open", body=body)

    def write(
        self,
        artifact: str,
        token: str,
        version: str,
        files: list[dict[str, Any]],
        upload: str | None = None,
    ) -> Reply:
        """``/versions/write``; with ``upload`` the files join that upload (VER-5)."""
        body: dict[str, Any] = {"artifact": artifact, "token": token, "version": version,
                                "files": files}
        if upload is not None:
            body["upload"] = upload
        return self.call("POST", "/versions/write", body=body)

    def commit(
        self, artifact: str, token: str, upload: str, files: list[dict[str, Any]] | None = None
    ) -> Reply:
        """``/versions/commit``; ``files`` lists what the writers wrote (VER-6)."""
        body: dict[str, Any] = {"artifact": artifact, "token": token, "upload": upload}
        if files is not None:
            body["files"] = files
        return self.call("POST", "/versions/commit", body=body)

    def delete(self, artifact: str, token: str, version: str) -> Reply:
        """``/versions/delete`` (VER-7)."""
        body = {"artifact": artifact, "token": token, "version": version}
        return self.call("POST", "/versions/delete", body=body)

    def read(
        self,
        artifact: str,
        version: str | None = "latest",
        *,
        urls: bool = False,
        place: Place | str | None = None,
    ) -> Reply:
        params: dict[str, Any] = {"artifact": artifact, "urls": "1" if urls else "0"}
        if version is not None:
            params["version"] = version
        if place is not None:
            params["place"] = str(place)
        return self.call("GET", "/versions/read", params=params)

    def list(self, artifact: str) -> Reply:
        return self.call("GET", "/versions/list", params={"artifact": artifact})

    def artifact(self, artifact: str) -> Reply:
        return self.call("GET", "/artifacts/read", params={"artifact": artifact})

    def usage(self, artifact: str | None = None) -> Reply:
        return self.call("GET", "/usage/read", params={"artifact": artifact} if artifact else None)

    # --- data plane ----------------------------------------------------------------

    def absolute(self, url: str) -> str:
        """Signed URLs may be relative to the target's origin."""
        return urljoin(self.base, url)

    def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        byte_range: tuple[int, int] | None = None,
        data: bytes | _Pieces | None = None,
        chunks: Iterable[bytes] | None = None,
    ) -> Reply:
        """A plain request to a signed URL: no Authorization header, as the page's snippet.
        ``chunks`` sends the body with ``Transfer-Encoding: chunked`` (no Content-Length)."""
        headers = {}
        if byte_range is not None:
            headers["Range"] = f"bytes={byte_range[0]}-{byte_range[1]}"
        full = self.absolute(url)
        body: Any = data
        if chunks is not None:
            parts = list(chunks)
            body = iter(parts)
        resp = _send(method, full, headers=headers, data=body, deadline=self.timeout)
        split = urlsplit(full)
        shown = split.path + (f" {headers['Range']}" if headers else "")
        if data is not None:
            shown += f" ({len(data)} bytes)"
        if chunks is not None:
            shown += f" (chunked, {sum(len(p) for p in parts)} bytes)"
        parsed: Any = None
        # A PUT answers JSON (a streamed file's {name, size, sha256}), whatever Content-Type
        # it gives; a GET's body is a file's bytes, so only its errors are parsed.
        if method == "PUT" or (resp.status_code >= 400
                               and "json" in resp.headers.get("Content-Type", "")):
            try:
                parsed = resp.json()
            except ValueError:
                parsed = None
        reply = Reply(method, shown, resp.status_code, parsed, dict(resp.headers), resp.content)
        self.trail.add(reply.line())
        return reply

    def put(self, url: str, data: bytes) -> Reply:
        return self.fetch(url, method="PUT", data=data)

    def put_chunked(self, url: str, chunks: Iterable[bytes]) -> Reply:
        """A PUT whose body is sent chunked, without a Content-Length (VER-6.a)."""
        return self.fetch(url, method="PUT", chunks=chunks)

    def put_in_pieces(self, url: str, pieces: Sequence[bytes]) -> Reply:
        """A PUT with a Content-Length whose body goes out in several writes, as a client
        streaming a file from disk sends it (VER-6.a)."""
        return self.fetch(url, method="PUT", data=_Pieces(tuple(pieces)))



class _Pieces:
    """A body sent piece by piece with the Content-Length of the whole: requests takes the
    length from ``len`` and urllib3 sends what iteration gives, one write per piece."""

    def __init__(self, pieces: tuple[bytes, ...]) -> None:
        self.pieces = pieces

    def __len__(self) -> int:
        return sum(len(p) for p in self.pieces)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.pieces)
