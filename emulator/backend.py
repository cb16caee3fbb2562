"""The emulator's state and dependencies, free of HTTP: what every rule module works on.

Like moto's `models.py`, rules take plain Python values and raise `errors.ApiError`s; the
Flask layer only parses requests and renders what comes back.
"""

from __future__ import annotations

import sqlite3
import threading
import time

from . import db, keys
from .chaos import Chaos
from .config import Settings
from .errors import InvalidArgument
from .faults import ActiveFaults, Fault
from .locations import Geography, Location
from .signing import UrlSigner
from .storage import Storage, make_storage


class Backend:
    """One emulator's settings, geography, storage, signer and database connections."""

    def __init__(self, settings: Settings, storage: Storage | None = None) -> None:
        self.settings = settings
        self.faults = ActiveFaults(settings.faults)
        self.geography: Geography = settings.geography()
        db.initialise(settings.db_path)
        self.storage = storage or make_storage(settings)
        # A connection per thread, reused across requests: connecting per request would cost
        # more than most queries here, and SQLite connections must not cross threads.
        self._local = threading.local()
        with db.transaction(self.conn()):
            for spec in settings.keys:
                keys.store(self.conn(), spec.key, spec.scopes)
        self.signer = UrlSigner(db.secret(self.conn()), Fault.URL_NEVER_EXPIRES in self.faults)
        self.chaos = Chaos()

    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = db.connect(self.settings.db_path)
        return conn

    def close(self) -> None:
        """Close this thread's connection; the CLI must do so before gunicorn forks workers,
        since SQLite's lock bookkeeping does not survive a fork (disk I/O errors follow)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @staticmethod
    def now() -> float:
        return time.time()

    def location(self, location_id: str) -> Location:
        return self.geography.get(location_id)

    def authenticate(self, header: str | None) -> keys.Principal:
        if Fault.NO_KEY_CHECK in self.faults:
            try:
                return keys.authenticate(self.conn(), header)
            except Exception:
                return keys.ANYONE
        return keys.authenticate(self.conn(), header)

    def token(self, token: object, artifact: str) -> sqlite3.Row:
        """The open that issued `token`; unknown or another artifact's token is 400."""
        if not isinstance(token, str) or not token:
            raise InvalidArgument("token is required")
        row = self.conn().execute("SELECT * FROM tokens WHERE token = ?", (token,)).fetchone()
        if row is None:
            raise InvalidArgument("unknown token; open the artifact first")
        if row["artifact"] != artifact:
            raise InvalidArgument(f"this token was issued for {row['artifact']}, not {artifact}")
        return row
