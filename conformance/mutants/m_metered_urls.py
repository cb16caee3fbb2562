"""Mutants a blind adversary would write from docs/contract.md alone for what usage
meters (USAGE-1.b): bytes served through some kind of URL left uncounted, those of an
open's ``resume_from``, of a version deleted since, or of a key that opened nothing; and
the data plane's errors answered as an object store answers them."""

from __future__ import annotations

from dataclasses import replace

from conformance.mutants.base import Mutant, Request, Response, Upstream, mutant
from conformance.mutants.usage_replies import ServedBytes


class _UnmeteredUrls(ServedBytes):
    """Bytes served through URLs that :meth:`unmetered` picks are not counted."""

    def unmetered(self, request: Request, info: dict) -> bool:
        return False

    def delta(self, request, resp, info):  # noqa: ANN001, ANN201
        if request.method == "GET" and resp.status in (200, 206) \
                and self.unmetered(request, info):
            return -len(resp.body)
        return 0


@mutant
class ResumeUrlsUnmetered(_UnmeteredUrls):
    """Bytes served through an open's ``resume_from`` URLs are not counted (metering hangs
    on ``versions/read``)."""

    name = "usage-reads-through-resume-from-urls-not-counted"
    clause = "USAGE-1.b"
    summary = "downloads of an open's resume_from URLs are missing from usage"

    def remember(self, request: Request, resp: Response) -> None:
        before = set(self.urls)
        super().remember(request, resp)
        if request.endpoint == "artifacts/open":
            with self.lock:
                self.state.setdefault("resumed", set()).update(set(self.urls) - before)

    def unmetered(self, request: Request, info: dict) -> bool:
        from conformance.mutants.m_read import request_key  # noqa: PLC0415

        with self.lock:
            return request_key(request) in self.state.get("resumed", set())


@mutant
class DeletedVersionReadsUnmetered(_UnmeteredUrls):
    """Bytes a URL serves after its version was deleted (VER-7.c lets it) are not counted:
    the meter looks the version up and finds nothing."""

    name = "usage-reads-of-a-deleted-versions-urls-not-counted"
    clause = "USAGE-1.b"
    summary = "downloads through URLs of a version deleted since are missing from usage"

    def forward(self, request: Request, upstream: Upstream) -> Response:
        resp = super().forward(request, upstream)
        body = resp.json()
        if request.endpoint == "versions/delete" and resp.ok and isinstance(body, dict):
            with self.lock:
                self.state.setdefault("deleted", set()).add(
                    (body.get("artifact"), body.get("version")))
        return resp

    def unmetered(self, request: Request, info: dict) -> bool:
        with self.lock:
            return (info["artifact"], info["version"]) in self.state.get("deleted", set())


@mutant
class OtherKeysReadsUnmetered(_UnmeteredUrls):
    """Bytes served through URLs handed to a key that never opened anything (a read-only
    key) are not counted: the meter books reads on the opener's account."""

    name = "usage-reads-by-a-read-only-key-not-counted"
    clause = "USAGE-1.b"
    summary = "downloads through URLs a read-only key was given are missing from usage"

    def forward(self, request: Request, upstream: Upstream) -> Response:
        resp = super().forward(request, upstream)
        if request.endpoint == "artifacts/open" and resp.ok:
            with self.lock:
                self.state.setdefault("openers", set()).add(request.header("Authorization"))
        return resp

    def unmetered(self, request: Request, info: dict) -> bool:
        with self.lock:
            openers = self.state.get("openers", set())
        return bool(openers) and info.get("auth") not in openers


class _DataErrorAsXml(Mutant):
    """Data-plane errors with ``status`` are answered the way an object store answers them,
    an XML body, instead of the contract's JSON error."""

    status = 403
    code = "AccessDenied"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        if request.kind != "data" or resp.status != self.status:
            return resp
        xml = (f"<?xml version=\"1.0\"?><Error><Code>{self.code}</Code>"
               "<Message>Request refused</Message></Error>").encode()
        kept = tuple((k, v) for k, v in resp.headers if k.lower() != "content-type")
        return replace(resp, headers=(*kept, ("Content-Type", "application/xml")), body=xml)


@mutant
class Data403AsXml(_DataErrorAsXml):
    name = "api-signed-url-403-answered-in-xml"
    clause = "API-1.a"
    summary = "a refused signed URL answers 403 with an S3-style XML body, not JSON"


@mutant
class Data413AsXml(_DataErrorAsXml):
    name = "api-put-413-answered-in-xml"
    clause = "API-1.a"
    summary = "a PUT over its declared size answers 413 with an S3-style XML body, not JSON"
    status = 413
    code = "EntityTooLarge"
