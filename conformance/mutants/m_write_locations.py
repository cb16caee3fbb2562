"""More mutants a blind adversary would write from docs/contract.md alone, for where writes
go and how they are reported: a fork told the source's location, a write reply naming the
box's own region, an unknown cloud's resume taken for no place, and placements booked when
the upload is written instead of when it is committed."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant
from conformance.mutants.m_fork import SOURCE
from conformance.mutants.m_place import ReplyMutant, WriteReplyMutant, place_of
from conformance.mutants.tracking import Tracked, body_of

KNOWN = {"aws", "gcp", "azure"}


def _cloud(side: Any) -> str:
    return str((side or {}).get("cloud", "")).lower()


def _route(location: Any, place: Any) -> str:
    if _cloud(location) != _cloud(place):
        return "cross_cloud"
    return "local" if (location or {}).get("region") == (place or {}).get("region") \
        else "inter_region"


@mutant
class ForkToldSourceLocation(ReplyMutant):
    """A fork's ``write_location`` is the location of the version it forks (the fork
    'continues where the source is'), while its writes still go to the box's location."""

    name = "place-fork-write-location-is-the-source-versions"
    clause = "PLACE-1.a"
    summary = "a fork opened from another place is told it writes at the source's location"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        resume, place = body.get("resume_from"), place_of(request)
        sent = body_of(request).get("resume")
        if not isinstance(sent, str) or not SOURCE.match(sent) or not isinstance(resume, dict) \
                or not place:
            return None
        loc = resume.get("location") or {}
        if loc == {k: v for k, v in (body.get("write_location") or {}).items() if k != "route"}:
            return None
        return {**body, "write_location": {**loc, "route": _route(loc, place)}}


@mutant
class WriteReplyNamesBoxRegion(WriteReplyMutant):
    """A write of a box away from any location answers, as its ``location``, the box's own
    cloud and region (the bucket it would have liked), not the one it writes to."""

    name = "api-write-reply-location-is-the-box-region"
    clause = "API-1.d"
    summary = "versions/write of an inter-region box answers location = the box's region"

    def change_write(self, request, upstream, body, place):  # noqa: ANN001, ANN201
        if not place or body.get("route") != "inter_region":
            return None
        return {**body, "location": {"cloud": _cloud(place), "region": place.get("region")}}


@mutant
class UnknownCloudResumeUnplaced(ReplyMutant):
    """The ``resume_from`` of an open from a cloud outside the table has ``route`` and
    ``cross_cloud`` null, as if the box had given no place."""

    name = "xc-resume-from-of-an-unknown-cloud-box-unplaced"
    clause = "XC-1.a"
    summary = "resume_from of a box at oracle/x says route and cross_cloud null"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        resume, place = body.get("resume_from"), place_of(request)
        if not isinstance(resume, dict) or not place or _cloud(place) in KNOWN:
            return None
        return {**body, "resume_from": {**resume, "route": None, "cross_cloud": None}}


@mutant
class PlacementsAtWrite(Tracked):
    """``placements`` books a version away from its box when the upload is fully written,
    so an upload whose commit was refused (fenced, incomplete) still counts there."""

    name = "usage-placements-count-refused-uploads"
    clause = "USAGE-1.e"
    summary = "placements count versions and bytes of uploads whose commit was refused"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        reply = response.json()
        if request.endpoint == "artifacts/open" and response.ok and isinstance(reply, dict):
            with self.lock:
                self.state.setdefault("places", {})[reply.get("token")] = place_of(request)
            return response
        if request.endpoint == "versions/write" and response.ok and isinstance(reply, dict):
            with self.lock:
                self.state.setdefault("writes", {})[str(reply.get("upload"))] = reply
            return response
        if request.endpoint == "versions/commit" and response.status == 409 \
                and error_code(response) in ("fenced", "incomplete"):
            self._refused(body)
            return response
        if request.endpoint != "usage/read" or not response.ok or not isinstance(reply, dict):
            return response
        return self._shown(response, reply)

    def _refused(self, body: dict[str, Any]) -> None:
        with self.lock:
            up = self.t.uploads.get(str(body.get("upload")))
            write = self.state.get("writes", {}).get(str(body.get("upload")))
            if up is None or write is None or write.get("route") == "local" or not up.complete:
                return
            place = self.state.get("places", {}).get(up.token)
            self.state.setdefault("booked", {})[up.upload] = {
                "artifact": up.artifact, "place": place, "location": write.get("location"),
                "route": write.get("route"), "bytes": sum(map(len, up.puts.values()))}

    def _shown(self, response: Response, reply: dict[str, Any]) -> Response:
        with self.lock:
            booked = list(self.state.get("booked", {}).values())
        rows = [dict(p) for p in reply.get("placements") or [] if isinstance(p, dict)]
        touched = False
        for b in booked:
            if not isinstance(b["place"], dict):
                continue
            same = [p for p in rows if p.get("artifact", b["artifact"]) == b["artifact"]
                    and _cloud(p.get("place")) == _cloud(b["place"])
                    and (p.get("place") or {}).get("region") == b["place"].get("region")]
            if not same:
                if not any(r.get("artifact") == b["artifact"]
                           for r in reply.get("transfers") or []):
                    continue  # not this report's artifact
                kind = "default" if b["route"] == "inter_region" else "fallback"
                rows.append({"kind": kind, "place": b["place"], "location": b["location"],
                             "route": b["route"], "artifact": b["artifact"], "versions": 0,
                             "bytes": 0})
                same = rows[-1:]
            same[0]["versions"] = int(same[0].get("versions") or 0) + 1
            same[0]["bytes"] = int(same[0].get("bytes") or 0) + b["bytes"]
            touched = True
        return response.with_json(dict(reply, placements=rows)) if touched else response




@mutant
class AzureInterRegionPublishedAtEgress(Tracked):
    """``prices`` publishes ``inter_region`` per cloud with azure's at its egress price
    0.087 (rows are still charged by the table)."""

    name = "usage-prices-publish-azure-inter-region-at-0.087"
    clause = "USAGE-1.f"
    summary = "usage's prices show inter_region azure 0.087 (table: 0.02 in every cloud)"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        reply = response.json()
        if request.endpoint != "usage/read" or not response.ok or not isinstance(reply, dict):
            return response
        prices = reply.get("prices")
        inter = prices.get("inter_region") if isinstance(prices, dict) else None
        if isinstance(inter, dict):
            inter = {**inter, "azure": 0.087}
        elif isinstance(inter, int | float):
            inter = {"aws": inter, "gcp": inter, "azure": 0.087}
        else:
            return response
        return response.with_json({**reply, "prices": {**prices, "inter_region": inter}})


@mutant
class EmptyArtifactMeansAll(Tracked):
    """``usage/read?artifact=`` (present but empty) answers as if ``artifact`` were absent:
    the usage of everything the key can read."""

    name = "api-usage-with-empty-artifact-reports-everything"
    clause = "API-1.f"
    summary = "usage/read?artifact= (empty) answers all usage instead of 400"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        if request.endpoint == "usage/read" and request.arg("artifact") == "":
            return request.with_query(artifact=None)
        return None


@mutant
class StaleTokenCommitsNewestUpload(Tracked):
    """A commit is checked against its upload's epoch only: a stale token commits an upload
    the newest holder started (the token's own epoch is never compared)."""

    name = "fence-stale-token-commits-the-newest-holders-upload"
    clause = "FENCE-2.b"
    summary = "a commit with a fenced token of an upload started by the newest token commits"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "fenced":
            return response
        body = body_of(request)
        with self.lock:
            up = self.t.uploads.get(str(body.get("upload")))
            newest = self.t.newest.get(str(body.get("artifact")))
            stale = self.t.tokens.get(str(body.get("token")))
        if up is None or newest is None or stale is None or up.token != newest.token \
                or stale.artifact != newest.artifact or stale.epoch >= newest.epoch:
            return response
        again = upstream.send(request.with_json(dict(body, token=newest.token)))
        return again if again.ok else response


@mutant
class ResumeRouteCaseSensitive(ReplyMutant):
    """The ``resume_from`` of a relaunch compares the box's cloud as spelled: a box at
    ``GCP/<another region>`` resuming a gcp version is told route ``cross_cloud``."""

    name = "xc-resume-route-compares-cloud-as-spelled"
    clause = "XC-1.b"
    summary = "resume_from of a box at GCP/<other region> of a gcp version says cross_cloud"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        resume, place = body.get("resume_from"), place_of(request)
        if not isinstance(resume, dict) or not place \
                or str(place.get("cloud")) == _cloud(place) \
                or resume.get("route") != "inter_region":
            return None
        return {**body, "resume_from": {**resume, "route": "cross_cloud"}}


@mutant
class ForkSourceNeedsOwnOpen(Tracked):
    """A fork by a prefix-scoped key needs the source to be one the key writes: a source
    under its read-only prefix gets 403 (the source's scope is checked for write)."""

    name = "fork-from-a-read-only-source-by-a-scoped-key-refused"
    clause = "FORK-1.d"
    summary = "a scoped key cannot fork from a source it may only read (403)"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        from conformance.mutants.tracking import key_of  # noqa: PLC0415

        resume = body_of(request).get("resume")
        if request.endpoint != "artifacts/open" or not isinstance(resume, str) \
                or not SOURCE.match(resume):
            return None
        source = SOURCE.match(resume).group(1)  # type: ignore[union-attr]
        key = key_of(request)
        with self.lock:
            scoped = key in self.t.refused_keys
            writes = any(o.key == key for o in self.t.opens.get(source, []))
        if scoped and not writes:
            return Response.error(403, "forbidden", "this key cannot write the fork's source")
        return None


@mutant
class BearerWithMoreWords(Tracked):
    """``Authorization: Bearer <key> <more>`` is taken as ``Bearer <key>`` (the header is
    split on spaces and its second word used), though it is not ``Bearer <key>``."""

    name = "auth-bearer-key-followed-by-more-words-accepted"
    clause = "AUTH-1.a"
    summary = "an Authorization header 'Bearer <key> <junk>' is accepted as the key"

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        words = (request.header("Authorization") or "").split()
        if request.kind == "api" and len(words) > 2 and words[0] == "Bearer":
            return request.with_header("Authorization", f"Bearer {words[1]}")
        return None


@mutant
class PlacementRowPerRelaunch(Tracked):
    """A placements row is kept per open (epoch): a box relaunched at the same place away
    from its region gets a second row, instead of one row counting all its versions."""

    name = "usage-placements-row-per-relaunch-at-one-place"
    clause = "USAGE-1.e"
    summary = "versions written away by two launches at one place show as two placement rows"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        from conformance.mutants.tracking import api_get, key_of  # noqa: PLC0415

        reply = response.json()
        if request.endpoint != "usage/read" or not response.ok or not isinstance(reply, dict):
            return response
        rows: list[dict[str, Any]] = []
        touched = False
        for p in reply.get("placements") or []:
            art = p.get("artifact") if isinstance(p, dict) else None
            listed = api_get(upstream, "versions/list", key_of(request), artifact=str(art)) \
                if art else None
            mine = [v for v in ((listed.json() or {}).get("versions") or [])
                    if v.get("location") == p.get("location")] if listed and listed.ok else []
            epochs = sorted({v.get("epoch") for v in mine}, key=str)
            if len(epochs) < 2 or len(mine) != p.get("versions") \
                    or sum(int(v.get("size") or 0) for v in mine) != p.get("bytes"):
                rows.append(p)
                continue
            for e in epochs:
                of = [v for v in mine if v.get("epoch") == e]
                rows.append(dict(p, versions=len(of), bytes=sum(int(v["size"]) for v in of)))
            touched = True
        return response.with_json(dict(reply, placements=rows)) if touched else response


@mutant
class RelaunchToldResumedLocation(ReplyMutant):
    """A relaunch at ``latest`` from a place with its own location is told it writes where
    the resumed version is (the bucket 'stays with the run'), while its writes still go to
    its own location."""

    name = "place-relaunch-write-location-is-the-resumed-versions"
    clause = "PLACE-1.a"
    summary = "a relaunch elsewhere is told write_location = the resumed version's location"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        resume, place = body.get("resume_from"), place_of(request)
        if body_of(request).get("resume") != "latest" or not isinstance(resume, dict) \
                or not place:
            return None
        loc = resume.get("location") or {}
        wl = body.get("write_location") or {}
        if wl.get("route") != "local" or loc == {k: v for k, v in wl.items() if k != "route"}:
            return None
        return {**body, "write_location": {**loc, "route": _route(loc, place)}}


@mutant
class RefusedByKeyNamedFenced(Tracked):
    """An open refused 403 for its key still records its holder as the artifact's last
    opener: the next successful open's ``fenced`` names it (the epoch is right)."""

    name = "fence-open-refused-403-named-by-the-next-fenced"
    clause = "FENCE-2.d"
    summary = "after an open refused 403, the next open's fenced names the refused holder"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "artifacts/open":
            return response
        art, holder = body_of(request).get("artifact"), body_of(request).get("holder")
        if response.status == 403 and isinstance(holder, str):
            with self.lock:
                self.state.setdefault("refused", {})[art] = holder
            return response
        reply = response.json()
        if not response.ok or not isinstance(reply, dict):
            return response
        with self.lock:
            name = self.state.setdefault("refused", {}).pop(art, None)
        fenced = reply.get("fenced")
        if name and isinstance(fenced, dict):
            return response.with_json(dict(reply, fenced=dict(fenced, holder=name)))
        return response
