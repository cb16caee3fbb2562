"""``python -m conformance.mutants table``: run the conformance suite against every mutant.

For each mutant a proxy starts in this process in front of the upstream, and the suite runs
against the proxy as a URL target, first only the tests of the mutant's rule (``--rules``),
then, if the mutant survived those, the whole suite. With ``--spawn`` a second emulator whose
signed URLs live ``EXPIRY_LIFETIME`` seconds stands behind a second proxy with the same mutant,
handed to the suite as ``--expiry-target`` so that the URL expiry tests run instead of skipping
(the main emulator keeps long-lived URLs, so no other test races a clock). ``-x`` stops at
the first failing test, which is recorded as the test that killed the mutant. The
pass-through mutant ``none`` runs first: if the suite does not pass through the plain proxy,
no verdict would mean anything. The table forks each suite run from a server that has
imported pytest once (forkserver.py), and a rule's run collects only the files holding
tests it selects (selection.py): the same tests run, in the same order, for less.

The JSON result holds no timings, so two runs can be compared byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from conformance.mutants import MUTANTS
from conformance.mutants.base import Mutant
from conformance.mutants.forkserver import ForkServers
from conformance.mutants.proxy import HttpUpstream
from conformance.mutants.proxy import MutantProxy
from conformance.mutants.selection import OPTION as SELECTION_OPTION
from conformance.mutants.selection import Selection
from conformance.mutants.table_text import MARK_BEGIN  # noqa: F401 - MARK_* are imported from here
from conformance.mutants.table_text import MARK_END  # noqa: F401 - MARK_* are imported from here
from conformance.mutants.table_text import markdown  # noqa: F401 - MARK_* are imported from here
from conformance.mutants.table_text import summary  # noqa: F401 - MARK_* are imported from here
from conformance.mutants.table_text import table_lines  # noqa: F401 - MARK_* are imported from here
from conformance.mutants.table_text import write_markdown  # noqa: F401 - MARK_* are imported from here
from conformance.rules import rule_of
from conformance.session import SECRET_ENV
from conformance.spawn import SPAWN_MAX_FILE_SIZE
from conformance.spawn import SpawnedEmulator

__all__ = ["Outcome", "Target", "main", "run_mutant", "suite_env", "suite_options"]

#: Keys of the emulator the runner spawns; the scoped key writes under ``mut-w/`` only (a
#: project grant: names beside it, such as ``mut-w2x/...``, are tested too).
READ_KEY = "ak_mutants_reader"
SCOPED_KEY = "ak_mutants_scoped"
SCOPED_WRITE, SCOPED_READ = "mut-w/", "mut/r-"
SPAWN_CONFIG = (
    f"max_file_size = {SPAWN_MAX_FILE_SIZE}\n\n"
    f'[[keys]]\nkey = "{READ_KEY}"\nscopes = [{{ prefix = "", access = "read" }}]\n\n'
    f'[[keys]]\nkey = "{SCOPED_KEY}"\n'
    f'scopes = [{{ prefix = "{SCOPED_WRITE}", access = "write" }}, '
    f'{{ prefix = "{SCOPED_READ}", access = "read" }}]\n'
)
#: Seconds the expiry emulator's signed URLs (and uploads) live: short enough for the
#: suite's ``--max-url-wait`` (10 s), long enough for an open, upload and commit under load.
EXPIRY_LIFETIME = 5
EXPIRY_CONFIG = f"url_lifetime = {EXPIRY_LIFETIME}\n{SPAWN_CONFIG}"
RATIO = 0.97


@dataclass(frozen=True)
class Target:
    """The upstream and the keys the suite gets for it (keys stay out of the repr)."""

    url: str
    api_key: str = field(repr=False)
    read_key: str | None = field(default=None, repr=False)
    scoped_key: str | None = field(default=None, repr=False)  # KEY=PREFIX
    scoped_read_prefix: str | None = None
    expiry_url: str | None = None  # same keys, signed URLs that expire within seconds


@dataclass(frozen=True)
class Outcome:
    """The verdict on one mutant: ``killed``, ``survived`` or ``error`` (suite unusable)."""

    name: str
    clause: str
    verdict: str
    killed_by: str = ""
    phase: str = ""  # "rule" or "suite": which run killed it


def suite_options() -> set[str]:
    """Options the installed conformance plugin offers (older ones lack the scoped key)."""
    out = subprocess.run(
        # Naming the suite is what makes the plugin register its options at all.
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "conformance",
         "--help"],
        capture_output=True, text=True, check=False,
    ).stdout
    # The help spells an option with a value "--rules=IDS": the name is before the "=".
    return {word.partition("=")[0] for word in out.split() if word.startswith("--")}


def _first_failure(junit: Path) -> str:
    """The id of the first failing or erroring test case in a JUnit XML file."""
    if not junit.exists():
        return ""
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            module = case.get("classname", "").replace(".", "/")
            return f"{module}.py::{case.get('name', '')}"
    return ""


def suite_env(target: Target) -> dict[str, str]:
    """The suite's environment: ours, with the target's keys in the variables the plugin
    reads (``ps`` shows every user a process's arguments, not its environment)."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV.values()}
    env[SECRET_ENV["api_key"]] = target.api_key
    if target.read_key:
        env[SECRET_ENV["read_key"]] = target.read_key
    if target.scoped_key:
        env[SECRET_ENV["scoped_key"]] = target.scoped_key
    return env


def pytest_command(proxy_url: str, target: Target, options: set[str], junit: Path,
                   rule: str | None, expiry_url: str | None = None,
                   first: str | None = None, ignore: list[str] | None = None) -> list[str]:
    """The suite's command line against ``proxy_url``; it carries no key (:func:`suite_env`
    hands them over). ``first``: the clause whose tests run before the rest of ``rule``'s;
    ``ignore``: test files not to collect (selection.py)."""
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--target", proxy_url,
           "-x", "-q", "-p", "no:cacheprovider",
           "-p", "no:randomly", "-p", "no:schemathesis", "--junitxml", str(junit),
           "-o", "junit_family=xunit1"]
    if target.scoped_read_prefix and "--scoped-read-prefix" in options:
        cmd += ["--scoped-read-prefix", target.scoped_read_prefix]
    if expiry_url and "--expiry-target" in options:
        cmd += ["--expiry-target", expiry_url]
    if "--untested-fails" in options:  # a mutant that leaves a base clause untested dies
        cmd += ["--untested-fails"]
    if rule:
        cmd += ["--rules", rule]
    if first and "--first" in options:
        cmd += ["--first", first]
    return cmd + [f"--ignore={path}" for path in ignore or ()]


def _run_suite(proxies: tuple[str, str | None], target: Target, options: set[str],
               rule: str | None, timeout: float, first: str | None = None,
               servers: ForkServers | None = None, selection: Selection | None = None,
               extra: tuple[str, ...] = ()) -> tuple[int, str, str]:
    """Exit code, first failing test and output tail of one suite run against the proxies
    of the target and of its expiry target: a fresh ``python -m pytest``, or the same run
    forked by one of ``servers``; not collecting the files ``selection`` has no test of
    ``rule`` in, if given."""
    with tempfile.TemporaryDirectory(prefix="o41-mutant-") as tmp:
        junit = Path(tmp) / "junit.xml"
        ignore = selection.ignored(rule) if selection and rule else None
        cmd = pytest_command(proxies[0], target, options, junit, rule, proxies[1], first,
                             ignore) + list(extra)
        if servers is not None:
            out = Path(tmp) / "output.txt"
            code = servers.run(cmd[3:], suite_env(target), tmp, out, timeout)  # after -m pytest
            if code is None:
                return -1, "", f"timed out after {timeout:.0f} s"
            text = out.read_text(errors="replace") if out.exists() else ""
            return code, _first_failure(junit), text[-3000:]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  cwd=tmp, check=False, env=suite_env(target))
        except subprocess.TimeoutExpired:
            return -1, "", f"timed out after {timeout:.0f} s"
        return done.returncode, _first_failure(junit), (done.stdout + done.stderr)[-3000:]


def run_mutant(name: str, target: Target, options: set[str], timeout: float = 300.0,
               *, whole_suite: bool = True, rules: str | None = None,
               servers: ForkServers | None = None,
               selection: Selection | None = None) -> Outcome:
    """The verdict of the suite on mutant ``name`` (``none``: the plain proxy): the tests of
    its rule first (or of ``rules``), then, unless ``whole_suite`` is False, every test;
    each run forked by one of ``servers`` and the rule's run collecting only the files
    ``selection`` has its tests in, if given."""
    cls = MUTANTS.get(name, Mutant)
    clause = cls.clause or "-"
    # One mutant instance per proxy: each upstream's URLs and uploads are its own.
    proxies = [MutantProxy(HttpUpstream(url), cls())
               for url in (target.url, target.expiry_url) if url]
    for proxy in proxies:
        proxy.start()
    urls = (proxies[0].url, proxies[1].url if len(proxies) > 1 else None)
    try:
        first = rules or (rule_of(clause) if cls.clause else None)
        phases: list[tuple[str, str | None]] = [("rule", first)] if first else []
        if whole_suite or not phases:
            phases.append(("suite", None))
        for phase, rule in phases:
            # The rule's run takes the mutant's clause first: every test of the rule still
            # runs unless one fails, and the one most likely to fail runs without waiting.
            ahead = clause if phase == "rule" and cls.clause else None
            code, first, tail = _run_suite(urls, target, options, rule, timeout, ahead,
                                           servers, selection)
            if code == 1:
                # Exit 1 with no failing test: a base clause was only skipped (NOT TESTED).
                killer = first or ("(base NOT TESTED)" if "base NOT TESTED" in tail
                                   else "(no test id)")
                return Outcome(name, clause, "killed", killer, phase)
            if code not in (0, 5):  # 5: no test carries this rule
                detail = first or tail.strip().splitlines()[-1:] or [""]
                return Outcome(name, clause, "error", f"pytest exit {code}: {detail}", phase)
        return Outcome(name, clause, "survived")
    finally:
        for proxy in proxies:
            proxy.stop()


def add_target_options(p: argparse.ArgumentParser) -> None:
    """Where the implementation is and its keys; shared by the mutant and legal tables."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--upstream", help="API origin of the implementation under test")
    where.add_argument("--spawn", action="store_true", help="start o41-emulator once for all")
    p.add_argument("--api-key", help="write key for --upstream")
    p.add_argument("--read-key", help="read-only key for --upstream")
    p.add_argument("--scoped-key", metavar="KEY=PREFIX", help="prefix-scoped key (--upstream)")
    p.add_argument("--scoped-read-prefix", metavar="PREFIX")


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m conformance.mutants table")
    add_target_options(p)
    p.add_argument("--expiry-upstream", metavar="URL",
                   help="a second instance, same keys, whose signed URLs expire within 10 s "
                   "(--upstream; enables the URL expiry tests)")
    p.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="run only these mutants (or clause prefixes such as FENCE-)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the verdicts as JSON")
    p.add_argument("--repeat", action="append", default=[], metavar="NAME",
                   help="run these of the chosen mutants (or clause prefixes) once more, "
                   "after the others, in the same run (see --repeat-json)")
    p.add_argument("--repeat-json", type=Path, metavar="FILE",
                   help="write the verdicts of the --repeat runs as JSON")
    p.add_argument("--markdown", type=Path, metavar="FILE",
                   help="write the table as markdown (replacing the marked block if present)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per suite run")
    p.add_argument("--from-json", type=Path, nargs="+", metavar="FILE",
                   help="run nothing: print (and --markdown) the table of earlier --json runs")
    return p.parse_args(argv)


def _chosen(only: list[str]) -> list[str]:
    names = sorted(MUTANTS, key=lambda n: (MUTANTS[n].clause, n))
    if not only:
        return names
    return [n for n in names if any(n == o or MUTANTS[n].clause.startswith(o) for o in only)]


def collect_selection(target: Target, options: set[str],
                      servers: ForkServers | None) -> Selection | None:
    """Every test's file and rule ids, from one collect-only run of the whole suite with
    the options the mutants' runs have (selection.py); None if that run fails (every run
    then collects the whole suite, as before)."""
    with tempfile.TemporaryDirectory(prefix="o41-selection-") as tmp:
        out = Path(tmp) / "selection.json"
        code, _, tail = _run_suite((target.url, target.expiry_url), target, options, None,
                                   300.0, servers=servers, extra=(
                                       "--collect-only", "-p", "conformance.mutants.selection",
                                       SELECTION_OPTION, str(out)))
        if code != 0 or not out.exists():
            print(f"  collecting the suite's rules failed (pytest exit {code}); every run "
                  f"collects the whole suite: {tail.strip()[-300:]}", file=sys.stderr)
            return None
        return Selection.read(out)


def run_table(target: Target, names: list[str], jobs: int, timeout: float,
              again: list[str] | None = None) -> tuple[list[Outcome], list[Outcome]]:
    """The verdicts on ``names``, and on ``again`` run once more after them."""
    again = again or []
    options = suite_options()
    outcomes: dict[str, Outcome] = {}
    repeated: dict[str, Outcome] = {}
    # The suite's runs are forked from servers that imported pytest and its libraries once
    # (forkserver.py): a fresh pytest spent ~1.5 s of CPU on that per mutant. The servers'
    # environment holds no key; each run's has the keys (suite_env).
    servers = ForkServers(jobs, {k: v for k, v in os.environ.items()
                                 if k not in SECRET_ENV.values()})
    try:
        selection = collect_selection(target, options, servers)
    except BaseException:
        servers.stop()
        raise

    def one(name: str, into: dict[str, Outcome]) -> None:
        t0 = time.monotonic()
        outcome = run_mutant(name, target, options, timeout, servers=servers,
                             selection=selection)
        into[name] = outcome
        again_ = " (again)" if into is repeated else ""
        print(f"  {outcome.verdict:<8} {name}{again_} ({time.monotonic() - t0:.1f} s) "
              f"{outcome.killed_by}", file=sys.stderr, flush=True)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        # The plain proxy's whole-suite run (~120 s) takes one job while the others start on
        # the mutants, instead of the table waiting for it; if it fails, no verdict is kept.
        baseline = pool.submit(run_mutant, "none", target, options, timeout, servers=servers)
        futures = [pool.submit(one, name, outcomes) for name in names]
        # A mutant's second run is its own (own proxies and mutant state, fresh names).
        futures += [pool.submit(one, name, repeated) for name in again]
        plain = baseline.result()
        if plain.verdict != "survived":
            for future in futures:
                future.cancel()
            raise SystemExit(f"the suite fails through the plain proxy: {plain.killed_by}")
        for future in futures:
            future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # Ctrl-C: no new suite runs start
        servers.stop()
    return [outcomes[n] for n in names], [repeated[n] for n in again]


def load_outcomes(paths: list[Path]) -> list[Outcome]:
    """The verdicts of earlier runs, one per mutant (a later file wins), in table order."""
    found = {o["name"]: Outcome(**o) for p in paths for o in json.loads(p.read_text())}
    return [found[n] for n in _chosen([]) if n in found]


def report(outcomes: list[Outcome], args: argparse.Namespace, seconds: float | None) -> int:
    print("\n".join(table_lines(outcomes)))
    killed, total, ratio = summary(outcomes)
    took = f" in {seconds:.0f} s" if seconds is not None else ""
    print(f"{killed} of {total} mutants killed ({ratio:.1%}){took}")
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1) + "\n")
    if args.markdown:
        write_markdown(args.markdown, markdown(outcomes))
    return 0 if ratio >= RATIO else 1


def target_of(args: argparse.Namespace, emulators: list[SpawnedEmulator], tmp: Path) -> Target:
    """The target ``--spawn`` starts (a main emulator and one whose URLs expire soon, both
    appended to ``emulators``) or ``--upstream`` names with its keys."""
    if args.spawn:
        url, key = spawn_emulator(emulators, tmp / "main", SPAWN_CONFIG)
        expiry_url, _ = spawn_emulator(emulators, tmp / "expiry", EXPIRY_CONFIG)
        return Target(url, key, READ_KEY, f"{SCOPED_KEY}={SCOPED_WRITE}", SCOPED_READ,
                      expiry_url)
    if not args.api_key:
        raise SystemExit("--upstream needs --api-key")
    return Target(args.upstream.rstrip("/").removesuffix("/api/v1"), args.api_key,
                  args.read_key, args.scoped_key, args.scoped_read_prefix, args.expiry_upstream)


def spawn_emulator(started: list[SpawnedEmulator], workdir: Path, config: str) -> tuple[str, str]:
    """Start an emulator (appended to ``started`` first, so it is stopped even if it fails
    to come up); its URL and write key."""
    workdir.mkdir()
    emulator = SpawnedEmulator(workdir, config=config)
    started.append(emulator)
    url = emulator.start()
    return url, emulator.key or "ak_local"


def main(argv: list[str]) -> int:
    args = _parse(argv)
    if args.from_json:
        return report(load_outcomes(args.from_json), args, None)
    if not (args.spawn or args.upstream):
        raise SystemExit("give --spawn, --upstream URL or --from-json FILE")
    names = _chosen(args.only)
    again = [n for n in _chosen(args.repeat) if n in names] if args.repeat else []
    if args.repeat_json and not again:
        raise SystemExit("--repeat-json needs --repeat naming some of the chosen mutants")
    started = time.monotonic()
    emulators: list[SpawnedEmulator] = []
    with tempfile.TemporaryDirectory(prefix="o41-mutants-") as tmp:
        try:
            target = target_of(args, emulators, Path(tmp))
            outcomes, repeated = run_table(target, names, args.jobs, args.timeout, again)
        finally:
            for emulator in emulators:
                emulator.stop()
    if args.repeat_json:
        args.repeat_json.write_text(json.dumps([asdict(o) for o in repeated], indent=1) + "\n")
    return report(outcomes, args, time.monotonic() - started)
