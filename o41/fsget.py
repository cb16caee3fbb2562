"""Downloads of whole files to local paths (fsspec's ``get``): every file of one call goes in
one parallel, sha256-verified download (``o41.transfer``), not one file after another."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fsspec.utils import isfilelike

from .models import FileEntry
from .transfer import download


class Downloads:
    """The ``get`` half of ``O41FileSystem``; it needs the filesystem's ``_pin``, ``_entry``,
    ``cat_file``, ``isdir``, ``workers`` and per-thread ``_local``."""

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
