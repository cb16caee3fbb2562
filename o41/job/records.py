"""What a job's processes share about each artifact: the open (its token and epoch) and
the newest version any of them read before it, in a folder of the job's own.

Processes of one job (``o41.job.membership``) meet here: the first that needs an open of an
artifact takes the artifact's lock (``flock``), finds none, opens, and writes it down; every
other one finds it and writes under it, without a second open (which would fence the
first). The folder is private to the user (0700, files 0600: an open's token can write), and
lives as long as its job: a later process sweeps the folders of jobs whose root has ended.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from o41.job import tree

log = logging.getLogger("o41")

ENV_JOBS_DIR = "O41_JOBS_DIR"
Record = dict[str, object]

_swept: set[str] = set()


def base() -> Path | None:
    """The folder of this PID namespace's job folders, private to the user; None when none
    can be had. In memory where the machine has it (``XDG_RUNTIME_DIR``, ``/dev/shm``), and
    per PID namespace: a process of another namespace cannot tell whether a job of this one
    still runs, so it must never sweep its folder."""
    given = os.environ.get(ENV_JOBS_DIR, "").strip()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if given:
        top = Path(given)
    elif runtime and os.path.isdir(runtime):
        top = Path(runtime) / "o41-jobs"
    elif os.path.isdir("/dev/shm"):
        top = Path("/dev/shm") / f"o41-jobs-{os.getuid()}"
    else:
        top = Path(tempfile.gettempdir()) / f"o41-jobs-{os.getuid()}"
    folder = top / _namespace()
    try:
        top.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        infos = [os.lstat(top), os.lstat(folder)]
    except OSError as exc:
        log.warning("o41: no folder for the job's shared open (%s): each process of this job "
                    "opens on its own", exc)
        return None
    if any(not stat.S_ISDIR(i.st_mode) or i.st_uid != os.getuid() or i.st_mode & 0o077
           for i in infos):
        log.warning("o41: %s is not a folder private to this user: each process of this job "
                    "opens on its own", folder)
        return None
    _sweep(folder)
    return folder


def _namespace() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "pid"
    return "pid-" + "".join(c for c in link if c.isdigit())


def _sweep(folder: Path) -> None:
    """Remove the folders of jobs whose root process has ended (once per process)."""
    if str(folder) in _swept:
        return
    _swept.add(str(folder))
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not tree.alive(name):
            shutil.rmtree(folder / name, ignore_errors=True)


def _key(api_url: str, artifact: str) -> str:
    return hashlib.sha256(f"{api_url}\0{artifact}".encode()).hexdigest()[:32]


class JobRecords:
    """One job's folder: a record per (API, artifact)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, job: str, create: bool) -> JobRecords | None:
        top = base()
        if top is None:
            return None
        folder = top / job
        if create:
            try:
                folder.mkdir(mode=0o700, exist_ok=True)
            except OSError:
                return None
        elif not folder.is_dir():
            return None
        return cls(folder)

    @contextmanager
    def locked(self, api_url: str, artifact: str) -> Iterator[None]:
        """The artifact's lock across the job's processes, held while one opens."""
        fd = os.open(self.folder / f"{_key(api_url, artifact)}.lock",
                     os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def read(self, api_url: str, artifact: str) -> Record:
        try:
            text = (self.folder / f"{_key(api_url, artifact)}.json").read_text()
            data = json.loads(text)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("artifact") != artifact:
            return {}
        return data

    def write(self, api_url: str, artifact: str, data: Record) -> None:
        """Replace the record whole (a reader never sees half of one)."""
        target = self.folder / f"{_key(api_url, artifact)}.json"
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".record-")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({**data, "artifact": artifact}, f)
            os.replace(tmp, target)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise

    def note_read(self, api_url: str, artifact: str, version: str) -> None:
        """The newest version a process of the job read before the job opened."""
        with self.locked(api_url, artifact):
            data = self.read(api_url, artifact)
            if data.get("open") or str(data.get("read") or "") >= version:
                return
            self.write(api_url, artifact, {**data, "read": version})


__all__ = ["ENV_JOBS_DIR", "JobRecords", "Record", "base"]
