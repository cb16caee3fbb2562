"""fsspec's own abstract test classes against the ``o41://`` filesystem, where they fit.

``AbstractGetTests`` fits: every scenario is written as one committed version (in a
transaction) and read back with fsspec's path semantics. The put, copy, pipe, open and mv
classes do not: they rewrite and delete files of one path, and a committed o41 version is
immutable (docs/fsspec.md, "What fsspec's abstract tests cover").
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import fsspec
import pytest
from fsspec.tests.abstract import AbstractFixtures, AbstractGetTests

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]


class O41Fixtures(AbstractFixtures):
    """Each scenario is one version of a fresh artifact; nothing is removed afterwards
    (versions are immutable), fresh names keep the tests apart."""

    @pytest.fixture
    def fs(self, served_emulator: Emulator) -> Any:
        return fsspec.filesystem("o41", api_url=served_emulator.api, api_key=served_emulator.key,
                                 place="aws/us-east-1", skip_instance_cache=True)

    @pytest.fixture
    def fs_join(self) -> Callable[..., str]:
        return lambda *parts: "/".join(p.rstrip("/") for p in parts)

    @pytest.fixture
    def fs_path(self) -> str:
        return f"o41://abstract/run-{secrets.token_hex(4)}/step-00000001"

    @pytest.fixture
    def supports_empty_directories(self) -> bool:
        return False  # directories exist only as prefixes of file names

    def _committed(self, fs: Any, build: Callable[..., str], join: Any, path: str) -> str:
        with fs.transaction:
            return build(fs, join, path)

    @pytest.fixture
    def fs_bulk_operations_scenario_0(self, fs: Any, fs_join: Any, fs_path: str) -> Iterator[str]:
        yield self._committed(fs, self._bulk_operations_scenario_0, fs_join, fs_path)

    @pytest.fixture
    def fs_glob_edge_cases_files(self, fs: Any, fs_join: Any, fs_path: str) -> Iterator[str]:
        yield self._committed(fs, self._glob_edge_cases_files, fs_join, fs_path)

    @pytest.fixture
    def fs_dir_and_file_with_same_name_prefix(self, fs: Any, fs_join: Any,
                                              fs_path: str) -> Iterator[str]:
        yield self._committed(fs, self._dir_and_file_with_same_name_prefix, fs_join, fs_path)

    @pytest.fixture
    def fs_10_files_with_hashed_names(self, fs: Any, fs_join: Any,
                                      fs_path: str) -> Iterator[str]:
        yield self._committed(fs, self._10_files_with_hashed_names, fs_join, fs_path)


class TestO41Get(O41Fixtures, AbstractGetTests):
    """fsspec's get tests, unchanged, every one (``test_get_directory_recursive`` touches a
    file outside a transaction and reads it back: the read commits its step)."""
