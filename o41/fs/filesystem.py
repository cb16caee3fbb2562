"""``o41://`` as an fsspec filesystem: the only change a trainer makes is the location string.

Registered through the ``fsspec.specs`` entry point, so ``fsspec.open("o41://...")`` and
every library that takes an fsspec URL find it. Paths are told in ``o41.paths``, reads in
``o41.fs.reading``, writes in ``o41.fs.writing`` (its base classes, in that order); this class adds
downloads (fsspec's ``get``: every file of one call goes in one parallel, sha256-verified
download) and teaches loaded frameworks o41's checkpoints through their adapters.

Who opens, and when (``mode``): a reader never opens, so it never fences a trainer; a writing
job opens once (``o41.writing.registry``,
``o41.job``), at its first write, at the start of a Lightning
``fit``, or before it starts under ``o41 run``.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from fsspec.utils import isfilelike

from o41.fs.reading import ReadingFileSystem
from o41.fs.writing import WritingFileSystem
from o41.models import FileEntry
from o41.transport.transfer import download


class O41FileSystem(WritingFileSystem):
    """Checkpoint versions of o41 artifacts as directories of immutable files."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _mend_lightning()

    @staticmethod
    def _get_kwargs_from_urls(path: str) -> dict[str, Any]:
        """fsspec asks this at every ``url_to_fs``/``open`` of an ``o41://`` URL, cached
        instance or not: the moment to teach a framework loaded since (``_mend_lightning``)."""
        _mend_lightning()
        return {}

    def get(self, rpath: Any, lpath: Any, recursive: bool = False, **kwargs: Any) -> None:
        """Download files; every file of the call goes in one parallel, verified download."""
        self._local.get_batch = batch = []
        try:
            super().get(self._pin(rpath), lpath, recursive=recursive, **kwargs)
        finally:
            self._local.get_batch = None
        self._download(batch)

    def get_file(self, rpath: str, lpath: Any, callback: Any = None, outfile: Any = None,
                 **kwargs: Any) -> None:
        if isfilelike(lpath):
            lpath.write(self.cat_file(rpath))
            return
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        pair = (self._entry(rpath)[1], os.fspath(lpath))
        batch = getattr(self._local, "get_batch", None)
        if batch is not None:
            batch.append(pair)
        else:
            self._download([pair])

    def _download(self, pairs: list[tuple[FileEntry, str]]) -> None:
        if not pairs:
            return
        paths = [os.path.abspath(p) for _, p in pairs]
        root = os.path.commonpath([os.path.dirname(p) for p in paths])
        entries = [FileEntry(Path(os.path.relpath(p, root)).as_posix(), e.size, e.sha256, e.url)
                   for (e, _), p in zip(pairs, paths, strict=True)]
        download(entries, root, workers=self.workers)


def _mend_lightning() -> None:
    """Teach each loaded framework o41's checkpoints (``ADAPTERS``), once each; a no-op
    without them. Called at every ``url_to_fs`` of an ``o41://`` URL too, so the order of
    imports and of fsspec's instance cache does not matter. The adapters are found by name
    in the table: they depend on this filesystem, never the other way."""
    loaded = {m for m in ADAPTERS if m in sys.modules} - _mended
    for framework in sorted(loaded):
        module, _, function = ADAPTERS[framework].partition(":")
        getattr(importlib.import_module(module), function)()
    _mended.update(loaded)


# a framework's module, once loaded -> the adapter's function that teaches it o41's layout
ADAPTERS = {
    "lightning.pytorch": "o41.adapters.lightning:mend",
    "pytorch_lightning": "o41.adapters.lightning:mend",
    "torch.distributed.checkpoint._fsspec_filesystem": "o41.adapters.dcp:mend",
}
_mended: set[str] = set()


__all__ = ["ADAPTERS", "O41FileSystem", "ReadingFileSystem"]
