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

from . import keystore, store
from .config import DEFAULT_KEY, KeySpec, Settings
from .keys import digest
from .store import Connection

#: A node whose requests stopped this long ago counts as gone (a heartbeat every `BEAT`).
LIVE_FOR = 60.0
BEAT = 5.0


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
    with store.transaction(conn):
        store.nodes.serialise_starts(conn)
        for other in store.nodes.others_seen_since(conn, me, now - LIVE_FOR):
            if other["keys"] != fingerprint:
                theirs = set(json.loads(other["summary"]))
                only_here = sorted(set(shown) - theirs) or ["nothing"]
                only_there = sorted(theirs - set(shown)) or ["nothing"]
                raise DisagreeingNodes(
                    f"another node on this database (seen {now - other['seen_at']:.0f} s ago) "
                    f"has other keys: this node adds {'; '.join(only_here)} and lacks "
                    f"{'; '.join(only_there)}. Nodes sharing a database need the same keys "
                    "and default_key setting")
        store.nodes.record(conn, me, fingerprint, json.dumps(shown), now)
        store.keys.drop_config_keys(conn)
        for spec in settings.keys:
            keystore.store(conn, spec.key, spec.scopes, origin="config")


def beat(conn: Connection, settings: Settings, now: float) -> None:
    store.nodes.beat(conn, node_id(settings), now)


def forget(conn: Connection, settings: Settings) -> None:
    """A node that stopped: the others may now change the keys without waiting."""
    store.nodes.forget(conn, node_id(settings))
