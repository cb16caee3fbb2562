"""What many mutants need to know about the traffic so far, and small upstream calls.

:class:`Tracked` watches every exchange (before the mutant rewrites it) and keeps who opened
which artifact with which token, epoch and key, every upload with its write body and the
bytes PUT for it, and which keys were refused. A subclass overrides :meth:`Tracked.before`
(answer or rewrite before the upstream sees the request) and :meth:`Tracked.after` (rewrite the
upstream's reply), and reads the facts through the ``self.t`` :class:`Facts` under ``self.lock``.
"""

from __future__ import annotations

import itertools
import sys
import traceback
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import urlsplit

from conformance.mutants.base import Mutant
from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.base import Upstream
from conformance.mutants.base import api_request

__all__ = [
    "Facts", "OpenInfo", "Tracked", "UploadInfo", "api_get", "api_post", "body_of", "key_of",
]


def key_of(request: Request) -> str | None:
    """The bearer key of a request, or None."""
    auth = request.header("Authorization") or ""
    scheme, _, key = auth.partition(" ")
    return key.strip() if scheme == "Bearer" and key.strip() else None


def body_of(request: Request) -> dict[str, Any]:
    """The JSON object body of a request; {} for no body, bad JSON or another JSON type
    (the suite sends those on purpose: a mutant must not trip over them)."""
    body = request.json()
    return body if isinstance(body, dict) else {}


def artifact_of(request: Request) -> str | None:
    body = body_of(request)
    if isinstance(body.get("artifact"), str):
        return body["artifact"]
    return request.arg("artifact")


def api_get(upstream: Upstream, endpoint: str, key: str | None, **query: str) -> Response:
    auth = f"Bearer {key}" if key else None
    return upstream.send(api_request("GET", endpoint, auth, tuple(query.items())))


def api_post(upstream: Upstream, endpoint: str, key: str | None, body: Any) -> Response:
    auth = f"Bearer {key}" if key else None
    return upstream.send(api_request("POST", endpoint, auth, body=body))


def with_key(request: Request, key: str) -> Request:
    return request.with_header("Authorization", f"Bearer {key}")


@dataclass
class OpenInfo:
    """One successful open as the upstream answered it."""

    artifact: str
    epoch: int
    holder: str
    token: str
    key: str | None
    seq: int
    resume: Any = None


@dataclass
class UploadInfo:
    """One started upload: its write request, its URLs and the bytes PUT so far."""

    upload: str
    token: str
    artifact: str
    key: str | None
    write: dict[str, Any]
    paths: dict[str, str] = field(default_factory=dict)  # URL path -> file name
    puts: dict[str, bytes] = field(default_factory=dict)  # file name -> body
    complete_seq: int | None = None

    @property
    def complete(self) -> bool:
        return len(self.puts) == len(self.write.get("files") or [])


@dataclass
class Facts:
    """Everything :class:`Tracked` saw; read and written under the mutant's lock."""

    tokens: dict[str, OpenInfo] = field(default_factory=dict)
    newest: dict[str, OpenInfo] = field(default_factory=dict)
    opens: dict[str, list[OpenInfo]] = field(default_factory=dict)
    uploads: dict[str, UploadInfo] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)  # URL path -> upload id
    writer_keys: set[str] = field(default_factory=set)
    refused_keys: set[str] = field(default_factory=set)
    committed: dict[str, int] = field(default_factory=dict)  # artifact -> versions committed
    closed: set[str] = field(default_factory=set)  # uploads committed

    def good_key(self, artifact: str | None = None) -> str | None:
        """A key that opened ``artifact`` (or anything) successfully, newest first."""
        if artifact and artifact in self.newest and self.newest[artifact].key:
            return self.newest[artifact].key
        for opens in reversed(list(self.opens.values())):
            for info in reversed(opens):
                if info.key and info.key not in self.refused_keys:
                    return info.key
        return None


class Tracked(Mutant):
    """A mutant that keeps :class:`Facts` about the traffic it sees."""

    _seq = itertools.count(1)

    @property
    def t(self) -> Facts:
        if "facts" not in self.state:
            self.state["facts"] = Facts()
        return self.state["facts"]

    def handle(self, request: Request, upstream: Upstream) -> Response:
        # A mutant that trips over an odd request must not answer 502 instead: that would
        # break another clause than its own. It lets the exchange through unchanged.
        try:
            early = self.before(request, upstream)
        except Exception:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            early = None
        if isinstance(early, Response):
            return early
        if isinstance(early, Request):
            request = early
        response = upstream.send(request)
        try:
            with self.lock:
                self.observe(request, response)
            return self.after(request, response, upstream)
        except Exception:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            return response

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        """Answer (a Response) or rewrite (a Request) before the upstream sees it."""
        return None

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        """Rewrite the upstream's reply."""
        return response

    # --- bookkeeping (caller holds the lock) ----------------------------------------

    def observe(self, request: Request, response: Response) -> None:
        facts, key, body = self.t, key_of(request), body_of(request)
        if response.status == 403 and key:
            facts.refused_keys.add(key)
        if not response.ok:
            return
        seq = next(self._seq)
        reply = response.json()
        if request.endpoint == "artifacts/open" and isinstance(reply, dict):
            info = OpenInfo(reply["artifact"], int(reply["epoch"]), str(reply["holder"]),
                            str(reply["token"]), key, seq, (body or {}).get("resume"))
            facts.tokens[info.token] = info
            facts.newest[info.artifact] = info
            facts.opens.setdefault(info.artifact, []).append(info)
            if key:
                facts.writer_keys.add(key)
        elif request.endpoint == "versions/write" and isinstance(reply, dict):
            up = facts.uploads.get(str(reply["upload"]))
            if up is None:
                up = UploadInfo(str(reply["upload"]), body["token"], body["artifact"], key, body)
            else:  # a write that joined the upload (VER-5): its files are the upload's too
                joined = [*(up.write.get("files") or []), *(body.get("files") or [])]
                up.write = {**up.write, "files": joined}
                up.complete_seq = None
            for f in reply.get("files") or []:
                path = urlsplit(f["url"]).path
                up.paths[path] = f["name"]
                facts.paths[path] = up.upload
            facts.uploads[up.upload] = up
        elif request.endpoint == "versions/commit" and isinstance(body, dict):
            art = body.get("artifact")
            facts.committed[art] = facts.committed.get(art, 0) + 1
            facts.closed.add(str(body.get("upload")))
        elif request.kind == "data" and request.method == "PUT":
            up_id = facts.paths.get(request.path)
            up = facts.uploads.get(up_id) if up_id else None
            if up is not None:
                up.puts[up.paths[request.path]] = request.body
                if up.complete:
                    up.complete_seq = seq

    def newest_seq(self, artifact: str) -> int:
        info = self.t.newest.get(artifact)
        return info.seq if info else 0


def replay_upload(upstream: Upstream, up: UploadInfo, token: str, key: str | None) -> Response:
    """Write ``up`` again under ``token``, PUT the same bytes, and commit it."""
    body = dict(up.write, token=token)
    write = api_post(upstream, "versions/write", key, body)
    if not write.ok:
        return write
    reply = write.json()
    for f in reply["files"]:
        parts = urlsplit(f["url"])
        query = tuple(parse_qsl(parts.query, keep_blank_values=True))
        put = Request("PUT", parts.path, query, (), up.puts.get(f["name"], b""))
        if not upstream.send(put).ok:
            break
    commit = {"artifact": up.artifact, "token": token, "upload": reply["upload"]}
    return api_post(upstream, "versions/commit", key, commit)


def versions_of(upstream: Upstream, key: str | None, artifact: str) -> list[dict[str, Any]]:
    """The committed versions of ``artifact`` in step order ([] when unreadable)."""
    reply = api_get(upstream, "versions/list", key, artifact=artifact)
    data = reply.json() if reply.ok else None
    return list(data.get("versions") or []) if isinstance(data, dict) else []


def artifact_info(upstream: Upstream, key: str | None, artifact: str) -> dict[str, Any] | None:
    reply = api_get(upstream, "artifacts/read", key, artifact=artifact)
    data = reply.json() if reply.ok else None
    return data if isinstance(data, dict) else None


def open_latest(upstream: Upstream, key: str | None, artifact: str, holder: str | None,
                resume: Any = "latest") -> Response:
    body: dict[str, Any] = {"artifact": artifact, "resume": resume, "place": None}
    if holder:
        body["holder"] = holder
    return api_post(upstream, "artifacts/open", key, body)
