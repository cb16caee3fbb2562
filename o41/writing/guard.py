"""Refusals an ``o41://`` write or removal gets before any bytes move, with the contract's code.

A step that is committed already (VER-2, ``version_exists``), or not after the latest
(VER-3, ``not_after_latest``), would be refused at its commit, after every file of it was
written and uploaded: a DCP save of 10 GB into ``step-00000100`` that a previous launch
committed would upload 10 GB, then fail. So the first file this process writes into a step
asks the artifact once (one GET per step, not per file) and is refused at its open.

Removals: an s3fs user's ``fs.rm`` deletes, and so does this one, within the contract's
retention rule (VER-7): a committed version other than the latest is deleted, the latest is
refused with ``o41.IsLatest``, and a path that names nothing is a ``FileNotFoundError``, as
on s3fs (``o41.writing.retain``).
"""

from __future__ import annotations

from o41.errors import NotAfterLatest, NotFound, VersionExists
from o41.transport.api import ApiClient
from o41.writing import retain
from o41.writing.launch import Launch
from o41.writing.stage import StepKey


def check_new_step(api: ApiClient, key: StepKey, launch: Launch | None,
                   commit_after: float | None) -> None:
    """Refuse the first write of this process into ``key`` if its commit must fail: before
    any open, so a refused write fences nobody.

    A fenced zombie is told it is fenced (and stops), not that the relaunch's step exists.
    ``commit_after``: the filesystem's, named in the advice (None: not an fsspec write).
    """
    artifact, version = key
    if launch is not None and launch.has_step(version):
        return  # a later file of a step this process is writing: asked already
    try:
        latest = api.read_artifact(artifact).get("latest")
    except NotFound:
        return  # a new artifact: any step is after its latest
    if not latest or int(version[5:]) > int(str(latest)[5:]):
        return
    if launch is not None:
        fenced = launch.superseded()
        if fenced is not None:
            raise launch.fenced(fenced)
    where = f"o41://{artifact}/{version}"
    files = _files_of(api, artifact, version)
    if version == latest or files is not None:
        advice = "" if commit_after is None else (
            f" Files closed outside a transaction commit their step once none has been "
            f"open for {commit_after:g} s (commit_after, O41_COMMIT_AFTER): write the files "
            "of one step inside `with fs.transaction:`, or put their folder with "
            f"fs.put(dir, 'o41://{artifact}/step-XXXXXXXX/', recursive=True)")
        raise VersionExists(
            f"{where} is committed already (version_exists: committed versions are "
            f"immutable, VER-2){_holding(files or [])}; write a step after the "
            f"latest ({latest}).{advice}", status=409)
    raise NotAfterLatest(
        f"{where}: not_after_latest: the latest version of o41://{artifact} is {latest}, "
        "and a new version's step must exceed it (VER-3)", status=409)


def _files_of(api: ApiClient, artifact: str, version: str) -> list[str] | None:
    """The file names of a committed version, None when there is no such version."""
    try:
        return [f["name"] for f in api.read_version(artifact, version).get("files", [])]
    except NotFound:
        return None


def _holding(files: list[str]) -> str:
    """`` (it holds a, b)``: what the caller may read instead."""
    shown = ", ".join(files[:4]) + (", …" if len(files) > 4 else "")
    return f" (it holds {shown})" if files else ""


def refuse_removal(fs: retain.RetentionHost, path: str) -> None:
    """``rm`` of a path that is not being written: a committed version is deleted, or the
    removal refused, as ``o41.writing.retain`` tells (VER-7); a path that names nothing is not
    found."""
    retain.remove(fs, path)


__all__ = ["check_new_step", "refuse_removal"]
