"""Mutants of PLACE-1..4 (and API-1.d's write location): where writes go, the warnings,
and where versions show; one row each (rows.py).

They bend the JSON of open, write, read and list replies; what decides whether a reply is
bent is the request (the place as spelled, resume, version) and the reply itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.mutants.base import Request
from conformance.mutants.base import Response
from conformance.mutants.m_fork import SOURCE
from conformance.mutants.reads import committed
from conformance.mutants.reads import obj
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import changed
from conformance.mutants.rows import rows

Json = dict[str, Any]
OPEN, WRITE, READ = ("artifacts/open",), ("versions/write",), ("versions/read",)
KNOWN = {"aws", "gcp", "azure"}


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


def cloud_of(side: Any) -> str:
    """The cloud of a place or location, lower-cased ('' when it has none)."""
    return str((side or {}).get("cloud", "")).lower()


def route_between(location: Any, place: Any) -> str:
    if cloud_of(location) != cloud_of(place):
        return "cross_cloud"
    return "local" if (location or {}).get("region") == (place or {}).get("region") \
        else "inter_region"


def unknown_cloud(place: dict[str, Any] | None) -> bool:
    return bool(place) and cloud_of(place) not in KNOWN


WriteChange = Callable[[Json, Turn, dict[str, Any] | None], Json | None]


def written_from(change: WriteChange,
                 opened: Callable[[Json, Turn], Json | None] | None = None) -> Bend:
    """A write's reply changed by ``change``, which also gets the place the write's token
    was opened from (remembered from the open's reply; None: not seen); an open's reply
    changed by ``opened``."""

    def bend(reply: Response, turn: Turn) -> Response:
        body = reply.json()
        if turn.request.endpoint == "artifacts/open":
            with turn.lock:
                turn.memory.setdefault("places", {})[body.get("token")] = place_of(turn.request)
            new = opened(body, turn) if opened else None
        else:
            with turn.lock:
                place = turn.memory.get("places", {}).get(obj(turn.request).get("token"))
            new = change(body, turn, place)
        return reply if new is None else reply.with_json(new)

    return bend


def _route(body: Json) -> str | None:
    return (body.get("write_location") or {}).get("route")


def _with_route(body: Json, route: str | None) -> Json:
    return {**body, "write_location": {**body["write_location"], "route": route}}


def _has_versions(turn: Turn) -> bool:
    return bool(committed(turn.upstream, turn.request, obj(turn.request).get("artifact", "")))


def _after_first_version(route: str) -> WriteChange:
    def change(body: Json, turn: Turn, place: dict[str, Any] | None) -> Json | None:
        if body.get("route") == route and _has_versions(turn):
            return {**body, "route": "inter_region"}
        return None

    return change


def _capitalised_local(body: Json, turn: Turn, place: dict[str, Any] | None) -> Json | None:
    if capitalised(place) and body.get("route") == "local":
        return {**body, "route": "cross_cloud"}
    return None


def _capitalised_local_open(body: Json, turn: Turn) -> Json | None:
    if capitalised(place_of(turn.request)) and _route(body) == "local":
        return _with_route(body, "cross_cloud")
    return None


def _gcp_default_local(body: Json, turn: Turn, place: dict[str, Any] | None) -> Json | None:
    if body.get("route") == "inter_region" and cloud_of(body.get("location")) == "gcp":
        return {**body, "route": "local"}
    return None


def _box_region(body: Json, turn: Turn, place: dict[str, Any] | None) -> Json | None:
    if not place or body.get("route") != "inter_region":
        return None
    return {**body, "location": {"cloud": cloud_of(place), "region": place.get("region")}}


def _default_capitalised(body: Json, turn: Turn) -> Json | None:
    if capitalised(place_of(turn.request)) and _route(body) == "inter_region":
        return _with_route(body, "cross_cloud")
    return None


def _box_region_on_relaunch(body: Json, turn: Turn) -> Json | None:
    place = place_of(turn.request)
    if body.get("resume_from") and _route(body) == "inter_region" and place:
        return {**body, "write_location": {"cloud": cloud_of(place),
                                           "region": place["region"], "route": "local"}}
    return None


def no_warnings_when(test: Callable[[Json, Turn], bool]) -> Bend:
    """An open's reply without its warnings when ``test`` holds for it."""
    return changed(lambda body, turn: {**body, "warnings": []} if test(body, turn) else None)


def _fallback_warning_without_region(body: Json, turn: Turn) -> Json | None:
    wl = body.get("write_location") or {}
    if not (body.get("resume_from") and _route(body) == "cross_cloud" and wl.get("region")):
        return None
    full = f"{wl.get('cloud')}/{wl['region']}"
    warnings = [str(w).replace(full, str(wl.get("cloud"))).replace(wl["region"], "")
                for w in body.get("warnings") or []]
    return {**body, "warnings": warnings}


def _old_version_at_reader(body: Json, turn: Turn) -> Json | None:
    place, wanted = place_of(turn.request), turn.request.arg("version")
    if not place or wanted in (None, "latest") or body.get("cross_cloud") is not True:
        return None
    versions = committed(turn.upstream, turn.request, turn.request.arg("artifact") or "")
    if not versions or versions[-1]["version"] == wanted:
        return None
    here = {"cloud": cloud_of(place), "region": place["region"]}
    return {**body, "location": here, "route": "local", "cross_cloud": False}


def _newest_location_listed(body: Json, turn: Turn) -> Json | None:
    listed = body.get("versions") or []
    if len(listed) < 3:
        return None
    newest = listed[-1].get("location")
    return {**body, "versions": [{**r, "location": newest} for r in listed]}


def _told_resumed_location(fork: bool) -> Callable[[Json, Turn], Json | None]:
    """An open told it writes where the version it resumes is (a fork's source, or a
    relaunch's latest from a place with a location of its own)."""

    def change(body: Json, turn: Turn) -> Json | None:
        resume, place, sent = body.get("resume_from"), place_of(turn.request), \
            obj(turn.request).get("resume")
        resumes = isinstance(sent, str) and SOURCE.match(sent) is not None if fork \
            else sent == "latest" and _route(body) == "local"
        if not resumes or not isinstance(resume, dict) or not place:
            return None
        loc = resume.get("location") or {}
        if loc == {k: v for k, v in (body.get("write_location") or {}).items() if k != "route"}:
            return None
        return {**body, "write_location": {**loc, "route": route_between(loc, place)}}

    return change


def _matched_by_region(body: Json, turn: Turn) -> Json | None:
    place = place_of(turn.request)
    if place is None or not unknown_cloud(place):
        return None
    homes = {"europe-west4": "gcp", "westeurope": "azure", "us-east-1": "aws"}
    cloud = homes.get(str(place.get("region")))
    wl = body.get("write_location") or {}
    if cloud is None or cloud == wl.get("cloud"):
        return None
    return {**body, "write_location": {**wl, "cloud": cloud, "region": place.get("region")}}


def _warning_names_box(body: Json, turn: Turn) -> Json | None:
    place = place_of(turn.request)
    loc = body.get("write_location") or {}
    if place is None or not unknown_cloud(place) or not body.get("warnings"):
        return None
    where = f"{loc.get('cloud')}/{loc.get('region')}"
    box = f"{place.get('cloud')}/{place.get('region')}"
    warnings = [str(w).replace(where, box).replace(str(loc.get("region")), "?")
                for w in body["warnings"]]
    return {**body, "warnings": warnings}


def _inter_region_without_holder(body: Json, turn: Turn) -> Json | None:
    if "holder" in obj(turn.request) or _route(body) != "local":
        return None
    return _with_route(body, "inter_region")


rows(
    # --- PLACE-1.a
    Row("place-local-write-route-inter-region-after-first-version", "PLACE-1.a",
        "write replies of a local box say inter_region once a version exists",
        On(OPEN + WRITE), answer=written_from(_after_first_version("local"))),
    Row("place-local-route-cross-cloud-for-capitalised-cloud", "PLACE-1.a",
        "a box at GCP/europe-west4 is told route cross_cloud for its local location",
        On(OPEN + WRITE), answer=written_from(_capitalised_local, _capitalised_local_open)),
    Row("place-fork-write-location-is-the-source-versions", "PLACE-1.a",
        "a fork opened from another place is told it writes at the source's location",
        On(OPEN), answer=changed(_told_resumed_location(fork=True))),
    Row("place-relaunch-write-location-is-the-resumed-versions", "PLACE-1.a",
        "a relaunch elsewhere is told write_location = the resumed version's location",
        On(OPEN), answer=changed(_told_resumed_location(fork=False))),
    Row("place-local-route-inter-region-without-holder", "PLACE-1.a",
        "an open at a location's own place without a holder says route inter_region",
        On(OPEN), answer=changed(_inter_region_without_holder)),
    # --- API-1.d: what a write reply says of its location
    Row("api-write-reply-location-is-the-box-region", "API-1.d",
        "versions/write of an inter-region box answers location = the box's region",
        On(OPEN + WRITE), answer=written_from(_box_region)),
    # --- PLACE-2
    Row("place-default-write-route-local-for-gcp", "PLACE-2.a",
        "a gcp box in another region is told route local in its write replies",
        On(OPEN + WRITE), answer=written_from(_gcp_default_local)),
    Row("place-default-route-cross-cloud-for-capitalised-cloud", "PLACE-2.a",
        "a box at AWS/us-west-2 is told route cross_cloud for aws's default location",
        On(OPEN), answer=changed(_default_capitalised)),
    Row("place-default-location-is-box-region-on-relaunch", "PLACE-2.a",
        "a relaunch from a region without a location is told it writes locally",
        On(OPEN), answer=changed(_box_region_on_relaunch)),
    Row("place-default-warning-dropped-on-relaunch", "PLACE-2.b",
        "a relaunch from a region without a location gets no warning",
        On(OPEN), answer=no_warnings_when(
            lambda body, turn: bool(body.get("resume_from")) and _route(body) == "inter_region")),
    Row("place-default-warning-dropped-for-capitalised-cloud", "PLACE-2.b",
        "a box at AWS/us-west-2 gets no warning",
        On(OPEN), answer=no_warnings_when(
            lambda body, turn: capitalised(place_of(turn.request))
            and _route(body) == "inter_region")),
    # --- PLACE-3
    Row("place-fallback-route-null-without-place", "PLACE-3.a",
        "an open with place null gets write_location.route null",
        On(OPEN), answer=changed(lambda body, turn: _with_route(body, None)
                                 if place_of(turn.request) is None
                                 and _route(body) == "cross_cloud" else None)),
    Row("place-fallback-write-route-inter-region-after-first-version", "PLACE-3.a",
        "write replies of a fallback box say inter_region once a version exists",
        On(OPEN + WRITE), answer=written_from(_after_first_version("cross_cloud"))),
    Row("place-unknown-cloud-matched-by-region-name", "PLACE-3.a",
        "a box at oracle/<a location's region> is sent to that location, not the fallback",
        On(OPEN), answer=changed(_matched_by_region)),
    Row("place-fallback-warning-names-no-region-on-relaunch", "PLACE-3.b",
        "a relaunch's fallback warning says 'aws' instead of 'aws/us-east-1'",
        On(OPEN), answer=changed(_fallback_warning_without_region)),
    Row("place-fallback-warning-dropped-without-place", "PLACE-3.b",
        "an open with place null gets no warning",
        On(OPEN), answer=no_warnings_when(
            lambda body, turn: place_of(turn.request) is None and _route(body) == "cross_cloud")),
    Row("place-fallback-warning-names-box-for-unknown-cloud", "PLACE-3.b",
        "an unknown cloud's fallback warning names the box's place, not aws/us-east-1",
        On(OPEN), answer=changed(_warning_names_box)),
    # --- PLACE-4.a
    Row("place-location-old-version-shown-at-reader", "PLACE-4.a",
        "an older version read from another cloud shows the reader's place as location",
        On(READ), answer=changed(_old_version_at_reader)),
    Row("place-location-list-shows-newest-location-when-3-versions", "PLACE-4.a",
        "with 3+ versions, list shows every version at the newest one's location",
        On(("versions/list",)), answer=changed(_newest_location_listed)),
)
