"""HTTP calls to the Artifacts API (``/api/v1``), one method per operation.

Methods take and return plain Python values (dicts from the JSON replies); error replies
become the classes of ``o41.errors`` and network failures ``TransportError``.

Transient failures are retried with backoff: reads on any connection error or 5xx; opens,
writes and commits on connection errors and 502/503/504. A refused connection is not
retried: nothing listens at that URL (a wrong port, no emulator), and seconds of tries would
only delay the one line that says so; a reset, a timeout or a 5xx is retried.

Repeating those is safe here: a repeated open only fences the epoch the lost reply carried,
a repeated write reserves a new upload, and a repeated commit that finds ``version_exists``
checks whether the version is its own (same epoch), i.e. whether the first attempt landed
and only its reply was lost.
"""

from __future__ import annotations

from typing import Any

import requests

from o41.config import ENV_KEY, ENV_URL, Place, Settings, redact_key
from o41.errors import (
    NotFound,
    ServerError,
    TransportError,
    Unauthenticated,
    VersionExists,
    from_response,
)
from o41.transport import retry

DEFAULT_TIMEOUT = 30.0


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` comes of a connection refused (nothing listens at the address):
    requests wraps urllib3's error, which wraps the socket's ``ConnectionRefusedError``."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        err = todo.pop()
        if id(err) in seen:
            continue
        seen.add(id(err))
        if isinstance(err, ConnectionRefusedError):
            return True
        todo += [e for e in (err.__cause__, err.__context__, getattr(err, "reason", None),
                             *err.args) if isinstance(e, BaseException)]
    return False


class ApiClient:
    """A session bound to one API base URL and key."""

    def __init__(self, api_url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT,
                 session: requests.Session | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.session = session or requests.Session()
        self.session.headers["Authorization"] = f"Bearer {api_key}"

    @classmethod
    def from_settings(cls, settings: Settings) -> ApiClient:
        return cls(settings.api_url, settings.api_key)

    # -- operations -------------------------------------------------------------------------

    def open(self, artifact: str, *, resume: str | None, place: Place | None,
             holder: str | None) -> dict[str, Any]:
        """``POST /artifacts/open``: take the artifact (fencing earlier holders)."""
        body = {"artifact": artifact, "resume": resume,
                "place": place.to_json() if place else None, "holder": holder}
        return self._call("POST", "/artifacts/open", json=body)

    def write_version(self, artifact: str, token: str, version: str,
                      files: list[dict[str, Any]], *, upload: str | None = None
                      ) -> dict[str, Any]:
        """``POST /versions/write``: declare files, get signed PUT URLs.

        A file is declared ``{"name", "size", "sha256"}``, or streamed ``{"name"}`` (VER-6:
        its PUT answers its size and sha256). With ``upload`` the files join that upload
        (VER-5): one version written by many processes holding the token.
        """
        body: dict[str, Any] = {"artifact": artifact, "token": token, "version": version,
                                "files": files}
        if upload is not None:
            body["upload"] = upload
        return self._call("POST", "/versions/write", json=body)

    def commit(self, artifact: str, token: str, upload: str, *, version: str | None = None,
               epoch: int | None = None, files: list[dict[str, Any]] | None = None
               ) -> dict[str, Any]:
        """``POST /versions/commit``: make an uploaded version visible.

        ``files`` lists every streamed file of the upload with the size and sha256 its
        writer wrote (VER-6). With ``version`` and ``epoch``, a retried commit that meets
        ``version_exists`` reads the version: when it carries this epoch, the first attempt
        landed and it is returned.
        """
        body: dict[str, Any] = {"artifact": artifact, "token": token, "upload": upload}
        if files:
            body["files"] = files
        attempts: list[int] = []
        try:
            return self._call("POST", "/versions/commit", json=body, attempts=attempts)
        except VersionExists:
            if len(attempts) < 2 or version is None or epoch is None:
                raise
            existing = self.read_version(artifact, version)
            if existing.get("epoch") != epoch:
                raise
            return existing

    def delete_version(self, artifact: str, token: str, version: str) -> dict[str, Any]:
        """``POST /versions/delete``: delete a committed version that is not the latest
        (VER-7). A retry that finds it gone (``not_found``) was the first attempt landing."""
        body = {"artifact": artifact, "token": token, "version": version}
        attempts: list[int] = []
        try:
            return self._call("POST", "/versions/delete", json=body, attempts=attempts)
        except NotFound:
            if len(attempts) < 2:
                raise
            return {"artifact": artifact, "version": version, "deleted_at": None}

    def read_version(self, artifact: str, version: str = "latest", *, urls: bool = False,
                     place: Place | None = None) -> dict[str, Any]:
        """``GET /versions/read``: one version, signed when ``urls``."""
        params = {"artifact": artifact, "version": version, "urls": "1" if urls else "0"}
        if place is not None:
            params["place"] = str(place)
        return self._call("GET", "/versions/read", params=params)

    def list_versions(self, artifact: str) -> list[dict[str, Any]]:
        """``GET /versions/list``: committed versions in step order."""
        return self._call("GET", "/versions/list", params={"artifact": artifact})["versions"]

    def read_artifact(self, artifact: str) -> dict[str, Any]:
        """``GET /artifacts/read``: epoch, holder, latest, count, fork origin."""
        return self._call("GET", "/artifacts/read", params={"artifact": artifact})

    def usage(self, artifact: str | None = None) -> dict[str, Any]:
        """``GET /usage/read``: bytes and cost per route, transfers, placements."""
        params = {"artifact": artifact} if artifact else None
        return self._call("GET", "/usage/read", params=params)

    # -- plumbing ---------------------------------------------------------------------------

    def _call(self, method: str, path: str, *, attempts: list[int] | None = None,
              **kwargs: Any) -> Any:
        """One operation, tried again under the retry policy while it fails transiently;
        ``attempts`` records the tries."""
        url = self.api_url + path
        tries = retry.attempts(method, url)
        while True:
            if attempts is not None:
                attempts.append(tries.count)
            try:
                resp = self.session.request(method, url, timeout=self.timeout, **kwargs)
            except requests.RequestException as exc:
                error = self._unsent(method, url, exc)
                if refused(exc):
                    raise error from exc  # no reply, the connection refused: nobody listens
                tries.failed(error)
                continue
            try:
                return self._answer(method, url, resp)
            except (TransportError, ServerError) as exc:
                tries.status(resp.status_code, resp.headers.get("Retry-After"), exc)

    def _unsent(self, method: str, url: str, exc: requests.RequestException) -> TransportError:
        if isinstance(exc, requests.ConnectionError):
            error = TransportError(self.unreachable(exc))
        else:
            error = TransportError(f"{method} {url}: {exc}")
        error.__cause__ = exc
        return error

    def _answer(self, method: str, url: str, resp: requests.Response) -> Any:
        try:
            body = resp.json()
        except ValueError:
            body = None
        if resp.status_code >= 400:
            error = from_response(resp.status_code, body)
            if isinstance(error, Unauthenticated):
                raise Unauthenticated(self.unknown_key(error.message), status=error.status)
            raise error
        if not isinstance(body, dict):
            raise TransportError(
                f"{method} {url}: HTTP {resp.status_code} without a JSON object "
                f"(is {self.api_url} an o41 Artifacts API?)", status=resp.status_code)
        return body

    def unreachable(self, exc: Exception) -> str:
        """Name the URL and the likely cause: nothing listens there (emulator not running)."""
        why = "connection refused" if refused(exc) else "no connection"
        return (f"cannot reach the o41 Artifacts API at {self.api_url} ({why}): is the "
                f"emulator running there? Start it with `o41-emulator serve`, or point "
                f"{ENV_URL} at the right URL")

    def unknown_key(self, server_message: str) -> str:
        """One wrong-key message for every command and call, the key masked."""
        return (f"the API key {redact_key(self.api_key)} is not known to {self.api_url} "
                f"(check {ENV_KEY}): {server_message}")


__all__ = ["ApiClient"]
