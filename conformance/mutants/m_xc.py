"""Mutants of XC-1: how reads and resumes are marked (``cross_cloud``, ``route``)."""

from __future__ import annotations

from typing import Any

from conformance.mutants.base import mutant
from conformance.mutants.m_place import ReplyMutant, capitalised, place_of
from conformance.mutants.m_read import committed

# --- XC-1 --------------------------------------------------------------------------------


def _cloud(loc: Any) -> str:
    return str((loc or {}).get("cloud"))


@mutant
class CrossCloudCaseSensitive(ReplyMutant):
    """``cross_cloud`` compares the reader's cloud as spelled: ``GCP`` reading from a gcp
    location is marked cross-cloud (the route is right)."""

    name = "xc-cross-cloud-flag-case-sensitive"
    clause = "XC-1.a"
    summary = "a read from place GCP/... of a gcp version says cross_cloud true"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place = place_of(request)
        if capitalised(place) and body.get("cross_cloud") is False:
            return {**body, "cross_cloud": place["cloud"] != _cloud(body.get("location"))}
        return None


@mutant
class ResumeNotCrossCloudWhenTwoVersions(ReplyMutant):
    """Once an artifact has 2 or more versions, an open's ``resume_from`` is never marked
    cross-cloud (the flag is taken from the previous version's writer)."""

    name = "xc-resume-from-not-cross-cloud-when-2-versions"
    clause = "XC-1.a"
    summary = "with 2+ versions, resume_from after a cloud hop says cross_cloud false"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        resume = body.get("resume_from")
        if not isinstance(resume, dict) or resume.get("cross_cloud") is not True:
            return None
        if len(committed(upstream, request, body.get("artifact", ""))) < 2:
            return None
        return {**body, "resume_from": {**resume, "cross_cloud": False}}


@mutant
class InterRegionUrlReadsCrossCloud(ReplyMutant):
    """A read with ``urls=1`` from another region of the location's cloud says
    ``cross_cloud: true`` (reads without URLs are right)."""

    name = "xc-inter-region-url-read-marked-cross-cloud"
    clause = "XC-1.a"
    summary = "an inter-region read with urls=1 says cross_cloud true"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if request.arg("urls") == "1" and body.get("route") == "inter_region":
            return {**body, "cross_cloud": True}
        return None


@mutant
class NamedVersionInterRegionLocal(ReplyMutant):
    """A read of a version by name (not ``latest``) from another region of its cloud says
    route ``local``."""

    name = "xc-route-local-for-inter-region-read-of-named-version"
    clause = "XC-1.b"
    summary = "reading step-N by name from another region of its cloud says route local"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if request.arg("version") not in (None, "latest") and body.get("route") == "inter_region":
            return {**body, "route": "local"}
        return None


@mutant
class SameRegionOtherCloudInterRegion(ReplyMutant):
    """A reader in another cloud whose region has the location's region name gets route
    ``inter_region`` (the region is compared before the cloud); ``cross_cloud`` is right."""

    name = "xc-route-inter-region-for-other-cloud-with-same-region-name"
    clause = "XC-1.b"
    summary = "a read from lambda/us-east-1 of an aws/us-east-1 version says inter_region"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        place = place_of(request)
        if place and body.get("route") == "cross_cloud" \
                and place.get("region") == (body.get("location") or {}).get("region"):
            return {**body, "route": "inter_region"}
        return None


@mutant
class NoPlaceUrlReadFilled(ReplyMutant):
    """A read with ``urls=1`` and no place reports the billing assumption as its route:
    ``cross_cloud``, ``true`` (reads without URLs are right)."""

    name = "xc-no-place-url-read-reports-cross-cloud"
    clause = "XC-1.c"
    summary = "a read with urls=1 and no place says route cross_cloud, cross_cloud true"
    endpoint = "versions/read"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        if request.arg("urls") == "1" and request.arg("place") is None \
                and body.get("route") is None:
            return {**body, "route": "cross_cloud", "cross_cloud": True}
        return None


@mutant
class NoPlaceResumeFilled(ReplyMutant):
    """The ``resume_from`` of an open without a place says ``cross_cloud`` instead of null."""

    name = "xc-no-place-resume-from-reports-cross-cloud"
    clause = "XC-1.c"
    summary = "an open with place null gets resume_from route cross_cloud, not null"
    endpoint = "artifacts/open"

    def change(self, request, upstream, body):  # noqa: ANN001, ANN201
        resume = body.get("resume_from")
        if place_of(request) is None and isinstance(resume, dict) and resume.get("route") is None:
            return {**body, "resume_from": {**resume, "route": "cross_cloud",
                                            "cross_cloud": True}}
        return None
