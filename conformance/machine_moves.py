"""State machine moves from real incidents, mixed into the ``ArtifactsMachine``.

- a relaunch with the same holder id (SkyPilot keeps ``SKYPILOT_TASK_ID``) still fences;
- a box that was only unreachable comes back and keeps writing and committing: refused;
- a commit cut half way (a file missing or changed) is ``incomplete`` and never counts;
- refused and invalid opens of every kind fence nobody and change nothing;
- what a refusal accepts is enforced: a refused version never reads back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, precondition, rule

from conformance.actions import expect_error, expect_ok, file_specs, open_raw
from conformance.machine_parts import Files, MBox
from conformance.model import Place, version_name
from conformance.rules import RuleViolation, check

if TYPE_CHECKING:
    from conformance.client import Client
    from conformance.env import Env
    from conformance.model import Model
    from conformance.usage import UsageModel

__all__ = ["IncidentMoves"]

#: Small checkpoints for these moves: they test refusals, not transfer sizes (kept fast).
SMALL_FILES = st.builds(
    Files,
    st.lists(
        st.tuples(st.sampled_from(["model.pt", "optim.pt", "meta.json"]), st.integers(0, 2048)),
        min_size=1,
        max_size=3,
        unique_by=lambda t: t[0],
    ).map(tuple),
    st.integers(0, 2**16),
)

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


class IncidentMoves:
    """Rules and checks the machine gains from incidents; needs the machine's state."""

    boxes = Bundle("boxes")
    api: Client
    model: Model
    names: dict[str, str]
    current: dict[str, MBox]
    refusals: dict[str, str]
    env: Env
    usage: UsageModel | None

    if TYPE_CHECKING:  # provided by ArtifactsMachine

        def _open(
            self, alias: str, resume: str | None, place: Place, holder: str | None = None
        ) -> MBox | None: ...

        def _touch(self, *names: str, read_only: bool = False) -> None: ...

        def checkpoint(self, box: MBox, files: Files, gap: int, kind: str) -> None: ...

    def _expect_absent(self, artifact: str, version: str, clause: str) -> None:
        """A refused version never reads back (unless a committed one has its name)."""
        if version in self.model.artifacts[artifact].versions:
            return
        reply = self.api.read(artifact, version)
        expect_error(reply, 404, "not_found", clause, f"read of the refused {version}")

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

    @precondition(lambda self: bool(self.current))
    @rule(alias=st.sampled_from(("a", "b", "c")), files=SMALL_FILES, corrupt=st.booleans())
    def cut_commit(self, alias: str, files: Files, corrupt: bool) -> None:
        """The live box's commit is cut half way: a file missing, or one byte changed."""
        box = self.current.get(self.names[alias])
        if box is None:
            return
        data = files.data()
        damaged = [n for n, blob in data.items() if blob]  # a file of size 0 has no byte to cut
        if not damaged:
            return
        latest = self.model.artifacts[box.artifact].latest
        version = version_name((latest.step if latest else 0) + 1)
        specs = file_specs(data)
        reply = self.api.write(box.artifact, box.token, version, [s.as_json() for s in specs])
        self._touch(box.artifact)
        body = expect_ok(reply, "VER-4.a", f"write of {version} by {box.label}")
        urls = {f["name"]: f["url"] for f in body.get("files", [])}
        target = damaged[-1]
        cut = corrupt or len(data) == 1
        sent = 0
        for name, blob in data.items():
            if name == target:
                if not cut:
                    continue
                blob = blob[:-1] + bytes([blob[-1] ^ 1])
            check(self.api.put(urls[name], blob).ok, "VER-4.a", f"PUT of {name}")
            sent += len(blob)
        if self.usage is not None:  # bytes PUT for an upload never committed: unsettled
            placement = self.env.topology.placement(box.place)
            self.usage.put(box.artifact, placement.location, box.place, sent)
        clause = "VER-4.b" if cut else "VER-4.a"
        expect_error(
            self.api.commit(box.artifact, box.token, str(body["upload"])),
            409,
            "incomplete",
            clause,
            f"commit of {version} cut half way ({'changed byte' if cut else 'file missing'})",
        )
        self._expect_absent(box.artifact, version, "VER-4.c")

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
