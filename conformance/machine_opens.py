"""State machine moves of opens and fencing, mixed into the ``ArtifactsMachine``.

- launches (``latest`` or fresh) and forks from any version of any alias, from any place;
- an open with the read key is refused (AUTH-2) and fences nobody;
- a relaunch with the same holder id (SkyPilot keeps ``SKYPILOT_TASK_ID``) still fences;
- a box that was only unreachable comes back and keeps writing and committing: refused;
- refused and invalid opens of every kind fence nobody and change nothing;
- the invariant: every superseded box's write is 409 ``fenced`` (FENCE-2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle
from hypothesis.stateful import invariant
from hypothesis.stateful import multiple
from hypothesis.stateful import precondition
from hypothesis.stateful import rule

from conformance.actions import file_specs
from conformance.actions import open_raw
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.machine_parts import ALIASES
from conformance.machine_parts import SMALL_FILES
from conformance.machine_parts import Files
from conformance.machine_parts import MBox
from conformance.machine_parts import check_open
from conformance.machine_parts import places_for
from conformance.model import FileSpec
from conformance.model import Model
from conformance.model import OpenOutcome
from conformance.model import Place
from conformance.model import parse_fork
from conformance.model import version_name
from conformance.rules import RuleViolation

if TYPE_CHECKING:
    from conformance.client import Client
    from conformance.env import Env

__all__ = ["OpenMoves"]

#: Refused or invalid opens: (what to send, the answers that are right).
REFUSED_OPENS = (
    "place-empty-cloud",
    "place-without-region",
    "resume-word",
    "fork-malformed",
    "fork-missing",
    "no-key",
    "unknown-key",
)



class OpenMoves:
    """Opens, forks, relaunches and refused opens, and the fencing invariant; needs the
    machine's state."""

    boxes = Bundle("boxes")
    api: Client
    model: Model
    names: dict[str, str]
    current: dict[str, MBox]
    unprobed: list[MBox]
    refusals: dict[str, str]
    labels: Any
    env: Env

    if TYPE_CHECKING:  # provided by ArtifactsMachine and UploadMoves

        def _touch(self, *names: str, read_only: bool = False) -> None: ...

        def checkpoint(self, box: MBox, files: Files, gap: int, kind: str) -> None: ...

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

    @precondition(lambda self: bool(self.current))
    @rule(target=boxes, alias=st.sampled_from(("a", "b", "c")), place=st.sampled_from([0, 1, 2]))
    def relaunch_same_task(self, alias: str, place: int) -> Any:
        """The managed job is recovered: the new box has the old box's holder id."""
        old = self.current.get(self.names[alias])
        if old is None:
            return self._none()
        places = self.env.topology.locations
        box = self._open(alias, "latest", places[place % len(places)], holder=old.label)
        return self._none() if box is None else box

    def _none(self) -> Any:
        from hypothesis.stateful import multiple

        return multiple()

    @rule(box=boxes, files=SMALL_FILES, gap=st.integers(1, 50))
    def unreachable_box_comes_back(self, box: MBox, files: Files, gap: int) -> None:
        """A box that was replaced keeps training: two more checkpoints, all refused."""
        if not self.model.is_fenced(box.artifact, box.epoch):
            return
        for _ in range(2):
            self.checkpoint(box, files, gap, "next")

    @rule(
        alias=st.sampled_from(("a", "b", "c")),
        kind=st.sampled_from(REFUSED_OPENS),
        files=SMALL_FILES,
    )
    def refused_open(self, alias: str, kind: str, files: Files) -> None:
        """A refused or invalid open; afterwards the live box still commits."""
        name = self.names[alias]
        other = self.names["b" if alias != "b" else "c"]
        sends = {
            "place-empty-cloud": lambda: open_raw(
                self.api, name, "latest", {"cloud": "", "region": "x"}
            ),
            "place-without-region": lambda: open_raw(self.api, name, "latest", {"cloud": "aws"}),
            "resume-word": lambda: self.api.open(name, "earliest"),
            "fork-malformed": lambda: self.api.open(name, f"o41://{other}/step-1"),
            "fork-missing": lambda: self.api.open(name, f"o41://{other}-gone/step-00000001"),
            "no-key": lambda: self.api.with_key(None).open(name),
            "unknown-key": lambda: self.api.with_key("ak_not_a_key_of_this_run").open(name),
        }
        allowed = {
            "no-key": {(401, "unauthenticated")},
            "unknown-key": {(401, "unauthenticated")},
            "fork-missing": {(404, "not_found"), (409, "not_empty")},
        }.get(kind, {(400, "invalid_argument")})
        reply = sends[kind]()
        self.refusals[name] = "FENCE-4.a"
        self._touch(name)
        if (reply.status, reply.code) not in allowed:
            raise RuleViolation("FENCE-4.a", f"refused open ({kind}): got {reply.brief()}")
        box = self.current.get(name)
        if box is not None:
            self.checkpoint(box, files, 1, "next")

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
