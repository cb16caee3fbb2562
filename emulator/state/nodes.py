"""Key settings (and URL lifetimes) of the nodes on one database: the config is the truth
for config keys.

Each start stores its config's keys anew (a key taken out of the config stops working), and
keeps the keys minted through `/_emulator/keys` until they are revoked there. Nodes that
share a database must agree on their key settings and URL lifetime: a node whose settings
differ from those of a node seen in the last `LIVE_FOR` seconds refuses to start, naming
the difference, so one node started with the defaults cannot turn `ak_local` back on for a
team that switched it off. A node beats every `BEAT` seconds while it runs, busy or idle
(`upkeep.keep_up`), so an idle team counts as live too. A node is its host and data dir:
starting again on the same data dir is a restart, free to change its keys; a stopped
`serve` forgets its node at once.
"""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Sequence

from .. import store
from ..core.keys import digest
from ..settings.config import DEFAULT_KEY, KeySpec, Settings
from ..store import Connection
from . import keystore

#: A node not heard from this long counts as gone (it beats every `BEAT`, requests or not).
LIVE_FOR = 60.0
BEAT = 5.0


class DisagreeingNodes(RuntimeError):
    """Another live node on the database has other key settings."""


def node_id(settings: Settings) -> str:
    """The same for every worker of one node and for its restarts on the same data dir."""
    where = f"{socket.gethostname()}:{settings.data_dir.resolve()}"
    return hashlib.sha256(where.encode()).hexdigest()[:16]


def described(specs: Sequence[KeySpec], url_lifetime: int) -> tuple[str, list[str]]:
    """A fingerprint of the settings nodes must share, and each as a line may show it: the
    public dev key by name, any other key by its scopes and the start of its sha256, and the
    URL lifetime (a delete on a node of a shorter one would end another node's URLs before
    the expiry they claim)."""
    items = sorted((digest(k.key), sorted(dict(k.scopes).items())) for k in specs)
    fingerprint = hashlib.sha256(json.dumps([items, url_lifetime]).encode()).hexdigest()
    shown = [f"url_lifetime = {url_lifetime} s"]
    for k in specs:
        scopes = ", ".join(f"{a} on {p or '*'}" for p, a in sorted(dict(k.scopes).items()))
        name = k.key if k.key == DEFAULT_KEY else f"key sha256:{digest(k.key)[:8]}"
        shown.append(f"{name} ({scopes})")
    return fingerprint, sorted(shown)


def register(conn: Connection, settings: Settings, now: float) -> None:
    """At start, in one transaction: refuse if a live node disagrees, else record this
    node and replace the config keys with this config's."""
    me = node_id(settings)
    fingerprint, shown = described(settings.keys, settings.url_lifetime)
    with store.transaction(conn):
        store.nodes.serialise_starts(conn)
        for other in store.nodes.others_seen_since(conn, me, now - LIVE_FOR):
            if other["keys"] != fingerprint:
                theirs = set(json.loads(other["summary"]))
                only_here = sorted(set(shown) - theirs) or ["nothing"]
                only_there = sorted(theirs - set(shown)) or ["nothing"]
                raise DisagreeingNodes(
                    f"another node on this database (seen {now - other['seen_at']:.0f} s ago) "
                    f"has other keys or URL lifetime: this node adds {'; '.join(only_here)} "
                    f"and lacks {'; '.join(only_there)}. Nodes sharing a database need the "
                    "same keys, default_key and url_lifetime settings")
        store.nodes.record(conn, me, fingerprint, json.dumps(shown), now)
        store.keys.drop_config_keys(conn)
        for spec in settings.keys:
            keystore.store(conn, spec.key, spec.scopes, origin="config")


def beat(conn: Connection, settings: Settings, now: float) -> None:
    store.nodes.beat(conn, node_id(settings), now)


def forget(conn: Connection, settings: Settings) -> None:
    """A node that stopped: the others may now change the keys without waiting."""
    store.nodes.forget(conn, node_id(settings))
