"""The emulator's own upkeep, outside the contract and free of HTTP: preparing storage at
start, the background rounds of a server worker (heartbeat, reclaim), and what the
`/_emulator/` endpoints read and change (health, keys, state)."""

from __future__ import annotations

import logging
import threading

from .. import store
from ..core import keys
from ..core.errors import Forbidden, InvalidArgument, NotFound
from ..settings.config import Settings
from ..state import keystore, nodes
from ..state.backend import Backend
from ..state.outages import as_unavailable
from .identity import check_storage_identity
from .uploads import every_upload_prefix, reclaim_expired_uploads

log = logging.getLogger("o41.emulator")
#: How often a server worker's upkeep runs: deleted bytes outlive their last URL by at most
#: about this much (plus a second of slack, emulator.rules.retention).
UPKEEP_EVERY = 1.0


def keep_up(backend: Backend, stop: threading.Event, every: float = UPKEEP_EVERY) -> None:
    """A server worker's background rounds, with or without traffic (emulator.run.server): say
    the node is alive (an idle team's keys stay guarded, emulator.state.nodes), and delete the
    bytes of deleted versions whose last URL has expired and of uploads never committed,
    so keep-the-last-k bounds storage under reads alone. A round an outage of the database
    or storage cuts short is logged; the next one tries again."""
    while not stop.wait(every):
        try:
            backend.heartbeat()
            reclaim_expired_uploads(backend)
        except Exception as exc:  # noqa: BLE001 - the thread must outlive any one round
            if as_unavailable(exc) is None:
                log.exception("upkeep round failed")
            else:
                log.warning("upkeep round skipped: %s", type(exc).__name__)
                backend.discard_connection()
        finally:
            backend.release()


def prepare_storage(backend: Backend) -> None:
    """Create the buckets and reclaim partial and expired uploads; once per server start.

    Other emulator nodes may share the buckets (and the metadata) and be mid-upload: only
    what no upload can use any more goes, partial writes older than an upload's lifetime
    and uploads expired by the metadata's clock (docs/emulator.md, "Storage shared by many
    nodes")."""
    buckets = sorted({loc.bucket for loc in backend.geography.locations.values()})
    for bucket in buckets:
        backend.storage.ensure_bucket(bucket)
    check_storage_identity(backend, buckets)
    backend.storage.reclaim_partials(buckets, backend.settings.upload_lifetime)
    reclaim_expired_uploads(backend)


def forget_node(settings: Settings) -> None:
    """A stopped `serve` leaves its node's record, so the others may change keys at once.
    Best effort: a database gone by now has nothing to forget."""
    engine = store.engine_for(settings.database_url, settings.db_lock_timeout)
    try:
        with engine.connect() as conn:
            nodes.forget(conn, settings)
    except store.DatabaseError:
        pass
    finally:
        engine.dispose()


def revoke_key(backend: Backend, key: object) -> dict:
    """Revoke a key minted through `/_emulator/keys`; a config key is the config's to remove."""
    if not isinstance(key, str) or not key:
        raise InvalidArgument("key must be the key to revoke")
    conn = backend.conn()
    with store.transaction(conn):
        origin = keystore.revoke(conn, key)
    if origin is None:
        raise NotFound("no such key")
    if origin == "config":
        raise Forbidden("this key comes from the settings: take it out of the config (or set "
                        "default_key = false) and restart")
    return {"key": key, "revoked": True}


def reset(backend: Backend) -> dict:
    """Forget every artifact, version, upload and transfer (keys stay), and delete the bytes
    of every upload the metadata knew: in an S3 bucket never an object it has no record of,
    which is another deployment's in a shared bucket (folders in the data dir are all this
    deployment's, and are emptied whole). Nodes sharing one metadata database are one
    emulator, so a reset through any of them resets them all."""
    buckets = [loc.bucket for loc in backend.geography.locations.values()]
    if backend.storage.empties_whole_buckets:  # no need to know where each upload lies
        forgotten = store.reset.wipe(backend.conn())
        backend.storage.delete_uploads((), buckets)
        return {"reset": True, "uploads_deleted": forgotten}
    known = every_upload_prefix(backend)
    store.reset.wipe(backend.conn())
    backend.storage.delete_uploads(known, buckets)
    return {"reset": True, "uploads_deleted": len(known)}


def health(backend: Backend) -> dict:
    """Healthy once the database answers; also says which faults are on."""
    store.overview.ping(backend.conn())
    return {"status": "ok", "faults": sorted(backend.faults)}


def add_key(backend: Backend, key: object, scopes: object) -> dict:
    """Store a key (a new random one when `key` is empty) with its scopes.

    Anyone who can reach an open emulator may add keys, but changing an existing key's
    scopes (a read-only key made a writer) is an escalation: it needs the admin key, which
    the web layer has checked when one is configured, so without one it is refused."""
    key = key or keys.new_key()
    if not isinstance(key, str) or not key.startswith("ak_") or len(key) > 200:
        raise InvalidArgument("key must be a string starting with 'ak_'")
    parsed = keys.parse_scopes(scopes)
    conn = backend.conn()
    with store.transaction(conn):
        existing = keystore.scopes_of(conn, key)
        stored = tuple(sorted(dict(parsed).items()))  # one access per prefix, last wins
        if existing not in (None, stored) and not backend.settings.admin_key:
            raise Forbidden("this key exists already; changing its scopes needs the admin "
                            "key (start the emulator with --admin-key)")
        keystore.store(conn, key, parsed)
    return {"key": key, "scopes": keys.Principal(parsed).json()}


def state(backend: Backend) -> dict:
    """Every artifact with its versions, the open uploads, the locations and the faults."""
    conn = backend.conn()
    artifacts = store.overview.artifact_summaries(conn)
    open_uploads = store.overview.open_upload_count(conn)
    geo = backend.geography
    return {
        "artifacts": artifacts,
        "open_uploads": open_uploads,
        "locations": [
            {**loc.json(), "bucket": loc.bucket, "default": loc is geo.defaults.get(loc.cloud)}
            for loc in geo.locations.values()
        ],
        "fallback": geo.fallback.json(),
        "faults": sorted(backend.faults),
    }
