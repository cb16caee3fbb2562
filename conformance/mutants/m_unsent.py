"""Mutants of paths that no test sent before: a project grant (``teamb/``) matched without
its slash, a resume from another region of the version's cloud marked cross-cloud, and a
reader in an unknown cloud priced as "any other cloud" instead of by the cloud the bytes
leave."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import Request, Response, Upstream, mutant, ok_or
from conformance.mutants.tracking import Tracked, artifact_of, key_of, with_key
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
