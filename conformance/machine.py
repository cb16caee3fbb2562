"""The hypothesis state machine: boxes launch, checkpoint, get fenced, fork and read.

A plain :class:`~conformance.model.Model` runs beside the target and predicts every
response; invariants compare the target's whole state with it after every step. Every
check raises a RuleViolation, so hypothesis' shrunk failing program names its rule.
Artifacts are three aliases ``a``/``b``/``c`` mapped to fresh names per example, so runs
never collide and forks can land on empty or non-empty artifacts alike.

The machine holds the state, the reads and the invariants that compare the target's whole
state with the model; its moves are mixed in by concept: opens and fencing
(:mod:`~conformance.machine_opens`), uploads (:mod:`~conformance.machine_uploads`), uploads
of many writes and streamed files (:mod:`~conformance.machine_streams`) and retention
(:mod:`~conformance.machine_retention`). Hypothesis orders rules by name, so where a move is
defined does not change which program a seed draws.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.stateful import invariant
from hypothesis.stateful import precondition
from hypothesis.stateful import rule

from conformance.actions import download
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Reply
from conformance.client import Trail
from conformance.env import Env
from conformance.machine_opens import OpenMoves
from conformance.machine_parts import ALIASES
from conformance.machine_parts import Files
from conformance.machine_parts import MBox
from conformance.machine_parts import Staged
from conformance.machine_parts import check_version
from conformance.machine_parts import places_for
from conformance.machine_retention import RetentionMoves
from conformance.machine_streams import StreamMoves
from conformance.machine_uploads import UploadMoves
from conformance.model import Model
from conformance.model import Place
from conformance.model import VersionModel
from conformance.rules import check
from conformance.rules import check_equal
from conformance.usage import UsageModel

__all__ = ["ArtifactsMachine"]



class ArtifactsMachine(
    RetentionMoves, StreamMoves, UploadMoves, OpenMoves, RuleBasedStateMachine
):
    boxes = Bundle("boxes")
    uploads = Bundle("uploads")

    def __init__(self, env: Env) -> None:
        super().__init__()
        self.env = env
        self.api = env.client(trail=Trail(40))
        self.model = Model(env.topology)
        self.names = {alias: env.artifact(f"sm-{alias}") for alias in ALIASES}
        self.contents: dict[tuple[str, str], Files | Staged] = {}
        self.current: dict[str, MBox] = {}
        self.unprobed: list[MBox] = []
        self.unverified: list[VersionModel] = []
        self.labels = itertools.count(1)
        self.refusals: dict[str, str] = {}
        self.touches: dict[str, int] = {name: 1 for name in self.names.values()}
        self.read_touches: dict[str, int] = dict(self.touches)
        self.seen: dict[str, dict[str, int]] = {}
        self.usage: UsageModel | None = None
        if env.capability("usage")[0]:
            expect_ok(self.api.usage(), "USAGE-1", "usage")
            self.usage = UsageModel()  # the contract's price table, whatever is published

    def _touch(self, *names: str, read_only: bool = False) -> None:
        """Mark artifacts a step may have changed; invariants re-check only those (a read
        changes only usage)."""
        for name in names:
            self.read_touches[name] = self.read_touches.get(name, 0) + 1
            if not read_only:
                self.touches[name] = self.touches.get(name, 0) + 1

    def _changed(self, invariant: str, *, reads: bool = False) -> list[str]:
        """The artifacts touched since ``invariant`` last looked at them."""
        touches = self.read_touches if reads else self.touches
        seen = self.seen.setdefault(invariant, {})
        out = [n for n, count in touches.items() if seen.get(n) != count]
        seen.update({n: touches[n] for n in out})
        return out

    # --- reading -------------------------------------------------------------------

    def _read(self, name: str, version: str, place: Place, parts: int) -> None:
        want = (
            self.model.artifacts[name].versions.get(version)
            if version != "latest"
            else self.model.artifacts[name].latest
        )
        reply: Reply = self.api.read(name, version, urls=True, place=place)
        self._touch(name, read_only=True)
        if want is None:
            expect_error(reply, 404, "not_found", "READ-1", f"read of {version}")
            return
        body = expect_ok(reply, "READ-1", f"read of {version}")
        check_equal(body.get("version"), want.name, "READ-1", f"version read as {version}")
        check_version(body, want, place, "READ-2", signed=True)
        got = download(self.api, body, parts=parts)
        check(
            got == self.contents[(name, want.name)].data(),
            "READ-3" if parts > 1 else "READ-2",
            f"bytes of {want.name}",
        )
        if self.usage is not None:
            self.usage.read(name, want.location, place, want.size)

    @precondition(lambda self: bool(self.current))
    @rule(box=boxes, parts=st.integers(1, 8))
    def read_latest(self, box: MBox, parts: int) -> None:
        self._read(box.artifact, "latest", box.place, parts)

    @rule(
        alias=st.sampled_from(ALIASES),
        pick=st.integers(0, 20),
        place=st.runner().flatmap(lambda m: st.sampled_from(places_for(m.env))),
    )
    def read_any_version(self, alias: str, pick: int, place: str) -> None:
        name = self.names[alias]
        art = self.model.artifacts.get(name)
        if art is None or not art.versions:
            expect_error(self.api.read(name, "latest"), 404, "not_found", "READ-1", "read")
            return
        names = art.names()
        self._read(name, names[pick % len(names)], Place.parse(place), 1)

    # --- invariants ----------------------------------------------------------------

    @invariant()
    def artifact_state_agrees(self) -> None:
        """epoch, holder, latest, count and forked_from of every artifact match the model."""
        for name in self._changed("artifact_state_agrees"):
            alias = name.rsplit("/", 1)[-1]
            art = self.model.artifacts.get(name)
            reply = self.api.artifact(name)
            refused = self.refusals.pop(name, None)  # a refused open since the last look
            if art is None:
                expect_error(
                    reply, 404, "not_found", refused or "FENCE-4", f"{alias}, never opened"
                )
                continue
            body = expect_ok(reply, "READ-1", f"artifacts/read of {alias}")
            epoch_rule = "FENCE-4" if refused else "FENCE-1"
            check_equal(body.get("epoch"), art.epoch, epoch_rule, f"epoch of {alias}")
            check_equal(body.get("holder"), art.holder, "FENCE-2", f"holder of {alias}")
            latest = art.latest
            check_equal(
                body.get("latest"), latest.name if latest else None, "READ-1", f"latest of {alias}"
            )
            count_rule = "VER-7.a" if art.deleted else "VER-4"  # a delete leaves the count
            check_equal(body.get("versions"), len(art.versions), count_rule, f"count of {alias}")
            ff = (
                {"artifact": art.forked_from[0], "version": art.forked_from[1]}
                if art.forked_from
                else None
            )
            check_equal(body.get("forked_from"), ff, "FORK-2", f"forked_from of {alias}")

    @invariant()
    def version_list_agrees(self) -> None:
        """The list shows exactly the committed versions, in step order, where written."""
        for name in self._changed("version_list_agrees"):
            alias = name.rsplit("/", 1)[-1]
            art = self.model.artifacts.get(name)
            if art is None:
                continue
            listed = expect_ok(self.api.list(name), "READ-1", f"list of {alias}")["versions"]
            check_equal(
                [v.get("version") for v in listed],
                art.names(),
                "VER-7.a" if art.deleted else "VER-4",
                f"versions listed for {alias}",
            )
            check_equal(
                [Place.from_json(v.get("location")) for v in listed],
                [art.versions[n].location for n in art.names()],
                "PLACE-4",
                f"locations of {alias}'s versions",
            )

    @invariant()
    def committed_versions_read_back(self) -> None:
        """Each new version downloads byte-exact once, from where it was written."""
        while self.unverified:
            v = self.unverified.pop()
            self._read(v.artifact, v.name, v.location, 1)

    @invariant()
    def usage_agrees(self) -> None:
        """Usage per route matches the bytes this run wrote and was served (if offered)."""
        if self.usage is None:
            return
        for name in self._changed("usage_agrees", reads=True):
            if name in self.model.artifacts:
                self.usage.check_settled(name, partial(self._usage_of, name))

    def _usage_of(self, name: str) -> dict[str, Any]:
        return expect_ok(self.api.usage(name), "USAGE-1", f"usage of {name}")
