"""The hypothesis state machine: boxes launch, checkpoint, get fenced, fork and read.

A plain :class:`~conformance.model.Model` runs beside the target and predicts every
response; invariants compare the target's whole state with it after every step. Every
check raises a RuleViolation, so hypothesis' shrunk failing program names its rule.
Artifacts are three aliases ``a``/``b``/``c`` mapped to fresh names per example, so runs
never collide and forks can land on empty or non-empty artifacts alike.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    precondition,
    rule,
)

from conformance.actions import download, expect_error, expect_ok, file_specs
from conformance.client import Reply, Trail
from conformance.env import Env
from conformance.machine_moves import IncidentMoves
from conformance.machine_parts import (
    FILES,
    RULE_OF_KIND,
    Files,
    MBox,
    Pending,
    Staged,
    check_open,
    check_version,
    places_for,
)
from conformance.machine_retention import RetentionMoves
from conformance.machine_staged import StagedMoves
from conformance.model import (
    FileSpec,
    Model,
    OpenOutcome,
    Place,
    VersionModel,
    parse_fork,
    version_name,
)
from conformance.rules import check, check_equal
from conformance.usage import UsageModel

__all__ = ["ArtifactsMachine"]

ALIASES = ("a", "b", "c")


class ArtifactsMachine(RetentionMoves, StagedMoves, IncidentMoves, RuleBasedStateMachine):
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

    # --- opening -------------------------------------------------------------------

    def _open(
        self, alias: str, resume: str | None, place: Place, holder: str | None = None
    ) -> MBox | None:
        name = self.names[alias]
        label = holder or f"box-{next(self.labels)}"
        outcome = self.model.predict_open(name, resume, place)
        reply = self.api.open(name, resume, place, label)
        source = parse_fork(resume) if resume not in (None, "latest") else None
        self._touch(name, *([source[0]] if source else []))
        if not outcome.ok:
            self.refusals[name] = outcome.rule
            if outcome.code == "not_found" and reply.code == "not_empty":
                outcome = OpenOutcome(409, "not_empty", "FORK-1")  # both apply: either is right
            expect_error(reply, outcome.status, str(outcome.code), outcome.rule, "open")
            return None
        body = expect_ok(reply, outcome.rule, f"open of {alias} ({resume})")
        check_open(body, outcome, place, label, self.env.topology.fallback)
        self.model.record_open(name, outcome, body["epoch"], label)
        box = MBox(label, name, place, body["token"], body["epoch"])
        if name in self.current:
            self.unprobed.append(self.current[name])
        self.current[name] = box
        return box

    @rule(
        target=boxes,
        alias=st.sampled_from(ALIASES),
        place=st.runner().flatmap(lambda m: st.sampled_from(places_for(m.env))),
        resume=st.sampled_from(["latest", "latest", "fresh"]),
    )
    def launch(self, alias: str, place: str, resume: str) -> Any:
        box = self._open(alias, None if resume == "fresh" else "latest", Place.parse(place))
        return multiple() if box is None else box

    @rule(
        target=boxes,
        source=st.sampled_from(ALIASES),
        pick=st.integers(0, 20),
        alias=st.sampled_from(ALIASES),
        place=st.runner().flatmap(lambda m: st.sampled_from(places_for(m.env))),
    )
    def fork(self, source: str, pick: int, alias: str, place: str) -> Any:
        src = self.model.artifacts.get(self.names[source])
        names = src.names() if src else []
        version = names[pick % len(names)] if names else version_name(99_999_999)
        box = self._open(alias, f"o41://{self.names[source]}/{version}", Place.parse(place))
        return multiple() if box is None else box

    @precondition(lambda self: bool(self.env.read_key))
    @rule(alias=st.sampled_from(ALIASES), resume=st.sampled_from(["latest", "fresh"]))
    def open_with_read_key(self, alias: str, resume: str) -> None:
        reader = self.api.with_key(self.env.read_key)
        reply = reader.open(self.names[alias], None if resume == "fresh" else "latest")
        self.refusals[self.names[alias]] = "AUTH-2"
        self._touch(self.names[alias])
        expect_error(reply, 403, "forbidden", "AUTH-2", "open with a read-only key")

    # --- writing -------------------------------------------------------------------

    def _next_version(self, box: MBox, kind: str, gap: int) -> str:
        latest = self.model.artifacts[box.artifact].latest
        top = latest.step if latest else 0
        if kind == "existing" and latest is not None:
            return latest.name
        behind = version_name(max(1, top - gap))
        versions = self.model.artifacts[box.artifact].versions
        if kind == "behind" and top > 1 and behind not in versions:
            return behind
        return version_name(top + gap)

    def _write(self, box: MBox, version: str, files: Files) -> Pending | None:
        specs = file_specs(files.data())
        expected = self.model.predict_write(box.artifact, box.epoch, version, specs)
        reply = self.api.write(box.artifact, box.token, version, [s.as_json() for s in specs])
        self._touch(box.artifact)
        if expected.now is not None:
            expect_error(reply, *expected.now, f"write of {version} by {box.label}")
            return None
        if expected.later is not None and not reply.ok:
            expect_error(reply, *expected.later, f"write of {version} by {box.label}")
            return None
        placement = self.env.topology.placement(box.place)
        rule = RULE_OF_KIND[placement.kind]
        body = expect_ok(reply, rule, f"write of {version} by {box.label}")
        check_equal(
            (Place.from_json(body.get("location")), body.get("route")),
            (placement.location, placement.route),
            rule,
            f"write from {box.place}",
        )
        urls = {f["name"]: f["url"] for f in body.get("files", [])}
        data = files.data()
        for name, blob in data.items():
            check(self.api.put(urls[name], blob).ok, "VER-4", f"PUT of {name}")
        charge = None
        if self.usage is not None:
            total = sum(len(b) for b in data.values())
            charge = self.usage.put(box.artifact, placement.location, box.place, total)
        return Pending(box, version, str(body["upload"]), files, charge)

    def _commit(self, pending: Pending, token_box: MBox) -> dict[str, Any] | None:
        box = pending.box
        expected = self.model.predict_commit(
            box.artifact, token_box.epoch, box.epoch, pending.version
        )
        reply = self.api.commit(box.artifact, token_box.token, pending.upload, pending.listing())
        self._touch(box.artifact)
        what = f"commit of {pending.version} (by {box.label}, token of {token_box.label})"
        if expected is not None:
            expect_error(reply, *expected, what)
            self._expect_absent(box.artifact, pending.version, expected[2])
            return None
        body = expect_ok(reply, "VER-4", what)
        placement = self.env.topology.placement(box.place)
        version = VersionModel(
            box.artifact,
            pending.version,
            placement.location,
            tuple(file_specs(pending.data())),
            box.epoch,
            box.label,
            box.place,
        )
        check_equal(
            Place.from_json(body.get("location")),
            placement.location,
            RULE_OF_KIND[placement.kind],
            f"location of {pending.version}",
        )
        check_equal(body.get("version"), pending.version, "VER-4", "committed version name")
        self.model.record_commit(version)
        self.contents[(box.artifact, version.name)] = pending.stored()
        self.unverified.append(version)
        if pending.charge is not None:
            pending.charge.settled = True
        return body

    @rule(
        box=boxes,
        files=FILES,
        gap=st.integers(1, 300),
        kind=st.sampled_from(["next", "next", "next", "existing", "behind"]),
    )
    def checkpoint(self, box: MBox, files: Files, gap: int, kind: str) -> None:
        pending = self._write(box, self._next_version(box, kind, gap), files)
        if pending is not None:
            self._commit(pending, box)

    @precondition(lambda self: bool(self.current))
    @rule(alias=st.sampled_from(ALIASES), files=FILES, gap=st.integers(1, 300))
    def checkpoint_by_current_box(self, alias: str, files: Files, gap: int) -> None:
        """The usual case, so it gets a rule of its own: the live box writes the next step."""
        box = self.current.get(self.names[alias])
        if box is not None:
            self.checkpoint(box, files, gap, "next")

    @rule(target=uploads, box=boxes, files=FILES, gap=st.integers(1, 300))
    def upload_without_commit(self, box: MBox, files: Files, gap: int) -> Any:
        pending = self._write(box, self._next_version(box, "next", gap), files)
        return multiple() if pending is None else pending

    @rule(pending=consumes(uploads), with_current_token=st.booleans())
    def commit_upload(self, pending: Pending, with_current_token: bool) -> None:
        token_box = self.current[pending.box.artifact] if with_current_token else pending.box
        self._commit(pending, token_box)

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
    def fenced_boxes_cannot_write(self) -> None:
        """At most one unfenced writer per artifact: every superseded box is refused."""
        while self.unprobed:
            box = self.unprobed.pop()
            specs = [FileSpec("probe.bin", 0, file_specs({"p": b""})[0].sha256).as_json()]
            latest = self.model.artifacts[box.artifact].latest
            version = version_name((latest.step if latest else 0) + 1)
            expect_error(
                self.api.write(box.artifact, box.token, version, specs),
                409,
                "fenced",
                "FENCE-2",
                f"write by the superseded {box.label}",
            )

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
