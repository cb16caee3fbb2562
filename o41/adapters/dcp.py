"""torch.distributed.checkpoint (DCP) with many ranks through ``checkpoint_id="o41://..."``.

DCP picks its ``FsspecWriter`` and ``FsspecReader`` for an ``o41://`` checkpoint id by itself.
With one process per rank, every rank writes its own shards, and the checkpoint is ONE
version. Here, taught o41 once (``mend``; nothing changes for other filesystems):

- **Save.** The coordinator starts the step's upload in DCP's global plan (the job's one
  open: the coordinator opens, unless ``o41 run`` in front of torchrun opened already) and
  hands its token and upload to every rank through DCP's own plan (the plan's
  ``storage_data``, a ``_StoragePrefix`` that also carries the ticket). Each rank streams its
  shards into that upload (VER-5, VER-6) and reports their sizes and sha256 in its write
  results, which DCP gathers to the coordinator; the coordinator writes ``.metadata`` and
  commits after that gather, in ``finish``, listing every rank's files. No other rank
  opens or commits. A rank killed mid-save leaves nothing visible (the coordinator never
  reaches ``finish``), and a fenced job stops on every rank: each one watches the epoch
  and holds the same token.
- **Load.** Each rank reads ``.metadata`` through ``latest``, and notes the version it read
  in its local plan; the coordinator chooses its own in the global plan, and a rank that
  read another (a commit landed in between) reads the chosen one's ``.metadata`` again and
  its shards. N ranks read one version.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import io
import logging
import os
import pickle
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from o41.paths import parse
from o41.writing import registry

if TYPE_CHECKING:
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader, FsspecWriter
    from torch.distributed.checkpoint.metadata import Metadata
    from torch.distributed.checkpoint.planner import (
        LoadPlan,
        LoadPlanner,
        ReadItem,
        SavePlan,
        SavePlanner,
    )
    from torch.distributed.checkpoint.storage import WriteResult
    from torch.futures import Future

    from o41.fs.filesystem import O41FileSystem

log = logging.getLogger("o41")

_lock = threading.Lock()
_mended = False


def _o41_fs(storage: object) -> O41FileSystem | None:
    """The writer's or reader's o41 filesystem, or None when it writes elsewhere."""
    fs = getattr(getattr(storage, "fs", None), "fs", None)
    return cast("O41FileSystem", fs) if getattr(fs, "protocol", None) == "o41" else None


class O41Results(list):  # type: ignore[type-arg]
    """A rank's write results, with the files it streamed into the job's upload."""

    o41_files: list[dict[str, Any]]

    def __init__(self, items: Iterable[WriteResult] = (),
                 files: list[dict[str, Any]] | None = None) -> None:
        super().__init__(items)
        self.o41_files = list(files or [])

    def __reduce__(self) -> tuple[type[O41Results], tuple[list[WriteResult], list[dict[str, Any]]]]:
        return (O41Results, (list(self), self.o41_files))


def mend() -> None:
    """Teach DCP's fsspec writer and reader o41's one-version, many-rank checkpoints."""
    global _mended
    with _lock:
        if _mended:
            return
        # torch is the trainer's: found where it is loaded, never a dependency of o41
        fsspec_dcp = importlib.import_module("torch.distributed.checkpoint._fsspec_filesystem")
        _mend_writer(fsspec_dcp.FsspecWriter)
        _mend_reader(fsspec_dcp.FsspecReader)
        _mended = True


@dataclasses.dataclass
class O41Prefix:
    """DCP's file prefix of a rank (what its ``_StoragePrefix`` holds: ``prefix``), with the
    o41 ticket of the job's upload."""

    prefix: str
    o41: dict[str, Any] = dataclasses.field(default_factory=dict)


def _step_of(fs: O41FileSystem, path: str | os.PathLike[str]) -> tuple[str, str]:
    key, _ = fs.write_target(f"{str(path).rstrip('/')}/.metadata")
    return key


def _mend_writer(cls: type[FsspecWriter]) -> None:
    setup, global_plan = cls.set_up_storage_writer, cls.prepare_global_plan
    write_data, finish = cls.write_data, cls.finish

    @functools.wraps(setup)
    def set_up_storage_writer(self: FsspecWriter, is_coordinator: bool, *args: object,
                              **kwargs: object) -> None:
        self._o41_coordinator = is_coordinator
        fs = _o41_fs(self)
        if fs is not None:  # a save is every rank's write call: a fenced rank stops here,
            fs.refuse_if_fenced(_step_of(fs, self.path)[0])  # not in a collective
        return setup(self, is_coordinator, *args, **kwargs)

    @functools.wraps(global_plan)
    def prepare_global_plan(self: FsspecWriter, plans: list[SavePlan]) -> list[SavePlan]:
        plans = global_plan(self, plans)
        fs = _o41_fs(self)
        if fs is None:
            return plans
        artifact, version = _step_of(fs, self.path)
        if registry.moved_since_job_read(fs.api, artifact, fs.holder):
            fs.writer.writable(artifact)  # the job's open fences the zombie, and stops this job
        fs.writer.check_new_step((artifact, version))  # before the open: a refusal fences nobody
        launch = fs.writer.writable(artifact)  # the job's one open (or o41 run's)
        launch.declare(version, [".metadata"])  # starts the step's upload
        ticket = {"api_url": fs.api.api_url, "artifact": artifact, "version": version,
                  "token": launch.token, "epoch": launch.epoch,
                  "upload": launch.step(version).upload}
        return [dataclasses.replace(p, storage_data=O41Prefix(p.storage_data.prefix, ticket))
                for p in plans]

    @functools.wraps(write_data)
    def write_data_(self: FsspecWriter, plan: SavePlan, planner: SavePlanner
                    ) -> Future[list[WriteResult]]:
        fs = _o41_fs(self)
        ticket = getattr(plan.storage_data, "o41", None)
        if fs is None or not ticket:
            return write_data(self, plan, planner)
        if ticket["api_url"] != fs.api.api_url:
            raise ValueError(f"{self.path}: the coordinator writes to {ticket['api_url']}, "
                             f"this rank to {fs.api.api_url}: give every rank the same "
                             "O41_ARTIFACTS_API_URL")
        artifact, version = ticket["artifact"], ticket["version"]
        own = registry.launch_if_held(fs.api, artifact, fs.holder)
        if own is None or own.token != ticket["token"]:
            own = registry.joined_launch(fs.api, artifact, fs.holder, token=ticket["token"],
                                      epoch=ticket["epoch"], version=version,
                                      upload=ticket["upload"], on_fenced=fs.on_fenced,
                                      place=fs.place, workers=fs.workers)
        elif own.step(version).upload != ticket["upload"]:
            own.join(version, ticket["upload"])  # the job's open, the coordinator's upload
        future = write_data(self, plan, planner)
        future.wait()
        results = future.value()
        prefix = plan.storage_data.prefix
        with own.lock:
            step = own.step(version)
            files = [f for f in step.files() if f["name"].startswith(prefix)]
            if step.joined:
                own.pop(version)  # the coordinator commits it
        out = importlib.import_module("torch.futures").Future()
        out.set_result(O41Results(results, files))
        return out

    @functools.wraps(finish)
    def finish_(self: FsspecWriter, metadata: Metadata, results: list[list[WriteResult]]
                ) -> None:
        fs = _o41_fs(self)
        if fs is None:
            return finish(self, metadata, results)
        artifact, version = _step_of(fs, self.path)
        launch = fs.writer.writable(artifact)
        for wr_list in results:
            for f in getattr(wr_list, "o41_files", []):
                launch.finished(version, f["name"], f["size"], f["sha256"])
        return finish(self, metadata, [list(r) for r in results])

    cls.set_up_storage_writer = set_up_storage_writer
    cls.prepare_global_plan = prepare_global_plan
    cls.write_data = write_data_
    cls.finish = finish_


def _in_file_order(plan: LoadPlan, storage: Mapping[object, object]) -> LoadPlan:
    """The plan's reads sorted by file and offset. DCP reads them in the plan's order, by
    key: ``layers.10`` comes before ``layers.2``, while the file holds them in the order
    they were saved, so a load jumps back and forth. A reader that moves forward is read
    ahead in few large GETs and fetches each byte once; one that jumps outruns its cache
    and fetches blocks again (1.5x the checkpoint's bytes, 54 GETs instead of 20, for 32
    tensors named ``t0``..``t31``). Each read fills its own tensor, so the order is free."""

    def where(item: ReadItem) -> tuple[str, int]:
        info = storage.get(item.storage_index)  # DCP's _StorageInfo
        return (str(getattr(info, "relative_path", "")), int(getattr(info, "offset", 0)))

    return dataclasses.replace(plan, items=sorted(plan.items, key=where))


def _mend_reader(cls: type[FsspecReader]) -> None:
    read_metadata, local_plan = cls.read_metadata, cls.prepare_local_plan
    global_plan, read_data = cls.prepare_global_plan, cls.read_data

    @functools.wraps(read_metadata)
    def read_metadata_(self: FsspecReader, *args: object, **kwargs: object) -> Metadata:
        metadata = read_metadata(self, *args, **kwargs)
        fs = _o41_fs(self)
        if fs is not None:
            where = parse(fs.strip(str(self.path)))
            self._o41_version = (where.version if where.version not in (None, "latest")
                                 else fs.writer.held_latest(where.artifact))
        return metadata

    @functools.wraps(local_plan)
    def prepare_local_plan(self: FsspecReader, plan: LoadPlan) -> LoadPlan:
        plan = local_plan(self, plan)
        version = getattr(self, "_o41_version", None)
        if _o41_fs(self) is None or version is None:
            return plan
        return dataclasses.replace(plan, storage_data={"o41_version": version})

    @functools.wraps(global_plan)
    def prepare_global_plan(self: FsspecReader, plans: list[LoadPlan]) -> list[LoadPlan]:
        plans = global_plan(self, plans)
        version = getattr(self, "_o41_version", None)
        if _o41_fs(self) is None or version is None:
            return plans
        return [dataclasses.replace(p, storage_data={"o41_version": version}) for p in plans]

    @functools.wraps(read_data)
    def read_data_(self: FsspecReader, plan: LoadPlan, planner: LoadPlanner) -> Future[None]:
        fs = _o41_fs(self)
        chosen = (plan.storage_data or {}).get("o41_version") if isinstance(
            plan.storage_data, dict) else None
        if fs is not None and chosen and chosen != getattr(self, "_o41_version", None):
            where = parse(fs.strip(str(self.path)))
            log.info("o41: o41://%s: this rank read %s, the coordinator %s; loading %s",
                     where.artifact, self._o41_version, chosen, chosen)
            with fs.open(f"o41://{where.artifact}/{chosen}/.metadata", "rb") as f:
                metadata = pickle.load(io.BytesIO(f.read()))
            self.storage_data = metadata.storage_data
            fs.hold_latest(where.artifact, chosen)
            self._o41_version = chosen
        if fs is not None:
            plan = _in_file_order(plan, self.storage_data)
        return read_data(self, plan, planner)

    cls.read_metadata = read_metadata_
    cls.prepare_local_plan = prepare_local_plan
    cls.prepare_global_plan = prepare_global_plan
    cls.read_data = read_data_


__all__ = ["O41Prefix", "O41Results", "mend"]
