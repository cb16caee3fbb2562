"""``python -m conformance.mutants legal``: the suite against every legal variant.

For each variant (:mod:`conformance.mutants.legal`) a proxy starts in front of the upstream
and the WHOLE suite runs against it, without ``-x``: every failing test is a false failure,
a test that asks more than the contract says. Exit code 0 only when no variant fails a test.
"""

from __future__ import annotations

import argparse
import json
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

from conformance.mutants.legal import LEGAL
from conformance.mutants.legal import make_variant
from conformance.mutants.proxy import HttpUpstream
from conformance.mutants.proxy import MutantProxy
from conformance.mutants.runner import Target
from conformance.mutants.runner import add_target_options
from conformance.mutants.runner import pytest_command
from conformance.mutants.runner import suite_env
from conformance.mutants.runner import suite_options
from conformance.mutants.runner import target_of
from conformance.spawn import SpawnedEmulator

__all__ = ["Verdict", "main", "run_variant"]


@dataclass(frozen=True)
class Verdict:
    """What the suite said about one legal variant: ``passed``, ``failed`` or ``error``."""

    name: str
    verdict: str
    failures: list[str] = field(default_factory=list)
    detail: str = ""


def _failures(junit: Path) -> list[str]:
    """Every failing or erroring test case of a JUnit XML file, with its message, in order."""
    if not junit.exists():
        return []
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            module = case.get("classname", "").replace(".", "/")
            why = " ".join((bad.get("message") or "").split())[:240]
            out.append(f"{module}.py::{case.get('name', '')}  ({why})")
    return out


def run_variant(name: str, target: Target, options: set[str], timeout: float = 600.0,
                extra: tuple[str, ...] = ()) -> Verdict:
    """The whole suite (or ``extra`` pytest arguments narrowing it) through variant ``name``;
    the target's expiry instance, when it has one, behind a proxy with the same variant."""
    proxies = [MutantProxy(HttpUpstream(url), make_variant(name))
               for url in (target.url, target.expiry_url) if url]
    for proxy in proxies:
        proxy.start()
    expiry = proxies[1].url if len(proxies) > 1 else None
    try:
        with tempfile.TemporaryDirectory(prefix="o41-legal-") as tmp:
            junit = Path(tmp) / "junit.xml"
            cmd = [a for a in pytest_command(proxies[0].url, target, options, junit, None, expiry)
                   if a != "-x"] + list(extra)
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                      cwd=tmp, check=False, env=suite_env(target))
            except subprocess.TimeoutExpired:
                return Verdict(name, "error", detail=f"timed out after {timeout:.0f} s")
            failed = _failures(junit)
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
            if done.returncode == 0:
                return Verdict(name, "passed")
            if done.returncode == 1 and failed:
                return Verdict(name, "failed", failed, tail[0])
            return Verdict(name, "error", failed, f"pytest exit {done.returncode}: {tail[0]}")
    finally:
        for proxy in proxies:
            proxy.stop()


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m conformance.mutants legal")
    add_target_options(p)
    p.add_argument("--expiry-upstream", metavar="URL",
                   help="a second instance, same keys, whose signed URLs expire within 10 s")
    p.add_argument("--jobs", type=int, default=1, help="variants run at once (default 1)")
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="run only these variants ('all' chains every variant at once)")
    p.add_argument("--list", action="store_true", help="print the variants and exit")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the verdicts as JSON")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per suite run")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = _parse(argv)
    make_variant("all")  # imports every variant module
    if args.list:
        for name in sorted(LEGAL):
            print(f"{name:<20}  {LEGAL[name].summary}")
        print(f"{'all':<20}  every variant above at once")
        return 0
    if not (args.spawn or args.upstream):
        raise SystemExit("give --spawn or --upstream URL")
    names = args.only or sorted(LEGAL)
    started = time.monotonic()
    verdicts: dict[str, Verdict] = {}
    with tempfile.TemporaryDirectory(prefix="o41-legal-") as tmp:
        emulators: list[SpawnedEmulator] = []
        try:
            target = target_of(args, emulators, Path(tmp))
            options = suite_options()

            def one(name: str) -> None:
                t0 = time.monotonic()
                verdicts[name] = v = run_variant(name, target, options, args.timeout)
                print(f"  {v.verdict:<7} {name} ({time.monotonic() - t0:.0f} s) "
                      f"{len(v.failures)} failing {v.detail}", file=sys.stderr, flush=True)

            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                list(pool.map(one, names))
        finally:
            for emulator in emulators:
                emulator.stop()
    for name in names:
        v = verdicts[name]
        print(f"{name:<20}  {v.verdict:<7}  {v.detail if v.verdict == 'error' else ''}")
        for test in v.failures:
            print(f"    false failure: {test}")
    bad = [n for n in names if verdicts[n].verdict != "passed"]
    print(f"{len(names) - len(bad)} of {len(names)} legal variants pass the whole suite "
          f"in {time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(verdicts[n]) for n in names], indent=1) + "\n")
    return 1 if bad else 0
