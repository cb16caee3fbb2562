"""``UPath("o41://P/N/...")``: the ``o41`` protocol registered with universal-pathlib.

Registered through the ``universal_pathlib.implementations`` entry point in
``pyproject.toml``, so UPath finds this class instead of warning that ``o41`` is "not
explicitly implemented" and making one up; every call goes to
``o41.fs.filesystem.O41FileSystem``, whose class is registered with fsspec here so UPath takes
its path rules from it (not from a default "flavour", with a second warning). Imported only
by universal-pathlib, which is not a dependency of the client.
"""

from __future__ import annotations

from fsspec import get_filesystem_class
from upath import UPath

get_filesystem_class("o41")  # imports O41FileSystem into fsspec's registry of classes


class O41UPath(UPath):
    """A UPath on the ``o41://`` filesystem: ``UPath("o41://P/N") / "step-100" / "model.pt"``."""

    __slots__ = ()


__all__ = ["O41UPath"]
