"""A small test-side client for the emulator, over Flask's test client or a live server.

Tests speak the contract through this one class, so the same test body runs in-process and
against a real server, on either storage backend.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests

KEY = "ak_local"


@dataclass
class Reply:
    status: int
    body: Any
    content: bytes
    headers: dict[str, str]

    @property
    def code(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            return self.body["error"].get("code")
        return None


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Http:
    """Calls by path (`/api/v1/...`) or by absolute signed URL."""

    def __init__(self, base: str, flask_client=None) -> None:
        self.base = base.rstrip("/")
        self.flask = flask_client
        self.session = requests.Session() if flask_client is None else None

    def request(self, method: str, path_or_url: str, *, key: str | None = KEY,
                json: Any = None, params: dict | None = None, data: bytes | None = None,
                headers: dict | None = None) -> Reply:
        headers = dict(headers or {})
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        url = path_or_url if "://" in path_or_url else self.base + path_or_url
        if self.flask is not None:
            r = self.flask.open(url, method=method, json=json, query_string=params, data=data,
                                headers=headers)
            content = r.get_data()
            body = r.get_json(silent=True)
            return Reply(r.status_code, body, content, dict(r.headers))
        assert self.session is not None
        r = self.session.request(method, url, json=json, params=params, data=data,
                                 headers=headers, timeout=60)
        try:
            body = r.json()
        except ValueError:
            body = None
        return Reply(r.status_code, body, r.content, dict(r.headers))


class SpreadHttp(Http):
    """Calls spread over the nodes of one emulator, each to the next node in turn: a path
    and a signed URL alike (a URL signed by one node must work on every other)."""

    def __init__(self, bases: Sequence[str]) -> None:
        super().__init__(bases[0])
        self.bases = [b.rstrip("/") for b in bases]
        self._turn = itertools.count()

    def request(self, method: str, path_or_url: str, **kwargs: Any) -> Reply:
        base = self.bases[next(self._turn) % len(self.bases)]
        if "://" in path_or_url:
            u = urlsplit(path_or_url)
            path_or_url = u.path + (f"?{u.query}" if u.query else "")
        return super().request(method, base + path_or_url, **kwargs)


@dataclass
class Box:
    """A training box: opens an artifact from a place and writes checkpoints with its token."""

    http: Http
    artifact: str
    place: dict | None
    holder: str = field(default_factory=lambda: "box-" + uuid.uuid4().hex[:6])
    key: str = KEY
    token: str | None = None
    opened: Reply | None = None

    def open(self, resume: Any = "latest") -> Reply:
        r = self.http.request("POST", "/api/v1/artifacts/open", key=self.key, json={
            "artifact": self.artifact, "resume": resume, "place": self.place,
            "holder": self.holder,
        })
        if r.status == 200:
            self.token = r.body["token"]
        self.opened = r
        return r

    def write(self, version: str, files: dict[str, bytes]) -> Reply:
        return self.http.request("POST", "/api/v1/versions/write", key=self.key, json={
            "artifact": self.artifact, "token": self.token, "version": version,
            "files": [{"name": n, "size": len(d), "sha256": sha(d)} for n, d in files.items()],
        })

    def upload(self, written: Reply, files: dict[str, bytes]) -> None:
        for f in written.body["files"]:
            r = self.http.request("PUT", f["url"], key=None, data=files[f["name"]])
            assert r.status == 200, r.body

    def commit(self, upload: str) -> Reply:
        return self.http.request("POST", "/api/v1/versions/commit", key=self.key, json={
            "artifact": self.artifact, "token": self.token, "upload": upload,
        })

    def checkpoint(self, version: str, files: dict[str, bytes] | None = None) -> Reply:
        """Write, upload every file, commit; returns the commit's reply."""
        files = files if files is not None else {"model.bin": version.encode() * 10}
        w = self.write(version, files)
        assert w.status == 200, w.body
        self.upload(w, files)
        return self.commit(w.body["upload"])

    def read(self, version: str = "latest", urls: bool = True, place: str | None = None,
             key: str | None = None) -> Reply:
        params = {"artifact": self.artifact, "version": version, "urls": "1" if urls else "0"}
        if place:
            params["place"] = place
        return self.http.request("GET", "/api/v1/versions/read", key=key or self.key,
                                 params=params)

    def usage(self) -> Reply:
        return self.http.request("GET", "/api/v1/usage/read", key=self.key,
                                 params={"artifact": self.artifact})


AWS = {"cloud": "aws", "region": "us-east-1"}
GCP = {"cloud": "gcp", "region": "europe-west4"}
AZURE = {"cloud": "azure", "region": "westeurope"}
