"""State machine moves of single-write uploads and their commits, mixed into the machine.

- a checkpoint: one write declaring every file with size and sha256, its PUTs, the commit;
  the next step, an existing one (VER-2) or one behind the latest (VER-3), by any box;
- an upload left uncommitted (the ``uploads`` bundle) and committed later, with its own
  token or the artifact's current one (FENCE-2 when that is another box's);
- a commit cut half way (a file missing or a byte changed) is ``incomplete`` and never
  counts; a refused version never reads back.

Uploads of many writes and streamed files are :mod:`conformance.machine_streams`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle
from hypothesis.stateful import consumes
from hypothesis.stateful import multiple
from hypothesis.stateful import precondition
from hypothesis.stateful import rule

from conformance.actions import file_specs
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.checks import expect_write_placed
from conformance.machine_parts import ALIASES
from conformance.machine_parts import FILES
from conformance.machine_parts import RULE_OF_KIND
from conformance.machine_parts import SMALL_FILES
from conformance.machine_parts import Files
from conformance.machine_parts import MBox
from conformance.machine_parts import Pending
from conformance.machine_parts import Staged
from conformance.model import Model
from conformance.model import Place
from conformance.model import VersionModel
from conformance.model import version_name
from conformance.rules import check
from conformance.rules import check_equal

if TYPE_CHECKING:
    from conformance.client import Client
    from conformance.env import Env
    from conformance.usage import UsageModel

__all__ = ["UploadMoves"]


class UploadMoves:
    """Writes, commits and cut commits; needs the machine's state."""

    boxes = Bundle("boxes")
    uploads = Bundle("uploads")
    api: Client
    model: Model
    names: dict[str, str]
    current: dict[str, MBox]
    contents: dict[tuple[str, str], Files | Staged]
    unverified: list[VersionModel]
    env: Env
    usage: UsageModel | None

    if TYPE_CHECKING:  # provided by ArtifactsMachine

        def _touch(self, *names: str, read_only: bool = False) -> None: ...

    def _expect_absent(self, artifact: str, version: str, clause: str) -> None:
        """A refused version never reads back (unless a committed one has its name)."""
        if version in self.model.artifacts[artifact].versions:
            return
        reply = self.api.read(artifact, version)
        expect_error(reply, 404, "not_found", clause, f"read of the refused {version}")

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
        body = expect_write_placed(reply, placement, rule, f"write of {version} by {box.label}",
                                   f"write from {box.place}")
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
