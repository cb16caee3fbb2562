"""State machine moves of uploads that take more than one write, mixed into the machine.

- VER-6: files declared by name alone, PUT (sometimes twice, sometimes chunked), each PUT
  answering what it received, beside declared files in one upload; the commit lists them;
- VER-5: more writes join an open upload (the ranks of one job), at once or later from the
  ``uploads`` bundle, and one commit makes one version of every file of every write;
- refused joins: a name declared again (400), another version's upload (400), another
  artifact's, an unknown or a committed upload (404), an old token or an upload started
  under an older epoch (409 fenced); a refused commit list (VER-6.c/d) leaves the upload
  committable with the right one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle
from hypothesis.stateful import multiple
from hypothesis.stateful import rule

from conformance.actions import file_specs
from conformance.actions import sha256
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.machine_parts import RULE_OF_KIND
from conformance.machine_parts import Files
from conformance.machine_parts import MBox
from conformance.machine_parts import Pending
from conformance.machine_parts import small_files
from conformance.model import Place
from conformance.model import parse_step
from conformance.model import version_name
from conformance.rules import check
from conformance.rules import check_equal
from conformance.uploads import expect_put_answer

if TYPE_CHECKING:
    from conformance.client import Client
    from conformance.env import Env
    from conformance.model import Model
    from conformance.usage import UsageModel

__all__ = ["StreamMoves"]

#: Small files: these moves test how an upload is assembled, not transfer sizes.
STAGED_FILES = small_files(4096, 2)
#: How a write declares its files: all with size and sha256, all by name alone, or half each.
MODES = st.sampled_from(["declared", "streamed", "mixed"])
#: A commit list that is wrong (VER-6.c: 409 incomplete; VER-6.d: 400), tried before the
#: right one.
BAD_LISTS = (None, None, "missing", "wrong", "foreign", "twice")
#: A name no write of the machine declares: a refused write's new name must not join.
LATE = "late/extra.bin"


def ranked(files: Files, rank: int) -> Files:
    """Another writer's files, under ``rank-N/``: no name is declared twice in the upload,
    and none is a folder of another file's path."""
    return Files(tuple((f"rank-{rank}/{n}", s) for n, s in files.sizes), files.seed + rank)


def streamed_names(files: Files, mode: str) -> set[str]:
    names = [n for n, _ in files.sizes]
    if mode == "declared":
        return set()
    return set(names) if mode == "streamed" else set(names[::2])


def declare(data: dict[str, bytes], streamed: set[str]) -> list[dict[str, Any]]:
    return [{"name": s.name} if s.name in streamed else s.as_json() for s in file_specs(data)]


class StreamMoves:
    """Rules of many-write and streamed uploads; needs the machine's state and helpers."""

    boxes = Bundle("boxes")
    uploads = Bundle("uploads")
    api: Client
    model: Model
    current: dict[str, MBox]
    env: Env
    usage: UsageModel | None

    if TYPE_CHECKING:  # provided by ArtifactsMachine and UploadMoves

        def _touch(self, *names: str, read_only: bool = False) -> None: ...

        def _next_version(self, box: MBox, kind: str, gap: int) -> str: ...

        def _commit(self, pending: Pending, token_box: MBox) -> dict[str, Any] | None: ...

        def _expect_absent(self, artifact: str, version: str, clause: str) -> None: ...

    def __init__(self) -> None:
        super().__init__()
        #: Committed uploads (box, version, upload id): a write into one is 404 (VER-5.c).
        self.closed_uploads: list[tuple[MBox, str, str]] = []

    # --- helpers -------------------------------------------------------------------

    def _urls(self, body: dict[str, Any], data: dict[str, bytes], clause: str,
              what: str) -> dict[str, str]:
        """The write's PUT URLs: one per file it declared (API-1.d), no more."""
        files = body.get("files")
        check(isinstance(files, list), clause, f"{what}: files is {files!r}")
        urls = {str(f.get("name")): str(f.get("url")) for f in files if isinstance(f, dict)}
        check_equal(sorted(urls), sorted(data), clause, f"{what}: the files given PUT URLs")
        return urls

    def _put_files(self, urls: dict[str, str], data: dict[str, bytes], streamed: set[str],
                   reput: bool, chunked: bool, clause: str, what: str) -> int:
        """PUT every file; a streamed one's PUT answers what it received (VER-6.a), and with
        ``reput`` a first, different body is replaced by the final one (VER-6.b). Returns
        the bytes of those replaced bodies."""
        replaced = 0
        for name, blob in data.items():
            if name not in streamed:
                res = self.api.put(urls[name], blob)
                check(res.ok, clause, f"{what}: PUT of {name} got {res.brief()}")
                continue
            if reput:  # a writer that redoes its file before the commit
                early = blob[::-1] + b"early"
                expect_put_answer(self.api.put(urls[name], early), name, early, "VER-6.a", what)
                replaced += len(early)
            if chunked and len(blob) > 1:  # no Content-Length (VER-6.a allows both)
                half = len(blob) // 2
                res = self.api.put_chunked(urls[name], [blob[:half], blob[half:]])
            else:
                res = self.api.put(urls[name], blob)
            expect_put_answer(res, name, blob, "VER-6.b" if reput else "VER-6.a", what)
        return replaced

    def _charge(self, pending: Pending, nbytes: int, replaced: int) -> None:
        """Bytes PUT for the upload settle at its commit; replaced bodies never settle (an
        implementation may count them or not)."""
        if self.usage is None:
            return
        box = pending.box
        location = self.env.topology.placement(box.place).location
        if pending.charge is None:
            pending.charge = self.usage.put(box.artifact, location, box.place, nbytes)
        else:
            self.usage.grow(pending.charge, location, box.place, nbytes)
        if replaced:
            self.usage.put(box.artifact, location, box.place, replaced)

    def _joined(self, pending: Pending, reply_body: dict[str, Any], files: Files,
                streamed: set[str], what: str) -> None:
        """An accepted write into ``pending``: the same upload, its URLs, its PUTs."""
        check_equal(reply_body.get("upload"), pending.upload, "VER-5.a", f"{what}: upload")
        data = files.data()
        urls = self._urls(reply_body, data, "VER-5.a", what)
        replaced = self._put_files(urls, data, streamed, False, False, "VER-5.a", what)
        pending.joined.append(files)
        pending.streamed |= streamed
        self._charge(pending, sum(len(b) for b in data.values()), replaced)

    def _write_again(self, pending: Pending, token_box: MBox) -> None:
        """A write into the upload declaring one of its names again (and a new one): 400
        whatever else is wrong (VER-6.f), and the new name does not join (VER-5.b)."""
        again = sorted(pending.data())[0]
        files = [{"name": again}, {"name": LATE, "size": 1, "sha256": sha256(b"x")}]
        art = pending.box.artifact
        reply = self.api.write(art, token_box.token, pending.version, files, pending.upload)
        self._touch(art)
        expect_error(reply, 400, "invalid_argument", "VER-5.b",
                     f"a write declaring {again} again into {pending}")

    def _refused_list(self, pending: Pending, kind: str) -> None:
        """A commit with a wrong list: refused, nothing shows, the upload stays committable."""
        box, art = pending.box, pending.box.artifact
        full = [s.as_json() for s in file_specs(pending.data())]
        listing = pending.listing() or []
        if kind == "missing":
            left_out = [e for e in listing if e["name"] in pending.streamed][:1]
            if not left_out:
                return  # no streamed file to leave out (declared files need no listing)
            sent, status, code, clause = [e for e in listing if e not in left_out], 409, \
                "incomplete", "VER-6.c"
        elif kind == "wrong":  # a listed file with another size than declared or received
            first, *rest = listing or full[:1]
            sent, status, code, clause = [{**first, "size": first["size"] + 1}, *rest], 409, \
                "incomplete", "VER-6.c"
        elif kind == "foreign":
            stray = {"name": "not-of-this-upload.bin", "size": 0, "sha256": sha256(b"")}
            sent, status, code, clause = [*listing, stray], 400, "invalid_argument", "VER-6.d"
        else:  # one name twice, with the same right values
            twice = (listing or full)[0]
            sent, status, code, clause = [*listing, twice] if listing else [twice, twice], \
                400, "invalid_argument", "VER-6.d"
        reply = self.api.commit(art, box.token, pending.upload, sent)
        self._touch(art)
        expect_error(reply, status, code, clause, f"commit of {pending} with a {kind} list")
        self._expect_absent(art, pending.version, clause)

    # --- rules ---------------------------------------------------------------------

    @rule(
        target=uploads,
        box=boxes,
        first=STAGED_FILES,
        mode=MODES,
        more=st.lists(st.tuples(STAGED_FILES, MODES), max_size=2),
        reput=st.booleans(),
        chunked=st.booleans(),
        again=st.booleans(),
        bad_list=st.sampled_from(BAD_LISTS),
        list_declared=st.booleans(),
        commit_now=st.booleans(),
        gap=st.integers(1, 50),
    )
    def staged_checkpoint(self, box: MBox, first: Files, mode: str,
                          more: list[tuple[Files, str]], reput: bool, chunked: bool,
                          again: bool, bad_list: str | None, list_declared: bool,
                          commit_now: bool, gap: int) -> Any:
        """A checkpoint of declared and streamed files, written by one or more ranks; it is
        committed at once, or left in ``uploads`` for more writes and a later commit."""
        version = self._next_version(box, "next", gap)
        data, streamed = first.data(), streamed_names(first, mode)
        expected = self.model.predict_write(box.artifact, box.epoch, version, file_specs(data))
        reply = self.api.write(box.artifact, box.token, version, declare(data, streamed))
        self._touch(box.artifact)
        what = f"staged write of {version} by {box.label}"
        refusal = expected.now or (None if reply.ok else expected.later)
        if refusal is not None:
            expect_error(reply, *refusal, what)
            return multiple()
        clause = "VER-6.a" if streamed else "VER-4"
        body = expect_ok(reply, clause, what)
        placement = self.env.topology.placement(box.place)
        check_equal(
            (Place.from_json(body.get("location")), body.get("route")),
            (placement.location, placement.route),
            RULE_OF_KIND[placement.kind],
            f"{what}, from {box.place}",
        )
        urls = self._urls(body, data, clause, what)
        replaced = self._put_files(urls, data, streamed, reput, chunked, clause, what)
        pending = Pending(box, version, str(body.get("upload")), first, None,
                          streamed=set(streamed), list_declared=list_declared)
        self._charge(pending, sum(len(b) for b in data.values()), replaced)
        conflict = expected.later is not None  # (any write into it may then be refused)
        for rank, (files, how) in enumerate([] if conflict else more, 1):
            more_files = ranked(files, rank)
            more_streamed = streamed_names(more_files, how)
            join = f"rank {rank}'s write into {pending}"
            reply = self.api.write(box.artifact, box.token, version,
                                   declare(more_files.data(), more_streamed), pending.upload)
            self._joined(pending, expect_ok(reply, "VER-5.a", join), more_files, more_streamed,
                         join)
        if again and not conflict:
            self._write_again(pending, box)
        if not commit_now:
            return pending
        if bad_list is not None and not conflict:
            self._refused_list(pending, bad_list)
        committed = self._commit(pending, box)
        if committed is not None:
            got = {f.get("name"): (f.get("size"), f.get("sha256"))
                   for f in committed.get("files") or []}
            want = {s.name: (s.size, s.sha256) for s in file_specs(pending.data())}
            check_equal(got, want, "VER-5.a" if pending.joined else "VER-6",
                        f"files of the committed {version}")
            self.closed_uploads.append((box, version, pending.upload))
        return multiple()

    @rule(pending=uploads, own_token=st.booleans(), files=STAGED_FILES, mode=MODES,
          again=st.booleans())
    def join_upload(self, pending: Pending, own_token: bool, files: Files, mode: str,
                    again: bool) -> None:
        """Another rank writes into an open upload, with the upload's token or with the
        artifact's newest one: an upload never changes hands (VER-5.d)."""
        art = pending.box.artifact
        token_box = pending.box if own_token else self.current[art]
        if again:
            self._write_again(pending, token_box)
            return
        fenced = token_box.epoch != pending.box.epoch or self.model.is_fenced(
            art, pending.box.epoch)
        # The version's own conflict, as a write by the newest holder would meet it.
        conflict = self.model.predict_write(art, self.model.artifacts[art].epoch,
                                            pending.version, []).later
        more_files = ranked(files, len(pending.joined) + 1)
        streamed = streamed_names(more_files, mode)
        reply = self.api.write(art, token_box.token, pending.version,
                               declare(more_files.data(), streamed), pending.upload)
        self._touch(art)
        what = f"write into {pending} with the token of {token_box.label}"
        # Two 409s the contract does not order: either is right when both apply.
        allowed = ([(409, "fenced", "VER-5.d")] if fenced else []) + ([conflict] if conflict
                                                                       else [])
        if fenced or (conflict is not None and not reply.ok):
            got = next((a for a in allowed if (reply.status, reply.code) == a[:2]), allowed[0])
            expect_error(reply, *got, what)
            return
        self._joined(pending, expect_ok(reply, "VER-5.a", what), more_files, streamed, what)

    @rule(pending=uploads, kind=st.sampled_from(["other-version", "other-artifact"]),
          own_token=st.booleans())
    def misdirected_join(self, pending: Pending, kind: str, own_token: bool) -> None:
        """A write into an upload of another version (400, before any 409), or into another
        artifact's upload (404, before any 409): nothing changes (VER-5.c)."""
        art = pending.box.artifact
        files = [{"name": LATE, "size": 1, "sha256": sha256(b"x")}]
        if kind == "other-version":
            token_box = pending.box if own_token else self.current[art]
            step = parse_step(pending.version)
            assert step is not None
            version = version_name(step + 1)
            reply = self.api.write(art, token_box.token, version, files, pending.upload)
            self._touch(art)
            expect_error(reply, 400, "invalid_argument", "VER-5.c",
                         f"a write of {version} into {pending}")
            return
        other = next((b for name, b in self.current.items() if name != art), None)
        if other is None:
            return
        reply = self.api.write(other.artifact, other.token, pending.version, files,
                               pending.upload)
        self._touch(art, other.artifact)
        expect_error(reply, 404, "not_found", "VER-5.c",
                     f"{other.label}'s write into {pending} of another artifact")

    @rule(box=boxes, pick=st.integers(0, 20), committed=st.booleans())
    def write_into_closed_upload(self, box: MBox, pick: int, committed: bool) -> None:
        """A write naming a committed upload (its own version, its own token or the newest)
        or an unknown one: 404, before any 409 (VER-5.c)."""
        files = [{"name": LATE, "size": 1, "sha256": sha256(b"x")}]
        if committed and self.closed_uploads:
            owner, version, upload = self.closed_uploads[pick % len(self.closed_uploads)]
            art = owner.artifact
            token_box = owner if pick % 2 else self.current[art]
            what = f"a write into the committed upload of {version}"
        else:
            art, token_box = box.artifact, box
            latest = self.model.artifacts[art].latest
            version = version_name((latest.step if latest else 0) + 1)
            upload = f"up-no-such-upload-{pick:04d}"
            what = f"a write into the unknown upload {upload}"
        reply = self.api.write(art, token_box.token, version, files, upload)
        self._touch(art)
        expect_error(reply, 404, "not_found", "VER-5.c", what)
