"""Mutants of XC-1: how reads and resumes are marked (``cross_cloud``, ``route``); one row
each (rows.py), bending the reply of a read or of an open's ``resume_from``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.mutants.m_place import capitalised
from conformance.mutants.m_place import cloud_of
from conformance.mutants.m_place import place_of
from conformance.mutants.m_place import unknown_cloud
from conformance.mutants.reads import committed
from conformance.mutants.reads import obj
from conformance.mutants.rows import Bend
from conformance.mutants.rows import On
from conformance.mutants.rows import Row
from conformance.mutants.rows import Turn
from conformance.mutants.rows import changed
from conformance.mutants.rows import rows

Json = dict[str, Any]
OPEN, READ = ("artifacts/open",), ("versions/read",)


def resumed(change: Callable[[Json, Turn], Json | None]) -> Bend:
    """An open's reply with its ``resume_from`` changed by ``change`` (None: as it was)."""

    def bent(body: Json, turn: Turn) -> Json | None:
        resume = body.get("resume_from")
        new = change(resume, turn) if isinstance(resume, dict) else None
        return None if new is None else {**body, "resume_from": new}

    return changed(bent)


def read_as(test: Callable[[Json, Turn], bool], **values: Any) -> Bend:
    """A read's reply with ``values`` set when ``test`` holds for it."""
    return changed(lambda body, turn: {**body, **values} if test(body, turn) else None)


def _named(turn: Turn) -> bool:
    return turn.request.arg("version") not in (None, "latest")


def _case_sensitive_flag(body: Json, turn: Turn) -> Json | None:
    place = place_of(turn.request)
    if place is not None and capitalised(place) and body.get("cross_cloud") is False:
        return {**body, "cross_cloud": place["cloud"] != str(
            (body.get("location") or {}).get("cloud"))}
    return None


def _not_cross_cloud_when_2_versions(resume: Json, turn: Turn) -> Json | None:
    if resume.get("cross_cloud") is not True:
        return None
    if len(committed(turn.upstream, turn.request, obj(turn.request).get("artifact", ""))) < 2:
        return None
    return {**resume, "cross_cloud": False}


def _forked(resume: Json, turn: Turn) -> Json | None:
    sent = obj(turn.request).get("resume")
    if resume.get("cross_cloud") is True and isinstance(sent, str) \
            and sent.startswith("o41://"):
        return {**resume, "cross_cloud": False}
    return None


def _spelled_route(resume: Json, turn: Turn) -> Json | None:
    place = place_of(turn.request)
    if place is None or not capitalised(place) or resume.get("route") != "inter_region":
        return None
    return {**resume, "route": "cross_cloud"}


def _same_region_name(body: Json, turn: Turn) -> bool:
    place = place_of(turn.request)
    return place is not None and body.get("route") == "cross_cloud" \
        and place.get("region") == (body.get("location") or {}).get("region")


def _spelled_read(body: Json, turn: Turn) -> bool:
    return capitalised(place_of(turn.request)) and body.get("route") == "inter_region"


rows(
    # --- XC-1.a
    Row("xc-cross-cloud-flag-case-sensitive", "XC-1.a",
        "a read from place GCP/... of a gcp version says cross_cloud true",
        On(READ), answer=changed(_case_sensitive_flag)),
    Row("xc-resume-from-not-cross-cloud-when-2-versions", "XC-1.a",
        "with 2+ versions, resume_from after a cloud hop says cross_cloud false",
        On(OPEN), answer=resumed(_not_cross_cloud_when_2_versions)),
    Row("xc-inter-region-url-read-marked-cross-cloud", "XC-1.a",
        "an inter-region read with urls=1 says cross_cloud true",
        On(READ), answer=read_as(lambda body, turn: turn.request.arg("urls") == "1"
                                 and body.get("route") == "inter_region", cross_cloud=True)),
    Row("xc-inter-region-resume-marked-cross-cloud", "XC-1.a",
        "resume_from of a relaunch in another region of the version's cloud says "
        "cross_cloud: true",
        On(OPEN), answer=resumed(lambda resume, turn: {**resume, "cross_cloud": True}
                                 if resume.get("route") == "inter_region"
                                 and resume.get("cross_cloud") is False else None)),
    Row("xc-fork-resume-from-cross-cloud-false", "XC-1.a",
        "a fork opened in another cloud than the source version says cross_cloud false",
        On(OPEN), answer=resumed(_forked)),
    Row("xc-reader-in-unknown-cloud-not-marked-cross-cloud", "XC-1.a",
        "a read from oracle/x says cross_cloud false though the clouds differ",
        On(READ), answer=read_as(lambda body, turn: unknown_cloud(place_of(turn.request))
                                 and body.get("cross_cloud") is True, cross_cloud=False)),
    Row("xc-resume-from-of-an-unknown-cloud-box-unplaced", "XC-1.a",
        "resume_from of a box at oracle/x says route and cross_cloud null",
        On(OPEN), answer=resumed(lambda resume, turn: {**resume, "route": None,
                                                       "cross_cloud": None}
                                 if unknown_cloud(place_of(turn.request)) else None)),
    # --- XC-1.b
    Row("xc-route-local-for-inter-region-read-of-named-version", "XC-1.b",
        "reading step-N by name from another region of its cloud says route local",
        On(READ), answer=read_as(lambda body, turn: _named(turn)
                                 and body.get("route") == "inter_region", route="local")),
    Row("xc-route-inter-region-for-other-cloud-with-same-region-name", "XC-1.b",
        "a read from lambda/us-east-1 of an aws/us-east-1 version says inter_region",
        On(READ), answer=read_as(_same_region_name, route="inter_region")),
    Row("xc-route-cross-cloud-for-azure-inter-region-read", "XC-1.b",
        "an azure version read from another azure region says route cross_cloud",
        On(READ), answer=read_as(lambda body, turn: body.get("route") == "inter_region"
                                 and cloud_of(body.get("location")) == "azure",
                                 route="cross_cloud")),
    Row("xc-read-route-compares-cloud-as-spelled", "XC-1.b",
        "a read from GCP/<other region> of a gcp version says route cross_cloud",
        On(READ), answer=read_as(_spelled_read, route="cross_cloud")),
    Row("xc-resume-route-compares-cloud-as-spelled", "XC-1.b",
        "resume_from of a box at GCP/<other region> of a gcp version says cross_cloud",
        On(OPEN), answer=resumed(_spelled_route)),
    # --- XC-1.c
    Row("xc-no-place-url-read-reports-cross-cloud", "XC-1.c",
        "a read with urls=1 and no place says route cross_cloud, cross_cloud true",
        On(READ), answer=read_as(lambda body, turn: turn.request.arg("urls") == "1"
                                 and turn.request.arg("place") is None
                                 and body.get("route") is None,
                                 route="cross_cloud", cross_cloud=True)),
    Row("xc-no-place-named-version-read-reports-local", "XC-1.c",
        "reading step-N by name without a place says route local, cross_cloud false",
        On(READ), answer=read_as(lambda body, turn: turn.request.arg("place") is None
                                 and _named(turn) and body.get("route") is None,
                                 route="local", cross_cloud=False)),
    Row("xc-no-place-resume-from-reports-cross-cloud", "XC-1.c",
        "an open with place null gets resume_from route cross_cloud, not null",
        On(OPEN), answer=resumed(lambda resume, turn: {**resume, "route": "cross_cloud",
                                                       "cross_cloud": True}
                                 if place_of(turn.request) is None
                                 and resume.get("route") is None else None)),
)
