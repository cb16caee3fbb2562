"""Mutants that are right for the first ten versions of an artifact and wrong after: a
server that reads one page of its version index where it needs all of it."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant
from conformance.mutants.m_fork import SOURCE
from conformance.mutants.tracking import Tracked, api_get, body_of, key_of, versions_of

PAGE = 10


def _json(response: Response) -> dict[str, Any]:
    body = response.json()
    return body if isinstance(body, dict) else {}


class _Paged(Tracked):
    """Knows the committed versions of an artifact (listed with the request's key)."""

    def versions(self, upstream: Upstream, request: Request, artifact: Any) -> list[dict]:
        if not isinstance(artifact, str):
            return []
        key = key_of(request)
        with self.lock:
            key = key or self.t.good_key(artifact)
        return versions_of(upstream, key, artifact)


@mutant
class LatestOfFirstPage(_Paged):
    name = "read-latest-is-the-tenth-when-more-than-10-versions"
    clause = "READ-1.a"
    summary = "latest reads give the 10th version once an artifact has more than 10"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/read" or not response.ok \
                or request.arg("version", "latest") != "latest":
            return response
        listed = self.versions(upstream, request, request.arg("artifact"))
        if len(listed) <= PAGE:
            return response
        again = upstream.send(request.with_query(version=str(listed[PAGE - 1].get("version"))))
        return again if again.ok else response


@mutant
class CountCapped(_Paged):
    name = "artifact-read-counts-at-most-10-versions"
    clause = "API-1.e"
    summary = "artifacts/read reports versions as 10 once an artifact has more"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        if request.endpoint != "artifacts/read" or not response.ok \
                or not isinstance(body.get("versions"), int) or body["versions"] <= PAGE:
            return response
        return response.with_json({**body, "versions": PAGE})


@mutant
class ResumeFromTenth(_Paged):
    name = "open-resume-from-the-tenth-when-more-than-10-versions"
    clause = "OPEN-2.a"
    summary = "an open at latest resumes from the 10th version once there are more than 10"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body, sent = _json(response), body_of(request)
        if request.endpoint != "artifacts/open" or not response.ok \
                or sent.get("resume") != "latest" or not body.get("resume_from"):
            return response
        listed = self.versions(upstream, request, sent.get("artifact"))
        if len(listed) <= PAGE:
            return response
        place = sent.get("place")
        query = {"artifact": sent["artifact"], "version": str(listed[PAGE - 1].get("version")),
                 "urls": "1"}
        if isinstance(place, dict):
            query["place"] = f"{place.get('cloud')}/{place.get('region')}"
        tenth = api_get(upstream, "versions/read", key_of(request), **query)
        return response.with_json({**body, "resume_from": tenth.json()}) if tenth.ok \
            else response


@mutant
class ForkPastFirstPageMissing(_Paged):
    name = "fork-from-a-version-past-the-10th-not-found"
    clause = "FORK-1.b"
    summary = "a fork from a source version after its 10th answers 404 (and forks nothing)"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        m = SOURCE.match(str(body_of(request).get("resume") or "")) \
            if request.endpoint == "artifacts/open" else None
        if not m:
            return None
        names = [v.get("version") for v in self.versions(upstream, request, m.group(1))]
        if m.group(2) in names[PAGE:]:
            return Response.error(404, "not_found", f"no version {m.group(2)} in {m.group(1)}")
        return None


@mutant
class ListPastFirstPageReversed(_Paged):
    name = "read-list-past-the-10th-in-reverse-order"
    clause = "READ-1.c"
    summary = "versions/list gives the versions after the 10th newest first"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        listed = body.get("versions")
        if request.endpoint != "versions/list" or not response.ok \
                or not isinstance(listed, list) or len(listed) <= PAGE + 1:
            return response
        return response.with_json({**body, "versions": listed[:PAGE] + listed[PAGE:][::-1]})


class _UsageRows(Tracked):
    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        if request.endpoint != "usage/read" or not response.ok:
            return response
        return response.with_json(self.cut(body))

    def cut(self, body: dict[str, Any]) -> dict[str, Any]:
        return body


@mutant
class TransfersCapped(_UsageRows):
    name = "usage-transfers-of-an-artifact-capped-at-10-rows"
    clause = "USAGE-1.d"
    summary = "usage lists at most 10 transfer rows per artifact (totals stay right)"

    def cut(self, body):  # noqa: ANN001, ANN201
        rows, seen, kept = body.get("transfers"), {}, []
        for row in rows if isinstance(rows, list) else []:
            art = row.get("artifact") if isinstance(row, dict) else None
            seen[art] = seen.get(art, 0) + 1
            if seen[art] <= PAGE:
                kept.append(row)
        return {**body, "transfers": kept} if isinstance(rows, list) else body


@mutant
class PlacementVersionsCapped(_UsageRows):
    name = "usage-placement-versions-capped-at-10"
    clause = "USAGE-1.e"
    summary = "a placements row counts at most 10 versions (its bytes stay right)"

    def cut(self, body):  # noqa: ANN001, ANN201
        rows = body.get("placements")
        if not isinstance(rows, list):
            return body
        return {**body, "placements": [
            {**r, "versions": min(r["versions"], PAGE)}
            if isinstance(r, dict) and isinstance(r.get("versions"), int) else r for r in rows]}


@mutant
class FilesCapped(Tracked):
    """Versions read back (versions/read, resume_from) list at most 10 files."""

    name = "read-files-of-a-version-capped-at-10"
    clause = "READ-2.a"
    summary = "a Version of more than 10 files is read back with only its first 10"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        if not response.ok or request.endpoint not in ("versions/read", "artifacts/open"):
            return response
        node = body.get("resume_from") if request.endpoint == "artifacts/open" else body
        if not isinstance(node, dict) or not isinstance(node.get("files"), list) \
                or len(node["files"]) <= PAGE:
            return response
        node = {**node, "files": node["files"][:PAGE]}
        return response.with_json({**body, "resume_from": node}
                                  if request.endpoint == "artifacts/open" else node)


@mutant
class EpochStopsAfterTen(Tracked):
    """The epoch an open reports stops rising after the 10th open of an artifact (the
    tokens still fence correctly)."""

    name = "fence-epoch-reported-stops-rising-after-10-opens"
    clause = "FENCE-1.a"
    summary = "opens after the 10th of an artifact report the 10th open's epoch"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = _json(response)
        if request.endpoint != "artifacts/open" or not response.ok:
            return response
        with self.lock:
            opens = self.t.opens.get(str(body.get("artifact"))) or []
            tenth = opens[PAGE - 1].epoch if len(opens) > PAGE else None
        return response.with_json({**body, "epoch": tenth}) if tenth is not None else response
