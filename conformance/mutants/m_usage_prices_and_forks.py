"""Mutants of USAGE-1 seen from the published prices (USAGE-1.f: the cross-cloud entry of
other clouds lost, gcp's published at the default) and from a fork (USAGE-1.a: the fork's
own writes booked on its source). One row each (rows.py)."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Response
from conformance.mutants.open_bends import fork_source
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import body
from conformance.mutants.rows import rows
from conformance.mutants.tracking import artifact_of
from conformance.mutants.usage_replies import retotal

Json = dict[str, Any]
USAGE = ("usage/read",)


def cross_cloud(change: Any) -> Any:
    """A usage reply whose published ``prices.cross_cloud`` (an object) ``change`` makes."""

    def bend(report: Json) -> Json | None:
        prices = report.get("prices")
        cross = prices.get("cross_cloud") if isinstance(prices, dict) else None
        if not isinstance(cross, dict):
            return None
        changed = change(cross)
        return None if changed is None else {**report, "prices": {**prices,
                                                                  "cross_cloud": changed}}

    return body(bend)


def _writes_of_forks_left_out(reply: Response, turn: Turn) -> Response:
    """Successful forks are noted; usage replies lose the forks' write rows."""
    if turn.request.endpoint == "artifacts/open":
        if reply.ok and fork_source(turn.request):
            with turn.lock:
                turn.memory.setdefault("forks", set()).add(artifact_of(turn.request))
        return reply
    report = reply.json()
    if not reply.ok or not isinstance(report, dict) or not isinstance(report.get("transfers"),
                                                                       list):
        return reply
    with turn.lock:
        forks = set(turn.memory.get("forks", set()))
    kept = [r for r in report["transfers"]
            if not (r.get("direction") == "write" and r.get("artifact") in forks)]
    if len(kept) == len(report["transfers"]):
        return reply
    return reply.with_json(retotal({**report, "transfers": kept}))


rows(
    Row("usage-prices-drop-cross-cloud-of-other-clouds", "USAGE-1.f",
        "usage's prices has no cross_cloud price for a cloud outside aws/gcp/azure",
        On(USAGE), answer=cross_cloud(
            lambda cross: {c: v for c, v in cross.items() if c in ("aws", "gcp", "azure")}),
        tracked=True),
    Row("usage-prices-publish-gcp-cross-cloud-at-0.09", "USAGE-1.f",
        "usage's prices show gcp's cross_cloud price as 0.09 instead of 0.12",
        On(USAGE), answer=cross_cloud(lambda cross: {**cross, "gcp": 0.09} if "gcp" in cross
                                      else None), tracked=True),
    Row("usage-writes-of-a-fork-missing-from-its-usage", "USAGE-1.a",
        "usage/read?artifact=<fork> has no write rows for the fork's own versions",
        On(("artifacts/open", *USAGE), replies="any"), answer=_writes_of_forks_left_out),
)
