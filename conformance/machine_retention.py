"""State machine moves of retention (VER-7), mixed into the ``ArtifactsMachine``.

The newest holder deletes a committed version that is not the latest (keep-the-last-k):
from then on the model has it no more, so the invariants check that it left read, list,
the version count and usage placements at once while the latest stayed. Deletes of the
latest, with a superseded box's token, of an unknown or deleted version, or with a read key
are refused and change nothing. A deleted step is never written again (VER-3 compares with
the latest), and a URL handed out before the delete still serves its bytes (VER-7.c).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle
from hypothesis.stateful import invariant
from hypothesis.stateful import precondition
from hypothesis.stateful import rule

from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Reply
from conformance.client import parse_time
from conformance.machine_parts import SMALL_FILES
from conformance.machine_parts import Files
from conformance.machine_parts import MBox
from conformance.machine_parts import Staged
from conformance.model import Place
from conformance.model import version_name
from conformance.rules import check
from conformance.rules import check_equal

if TYPE_CHECKING:
    from conformance.client import Client
    from conformance.env import Env
    from conformance.model import Model
    from conformance.model import VersionModel
    from conformance.usage import UsageModel

__all__ = ["RetentionMoves"]

#: What a delete names: an older version (most often: the move that succeeds), the latest,
#: one deleted before, one never committed; or any of them with the read key.
DELETE_KINDS = ("older", "older", "older", "latest", "deleted", "unknown", "read-key")
#: Bytes fetched from a URL kept from before a delete: enough to show it still serves.
KEPT_BYTES = 4096


class RetentionMoves:
    """The delete rule and the placements invariant; needs the machine's state."""

    boxes = Bundle("boxes")
    api: Client
    model: Model
    names: dict[str, str]
    current: dict[str, MBox]
    env: Env
    usage: UsageModel | None
    contents: dict[tuple[str, str], Files | Staged]
    unverified: list[VersionModel]

    if TYPE_CHECKING:  # provided by ArtifactsMachine and UploadMoves

        def _touch(self, *names: str, read_only: bool = False) -> None: ...

        def _changed(self, invariant: str, *, reads: bool = False) -> list[str]: ...

        def _expect_absent(self, artifact: str, version: str, clause: str) -> None: ...

        def checkpoint(self, box: MBox, files: Files, gap: int, kind: str) -> None: ...

    def _pick_deleted(self, art: Any, kind: str, pick: int) -> str:
        names = art.names()
        older = names[:-1]
        if kind in ("older", "read-key") and older:
            return str(older[pick % len(older)])
        if kind == "deleted" and art.deleted:
            return str(sorted(art.deleted)[pick % len(art.deleted)])
        if kind == "unknown":  # also what an upload not committed yet would be: invisible
            return version_name(art.latest.step + 1 + pick)
        return str(names[-1])

    @precondition(lambda self: bool(self.current))
    @rule(
        alias=st.sampled_from(("a", "b", "c")),
        files=SMALL_FILES,
        pick=st.integers(0, 20),
        keep_url=st.booleans(),
        rewrite=st.booleans(),
        refusals=st.booleans(),
    )
    def keep_last_versions(self, alias: str, files: Files, pick: int, keep_url: bool,
                           rewrite: bool, refusals: bool) -> None:
        """A run that keeps its last checkpoints: the newest holder checkpoints until an
        older version exists and deletes one; then perhaps deletes it again (404) and the
        latest (409). A rule of its own, needing no bundle, so that short programs delete."""
        box = self.current.get(self.names[alias])
        if box is None:
            return
        art = self.model.artifacts[box.artifact]
        for _ in range(2):
            if len(art.versions) < 2:
                self.checkpoint(box, files, 1, "next")
        if self.current.get(box.artifact) is not box or len(art.versions) < 2:
            return  # (the checkpoint can only fail on a broken target, which it reported)
        version = self._pick_deleted(art, "older", pick)
        self._delete(box, box, version, "older", keep_url, rewrite)
        if refusals:
            self._delete(box, box, version, "deleted", False, False)
            self._delete(box, box, self._pick_deleted(art, "latest", pick), "latest", False,
                         False)

    @rule(
        box=boxes,
        newest=st.booleans(),
        kind=st.sampled_from(DELETE_KINDS),
        pick=st.integers(0, 20),
        keep_url=st.booleans(),
        rewrite=st.booleans(),
    )
    def delete_version(self, box: MBox, newest: bool, kind: str, pick: int, keep_url: bool,
                       rewrite: bool) -> None:
        """A delete of any kind, by the artifact's newest holder or by ``box`` (perhaps
        superseded since)."""
        art = self.model.artifacts[box.artifact]
        if not art.versions:
            return
        who = self.current[box.artifact] if newest else box
        self._delete(box, who, self._pick_deleted(art, kind, pick), kind, keep_url, rewrite)

    def _delete(self, box: MBox, who: MBox, version: str, kind: str, keep_url: bool,
                rewrite: bool) -> None:
        """One delete in ``box``'s artifact with ``who``'s token, checked against the model."""
        art = self.model.artifacts[box.artifact]
        api = self.api
        if kind == "read-key":
            if not self.env.read_key:
                return
            api = self.api.with_key(self.env.read_key)
            allowed = [(403, "forbidden", "VER-7.d")]  # the key comes before anything else
        else:
            allowed = self.model.predict_delete(box.artifact, who.epoch, version)
        kept = self._read_signed(box.artifact, version, who.place) if keep_url and not allowed \
            else None
        reply = api.delete(box.artifact, who.token, version)
        self._touch(box.artifact)
        what = f"delete of {version} ({kind}) with the token of {who.label}"
        if allowed:
            got = next((a for a in allowed if (reply.status, reply.code) == a[:2]), allowed[0])
            expect_error(reply, *got, what)
            return
        body = expect_ok(reply, "VER-7.a", what)
        check_equal((body.get("artifact"), body.get("version")), (box.artifact, version),
                    "VER-7.a", f"{what}: artifact and version answered")
        try:
            stamped = parse_time(body.get("deleted_at")) is not None
        except ValueError:
            stamped = False
        check(stamped, "VER-7.a", f"{what}: deleted_at {body.get('deleted_at')!r}")
        gone = art.versions[version]
        self.model.record_delete(box.artifact, version)
        self.unverified[:] = [v for v in self.unverified if v is not gone]
        expect_error(self.api.read(box.artifact, version), 404, "not_found", "VER-7.a",
                     f"read of {version} just deleted")
        if kept is not None:
            self._fetch_kept(kept, gone, who.place)
        if rewrite:
            self._write_deleted_step(who, version)

    def _read_signed(self, artifact: str, version: str, place: Place) -> Reply:
        return self.api.read(artifact, version, urls=True, place=place)

    def _fetch_kept(self, read: Reply, gone: VersionModel, place: Place) -> None:
        """A URL read before the delete still serves the version's bytes (VER-7.c): the
        first bytes of the smallest file not empty, while the URL has time left."""
        body = expect_ok(read, "READ-1", f"read of {gone.name} before its delete")
        claimed = parse_time(body.get("urls_expire_at"))
        files = [f for f in body.get("files") or [] if int(f.get("size") or 0) > 0]
        left = None if claimed is None else claimed - read.server_time
        if not files or left is None or time.time() - read.received_at > left - 10:
            return  # nothing to fetch, or too close to the expiry the reply claimed
        f = min(files, key=lambda f: int(f["size"]))
        n = min(int(f["size"]), KEPT_BYTES)
        # Ranged, as a resuming loader reads (READ-3: any satisfiable range is 206).
        res = self.api.fetch(f["url"], byte_range=(0, n - 1))
        want = self.contents[(gone.artifact, gone.name)].data()[f["name"]][:n]
        check_equal((res.status, res.content == want), (206, True), "VER-7.c",
                    f"ranged GET of {f['name']} of the deleted {gone.name} by a kept URL")
        if self.usage is not None:  # served bytes count, deleted version or not (USAGE-1.b)
            self.usage.read(gone.artifact, gone.location, place, n)

    def _write_deleted_step(self, box: MBox, version: str) -> None:
        """The deleted step again, by the newest holder: 409 not_after_latest at the write
        or at the commit (VER-7.b), and it never shows."""
        data = make_files({"model.pt": 64}, len(version))
        reply = self.api.write(box.artifact, box.token, version,
                               [s.as_json() for s in file_specs(data)])
        what = f"rewrite of the deleted {version} by {box.label}"
        if not reply.ok:
            expect_error(reply, 409, "not_after_latest", "VER-7.b", what)
            return
        body = expect_ok(reply, "VER-7.b", what)
        urls = {f["name"]: f["url"] for f in body.get("files") or []}
        for name, blob in data.items():
            check(name in urls and self.api.put(urls[name], blob).ok, "VER-7.b",
                  f"{what}: PUT of {name}")
        if self.usage is not None:  # PUT for an upload that never commits: never settled
            location = self.env.topology.placement(box.place).location
            self.usage.put(box.artifact, location, box.place, sum(map(len, data.values())))
        reply = self.api.commit(box.artifact, box.token, str(body.get("upload")))
        expect_error(reply, 409, "not_after_latest", "VER-7.b", f"{what}: commit")
        self._expect_absent(box.artifact, version, "VER-7.b")

    @invariant()
    def placements_agree(self) -> None:
        """Usage placements count the committed versions written away from their box's
        region, per place, with their bytes; a deleted one at once no more (VER-7.a)."""
        if self.usage is None:
            return
        topo = self.env.topology
        for name in self._changed("placements_agree"):
            art = self.model.artifacts.get(name)
            if art is None:
                continue
            usage = expect_ok(self.api.usage(name), "USAGE-1", f"usage of {name}")
            got: dict[Place | None, tuple[int, int]] = {}
            for row in usage.get("placements") or []:
                if row.get("artifact", name) != name:
                    continue
                place = Place.from_json(row.get("place"))
                placed = topo.placement(place)
                check_equal(
                    (row.get("kind"), Place.from_json(row.get("location")), row.get("route")),
                    (placed.kind, placed.location, placed.route),
                    "USAGE-1.e",
                    f"placements row of {name} for {place}",
                )
                n, b = got.get(place, (0, 0))
                got[place] = (n + int(row.get("versions") or 0), b + int(row.get("bytes") or 0))
            want: dict[Place | None, tuple[int, int]] = {}
            for v in art.versions.values():
                if topo.placement(v.written_from).kind != "local":
                    n, b = want.get(v.written_from, (0, 0))
                    want[v.written_from] = (n + 1, b + v.size)
            check_equal(
                {p: c for p, c in got.items() if c != (0, 0)},
                want,
                "VER-7.a" if art.deleted else "USAGE-1.e",
                f"placements (versions, bytes) of {name} by place",
            )
