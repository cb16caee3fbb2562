"""Mutants of VER-4.e, VER-6 and the error order (VER-6.f) written from the contract alone:
a refused PUT that keeps a prefix, a commit list that refuses declared files or does not
check them, an earlier PUT's values taken, a replaced file's old size kept, a PUT answer
naming the file's last segment, a chunked body past the limit let in, a Version size
without its streamed files, list names matched ignoring case, and 409s or 404s answered
before the 400 or 404 the contract puts first."""

from __future__ import annotations

import hashlib
from typing import Any

from conformance.mutants.base import Request, Response, Upstream, error_code, mutant, ok_or
from conformance.mutants.m_retention import step_of
from conformance.mutants.m_streamed import StreamBook
from conformance.mutants.tracking import Tracked, body_of, key_of, versions_of


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _answer(name: str, data: bytes) -> Response:
    got = {"name": name, "size": len(data), "sha256": _sha(data)}
    return Response(200, (("Content-Type", "application/json"),)).with_json(got)


def _listed(request: Request) -> list[dict[str, Any]]:
    return [f for f in body_of(request).get("files") or [] if isinstance(f, dict)]


# --- VER-4.e -----------------------------------------------------------------------------


@mutant
class LongPutKeepsItsPrefix(Tracked):
    """A PUT longer than the file's declared size gets 413, but the first ``size`` bytes
    were stored by then: the file counts as uploaded."""

    name = "ver-put-longer-than-declared-refused-but-its-prefix-kept"
    clause = "VER-4.e"
    summary = "a PUT longer than declared gets 413 yet its first <size> bytes are stored"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if request.kind != "data" or request.method != "PUT":
            return None
        with self.lock:
            up = self.t.uploads.get(self.t.paths.get(request.path) or "")
        name = up.paths.get(request.path) if up else None
        spec = next((f for f in (up.write.get("files") or []) if isinstance(f, dict)
                     and f.get("name") == name), None) if up else None
        size = spec.get("size") if isinstance(spec, dict) else None
        if not isinstance(size, int) or len(request.body) <= size:
            return None
        upstream.send(Request("PUT", request.path, request.query, (), request.body[:size]))
        return Response.error(413, "payload_too_large", "the body is longer than declared")


# --- VER-6 -------------------------------------------------------------------------------


class _Declared(StreamBook):
    def declared(self, request: Request) -> dict[str, dict[str, Any]]:
        """The upload's files declared with a size, by name."""
        up = self.upload_of(request)
        files = up.write.get("files") or [] if up else []
        return {f["name"]: f for f in files if isinstance(f, dict) and "size" in f}


@mutant
class ListedDeclaredFileRefused(_Declared):
    """The commit list is taken as the list of streamed files: a declared file in it, even
    with its declared values, is 'not a streamed file of the upload' and gets 400."""

    name = "ver-commit-listing-a-declared-file-gets-400"
    clause = "VER-6.c"
    summary = "a commit listing a declared file with its declared values gets 400"

    def before(self, request: Request, upstream: Upstream) -> Response | None:
        if request.endpoint != "versions/commit":
            return None
        if any(f.get("name") in self.declared(request) for f in _listed(request)):
            return Response.error(400, "invalid_argument", "a listed file is not streamed")
        return None


@mutant
class ListedDeclaredValuesUnchecked(_Declared):
    """Listed declared files are not compared with their declared values."""

    name = "ver-commit-list-with-wrong-values-of-a-declared-file-accepted"
    clause = "VER-6.c"
    summary = "a commit listing a declared file with another size or sha256 succeeds"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "incomplete":
            return response
        declared, listed = self.declared(request), _listed(request)
        fixed = [{"name": f.get("name"), "size": declared[f["name"]]["size"],
                  "sha256": declared[f["name"]].get("sha256")}
                 if f.get("name") in declared else f for f in listed]
        if fixed == listed:
            return response
        return ok_or(upstream, request.with_json({**body_of(request), "files": fixed}), response)


class _PutHistory(StreamBook):
    """Keeps every streamed PUT's body, per upload and file, with the request."""

    def before(self, request: Request, upstream: Upstream) -> Request | Response | None:
        found = self.streamed_put(request)
        if found is not None:
            with self.lock:
                self.state.setdefault("puts", {}).setdefault(
                    (found[0].upload, found[1]), []).append(request)
        return None

    def history(self, upload: str, name: str) -> list[Request]:
        with self.lock:
            return list(self.state.get("puts", {}).get((upload, name), []))


@mutant
class EarlierPutValuesTaken(_PutHistory):
    """A streamed file keeps every body PUT to it; the commit takes the one whose size and
    sha256 the list names, so listing the first PUT's values after a second PUT commits."""

    name = "ver-commit-list-with-an-earlier-puts-values-commits-those-bytes"
    clause = "VER-6.b"
    summary = "after a second PUT, a commit listing the first PUT's values commits those"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        up = self.upload_of(request)
        if request.endpoint != "versions/commit" or error_code(response) != "incomplete" \
                or up is None:
            return response
        redo: list[tuple[Request, Request]] = []
        for f in _listed(request):
            puts = self.history(up.upload, str(f.get("name")))
            old = next((p for p in puts[:-1] if len(p.body) == f.get("size")
                        and _sha(p.body) == f.get("sha256")), None)
            if old is not None and (len(puts[-1].body), _sha(puts[-1].body)) != \
                    (f.get("size"), f.get("sha256")):
                redo.append((old, puts[-1]))
        if not redo:
            return response
        for old, _ in redo:
            upstream.send(Request("PUT", old.path, old.query, (), old.body))
        again = upstream.send(request)
        if again.ok:
            return again
        for _, last in redo:  # the try failed: the file gets its last bytes back
            upstream.send(Request("PUT", last.path, last.query, (), last.body))
        return response


@mutant
class ReplacedFileKeepsFirstSize(_PutHistory):
    """A streamed file PUT twice is committed with its last bytes, but the Version reports
    the size the first PUT received (the size was recorded once, at the first PUT)."""

    name = "ver-replaced-streamed-file-reports-its-first-size"
    clause = "VER-6.b"
    summary = "a streamed file PUT twice shows the first PUT's size in the Version"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data = response.json() if response.ok else None
        if not isinstance(data, dict) or request.kind != "api":
            return response
        if request.endpoint == "versions/commit":
            up = self.upload_of(request)
            found = {}
            for name in {f.get("name") for f in data.get("files") or []
                         if isinstance(f, dict)}:
                puts = self.history(up.upload, str(name)) if up else []
                if len(puts) > 1 and len(puts[0].body) != len(puts[-1].body):
                    found[(data.get("artifact"), data.get("version"), name)] = len(puts[0].body)
            with self.lock:
                self.state.setdefault("first", {}).update(found)
        if request.endpoint in ("versions/read", "versions/commit"):
            return response.with_json(self._fix(data))
        if request.endpoint == "artifacts/open" and isinstance(data.get("resume_from"), dict):
            return response.with_json({**data, "resume_from": self._fix(data["resume_from"])})
        return response

    def _fix(self, version: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            sizes = dict(self.state.get("first", {}))
        files = []
        for f in version.get("files") or []:
            key = (version.get("artifact"), version.get("version"),
                   f.get("name") if isinstance(f, dict) else None)
            files.append({**f, "size": sizes[key]} if key in sizes else f)
        if files == (version.get("files") or []):
            return version
        total = sum(int(f.get("size") or 0) for f in files if isinstance(f, dict))
        return {**version, "files": files, "size": total}


@mutant
class PutAnswersLastSegment(StreamBook):
    """A streamed PUT answers the file's last path segment as its ``name``."""

    name = "ver-streamed-put-answers-the-last-segment-of-a-nested-name"
    clause = "VER-6.a"
    summary = "a streamed PUT of 'opt/state.bin' answers name 'state.bin'"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data = response.json() if response.ok else None
        if isinstance(data, dict) and isinstance(data.get("name"), str) \
                and self.streamed_put(request) is not None:
            return response.with_json({**data, "name": data["name"].rsplit("/", 1)[-1]})
        return response


@mutant
class ChunkedPastLimitTaken(StreamBook):
    """The limit is checked against ``Content-Length`` only: a chunked body past it is
    answered 200 (and what it stored is not what it answered)."""

    name = "ver-chunked-streamed-put-past-the-limit-answers-200"
    clause = "VER-6.e"
    summary = "a chunked streamed PUT past the limit answers 200 instead of 413"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        found = self.streamed_put(request)
        chunked = "chunked" in (request.header("Transfer-Encoding") or "").lower()
        if response.status != 413 or found is None or not chunked:
            return response
        return _answer(found[1], request.body)


# --- VER-6.f: 400 before 404 before 409 --------------------------------------------------


class _Ordered(Tracked):
    def holds_newest(self, request: Request) -> bool:
        """The request's token is the newest of its artifact (so the token is no error)."""
        body = body_of(request)
        with self.lock:
            newest = self.t.newest.get(str(body.get("artifact")))
        return newest is not None and newest.token == body.get("token")

    def step_conflict(self, request: Request, upstream: Upstream) -> Response | None:
        """The 409 a write of this version would get for its step, else None."""
        body = body_of(request)
        step = step_of(body.get("version"))
        rows = versions_of(upstream, key_of(request), str(body.get("artifact")))
        if step is None or not rows:
            return None
        if any(r.get("version") == body.get("version") for r in rows):
            return Response.error(409, "version_exists", "the version is committed")
        if step <= max(step_of(r.get("version")) or 0 for r in rows):
            return Response.error(409, "not_after_latest", "the step is not after the latest")
        return None


@mutant
class StepCheckedBeforeTheFiles(_Ordered):
    """A write checks its version against the committed ones before its files: a write
    of an old step with a malformed file list gets the 409 first."""

    name = "ver-write-malformed-of-an-old-step-gets-409"
    clause = "VER-6.f"
    summary = "a write wrong in its files for a committed or older step gets 409 before 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/write" or error_code(response) != "invalid_argument" \
                or body_of(request).get("upload") is not None or not self.holds_newest(request):
            return response
        return self.step_conflict(request, upstream) or response


@mutant
class StepCheckedBeforeTheUpload(_Ordered):
    """A write naming an upload checks its step before looking the upload up."""

    name = "ver-write-into-an-unknown-upload-of-an-old-step-gets-409"
    clause = "VER-6.f"
    summary = "a write of an old step naming an unknown upload gets 409 before 404"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/write" or response.status != 404 \
                or body_of(request).get("upload") is None or not self.holds_newest(request):
            return response
        return self.step_conflict(request, upstream) or response


@mutant
class UploadLookedUpBeforeTheList(_Ordered):
    """A commit looks its upload up before it checks its list: an unknown upload with a
    malformed list gets 404."""

    name = "ver-commit-of-an-unknown-upload-with-a-bad-list-gets-404"
    clause = "VER-6.f"
    summary = "a commit of an unknown upload with a malformed files list gets 404 before 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        if request.endpoint != "versions/commit" or error_code(response) != "invalid_argument" \
                or not self.holds_newest(request):
            return response
        with self.lock:
            known = str(body_of(request).get("upload")) in self.t.uploads
        return response if known else Response.error(404, "not_found", "no such upload")


@mutant
class VersionLookedUpBeforeTheToken(_Ordered):
    """A delete looks its version up before it checks its token: an unknown version with
    an unknown token, or one of another artifact, gets 404."""

    name = "ver-delete-of-an-unknown-version-with-a-bad-token-gets-404"
    clause = "VER-6.f"
    summary = "a delete of an unknown version with a bad token gets 404 before 400"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        body = body_of(request)
        if request.endpoint != "versions/delete" or error_code(response) != "invalid_argument" \
                or step_of(body.get("version")) is None:
            return response
        with self.lock:
            info = self.t.tokens.get(str(body.get("token")))
        if info is not None and info.artifact == body.get("artifact"):
            return response
        rows = versions_of(upstream, key_of(request), str(body.get("artifact")))
        if any(r.get("version") == body.get("version") for r in rows):
            return response
        return Response.error(404, "not_found", "no such version")


@mutant
class StreamedSizeLeftOut(StreamBook):
    """A Version's ``size`` is summed from the sizes declared at write time: streamed files,
    which had none, count for nothing (their own ``size`` entries are right)."""

    name = "ver-version-size-leaves-out-streamed-files"
    clause = "VER-6.a"
    summary = "a Version's size is the sum of its declared files only, not its streamed ones"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        data = response.json() if response.ok else None
        if not isinstance(data, dict) or request.kind != "api":
            return response
        if request.endpoint == "versions/commit":
            up = self.upload_of(request)
            if up is not None and any(isinstance(f, dict) and "size" not in f
                                      for f in up.write.get("files") or []):
                total = sum(int(f["size"]) for f in up.write.get("files") or []
                            if isinstance(f, dict) and isinstance(f.get("size"), int))
                with self.lock:
                    self.state.setdefault("sizes", {})[(data.get("artifact"),
                                                        data.get("version"))] = total
        with self.lock:
            sizes = dict(self.state.get("sizes", {}))

        def fix(v: Any) -> Any:
            key = (v.get("artifact"), v.get("version")) if isinstance(v, dict) else None
            return {**v, "size": sizes[key]} if key in sizes else v

        if request.endpoint in ("versions/read", "versions/commit"):
            return response.with_json(fix(data))
        if request.endpoint == "versions/list":
            return response.with_json({**data, "versions": [fix(v) for v in
                                                            data.get("versions") or []]})
        if request.endpoint == "artifacts/open" and isinstance(data.get("resume_from"), dict):
            return response.with_json({**data, "resume_from": fix(data["resume_from"])})
        return response


@mutant
class ListNamesMatchedIgnoringCase(StreamBook):
    """A commit list's names are matched with the upload's files ignoring case: 'S.BIN'
    is taken for the upload's 's.bin'."""

    name = "ver-commit-list-names-matched-ignoring-case"
    clause = "VER-6.d"
    summary = "a commit listing 'S.BIN' for the upload's file 's.bin' is accepted"

    def after(self, request: Request, response: Response, upstream: Upstream) -> Response:
        up = self.upload_of(request)
        if request.endpoint != "versions/commit" or error_code(response) != "invalid_argument" \
                or up is None:
            return response
        ours = {str(f.get("name")).casefold(): f.get("name") for f in up.write.get("files") or []
                if isinstance(f, dict)}
        listed = _listed(request)
        fixed = [{**f, "name": ours.get(str(f.get("name")).casefold(), f.get("name"))}
                 for f in listed]
        names = [f["name"] for f in fixed]
        if fixed == listed or len(set(names)) < len(names) or not set(names) <= set(ours.values()):
            return response
        return ok_or(upstream, request.with_json({**body_of(request), "files": fixed}), response)
