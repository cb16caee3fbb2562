"""Checks that send requests of their own: what a refused request must leave as it was
(a :class:`Snapshot` before and after), a version that must never show, a writer still
alive, a URL that serves its bytes whole and by range, a second commit, a fork or a
version name refused, the version an open resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.actions import Box
from conformance.actions import Upload
from conformance.actions import checkpoint
from conformance.actions import make_files
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.rules import RuleViolation
from conformance.rules import check
from conformance.rules import check_equal

__all__ = [
    "Snapshot", "expect_fork_forbidden", "expect_invisible", "expect_resumes",
    "expect_second_commit_refused", "expect_served", "expect_unchanged", "expect_version_refused",
    "expect_writer_alive", "snapshot",
]


def expect_fork_forbidden(api: Client, target: str, source: str, rule: str, what: str,
                          holder: str | None = None) -> None:
    """A fork of ``source``'s step-00000001 into ``target`` with ``api``'s key is 403."""
    expect_error(api.open(target, f"o41://{source}/step-00000001", None, holder), 403,
                 "forbidden", rule, what)


def expect_second_commit_refused(api: Client, box: Box, first: Upload, second: Upload,
                                 code: str, rule: str, what: str) -> None:
    """Of two uploads started by ``box``, ``first`` commits and then ``second``'s commit is
    409 ``code`` (``what``)."""
    expect_ok(api.commit(box.artifact, box.token, str(first.upload_id)), rule, "first commit")
    expect_error(api.commit(box.artifact, box.token, str(second.upload_id)), 409, code, rule,
                 what)


def expect_version_refused(api: Client, box: Box, version: str, specs: list[dict[str, Any]],
                           rule: str) -> None:
    """A write of ``version`` (a name that is no version name) is 400 invalid_argument."""
    expect_error(api.write(box.artifact, box.token, version, specs), 400, "invalid_argument",
                 rule, f"write of version {version!r}")


def expect_served(api: Client, url: str, data: bytes, span: tuple[int, int], clause: str,
                  what: str) -> None:
    """A GET of ``url`` answers 200 and ``data``; a GET of the inclusive range ``span``, 206
    and those bytes (``what`` names the URL and when it was tried)."""
    got = api.fetch(url)
    check_equal((got.status, got.content == data), (200, True), clause, f"GET of {what}")
    part = api.fetch(url, byte_range=span)
    check_equal((part.status, part.content), (206, data[span[0]:span[1] + 1]), clause,
                f"ranged GET of {what}")


@dataclass(frozen=True)
class Snapshot:
    """What a refused request must leave as it was: epoch, holder, latest, listed versions."""

    exists: bool
    epoch: Any = None
    holder: Any = None
    latest: Any = None
    count: Any = None
    versions: tuple[str, ...] = ()
    forked_from: Any = None


def snapshot(api: Client, artifact: str) -> Snapshot:
    reply = api.artifact(artifact)
    if reply.status == 404:
        return Snapshot(False)
    body = expect_ok(reply, "READ-1.a", f"artifacts/read {artifact}")
    listed = expect_ok(api.list(artifact), "READ-1.a", f"list {artifact}")["versions"]
    return Snapshot(
        True,
        body.get("epoch"),
        body.get("holder"),
        body.get("latest"),
        body.get("versions"),
        tuple(v.get("version") for v in listed),
        body.get("forked_from"),
    )


def expect_unchanged(api: Client, artifact: str, before: Snapshot, clause: str, what: str) -> None:
    """The artifact looks exactly as in ``before`` (a refused open or write changed nothing)."""
    after = snapshot(api, artifact)
    if after != before:
        raise RuleViolation(clause, f"{what} changed {artifact}: before {before}, after {after}")


def expect_writer_alive(
    api: Client, box: Box, version: str, clause: str, what: str, size: int = 16
) -> dict[str, Any]:
    """The box still writes and commits (nobody fenced it): its checkpoint shows as latest."""
    files = make_files({"alive.bin": size}, len(version))
    body = expect_ok(
        checkpoint(api, box.artifact, box.token, version, files),
        clause,
        f"{what}: checkpoint {version} by {box.holder}",
    )
    latest = expect_ok(api.artifact(box.artifact), "READ-1.a", "artifacts/read")["latest"]
    check(latest == version, clause, f"{what}: latest is {latest!r}, not {version}")
    return body


def expect_invisible(api: Client, artifact: str, version: str, clause: str, what: str) -> None:
    """A version that must never show: read 404, not listed, not latest, not counted."""
    expect_error(api.read(artifact, version), 404, "not_found", clause, f"{what}: read {version}")
    reply = api.artifact(artifact)
    if reply.status == 404:
        return
    state = expect_ok(reply, clause, f"{what}: artifacts/read")
    listed = [v.get("version") for v in expect_ok(api.list(artifact), clause, "list")["versions"]]
    check(version not in listed, clause, f"{what}: {version} listed in {listed}")
    check(state.get("latest") != version, clause, f"{what}: {version} is latest")
    check(
        state.get("versions") == len(listed),
        clause,
        f"{what}: artifacts/read counts {state.get('versions')} versions, list shows {listed}",
    )
    latest = api.read(artifact, "latest")
    if latest.ok:
        check(latest.body.get("version") != version, clause, f"{what}: latest read {version}")


def expect_resumes(box: Box, version: str, clause: str, what: str) -> None:
    """The open that made ``box`` resumes ``version``."""
    check_equal((box.opened.get("resume_from") or {}).get("version"), version, clause, what)
