"""What a mutant is: one deliberate, well-formed break of exactly one contract clause.

The mutant proxy (``python -m conformance.mutants``) sits in front of ANY implementation. For
every request it calls the active mutant's :meth:`Mutant.handle` with the request and a handle
on the upstream; the mutant may pass it through, rewrite the request, answer itself, call the
upstream more than once, or rewrite the reply. The proxy rewrites signed URLs in replies so that
data-plane traffic passes through it too (mutants see it with ``kind == "data"``).

Like the rest of the suite, this never imports ``emulator``: it only knows the HTTP contract.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any
from typing import ClassVar
from typing import Protocol

__all__ = [
    "MUTANTS", "Mutant", "Request", "Response", "Upstream", "api_request", "emptied", "error_code",
    "mutant", "ok_or",
]

API_PREFIX = "/api/v1/"


class _Message:
    """What requests and replies share: headers looked up by any case, a JSON body."""

    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str, default: str | None = None) -> str | None:
        low = name.lower()
        return next((v for k, v in self.headers if k.lower() == low), default)

    def json(self) -> Any:
        """The JSON body, or None when it is not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Request(_Message):
    """One request as the client sent it to the proxy (path without the proxy's origin)."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    @property
    def kind(self) -> str:
        """``api`` for ``/api/v1/...``, ``data`` for signed URLs, ``other`` for the rest."""
        if self.path.startswith(API_PREFIX):
            return "api"
        return "other" if self.path.startswith("/_") else "data"

    @property
    def endpoint(self) -> str:
        """``artifacts/open``, ``versions/write``, ... ('' outside the API)."""
        return self.path[len(API_PREFIX) :] if self.kind == "api" else ""

    def arg(self, name: str, default: str | None = None) -> str | None:
        """First query parameter ``name``."""
        return next((v for k, v in self.query if k == name), default)

    def with_json(self, obj: Any) -> Request:
        return replace(self, body=json.dumps(obj).encode())

    def with_query(self, **changes: str | None) -> Request:
        """The request with query parameters replaced (None removes one)."""
        kept = [(k, v) for k, v in self.query if k not in changes]
        kept += [(k, v) for k, v in changes.items() if v is not None]
        return replace(self, query=tuple(kept))

    def with_header(self, name: str, value: str | None) -> Request:
        kept = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        if value is not None:
            kept.append((name, value))
        return replace(self, headers=tuple(kept))


@dataclass(frozen=True)
class Response(_Message):
    """One reply, as the proxy will send it back to the client."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def with_json(self, obj: Any, status: int | None = None) -> Response:
        """The reply with a new JSON body (Content-Length is fixed by the proxy)."""
        return replace(self, body=json.dumps(obj).encode(), status=status or self.status)

    def with_body(self, body: bytes, status: int | None = None) -> Response:
        return replace(self, body=body, status=status or self.status)

    @classmethod
    def error(cls, status: int, code: str, message: str) -> Response:
        """A well-formed contract error reply."""
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        return cls(status, (("Content-Type", "application/json"),), body)


class Upstream(Protocol):
    """The implementation behind the proxy."""

    def send(self, request: Request) -> Response:
        """Forward one request (API or data plane) and return its reply, signed URLs in it
        already rewritten to pass through the proxy."""
        ...


@dataclass
class Mutant:
    """Base class: passes everything through. Subclasses set the class attributes and
    override :meth:`handle`. One instance serves one proxy run; ``lock`` guards ``state``."""

    name: ClassVar[str] = ""
    clause: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    state: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, request: Request, upstream: Upstream) -> Response:
        return upstream.send(request)


MUTANTS: dict[str, type[Mutant]] = {}


def mutant(cls: type[Mutant]) -> type[Mutant]:
    """Register a mutant class under its ``name`` (class decorator)."""
    if not cls.name or not cls.clause or not cls.summary:
        raise ValueError(f"{cls.__qualname__} needs name, clause and summary")
    if cls.name in MUTANTS:
        raise ValueError(f"two mutants named {cls.name!r}")
    MUTANTS[cls.name] = cls
    return cls


Handler = Callable[[Request, Upstream], Response]


def error_code(response: Response) -> str | None:
    """The contract error code of a reply (``{"error": {"code": ...}}``), else None."""
    body = response.json()
    err = body.get("error") if isinstance(body, dict) else None
    code = err.get("code") if isinstance(err, dict) else None
    return None if code is None else str(code)


def emptied(full: Response) -> Response | None:
    """``full`` (a usage report) with nothing in it: zero bytes and cost on every route, no
    rows; None when ``full`` is not a report."""
    body = full.json() if full.ok else None
    if not isinstance(body, dict) or not isinstance(body.get("routes"), dict):
        return None
    zero = {"write_bytes": 0, "read_bytes": 0, "cost_usd": 0.0}
    return full.with_json({**body, "routes": {r: dict(zero) for r in body["routes"]},
                           "total_cost_usd": 0.0, "transfers": [], "placements": []})


def ok_or(upstream: Upstream, request: Request, fallback: Response) -> Response:
    """Send ``request`` (a mutant's second try); its reply if it succeeded, else
    ``fallback`` (the reply the client would have had), so a failed try changes nothing."""
    again = upstream.send(request)
    return again if again.ok else fallback


def api_request(
    method: str,
    endpoint: str,
    auth: str | None,
    query: tuple[tuple[str, str], ...] = (),
    body: Any = None,
) -> Request:
    """An extra API request a mutant makes: ``endpoint`` such as ``versions/read``, with the
    ``Authorization`` header value ``auth`` (None: none) and a JSON ``body`` unless None."""
    headers = [("Authorization", auth)] if auth else []
    data = b""
    if body is not None:
        headers.append(("Content-Type", "application/json"))
        data = json.dumps(body).encode()
    return Request(method, API_PREFIX + endpoint, query, tuple(headers), data)
