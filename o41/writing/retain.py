"""Deleting committed versions (VER-7): keep-the-last-k bounds an ``o41://`` artifact as it
bounds a bucket.

``fs.rm`` of what this process wrote and has not committed only drops it (``o41.fs.writer``).
``fs.rm`` of a committed version deletes it (``versions/delete``) with the token of this
process's open of the artifact:

- ``rm("o41://P/N/step-100", recursive=True)``, as torchtitan's ``keep_latest_k`` and a
  hand-written loop write it, deletes ``step-00000100``.
- A version is deleted whole. ``rm`` of one of its files deletes it once this process has
  removed every file of it. A file at the top (``o41://P/N/epoch=0-step=100.ckpt``: what
  Lightning's top-k removes) counts the version's other files as removed when no path at
  the top reaches them any more: its ``last.ckpt`` is a newer version's by then.
- The latest version is never deleted (``is_latest``): a run resumes from it. Lightning's
  ``save_top_k=1`` removes the previous checkpoint as soon as it has saved the next one, which
  is not committed yet. So a delete of the latest waits while this process holds a later step
  that is written but not committed. It is done after that step commits, and dropped if the
  step never commits.
- A process that holds no open of the artifact (it only read) deletes nothing, and says so.
  Opening would fence the process that writes.
- A version whose files were all replaced by name in later versions goes once it is neither
  the latest nor pinned (``drop_replaced``, after each commit of a Lightning fit: Lightning
  rewrites ``last.ckpt`` by name and never removes the one it overwrote, so a step that
  saved only ``last.ckpt`` would stay forever, where s3 keeps one ``last.ckpt``).

Signed URLs given out before a delete keep serving its bytes until they expire (VER-7.c), so
a load that began completes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Protocol

from o41.errors import Fenced, Immutable, IsLatest, NotFound, O41Error
from o41.job import hooks
from o41.location import version_name
from o41.models import Version
from o41.paths import O41Path, parse, step_in_name
from o41.transport.api import ApiClient
from o41.writing import registry

log = logging.getLogger("o41")


class RetentionHost(Protocol):
    """What a removal asks of the filesystem that makes it."""

    api: ApiClient
    holder: str

    def parse_path(self, path: str) -> O41Path: ...

    def settle_for(self, where: O41Path) -> None: ...

    def version_at(self, where: O41Path) -> Version: ...

    def forget_signed(self, artifact: str, version: str) -> None: ...

    def refuse_if_fenced(self, artifact: str) -> None: ...

    def exists(self, path: str, **kwargs: object) -> bool: ...

_lock = threading.Lock()
# (API, artifact, version) -> names of its files this process removed
_removed: dict[tuple[str, str, str], set[str]] = {}
# (API, artifact) -> {version: removed through a path at the top}: deleted after a commit
_waiting: dict[tuple[str, str], dict[str, bool]] = {}
# (API, artifact) -> {version: its file names}: a committed version never changes
_names: dict[tuple[str, str], dict[str, frozenset[str]]] = {}


def _forget_after_fork() -> None:
    """A forked child (a DataLoader worker) commits nothing: it inherits no pending delete."""
    global _lock
    _removed.clear()
    _waiting.clear()
    _names.clear()
    _lock = threading.Lock()


hooks.in_forked_child(_forget_after_fork)


def remove(fs: RetentionHost, path: str) -> None:
    """``rm`` of ``path``, which names nothing this process has staged."""
    where: O41Path = fs.parse_path(path)
    fs.settle_for(where)  # a step this process closed and not yet committed is the latest
    if where.version is None and not where.name:
        if not fs.exists(path):
            raise FileNotFoundError(f"{path}: no such artifact")
        raise Immutable(f"{path}: an artifact is not removed, and its latest version never is "
                        "(is_latest, VER-7): delete its older versions, as "
                        f"fs.rm('{path.rstrip('/')}/step-100', recursive=True)", status=409)
    version, files = _committed(fs, where, path)
    if where.version == "latest":
        fs.refuse_if_fenced(where.artifact)  # a zombie is told it is fenced first
        raise _is_latest(path, where.artifact, version)
    launch = _held_launch(fs, where.artifact, path)
    latest = fs.api.read_artifact(where.artifact).get("latest") == version
    if latest and not _later_step_written(fs, where.artifact, version):
        fs.refuse_if_fenced(where.artifact)
        raise _is_latest(path, where.artifact, version)
    if where.name:
        with _lock:
            _removed.setdefault((fs.api.api_url, where.artifact, version), set()).update(
                n for n in files if n == where.name or n.startswith(where.name + "/"))
    if latest:
        with _lock:
            _waiting.setdefault((fs.api.api_url, where.artifact), {})[version] = where.at_top
        log.info("o41: o41://%s/%s is the latest version: it is deleted once this process "
                 "commits its next step", where.artifact, version)
        return
    if where.name and not _all_removed(fs, where.artifact, version, files, where.at_top):
        log.info("o41: %s removed; o41://%s/%s is deleted once every file of it is",
                 path, where.artifact, version)
        return
    _delete(fs, launch, where.artifact, version, path)


def after_commit(fs: RetentionHost, artifact: str) -> None:
    """This process committed a step of ``artifact``: the deletes that waited for it."""
    with _lock:
        waiting = _waiting.pop((fs.api.api_url, artifact), {})
    for version, at_top in sorted(waiting.items()):
        try:
            _delete_waiting(fs, artifact, version, at_top)
        except Fenced:
            raise
        except (OSError, O41Error) as exc:  # the commit stands: only the delete failed
            log.warning("o41: o41://%s/%s was not deleted: %s", artifact, version, exc)


def _delete_waiting(fs: RetentionHost, artifact: str, version: str, at_top: bool) -> None:
    path = f"o41://{artifact}/{version}"
    launch = _held_launch(fs, artifact, path)
    if fs.api.read_artifact(artifact).get("latest") == version:
        if _later_step_written(fs, artifact, version):
            with _lock:
                _waiting.setdefault((fs.api.api_url, artifact), {})[version] = at_top
        return
    try:
        files = [f["name"] for f in fs.api.read_version(artifact, version).get("files", [])]
    except NotFound:
        return  # deleted meanwhile
    with _lock:
        partial = (fs.api.api_url, artifact, version) in _removed
    if partial and not _all_removed(fs, artifact, version, files, at_top):
        return
    _delete(fs, launch, artifact, version, path)


def drop_replaced(fs: RetentionHost, artifact: str, keep: Iterable[str] = ()) -> list[str]:
    """Delete the committed versions of ``artifact`` whose files were all replaced by name in
    later versions, except the latest and the versions ``keep`` names (``o41://P/N/
    epoch=0-step=100.ckpt``, ``o41://P/N/step-…/last.ckpt``: a top-k's paths). A file whose
    name carries its step is never replaced: the top reads it from its own version. Returns
    the versions deleted; a delete that fails is logged (the commit before it stands)."""
    listing = [str(v["version"]) for v in fs.api.list_versions(artifact)]
    if len(listing) < 2:
        return []
    pinned = {v for v in (_version_named(p) for p in keep) if v is not None}
    files = _file_names(fs, artifact, listing)
    newer: set[str] = set(files.get(listing[-1], ()))
    doomed = []
    for version in reversed(listing[:-1]):  # the latest (the highest step) always stays
        names = files.get(version)
        if names is None:
            continue  # deleted meanwhile
        if (names and version not in pinned and names <= newer
                and not any("/" in n or step_in_name(n) is not None for n in names)):
            doomed.append(version)
        newer |= names
    for version in sorted(doomed):
        path = f"o41://{artifact}/{version}"
        try:
            _delete(fs, _held_launch(fs, artifact, path), artifact, version, path)
        except Fenced:
            raise
        except (OSError, O41Error) as exc:
            log.warning("o41: %s was not deleted: %s", path, exc)
    return sorted(doomed)


def _version_named(path: str) -> str | None:
    """The version a path pins: its ``step-…`` folder, or the step in its file name."""
    stripped = path.split("://", 1)[-1]
    try:
        where = parse(stripped)
    except FileNotFoundError:
        return None
    if where.version is not None and where.version != "latest":
        return where.version
    step = step_in_name(where.name) if where.at_top else None
    return None if step is None else version_name(step)


def _file_names(fs: RetentionHost, artifact: str, listing: list[str]) -> dict[str, frozenset[str]]:
    """The file names of each listed version (read once: a committed version never changes);
    a version deleted meanwhile is left out."""
    key = (fs.api.api_url, artifact)
    with _lock:
        known = {v: n for v, n in _names.get(key, {}).items() if v in listing}
    for version in listing:
        if version in known:
            continue
        try:
            data = fs.api.read_version(artifact, version)
        except NotFound:
            continue
        known[version] = frozenset(str(f["name"]) for f in data.get("files", []))
    with _lock:
        _names[key] = dict(known)
    return known


def _committed(fs: RetentionHost, where: O41Path, path: str) -> tuple[str, list[str]]:
    """The committed version ``path`` names and its file names; ``FileNotFoundError`` when
    there is none, or no such file in it."""
    if where.at_top:
        found = fs.version_at(where)
        version, files = found.version, [e.name for e in found.files]
    else:
        try:
            data = fs.api.read_version(where.artifact, where.version or "latest")
        except NotFound:
            raise FileNotFoundError(f"{path}: no such version") from None
        version, files = str(data["version"]), [f["name"] for f in data.get("files", [])]
    if where.name and not any(n == where.name or n.startswith(where.name + "/")
                              for n in files):
        raise FileNotFoundError(f"{path}: no such file in {version}")
    return version, files


def _held_launch(fs: RetentionHost, artifact: str, path: str) -> registry.Launch:
    """The open a delete uses: this process's, never a new one (it would fence the writer)."""
    launch = registry.launch_if_held(fs.api, artifact, fs.holder)
    if launch is None or launch.joined:
        raise PermissionError(
            f"{path}: a delete takes the open of o41://{artifact}, and this process holds "
            "none (it has only read): delete from the process that writes the artifact "
            "(O41_MODE=write or `o41 run` would open here, and fence that process)")
    launch.check()
    return launch


def _later_step_written(fs: RetentionHost, artifact: str, version: str) -> bool:
    """Whether this process holds a step of ``artifact`` after ``version``, not committed:
    staged files, or a step held for a commit to come (a Lightning save whose files
    ``AsyncCheckpointIO`` has queued and not written yet)."""
    launch = registry.launch_if_held(fs.api, artifact, fs.holder)
    if launch is None:
        return False
    with launch.lock:
        later = {v for v, step in launch.steps.items() if step.names or step.holds}
    return any(v > version for v in later)


def _all_removed(fs: RetentionHost, artifact: str, version: str, files: list[str],
                 at_top: bool) -> bool:
    """Whether every file of ``version`` is removed: by this process, or (for a removal at the
    top) shadowed at the top by a newer version that has a file of that name."""
    with _lock:
        left = set(files) - _removed.get((fs.api.api_url, artifact, version), set())
    if not left:
        return True
    if not at_top or any(step_in_name(n) is not None or "/" in n for n in left):
        return False  # a file of this step by its name, or a path only its version reaches
    newer = [v["version"] for v in fs.api.list_versions(artifact) if v["version"] > version]
    for name in newer:
        try:
            left -= {f["name"] for f in fs.api.read_version(artifact, name).get("files", [])}
        except NotFound:
            continue
        if not left:
            return True
    return False


def _delete(fs: RetentionHost, launch: registry.Launch, artifact: str, version: str,
            path: str) -> None:
    try:
        fs.api.delete_version(artifact, launch.token, version)
    except Fenced as exc:
        raise launch.fenced(exc) from None
    except IsLatest:
        raise _is_latest(path, artifact, version) from None
    except NotFound:
        raise FileNotFoundError(f"{path}: no such version (deleted already?)") from None
    fs.forget_signed(artifact, version)
    with _lock:
        _removed.pop((fs.api.api_url, artifact, version), None)
        _names.get((fs.api.api_url, artifact), {}).pop(version, None)
    log.info("o41: deleted o41://%s/%s", artifact, version)


def _is_latest(path: str, artifact: str, version: str) -> IsLatest:
    return IsLatest(f"{path}: {version} is the latest version of o41://{artifact} (is_latest, "
                    "VER-7): a run resumes from it, so it is not deleted; it can be once a "
                    "later step is committed", status=409)


__all__ = ["after_commit", "drop_replaced", "remove"]
