"""Mutants of the "Words" section: a holder made up when not given (FENCE-2.f)."""

from __future__ import annotations

from conformance.mutants.base import Mutant, Request, Response, Upstream, mutant
from conformance.mutants.m_read import obj


@mutant
class FencedMadeUpHolderUnnamed(Mutant):
    """The next open names a fenced made-up holder as null: the made-up id was never kept."""

    name = "made-up-holder-not-named-by-fenced"
    clause = "FENCE-2.f"
    summary = "an open fencing a box that gave no holder answers fenced.holder null"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = obj(resp)
        if request.endpoint != "artifacts/open" or not resp.ok:
            return resp
        with self.lock:
            made_up = self.state.setdefault("made_up", set())
            if "holder" not in obj(request):
                made_up.add(body.get("holder"))
            fenced = body.get("fenced")
            if isinstance(fenced, dict) and fenced.get("holder") in made_up:
                return resp.with_json({**body, "fenced": {**fenced, "holder": None}})
        return resp
