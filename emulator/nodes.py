"""Key settings of the nodes on one database: the config is the truth for config keys.

Each start stores its config's keys anew (a key taken out of the config stops working), and
keeps the keys minted through `/_emulator/keys` until they are revoked there. Nodes that
share a database must agree on their key settings: a node whose keys differ from those of a
node seen in the last `LIVE_FOR` seconds refuses to start, naming the difference, so one
node started with the defaults cannot turn `ak_local` back on for a team that switched it
off. A node is its host and data dir: starting again on the same data dir is a restart,
free to change its keys; a stopped `serve` forgets its node at once.
"""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, select

from . import db, keystore
from .config import DEFAULT_KEY, KeySpec, Settings
from .keys import digest

#: A node whose requests stopped this long ago counts as gone (a heartbeat every `BEAT`).
LIVE_FOR = 60.0
BEAT = 5.0
N = db.nodes
_OTHERS = select(N.c.node_id, N.c["keys"], N.c.summary, N.c.seen_at).where(
    N.c.node_id != bindparam("me"), N.c.seen_at > bindparam("since"))
_BEAT = N.update().where(N.c.node_id == bindparam("me")).values(seen_at=bindparam("now"))
_FORGET = N.delete().where(N.c.node_id == bindparam("me"))
_CONFIG_KEYS = db.api_keys.delete().where(db.api_keys.c.origin == "config")


class DisagreeingNodes(RuntimeError):
    """Another live node on the database has other key settings."""


def node_id(settings: Settings) -> str:
    """The same for every worker of one node and for its restarts on the same data dir."""
    where = f"{socket.gethostname()}:{settings.data_dir.resolve()}"
    return hashlib.sha256(where.encode()).hexdigest()[:16]


def described(specs: Sequence[KeySpec]) -> tuple[str, list[str]]:
    """A fingerprint of the key settings, and each key as a line may show it: the public
    dev key by name, any other by its scopes and the start of its sha256."""
    items = sorted((digest(k.key), sorted(dict(k.scopes).items())) for k in specs)
    fingerprint = hashlib.sha256(json.dumps(items).encode()).hexdigest()
    shown = []
    for k in specs:
        scopes = ", ".join(f"{a} on {p or '*'}" for p, a in sorted(dict(k.scopes).items()))
        name = k.key if k.key == DEFAULT_KEY else f"key sha256:{digest(k.key)[:8]}"
        shown.append(f"{name} ({scopes})")
    return fingerprint, sorted(shown)


def register(conn: Connection, settings: Settings, now: float) -> None:
    """At start, in one transaction: refuse if a live node disagrees, else record this
    node and replace the config keys with this config's."""
    me = node_id(settings)
    fingerprint, shown = described(settings.keys)
    with db.transaction(conn):
        db.serialise_starts(conn)
        for other in conn.execute(_OTHERS, {"me": me, "since": now - LIVE_FOR}).mappings():
            if other["keys"] != fingerprint:
                theirs = set(json.loads(other["summary"]))
                only_here = sorted(set(shown) - theirs) or ["nothing"]
                only_there = sorted(theirs - set(shown)) or ["nothing"]
                raise DisagreeingNodes(
                    f"another node on this database (seen {now - other['seen_at']:.0f} s ago) "
                    f"has other keys: this node adds {'; '.join(only_here)} and lacks "
                    f"{'; '.join(only_there)}. Nodes sharing a database need the same keys "
                    "and default_key setting")
        db.put(conn, N, {"node_id": me, "keys": fingerprint, "summary": json.dumps(shown),
                         "seen_at": now})
        conn.execute(_CONFIG_KEYS)
        for spec in settings.keys:
            keystore.store(conn, spec.key, spec.scopes, origin="config")


def beat(conn: Connection, settings: Settings, now: float) -> None:
    conn.execute(_BEAT, {"me": node_id(settings), "now": now})


def forget(conn: Connection, settings: Settings) -> None:
    """A node that stopped: the others may now change the keys without waiting."""
    conn.execute(_FORGET, {"me": node_id(settings)})
