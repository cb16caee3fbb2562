"""The conformance suite's command-line options (a hook of :mod:`conformance.plugin`).

Key options also read an environment variable (``conformance.session.SECRET_ENV``): a
program that runs the suite hands keys over there, never on a command line that ``ps``
shows to every user of the machine.
"""

from __future__ import annotations

import pytest

from conformance.model import DEFAULT_PLACES
from conformance.profile import PROFILES

__all__ = ["pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("o41-conformance", "o41 Artifacts conformance suite")
    g.addoption("--target", help="API base URL of the implementation, or 'spawn'")
    g.addoption("--api-key", help="write key (default: $O41_ARTIFACTS_API_KEY)")
    g.addoption(
        "--read-key",
        help="a key with read only; tests needing one skip without it "
        "(default: $O41_CONFORMANCE_READ_KEY)",
    )
    g.addoption(
        "--scoped-key",
        metavar="KEY=PREFIX",
        help="a key with write only under PREFIX (where the suite may create artifacts) "
        "and no access to the run's --prefix; enables the key-scope tests "
        "(default: $O41_CONFORMANCE_SCOPED_KEY)",
    )
    g.addoption(
        "--scoped-read-prefix",
        metavar="PREFIX",
        help="a prefix where the --scoped-key key has read only (its artifacts are "
        "made with the write key)",
    )
    g.addoption(
        "--places",
        default=DEFAULT_PLACES,
        help="the target's locations, cloud/region comma-separated; "
        "the first of each cloud is its default",
    )
    g.addoption("--fallback", help="the target's fallback location (default: first place; "
                "'none': the target has none)")
    g.addoption("--prefix", help="artifact project of this run (default: conf-<random>)")
    g.addoption("--conformance-report", metavar="FILE.json", help="write results as JSON")
    g.addoption(
        "--conformance-html", metavar="FILE.html", help="write a self-contained HTML report"
    )
    g.addoption(
        "--conformance-profile",
        choices=sorted(PROFILES),
        default="ci",
        help="ci: fixed seed, 15 state machine runs; thorough: random seed, 150 runs",
    )
    g.addoption("--conformance-seed", type=int, metavar="N", help="replay a run's seed")
    g.addoption(
        "--conformance-shrink-seconds",
        type=float,
        help="how long hypothesis may shrink a state machine failure (ci 20, thorough 180)",
    )
    g.addoption(
        "--rules",
        action="append",
        default=[],
        metavar="IDS",
        help="run only tests checking these rule or clause ids (comma-separated)",
    )
    g.addoption(
        "--first",
        action="append",
        default=[],
        metavar="IDS",
        help="run the tests checking these rule or clause ids (comma-separated) before the "
        "others, which keep their order (the mutant table: a mutant's clause first)",
    )
    g.addoption("--scenarios", metavar="DIR", help="scenario YAML directory to replay")
    g.addoption(
        "--expiry-target",
        metavar="URL",
        help="API base URL of a second instance whose signed URLs expire within "
        "--max-url-wait seconds, for the URL expiry tests (default: the target itself)",
    )
    g.addoption(
        "--expiry-api-key",
        help="write key of --expiry-target (default: $O41_CONFORMANCE_EXPIRY_API_KEY, "
        "else the --api-key)",
    )
    g.addoption(
        "--max-url-wait",
        type=float,
        default=10.0,
        help="longest URL lifetime the expiry test waits out (seconds)",
    )
    g.addoption(
        "--max-put-bytes",
        type=int,
        default=16 << 20,
        metavar="N",
        help="largest body the suite sends to go past the target's file size limit; a "
        "higher limit must be refused from the Content-Length before that many bytes",
    )
    g.addoption(
        "--untested-fails",
        action="store_true",
        help="exit 1 when base is NOT TESTED (a base clause was only skipped) although no "
        "test failed; the default exit is 0, the summary naming what would test it",
    )
    g.addoption(
        "--emulator-fault",
        action="append",
        default=[],
        metavar="NAME",
        help="spawn only: start the emulator with --fault NAME",
    )
    g.addoption("--emulator-command", help="spawn only: command to run instead of o41-emulator")
    g.addoption(
        "--emulator-url-lifetime",
        type=int,
        default=3,
        help="spawn only: url_lifetime configured in the emulator (seconds)",
    )
    g.addoption(
        "--request-deadline",
        type=float,
        default=60.0,
        metavar="S",
        help="longest one request may take, connect and whole body included (seconds)",
    )
    g.addoption(
        "--probe-deadline",
        type=float,
        default=5.0,
        metavar="S",
        help="longest the first contact with --target may take before the run stops (seconds)",
    )
    g.addoption(
        "--test-deadline",
        type=float,
        metavar="S",
        help="longest each phase of a test may take (seconds; ci 300, thorough 3600; 0: none)",
    )
