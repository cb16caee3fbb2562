"""Mutants of PLACE-1..4: where writes go, the warnings, and where versions show.

They rewrite the JSON of open, write, read and list replies; what decides whether a reply
is touched is the request (the place as spelled, resume, version) and the reply itself.
"""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Mutant, Request, Response, Upstream, mutant
from conformance.mutants.m_read import committed, obj


def place_of(request: Request) -> dict[str, Any] | None:
    """The place of an open (JSON) or of a read (``cloud/region`` query), as sent."""
    body = request.json()
    if isinstance(body, dict) and isinstance(body.get("place"), dict):
        return body["place"]
    text = request.arg("place")
    if text and "/" in text:
        cloud, _, region = text.partition("/")
        return {"cloud": cloud, "region": region}
    return None


def capitalised(place: dict[str, Any] | None) -> bool:
    """The cloud is spelled with capitals (``GCP``), which the contract allows."""
    return bool(place) and str(place.get("cloud")) != str(place.get("cloud")).lower()


class ReplyMutant(Mutant):
    """Rewrites the JSON body of successful replies to ``endpoint`` with :meth:`change`."""

    endpoint = ""

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = resp.json()
        if request.endpoint != self.endpoint or not resp.ok or not isinstance(body, dict):
            return resp
        changed = self.change(request, upstream, body)
        return resp if changed is None else resp.with_json(changed)

    def change(self, request: Request, upstream: Upstream, body: dict) -> dict | None:
        return None


class WriteReplyMutant(ReplyMutant):
    """Rewrites ``versions/write`` replies, knowing the place the token was opened from."""

    endpoint = "versions/write"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = upstream.send(request)
        body = resp.json()
        if request.endpoint == "artifacts/open" and resp.ok and isinstance(body, dict):
            with self.lock:
                self.state[body.get("token")] = place_of(request)
            return resp
        if request.endpoint != self.endpoint or not resp.ok or not isinstance(body, dict):
            return resp
        with self.lock:
            place = self.state.get(obj(request).get("token"))
        changed = self.change_write(request, upstream, body, place)
        return resp if changed is None else resp.with_json(changed)

    def change_write(self, request: Request, upstream: Upstream, body: dict,
                     place: dict | None) -> dict | None:
        return None


def _has_versions(upstream: Upstream, request: Request) -> bool:
    return bool(committed(upstream, request, obj(request).get("artifact", "")))


def _route(body: dict) -> str | None:
    return (body.get("write_location") or {}).get("route")


def _with_route(body: dict, route: str | None) -> dict:
    return {**body, "write_location": {**body["write_location"], "route": route}}


# --- PLACE-1.a ---------------------------------------------------------------------------


@mutant
class LocalRouteLaterWrites(WriteReplyMutant):
    """The write reply of a box at a location says ``inter_region`` once the artifact has
    a committed version (the first write is right)."""

    name = "place-local-write-route-inter-region-after-first-version"
    clause = "PLACE-1.a"
    summary = "write replies of a local box say inter_region once a version exists"

    def change_write(self, request, upstream, body, place):  # noqa: ANN001, ANN201
        if body.get("route") == "local" and _has_versions(upstream, request):
            return {**body, "route": "inter_region"}
        return None


@mutant
class LocalRouteCaseSensitive(WriteReplyMutant):
    """The route of a box whose cloud is spelled with capitals (``GCP``) is compared
    case-sensitively: its open and writes say ``cross_cloud`` though the location is its own."""

    name = "place-local-route-cross-cloud-for-capitalised-cloud"
    clause = "PLACE-1.a"
    summary = "a box at GCP/europe-west4 is told route cross_cloud for its local location"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        resp = super().handle(request, upstream)
        body = resp.json()
        if request.endpoint == "artifacts/open" and resp.ok and capitalised(place_of(request)) \
                and isinstance(body, dict) and _route(body) == "local":
            return resp.with_json(_with_route(body, "cross_cloud"))
        return resp

    def change_write(self, request, upstream, body, place):  # noqa: ANN001, ANN201
        if capitalised(place) and body.get("route") == "local":
            return {**body, "route": "cross_cloud"}
        return None


# --- PLACE-2 -----------------------------------------------------------------------------


@mutant
class DefaultRouteLocalGcpWrites(WriteReplyMutant):
    """Write replies of gcp boxes outside gcp's location regions say ``local``."""

    name = "place-default-write-route-local-for-gcp"
    clause = "PLACE-2.a"
    summary = "a gcp box in another region is told route local in its write replies"

    def change_write(self, request, upstream, body, place):  # noqa: ANN001, ANN201
        if body.get("route") == "inter_region" and (body.get("location") or {}).get(
                "cloud") == "gcp":
            return {**body, "route": "local"}
        return None


@mutant
class DefaultCaseSensitive(ReplyMutant):
    """A box whose cloud is spelled with capitals in a region without a location is told
    ``cross_cloud``: the route compares the cloud case-sensitively."""

    name = "place-default-route-cross-cloud-for-capitalised-cloud"
    clause = "PLACE-2.a"
    summary = "a box at AWS/us-west-2 is told route cross_cloud for aws's default location"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if capitalised(place_of(request)) and _route(body) == "inter_region":
            return _with_route(body, "cross_cloud")
        return None


@mutant
class DefaultRegionIsBoxRegionOnRelaunch(ReplyMutant):
    """On a relaunch (the open resumes a version) from a region without a location, the
    open names the box's own region as the write location, route ``local``."""

    name = "place-default-location-is-box-region-on-relaunch"
    clause = "PLACE-2.a"
    summary = "a relaunch from a region without a location is told it writes locally"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place = place_of(request)
        if body.get("resume_from") and _route(body) == "inter_region" and place:
            return {**body, "write_location": {"cloud": str(place["cloud"]).lower(),
                                               "region": place["region"], "route": "local"}}
        return None


@mutant
class DefaultWarningDroppedOnRelaunch(ReplyMutant):
    """A relaunch (the open resumes a version) from a region without a location carries
    no warning; first opens do."""

    name = "place-default-warning-dropped-on-relaunch"
    clause = "PLACE-2.b"
    summary = "a relaunch from a region without a location gets no warning"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if body.get("resume_from") and _route(body) == "inter_region":
            return {**body, "warnings": []}
        return None


@mutant
class DefaultWarningDroppedForCapitals(ReplyMutant):
    """A box whose cloud is spelled with capitals gets no inter-region warning."""

    name = "place-default-warning-dropped-for-capitalised-cloud"
    clause = "PLACE-2.b"
    summary = "a box at AWS/us-west-2 gets no warning"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if capitalised(place_of(request)) and _route(body) == "inter_region":
            return {**body, "warnings": []}
        return None


# --- PLACE-3 -----------------------------------------------------------------------------


@mutant
class FallbackRouteNullWithoutPlace(ReplyMutant):
    """An open without a place is told route null (unknown) instead of ``cross_cloud``."""

    name = "place-fallback-route-null-without-place"
    clause = "PLACE-3.a"
    summary = "an open with place null gets write_location.route null"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if place_of(request) is None and _route(body) == "cross_cloud":
            return _with_route(body, None)
        return None


@mutant
class FallbackLaterWritesInterRegion(WriteReplyMutant):
    """A fallback box's write replies say ``inter_region`` once the artifact has a version."""

    name = "place-fallback-write-route-inter-region-after-first-version"
    clause = "PLACE-3.a"
    summary = "write replies of a fallback box say inter_region once a version exists"

    def change_write(self, request, upstream, body, place):  # noqa: ANN001, ANN201
        if body.get("route") == "cross_cloud" and _has_versions(upstream, request):
            return {**body, "route": "inter_region"}
        return None


def _fallback_open(body: dict) -> bool:
    return _route(body) == "cross_cloud"


@mutant
class FallbackWarningWithoutRegionOnRelaunch(ReplyMutant):
    """On a relaunch, the fallback warning names the fallback's cloud but not its region."""

    name = "place-fallback-warning-names-no-region-on-relaunch"
    clause = "PLACE-3.b"
    summary = "a relaunch's fallback warning says 'aws' instead of 'aws/us-east-1'"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        wl = body.get("write_location") or {}
        if not (body.get("resume_from") and _fallback_open(body) and wl.get("region")):
            return None
        full = f"{wl.get('cloud')}/{wl['region']}"
        warnings = [str(w).replace(full, str(wl.get("cloud"))).replace(wl["region"], "")
                    for w in body.get("warnings") or []]
        return {**body, "warnings": warnings}


@mutant
class FallbackWarningDroppedWithoutPlace(ReplyMutant):
    """An open without a place gets no fallback warning (a named unknown place does)."""

    name = "place-fallback-warning-dropped-without-place"
    clause = "PLACE-3.b"
    summary = "an open with place null gets no warning"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if place_of(request) is None and _fallback_open(body):
            return {**body, "warnings": []}
        return None


# --- PLACE-4.a ---------------------------------------------------------------------------


@mutant
class OldVersionLooksCopiedToReader(ReplyMutant):
    """A read of a named, not-latest version from a place in another cloud shows it at the
    reader's place (as if copied there), route ``local``."""

    name = "place-location-old-version-shown-at-reader"
    clause = "PLACE-4.a"
    summary = "an older version read from another cloud shows the reader's place as location"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place, wanted = place_of(request), request.arg("version")
        if not place or wanted in (None, "latest") or body.get("cross_cloud") is not True:
            return None
        versions = committed(upstream, request, request.arg("artifact") or "")
        if not versions or versions[-1]["version"] == wanted:
            return None
        here = {"cloud": str(place["cloud"]).lower(), "region": place["region"]}
        return {**body, "location": here, "route": "local", "cross_cloud": False}


@mutant
class ListShowsNewestLocation(ReplyMutant):
    """With 3 or more versions, ``versions/list`` shows every version at the location of
    the newest one (reads by name are right)."""

    name = "place-location-list-shows-newest-location-when-3-versions"
    clause = "PLACE-4.a"
    summary = "with 3+ versions, list shows every version at the newest one's location"
    endpoint = "versions/list"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        rows = body.get("versions") or []
        if len(rows) < 3:
            return None
        newest = rows[-1].get("location")
        return {**body, "versions": [{**r, "location": newest} for r in rows]}
