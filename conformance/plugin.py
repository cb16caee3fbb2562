"""pytest plugin of the conformance suite: options, markers, target, results by rule.

Registered only when the suite is being run (see :mod:`conformance.activate`), so another
project's pytest run never sees its options. With ``--target`` it starts and probes the
target once (an unreachable or foreign target stops the run with one line and exit code 3,
before any test), gates optional capabilities, records results by rule, clause and
capability, prints the tables and writes the JSON and HTML reports.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conformance.client import SENT
from conformance.env import FEATURES
from conformance.evidence import NOT_TESTED
from conformance.html_report import render_html
from conformance.profile import choose_seed
from conformance.report import BASE
from conformance.report import Collector
from conformance.report import rule_of
from conformance.report import unreachable
from conformance.rules import RULES
from conformance.session import COLLECTOR
from conformance.session import ENV
from conformance.session import NAMES
from conformance.session import SECRET_ENV
from conformance.session import SECRETS
from conformance.session import SEED
from conformance.session import TRAIL
from conformance.session import open_target
from conformance.session import run_names
from conformance.session import secret
from conformance.shown import Secrets
from conformance.shown import mask_argv
from conformance.shown import scrub
from conformance.target import TargetError
from conformance.target import probe
from conformance.transport import DEADLINES

pytest_plugins = ["conformance.options", "conformance.fixtures", "conformance.deadlines"]

#: Exit codes: the target could not be judged (3), or the options are wrong (4, pytest's).
EXIT_TARGET = pytest.ExitCode.INTERNAL_ERROR
EXIT_USAGE = pytest.ExitCode.USAGE_ERROR


def known_id(ident: str) -> bool:
    """A rule id, or a clause id of a known rule (checked against CLAUSES once defined)."""
    from conformance.report import clauses

    if ident in RULES:
        return True
    known = clauses()
    return ident in known if known else rule_of(ident) in RULES and "." in ident


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rule(*ids): contract rule or clause ids a test checks")
    for name, need in FEATURES.items():
        config.addinivalue_line("markers", f"{name}: optional capability, needs {need}")
    config.addinivalue_line("markers", "scenario: conformance scenario replayed from YAML")
    config.addinivalue_line("markers", "stateful: the conformance hypothesis state machine")
    for option in ("rules", "first"):
        bad = [i for i in selected_ids(config, option) if not known_id(i)]
        if bad:
            raise pytest.UsageError(
                f"--{option}: unknown rule ids {bad}; known: {sorted(RULES)}"
            )
    target = config.getoption("target")
    profile = str(config.getoption("conformance_profile"))
    config.stash[SEED] = choose_seed(profile, config.getoption("conformance_seed"))
    config.stash[NAMES] = run_names(target, config.getoption("prefix"))
    config.stash[SECRETS] = secrets = Secrets(
        [(secret(config, name) or "").partition("=")[0] for name in SECRET_ENV]
    )
    DEADLINES.request = float(config.getoption("request_deadline"))
    DEADLINES.probe = float(config.getoption("probe_deadline"))
    if target and target != "spawn":
        if not secret(config, "api_key"):
            raise pytest.UsageError("--target URL needs --api-key or $O41_ARTIFACTS_API_KEY")
    if config.getoption("scoped_read_prefix") and not secret(config, "scoped_key"):
        raise pytest.UsageError("--scoped-read-prefix needs --scoped-key KEY=PREFIX")
    if target:
        config.stash[COLLECTOR] = Collector(clean=secrets.shown)


def pytest_report_header(config: pytest.Config) -> list[str]:
    target = config.getoption("target")
    if not target:
        return ["o41 conformance: no --target given, conformance tests skip"]
    profile, seed = config.getoption("conformance_profile"), config.stash[SEED]
    return [
        f"o41 conformance: target {target}, project {config.stash[NAMES].prefix}",
        f"o41 conformance: profile {profile}, seed {seed} "
        f"(replay: --conformance-profile {profile} --conformance-seed {seed})",
    ]


def missing_options(config: pytest.Config) -> list[str]:
    """What the run was not given that would let it test more, said before any test runs:
    without it those clauses end NOT TESTED, which a user should not learn only at the end."""
    if config.getoption("target") == "spawn":
        return []  # spawn configures every key and a short-lived expiry target itself
    missing = []
    if not secret(config, "read_key"):
        missing.append("--read-key KEY (a read-only key: AUTH-2, AUTH-3)")
    if not secret(config, "scoped_key"):
        missing.append("--scoped-key KEY=PREFIX (a key that writes only under PREFIX: "
                       "AUTH-2, AUTH-3, FORK-1.d)")
    if not config.getoption("scoped_read_prefix"):
        missing.append("--scoped-read-prefix PREFIX (where that key only reads: AUTH-3)")
    if not config.getoption("expiry_target"):
        missing.append(
            "--expiry-target URL (a second instance whose signed URLs expire within "
            f"--max-url-wait {config.getoption('max_url_wait'):g} s: READ-4.c, READ-4.e; not "
            "needed if this target's do)")
    if not missing:
        return []
    return ["o41 conformance: not given, so what they test ends NOT TESTED or SKIP "
            "(docs/conformance.md; --target spawn tests our emulator with all of them):",
            *(f"  {line}" for line in missing)]


def selected_ids(config: pytest.Config, option: str = "rules") -> list[str]:
    """The ids given to ``--rules`` (or to another option of ids, ``--first``)."""
    return [r.strip() for arg in config.getoption(option) for r in arg.split(",") if r.strip()]


def item_rules(item: pytest.Item) -> list[str]:
    """The rule and clause ids of a test: every ``rule`` marker on it, its class, module."""
    ids: list[str] = []
    for mark in item.iter_markers("rule"):
        ids.extend(r for r in mark.args if r not in ids)
    return ids


def item_features(item: pytest.Item) -> list[str]:
    return [f for f in FEATURES if item.get_closest_marker(f) is not None]


def _selected(wanted: set[str], ids: list[str]) -> bool:
    return not wanted or bool(wanted & ({*ids} | {rule_of(i) for i in ids}))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set(selected_ids(config))
    target = config.getoption("target")
    keep, drop = [], []
    for item in items:
        ids = item_rules(item)
        if not ids:
            keep.append(item)
            continue
        bad = [i for i in ids if not known_id(i)]
        if bad:
            raise pytest.UsageError(f"{item.nodeid}: unknown rule ids {bad}")
        if not _selected(wanted, ids):
            drop.append(item)
            continue
        rules = list(dict.fromkeys(rule_of(i) for i in ids))
        item.user_properties.append(("rules", " ".join(rules)))
        clause_ids = [i for i in ids if "." in i]
        if clause_ids:
            item.user_properties.append(("clauses", " ".join(clause_ids)))
        item.user_properties.append(("capability", " ".join(item_features(item)) or "base"))
        if not target:
            item.add_marker(pytest.mark.skip(reason="conformance test: no --target given"))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    first = set(selected_ids(config, "first"))
    if first:
        # The same tests run, only sooner: a run with -x (the mutant table) reaches the
        # test most likely to fail without running the rest of the rule's tests before it.
        items.sort(key=lambda item: not _selected(first, item_rules(item)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start and probe the target once, before any test: a target that cannot be judged
    stops the run here with one line, and no rule is charged."""
    config = session.config
    if not config.getoption("target") or config.option.collectonly:
        return
    if not any(item_rules(item) for item in session.items):
        return
    workdir = Path(tempfile.mkdtemp(prefix="o41-conformance-"))
    config.add_cleanup(lambda: shutil.rmtree(workdir, ignore_errors=True))
    shown = config.stash[SECRETS].shown
    try:
        expiry = any("o41_expiring_env" in getattr(item, "fixturenames", ())
                     for item in session.items)
        config.stash[ENV] = open_target(config, config.stash[NAMES], config.stash[SEED], workdir,
                                        expiry=expiry)
    except TargetError as exc:
        pytest.exit(shown(f"o41 conformance: {exc}"), returncode=EXIT_TARGET)
    except ValueError as exc:
        pytest.exit(shown(f"o41 conformance: {exc}"), returncode=EXIT_USAGE)
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:  # also under -q, which hides pytest_report_header's lines
        for line in missing_options(config):
            terminal.write_line(line)


SENT_DURING = pytest.StashKey[int]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Count the requests of the test body (fixtures' set-up calls are not examples)."""
    before = SENT.count
    try:
        return (yield)
    finally:
        item.stash[SENT_DURING] = SENT.count - before


def _clean_report(rep: pytest.TestReport, secrets: Secrets) -> None:
    """Mask the run's keys in what pytest shows of a test (its traceback with the frames'
    arguments and locals, skip reason, captured output) and spell out control characters
    a target sent: the terminal, the JUnit file and every later hook see the clean text."""
    if rep.longrepr is not None:
        rep.longrepr = scrub(rep.longrepr, secrets.shown)
    if rep.sections:
        rep.sections = [(title, secrets.shown(text)) for title, text in rep.sections]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    secrets = item.config.stash.get(SECRETS, None)
    if secrets is not None and item.config.getoption("target"):
        _clean_report(rep, secrets)
    collector = item.config.stash.get(COLLECTOR, None)
    rules = item_rules(item)
    if collector is None or not rules:
        return rep
    exc = call.excinfo.value if (call.excinfo is not None and rep.failed) else None
    if rep.skipped and isinstance(rep.longrepr, tuple):
        message = str(rep.longrepr[2]).removeprefix("Skipped: ")
    elif exc is not None:
        message = f"{type(exc).__name__}: {exc}"
    else:
        message = ""
    trail = item.stash.get(TRAIL, None)
    collector.record(
        item.nodeid,
        rules,
        rep.when,
        rep.outcome,
        exc=exc,
        message=message,
        trail=list(trail) if trail is not None else None,
        duration=rep.duration,
        features=item_features(item),
        requests=item.stash.get(SENT_DURING, 0) if rep.when == "call" else 0,
    )
    if rep.failed:
        failed = collector.results[item.nodeid].failed_rules
        rep.user_properties.append(("failed_rules", " ".join(failed)))
        _stop_if_target_gone(item, exc)
    return rep


def _stop_if_target_gone(item: pytest.Item, exc: BaseException | None) -> None:
    """A test lost the target: if it no longer answers the probe, stop the run rather than
    fail every remaining test the same way."""
    env = item.config.stash.get(ENV, None)
    if env is None or unreachable(exc) is None:
        return
    try:
        probe(env.base, env.key, env.artifact("probe", count=False))
    except TargetError as err:
        item.session.shouldstop = item.config.stash[SECRETS].shown(
            f"o41 conformance: the target stopped answering: {err}"
        )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    collector = config.stash.get(COLLECTOR, None)
    if collector is None or not collector.results:
        return
    terminalreporter.write_sep("=", "o41 conformance: base and optional capabilities, rules")
    for line in collector.lines():
        terminalreporter.write_line(line)
    profile, seed = config.getoption("conformance_profile"), config.stash[SEED]
    terminalreporter.write_line(f"profile {profile}, seed {seed}")
    if collector.verdicts()[BASE] == NOT_TESTED:
        terminalreporter.write_line(
            "o41 conformance: base NOT TESTED (some base clause was only skipped, see above; "
            "no test failed): the options that would test it are named above"
            + (" (--untested-fails: exit code 1)" if config.getoption("untested_fails") else "")
        )


def run_meta(config: pytest.Config, exitstatus: int) -> dict[str, Any]:
    """The run's facts for the reports: what was judged, how, and with which options."""
    env = config.stash.get(ENV, None)
    return {
        "target": config.getoption("target"),
        "base": env.base if env else None,
        "prefix": config.stash[NAMES].prefix,
        "profile": config.getoption("conformance_profile"),
        "seed": config.stash[SEED],
        "places": config.getoption("places"),
        "faults": config.getoption("emulator_fault"),
        "selected_rules": selected_ids(config),
        "keys": {
            "read_key": bool(env and env.read_key),
            "scoped_key": env.scoped.write_prefix if env and env.scoped else None,
            "scoped_read_prefix": env.scoped.read_prefix if env and env.scoped else None,
        },
        "capabilities": env.capabilities() if env else {},
        "command": " ".join(["pytest", *mask_argv(sys.argv[1:])]),
        "exitstatus": int(exitstatus),
    }


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    collector = config.stash.get(COLLECTOR, None)
    if collector is None:
        return
    if (config.getoption("untested_fails") and collector.results and exitstatus == 0
            and collector.verdicts()[BASE] == NOT_TESTED):
        # No PASS without evidence, for a caller that wants it in the exit code (the mutant
        # table: a mutant that makes a base clause untestable is caught).
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    json_path, html_path = (config.getoption(o) for o in ("conformance_report", "conformance_html"))
    if not (json_path or html_path):
        return
    # Every string a target could have put there (codes, messages, headers) is shown safely
    # and no key appears, so the files can be attached to a pull request as they are.
    meta = run_meta(config, int(session.exitstatus))
    data = scrub(collector.to_json(meta), config.stash[SECRETS].shown)
    if json_path:
        collector.write_json(Path(json_path), data)
    if html_path:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        Path(html_path).write_text(
            render_html(data), encoding="utf-8", errors="backslashreplace"
        )
