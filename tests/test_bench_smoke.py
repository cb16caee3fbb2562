"""`python -m bench --quick` runs end to end and prints every row of its table.

Only the shape is checked: timing has no place in the test suite (the benchmark is its
own command, and its figures are in docs/performance.md).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the slow tier (conftest.py): the quick bench, the soak smoke

REPO = Path(__file__).resolve().parent.parent

FIGURES = [
    "read 8 MiB, 8 ranged GETs",
    "upload 8 MiB, signed PUT",
    "peak RSS streaming up and down",
    "client load 8 x 2 MiB, sha256",
    "client save 8 x 2 MiB, sha256",
    "fsspec load 8 x 2 MiB, sha256",
    "fsspec save 8 x 2 MiB, sha256",
    "DCP save 8 MiB o41://, 1 thread",
    "DCP save 8 MiB o41://, 4 threads",
    "DCP load 8 MiB o41://, 1 thread",
    "DCP load 8 MiB o41://, 4 threads",
    "DCP load 8 MiB o41://, bytes read",
    "DCP save 8 MiB o41://, 2 ranks (rank 0's times)",
    "DCP load 8 MiB o41://, 2 ranks (rank 0's times)",
    "versions/read urls=1, 16 clients",
    "open+write+commit, 8 clients, 1 node, PostgreSQL",
    "open+write+commit, 8 clients, 2 nodes, PostgreSQL",
    "versions/read urls=1, 16 clients, 2 nodes, PostgreSQL",
    "artifacts/open, 200 versions vs 1",
    "versions/read urls=1, 200 versions vs 1",
    "usage/read, 2,000 transfers",
    "cold start to healthy",
    "conformance suite, default profile",
    "o41_emulator fixture, per test",
    "ThreadedEmulator start to healthy",
    "ThreadedEmulator.reset(), 50 artifacts of one version",
    "POST /_emulator/reset, 50 artifacts of one version",
]


def test_quick_bench_prints_every_row(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--workdir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=480, stdin=subprocess.DEVNULL,
    )
    # A quick run judges nothing (its goals are the full run's) and says so; it exits 0.
    assert done.returncode == 0, done.stderr[-3000:]
    assert "judged: no (--quick runs small sizes briefly" in done.stdout
    lines = done.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("-----"))
    rows = lines[rule + 1 : lines.index("notes:") if "notes:" in lines else None]
    assert len(rows) == 34, done.stdout  # the DCP rows say 'skipped' without torch
    for figure in FIGURES:
        assert any(row.startswith(figure) for row in rows), figure
    assert all(row.rstrip().endswith("not judged") for row in rows), rows
    assert "command: python -m bench --quick" in done.stdout
    assert "machine: " in done.stdout and " cores " in done.stdout


def test_soak_smoke_reports_rss_at_start_middle_and_end(tmp_path: Path) -> None:
    """`--soak` runs the mixed load (the 10-minute figure is in docs/reliability.md)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--soak", "6", "--workdir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert done.returncode in (0, 3), done.stderr[-3000:]  # 3: a goal missed on a busy box
    out = done.stdout
    assert "mixed load 6 s: 12 raw writers, 8 fsspec writers, 12 readers" in out
    assert "errors: 0" in out, out
    for figure in ("raw commits", "fsspec commits", "reads"):
        assert figure in out.split("requests: ", 1)[1].splitlines()[0], figure
    assert re.search(r"RSS .*: start \d+ MB, at 10% \d+ MB, middle \d+ MB, end \d+ MB", out)
    assert re.search(r"end / middle: \d+\.\d\d \(goal <= 1\.20: (yes|NO)\)", out)
