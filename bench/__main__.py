"""`python -m bench`: measure the emulator against its references and print one table.

Every figure is measured in this one run, on this machine, beside what it is compared with
(raw loopback, moto's S3 server, the emulator's own trivial endpoint, the one-version
artifact). Nothing here is a test: the test suite has no timed assertions.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import (
    control,
    dataplane,
    dcp,
    dcp_ranks,
    engines,
    fixture,
    postgres,
    restore,
    scale,
    soak,
    startup,
)
from .report import (
    Row,
    limit_row,
    markdown_table,
    missing_row,
    ratio_row,
    side_row,
    text_table,
)
from .servers import REPO, Emulator, Moto

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
GOAL_MISSED = 3  # exit status when the run completed but a goal does not hold
# issue 32 item 3: DCP through o41:// against DCP's local writer and reader, side by side
DCP_GOALS = {"save": 0.8, "load": 0.5}
DCP_RANKS_GOALS = {"save": 0.6, "load": 0.4}


@dataclass(frozen=True)
class Plan:
    size_mib: int
    rounds: int
    reads: int
    parts: int
    clients: int
    seconds: float
    versions: int
    transfers: int
    samples: int
    cold: int
    conformance: bool
    shards: int = 8
    shard_mib: int = 32
    restore_rounds: int = 3
    dcp_mib: int = 256
    dcp_rounds: int = 3
    reset_artifacts: int = 2000
    fixture_tests: int = 200


FULL = Plan(1024, 2, 2, 8, 16, 3.0, 10_000, 100_000, 200, 5, True)
QUICK = Plan(8, 1, 1, 8, 16, 0.3, 200, 2_000, 5, 1, False, 8, 2, 1, 8, 1, 50, 20)


def _size(mib: int) -> str:
    return f"{mib // 1024} GiB" if mib % 1024 == 0 else f"{mib} MiB"


def run_dataplane(plan: Plan, work: Path, rows: list[Row], log) -> None:
    path = work / "checkpoint.bin"
    log(f"writing a {_size(plan.size_mib)} checkpoint file")
    sha = dataplane.make_file(path, plan.size_mib << 20)
    log("loopback")
    passes = plan.reads * plan.rounds
    limit = dataplane.loopback(path, work, passes, plan.parts)
    emu = Emulator(work / "data-dataplane", work)
    try:
        log("emulator up and down")
        ours = dataplane.through_emulator(emu, path, sha, plan.rounds, plan.reads, plan.parts)
    finally:
        emu.stop()
        shutil.rmtree(work / "data-dataplane", ignore_errors=True)
    log("loopback again")  # the best of before and after: drift on shared cores hits both
    limit = max(limit, dataplane.loopback(path, work, passes, plan.parts))
    moto = Moto(work)
    try:
        log("moto up and down")
        theirs = dataplane.through_moto(moto, path, plan.rounds, plan.reads, plan.parts)
    finally:
        moto.stop()
    path.unlink()
    what = f"{_size(plan.size_mib)}, {plan.parts} ranged GETs"
    rows += [
        ratio_row(f"read {what}", ours.best_read, limit, "MB/s", "loopback", ">=", 0.5),
        ratio_row(f"read {what}", ours.best_read, theirs.best_read, "MB/s", "moto", ">=", 3),
        ratio_row(f"upload {_size(plan.size_mib)}, signed PUT", ours.best_upload,
                  theirs.best_upload, "MB/s", "moto", ">=", 3),
        limit_row("peak RSS streaming up and down", ours.peak_rss_mb, "MB", "<=", 150,
                  theirs.peak_rss_mb, "moto"),
    ]
    rows[-1].note = (f"sum of VmHWM over gunicorn's master and workers; {ours.idle_rss_mb:.0f} MB "
                     f"idle before streaming; peak PSS (shared pages counted once) "
                     f"{ours.peak_pss_mb:.0f} MB; moto {theirs.idle_rss_mb:.0f} MB idle")


def run_restore(plan: Plan, work: Path, rows: list[Row], log) -> None:
    what = f"{plan.shards} x {plan.shard_mib} MiB, sha256"
    r = restore.measure(work, plan.shards, plan.shard_mib << 20, plan.restore_rounds, log)
    for op, boto_goal in (("load", 2), ("save", 3)):
        for way in ("client", "fsspec"):
            rows.append(ratio_row(f"{way} {op} {what}", r.best(op, way), r.best(op, "copy"),
                                  "MB/s", "verifying copy", ">=", 0.8))
            rows.append(ratio_row(f"{way} {op} {what}", r.best(op, way), r.best(op, "boto3"),
                                  "MB/s", "boto3+moto", ">=", boto_goal))
        cpu = ", ".join(f"{way} {r.cpu_text(op, way)}"
                        for way in ("client", "fsspec", "copy", "boto3"))
        rows[-1].note = (f"client save/load vs verifying copy vs boto3+moto: best of "
                         f"{plan.restore_rounds} interleaved turns; least CPU seconds of a "
                         f"{op}, this process + the server: {cpu}")


def run_dcp(plan: Plan, work: Path, rows: list[Row], log) -> None:
    what = f"DCP {{}} {_size(plan.dcp_mib)}"
    ways = (("o41-1", "local-1", "1 thread"), ("o41-4", "local-4", "4 threads"))
    if not dcp.available():
        for op in ("save", "load"):
            for _, _, threads in ways:
                rows.append(missing_row(f"{what.format(op)} o41://, {threads}",
                                        f">= {DCP_GOALS[op]}x", "torch is not installed",
                                        shown="skipped"))
        rows.append(missing_row(f"{what.format('load')} o41://, bytes read", "<= 1.020x",
                                "torch is not installed", shown="skipped"))
        for op in ("save", "load"):
            rows.append(missing_row(f"{what.format(op)} o41://, 2 ranks (rank 0's times)",
                                    f">= {DCP_RANKS_GOALS[op]}x", "torch is not installed",
                                    shown="skipped"))
        return
    r = dcp.measure(work, plan.dcp_mib << 20, plan.dcp_rounds, log)
    for op, label in (("save", "FileSystemWriter"), ("load", "FileSystemReader")):
        for ours, theirs, threads in ways:
            rows.append(ratio_row(f"{what.format(op)} o41://, {threads}", r.best(op, ours),
                                  r.best(op, theirs), "MB/s", f"local {label}", ">=",
                                  DCP_GOALS[op]))
    worst = max(r.read_ratios)
    rows.append(limit_row(f"{what.format('load')} o41://, bytes read", worst, "x", "<=", 1.02))
    cpu = "; ".join(f"{op} " + ", ".join(f"{way} {r.cpu_text(op, way)}" for way in
                                         ("local-1", "o41-1", "local-4", "o41-4"))
                    for op in ("save", "load"))
    rows[-1].note = (f"bytes the emulator served per load (usage/read) over the checkpoint's "
                     f"bytes, worst of {len(r.read_ratios)} loads; save and load figures are "
                     f"best of {plan.dcp_rounds} interleaved turns, client and emulator on "
                     f"the same cores; least CPU seconds, client + emulator: {cpu}")
    ranks = dcp_ranks.measure(2, plan.dcp_mib, plan.dcp_rounds, log)
    for op in ("save", "load"):
        rows.append(ratio_row(f"{what.format(op)} o41://, 2 ranks (rank 0's times)",
                              ranks[f"o41 {op}"], ranks[f"local {op}"], "MB/s",
                              "local, 2 ranks", ">=", DCP_RANKS_GOALS[op]))
    rows[-1].note = (f"torchrun, 2 ranks (gloo, CPU), a DTensor state sharded over them; "
                     f"times are rank 0's between barriers, best of {plan.dcp_rounds} turns")


def run_control(plan: Plan, work: Path, rows: list[Row], log) -> None:
    emu, moto = Emulator(work / "data-control", work), Moto(work)
    try:
        log(f"request rates, {plan.clients} clients")
        r = control.control_plane(emu, moto, plan.clients, plan.seconds)
    finally:
        emu.stop()
        moto.stop()
    fig = f"versions/read urls=1, {plan.clients} clients"
    rows += [
        ratio_row(fig, r.read.per_second, r.trivial.per_second, "req/s", "health", ">=", 0.5),
        ratio_row(fig, r.read.per_second, r.moto_head.per_second, "req/s", "moto HEAD", ">=", 2),
    ]


def run_engines(plan: Plan, work: Path, rows: list[Row], log) -> None:
    cycles_fig = "open+write+commit, 8 clients"
    reads_fig = f"versions/read urls=1, {plan.clients} clients"
    if not postgres.available():
        for fig in (cycles_fig, reads_fig):
            for config in engines.CONFIGS[1:]:
                rows.append(missing_row(f"{fig}, {config}", "-", "no PostgreSQL 15 "
                                        "installed (apt-get install -y postgresql)"))
        return
    r = engines.measure(work, 8, plan.seconds, log)
    sqlite = engines.CONFIGS[0]
    for config in engines.CONFIGS[1:]:
        rows.append(side_row(f"{cycles_fig}, {config}", r.cycles[config], r.cycles[sqlite],
                             "cycles/s", sqlite))
    for config in engines.CONFIGS[1:]:
        rows.append(side_row(f"{reads_fig}, {config}", r.reads[config], r.reads[sqlite],
                             "req/s", sqlite))
    rows[-1].note = ("no goal: what sharing one PostgreSQL across nodes costs against the "
                     "embedded SQLite; measured in 3 interleaved turns; two nodes share "
                     "this machine's cores with the database")


def run_scale(plan: Plan, work: Path, rows: list[Row], log) -> None:
    log(f"seeding {plan.versions:,} versions and {plan.transfers:,} transfers")
    lat = scale.scale(work / "data-scale", work, plan.versions, plan.transfers, plan.samples)
    many = f"{plan.versions:,} versions vs 1"
    rows += [
        ratio_row(f"artifacts/open, {many}", lat.open_many * 1e3, lat.open_one * 1e3, "ms",
                  "1 version", "<=", 1.5),
        ratio_row(f"versions/read urls=1, {many}", lat.read_many * 1e3, lat.read_one * 1e3,
                  "ms", "1 version", "<=", 1.5),
        limit_row(f"usage/read, {lat.transfers:,} transfers", lat.usage_big * 1e3, "ms", "<",
                  100, lat.usage_small * 1e3, "2 transfers"),
    ]
    rows[-1].note = (f"{lat.transfers:,} metered requests (2 PUTs and 8 ranged GETs per version) "
                     f"are {lat.rows:,} report rows; with {lat.transfers:,} rows that never "
                     f"aggregate: {lat.usage_worst * 1e3:,.0f} ms (no goal)")


def run_startup(plan: Plan, work: Path, rows: list[Row], log) -> None:
    log("cold starts")
    ours, theirs = startup.cold_starts(work, plan.cold)
    rows.append(limit_row("cold start to healthy", ours, "s", "<=", 0.5, theirs, "moto"))
    goal = "<= 60.00 s"
    if not plan.conformance:
        rows.append(missing_row("conformance suite, default profile", goal,
                                "not run by --quick", shown="skipped"))
        return
    log("conformance suite")
    suite = startup.conformance(work, timeout=600)
    if suite.seconds is None:
        rows.append(missing_row("conformance suite, default profile", goal, suite.summary))
        return
    row = limit_row("conformance suite, default profile", suite.seconds, "s", "<=", 60)
    row.note = suite.summary + ("" if suite.ok else " (the suite did not pass)")
    rows.append(row)


def run_fixture(plan: Plan, work: Path, rows: list[Row], log) -> None:
    r = fixture.measure(work, plan.reset_artifacts, plan.fixture_tests, log)
    many = f"{r.artifacts:,} artifacts of one version"
    per_test = limit_row("o41_emulator fixture, per test", r.per_test * 1e3, "ms", "<=", 50)
    per_test.note = (f"set-up and tear-down as pytest reports them, median of {r.tests - 1} "
                     "tests of a user project (the first, which starts the emulator, left out)")
    start = limit_row("ThreadedEmulator start to healthy", r.start, "s", "<=", 0.5)
    start.note = "in this process, once its modules are imported"
    reset_http = limit_row(f"POST /_emulator/reset, {many}", r.reset_http * 1e3, "ms", "<", 100)
    reset_http.note = "folder storage: its buckets move to a trash folder a thread empties"
    # Notes are set on the rows themselves: ``rows`` holds every earlier section's rows too.
    rows += [per_test, start,
             limit_row(f"ThreadedEmulator.reset(), {many}", r.reset_call * 1e3, "ms", "<", 100),
             reset_http]


SECTIONS = {"dataplane": run_dataplane, "restore": run_restore, "dcp": run_dcp,
            "control": run_control, "engines": run_engines, "scale": run_scale,
            "startup": run_startup, "fixture": run_fixture}


def _memory_dir(plan: Plan) -> str | None:
    """/dev/shm when it can hold a run's files: the figures are then the servers', not the
    disk's (a VM's disk can be slower than every upload measured here)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        free = os.statvfs(shm).f_bavail * os.statvfs(shm).f_frsize
        if free > (plan.size_mib << 20) * (2 * plan.rounds + 2):
            return str(shm)
    return None


def _where(work: Path) -> str:
    """The file system the run's files lived on, from /proc/mounts."""
    best, kind = "", "?"
    for line in Path("/proc/mounts").read_text().splitlines():
        _, point, fstype = line.split()[:3]
        if str(work.resolve()).startswith(point) and len(point) > len(best):
            best, kind = point, fstype
    return f"{kind} (mounted at {best})"


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes and short runs (a smoke run of every row)")
    ap.add_argument("--only", action="append", choices=sorted(SECTIONS),
                    help="run only this section (repeatable)")
    ap.add_argument("--write-docs", action="store_true",
                    help=f"replace the results block of docs/performance.md ({BEGIN})")
    ap.add_argument("--workdir", type=Path, help="keep logs and data here (default: temporary)")
    ap.add_argument("--soak", type=float, metavar="SECONDS",
                    help="instead of the table: the memory soak, a mixed load (raw writers, "
                    "fsspec writers, readers) for SECONDS, with RSS at start, middle and end")
    ap.add_argument("--soak-max-kib", type=int, default=256, metavar="KIB",
                    help="the soak's largest file, in KiB (files are 16 KiB to this)")
    args = ap.parse_args(argv)
    plan = QUICK if args.quick else FULL
    command = "python -m bench" + "".join(f" {shlex.quote(a)}" for a in (argv or sys.argv[1:]))

    def log(msg: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    if args.soak is not None:
        return run_soak(args.soak, args.soak_max_kib << 10, args.workdir, command, log)
    rows: list[Row] = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="o41-bench-", dir=_memory_dir(plan)) as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in args.only or SECTIONS:
            SECTIONS[name](plan, work, rows, log)
    if args.quick:  # its goals are the full run's: 8 MiB in short runs proves nothing there
        for row in rows:
            row.holds = None
    header = (f"command: {command}\nmachine: {machine()}\ndata: {_where(work)}\n"
              f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    if args.quick:
        header += ("\njudged: no (--quick runs small sizes briefly, a smoke run of every row; "
                   "the goals are for the full run)")
    print(header + "\n\n" + text_table(rows))
    if args.write_docs:
        write_docs(header, markdown_table(rows))
    return 0 if all(r.holds is not False for r in rows) else GOAL_MISSED


def run_soak(seconds: float, largest: int, workdir: Path | None, command: str, log) -> int:
    """The memory soak on its own: minutes long, so never part of the table's run."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="o41-soak-") as tmp:
        work = workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        result = soak.run(work, seconds, sizes=(16 << 10, largest), log=log)
    print(f"command: {command}\nmachine: {machine()}\n"
          f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after\n\n"
          + soak.render(result))
    return 0 if result.growth <= 1.2 and not result.errors else GOAL_MISSED


def write_docs(header: str, table: str) -> None:
    doc = REPO / "docs" / "performance.md"
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    block = "```\n" + header + "\n```\n\n" + table + "\n"
    doc.write_text(head + BEGIN + "\n" + block + END + rest.split(END, 1)[1])


if __name__ == "__main__":
    sys.exit(main())
