"""The limit on a version's files, as a write and a joined write are told it."""

from __future__ import annotations

import pytest

from emulator.core.errors import PayloadTooLarge
from emulator.rules.filelists import check_joined, parse_write

SHA = "0" * 64


@pytest.mark.parametrize(("limit", "said"), [(1, "at most 1 file per version"),
                                             (2, "at most 2 files per version")])
def test_a_write_over_the_limit_is_payload_too_large_in_words_of_the_limit(limit, said):
    files = [{"name": f"f{i}", "size": 1, "sha256": SHA} for i in range(limit + 1)]
    with pytest.raises(PayloadTooLarge) as info:
        parse_write(files, max_files=limit, max_file_size=10)
    assert (info.value.status, info.value.code, info.value.message) == (
        413, "payload_too_large", said)
    declared = parse_write(files[-1:], max_files=limit, max_file_size=10)
    with pytest.raises(PayloadTooLarge) as info:
        check_joined(declared, [f"e{i}" for i in range(limit)], limit)
    assert info.value.message == said
