"""The emulator's state and dependencies, free of HTTP: what every rule module works on.

Like moto's `models.py`, rules take plain Python values and raise `errors.ApiError`s; the
Flask layer only parses requests and renders what comes back.
"""

from __future__ import annotations

import threading
import time
import weakref

from .. import store
from ..core import keys
from ..core.errors import InvalidArgument
from ..core.locations import Geography, Location
from ..core.signing import UrlSigner
from ..settings.config import Settings
from ..settings.policy import Policy
from ..storage import Storage, make_storage
from ..store import Connection, Engine
from . import keystore, nodes
from .chaos import Chaos


def _close_all(held: set[Connection], engine: Engine) -> None:
    for conn in list(held):
        conn.close()
    held.clear()
    engine.dispose()


class Backend:
    """One emulator's settings, geography, storage, signer and database connections."""

    def __init__(self, settings: Settings, storage: Storage | None = None, *,
                 prepared: bool = False, policy: Policy | None = None) -> None:
        """`prepared`: a server's master process made the schema and stored the keys, so a
        worker only connects. `policy`: how the rules behave (default: the contract's, less
        the settings' `faults`)."""
        self.settings = settings
        self.policy = policy if policy is not None else Policy.breaking(settings.faults)
        self.faults = frozenset(self.policy.broken())  # shown by health and the dashboard
        self.geography: Geography = settings.geography()
        if settings.database is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.engine = store.engine_for(settings.database_url, settings.db_lock_timeout)
        if not prepared:
            store.initialise(self.engine)
        self.storage = storage or make_storage(settings)
        # A connection per thread, reused across requests: connecting per request would cost
        # more than most queries here, and SQLite connections must not cross threads.
        self._local = threading.local()
        self._held: set[Connection] = set()  # every thread's, closed with the Backend
        if not prepared:
            nodes.register(self.conn(), settings, self.now())
        self._beaten = 0.0  # monotonic time of this process's last heartbeat
        self.signer = UrlSigner(store.meta.secret(self.conn()), not self.policy.urls_expire,
                                clock=lambda: self.now())  # late-bound: tests move it
        self.chaos = Chaos()
        self.release()
        # Connections close with their Backend, not whenever the GC finds them.
        weakref.finalize(self, _close_all, self._held, self.engine)

    def conn(self) -> Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.invalidated or conn.closed:  # e.g. PostgreSQL restarted
            conn = self._local.conn = self.engine.connect()
            self._held.add(conn)
        return conn

    def release(self) -> None:
        """The end of a request: a PostgreSQL connection goes back to the pool, so a node
        holds as many as it has requests in progress (threads beyond them hold none). A
        SQLite connection stays with its thread, page cache and all."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self.engine.dialect.name != "sqlite":
            self._local.conn = None
            self._held.discard(conn)
            conn.close()

    def end_thread(self) -> None:
        """Close this thread's connection for good: a server that starts a thread per
        connection (werkzeug's, `emulator.run.threaded`) would otherwise keep one per thread
        it ever ran, long after the thread ended."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            self._held.discard(conn)
            conn.close()

    def discard_connection(self) -> None:
        """Drop this thread's connection after a database error: it may be broken, or in a
        failed transaction; the next `conn()` opens a fresh one."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            self._held.discard(conn)
            try:
                conn.invalidate()
                conn.close()
            except Exception:  # noqa: BLE001 - already broken; nothing more to do with it
                pass

    def close(self) -> None:
        """Close this thread's connection; the CLI must do so before gunicorn forks workers,
        since SQLite's lock bookkeeping does not survive a fork (disk I/O errors follow)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._held.discard(conn)
            conn.close()
            self._local.conn = None
        self.engine.dispose()  # and a PostgreSQL pool's idle connections: no fork shares them

    def heartbeat(self) -> None:
        """Say, at most every few seconds, that this node still serves (emulator.state.nodes)."""
        if time.monotonic() - self._beaten < nodes.BEAT:
            return
        self._beaten = time.monotonic()
        nodes.beat(self.conn(), self.settings, self.now())

    def now(self) -> float:
        """Unix seconds by the database's clock, which every node shares."""
        return store.now(self.conn())

    def location(self, location_id: str) -> Location:
        return self.geography.get(location_id)

    def authenticate(self, header: str | None) -> keys.Principal:
        if not self.policy.keys_checked:
            try:
                return keystore.authenticate(self.conn(), header)
            except Exception:
                return keys.ANYONE
        return keystore.authenticate(self.conn(), header)

    def token(self, token: object, artifact: str) -> store.artifacts.Row:
        """The open that issued `token`; unknown or another artifact's token is 400."""
        if not isinstance(token, str) or not token:
            raise InvalidArgument("token is required")
        row = store.artifacts.token(self.conn(), token)
        if row is None:
            raise InvalidArgument("unknown token; open the artifact first")
        if row["artifact"] != artifact:
            raise InvalidArgument(f"this token was issued for {row['artifact']}, not {artifact}")
        return row
