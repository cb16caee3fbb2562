"""Mutants of paths that no test sent before: a project grant (``teamb/``) matched without
its slash, a resume from another region of the version's cloud marked cross-cloud, and a
reader in an unknown cloud priced as "any other cloud" instead of by the cloud the bytes
leave."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant, ok_or
from conformance.mutants.tracking import Tracked, artifact_of, body_of, key_of, with_key
from conformance.mutants.usage_replies import UsageMutant, retotal

KNOWN_CLOUDS = ("aws", "gcp", "azure")
OTHER_CROSS_CLOUD = 0.09


@mutant
class GrantMatchedWithoutSlash(Tracked):
    """A key that wrote under ``P/`` (a project) may also use ``P2x/...``: its grant is
    compared with the artifact's name without the grant's slash."""

    name = "auth-project-grant-matched-without-its-slash"
    clause = "AUTH-3.b"
    summary = "a key granted 'teamb/' reaches 'teamb2x/run' (the prefix compared without '/')"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        name = artifact_of(request)
        key = key_of(request)
        if response.status != 403 or not isinstance(name, str) or "/" not in name or not key:
            return response
        project = name.split("/", 1)[0]
        with self.lock:
            own = {a.split("/", 1)[0] for a, opens in self.t.opens.items()
                   if any(o.key == key for o in opens)}
            good = self.t.good_key(name)
        if not any(project != p and project.startswith(p) for p in own) or good in (None, key):
            return response
        return ok_or(upstream, with_key(request, str(good)), response)


def _mark_inter_region(node: Any) -> bool:
    if isinstance(node, dict) and node.get("route") == "inter_region" \
            and node.get("cross_cloud") is False:
        node["cross_cloud"] = True
        return True
    return False


@mutant
class InterRegionResumeCrossCloud(Tracked):
    """A relaunch in another region of its version's cloud gets a ``resume_from`` that says
    ``cross_cloud: true`` (the open's own route check; reads are right)."""

    name = "xc-inter-region-resume-marked-cross-cloud"
    clause = "XC-1.a"
    summary = "resume_from of a relaunch in another region of the version's cloud says " \
              "cross_cloud: true"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json() if response.ok else None
        if request.endpoint == "artifacts/open" and isinstance(body, dict) \
                and _mark_inter_region(body.get("resume_from")):
            return response.with_json(body)
        return response


@mutant
class UnknownReaderPricedOther(UsageMutant):
    """Reads from a place in a cloud the table does not list are priced at the "other"
    cloud's cross-cloud price, as if the bytes left the reader's cloud."""

    name = "usage-reader-in-unknown-cloud-priced-as-other"
    clause = "USAGE-1.c"
    summary = "a read from an unknown cloud is priced 0.09/GB ('other'), not by the " \
              "location's cloud"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        hits = [r for r in body["transfers"] if r.get("direction") == "read"
                and r.get("route") == "cross_cloud"
                and str((r.get("place") or {}).get("cloud", "")).lower() not in KNOWN_CLOUDS
                and (r.get("place") or {}).get("cloud")]
        for r in hits:
            r["cost_usd"] = r["bytes"] / 1e9 * OTHER_CROSS_CLOUD
        return retotal(body) if hits else None


def _streamed_names(t: Any, artifact: object) -> set[str]:
    """Names declared by name alone in any upload of ``artifact`` (caller holds the lock)."""
    return {str(f.get("name")) for up in t.uploads.values() if up.artifact == artifact
            for f in up.write.get("files") or [] if isinstance(f, dict) and "size" not in f}


@mutant
class StreamedResumeWithoutSizes(Tracked):
    """A relaunch's ``resume_from`` gives a streamed file the size and sha256 it was
    declared with (none: 0 and the sha256 of nothing), not what its PUT received."""

    name = "open-resume-from-gives-streamed-files-their-declared-nothing"
    clause = "OPEN-2.a"
    summary = "resume_from lists a streamed file with size 0 and the sha256 of no bytes"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = response.json() if response.ok else None
        resume = body.get("resume_from") if isinstance(body, dict) else None
        if request.endpoint != "artifacts/open" or not isinstance(resume, dict):
            return response
        with self.lock:
            names = _streamed_names(self.t, resume.get("artifact"))
        files = resume.get("files") or []
        if not any(f.get("name") in names for f in files if isinstance(f, dict)):
            return response
        empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        resume["files"] = [{**f, "size": 0, "sha256": empty} if f.get("name") in names else f
                           for f in files]
        return response.with_json(body)


@mutant
class StreamedBytesNotCounted(UsageMutant, Tracked):
    """Usage counts a version's declared sizes: a streamed file's bytes (declared by name
    alone) are left out of its write row and the routes."""

    name = "usage-streamed-files-bytes-not-counted"
    clause = "USAGE-1.a"
    summary = "usage's write rows leave out the bytes of streamed files"

    def handle(self, request: Request, upstream: Upstream) -> Response:
        return UsageMutant.handle(self, request, upstream)

    def forward(self, request: Request, upstream: Upstream) -> Response:
        return Tracked.handle(self, request, upstream)

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data = response.json() if response.ok else None
        if request.endpoint == "versions/commit" and isinstance(data, dict):
            with self.lock:
                up = self.t.uploads.get(str(body_of(request).get("upload")))
                if up is not None:
                    streamed = {str(f.get("name")) for f in up.write.get("files") or []
                                if isinstance(f, dict) and "size" not in f}
                    self.state.setdefault("streamed", {})[(up.artifact, data.get(
                        "version"))] = sum(len(d) for n, d in up.puts.items() if n in streamed)
        return response

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        with self.lock:
            lost = dict(self.state.get("streamed", {}))
        hits = [r for r in body["transfers"] if r.get("direction") == "write"
                and lost.get((r.get("artifact"), r.get("version")))]
        for r in hits:
            n = lost[(r.get("artifact"), r.get("version"))]
            if r["bytes"]:
                r["cost_usd"] = r["cost_usd"] * (r["bytes"] - n) / r["bytes"]
            r["bytes"] -= n
        return retotal(body) if hits else None


@mutant
class ScopedKeyMayNotDelete(Tracked):
    """A key scoped to a prefix may write and commit there, but every delete it sends is
    refused (deletes checked against whole-key write, not the prefix)."""

    name = "auth-prefix-scoped-key-delete-refused"
    clause = "AUTH-3.c"
    summary = "a prefix-scoped write key gets 403 on versions/delete under its own prefix"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if request.endpoint != "versions/delete":
            return None
        key = key_of(request)
        with self.lock:
            scoped = key in self.t.refused_keys and key in self.t.writer_keys
        if scoped:
            return Response.error(403, "forbidden", "the key cannot delete")
        return None
