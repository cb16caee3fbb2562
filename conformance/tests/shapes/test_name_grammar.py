"""The artifact-name grammar at each of its edges, both ways (API-1.h): a part is 1 to 128
letters, digits, ``.``, ``_`` and ``-`` and starts with a letter or digit. Every call that
names an artifact refuses a name one step outside it with 400, and takes every name at
its edge through the whole life of an artifact."""

from __future__ import annotations

import secrets

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.model import parse_step
from conformance.model import version_name
from conformance.probes import expect_unchanged
from conformance.probes import snapshot
from conformance.rules import check_equal

#: Name parts one step outside the grammar: a first character that is not a letter or a
#: digit, the path's own names, and one character too many.
OUTSIDE = ["-run", "_run", ".run", "..run", ".", "..", "-", "_", "x" * 129]


def _outside(env: Env) -> list[str]:
    return [f"{env.prefix}/{part}" for part in OUTSIDE]


def _calls(env: Env, api: Client, name: str, token: str, upload: str) -> dict[str, Reply]:
    """Every call that names an artifact, naming ``name`` (with a real token and upload of
    another artifact, which alone would be refused with 400 too)."""
    files = [{"name": "m", "size": 1, "sha256": "0" * 64}]
    calls = {
        "open": api.open(name, "latest", None, "box-x"),
        "fresh open": api.open(name, None, None, "box-x"),
        "write": api.write(name, token, "step-00000001", files),
        "commit": api.commit(name, token, upload),
        "delete": api.delete(name, token, "step-00000001"),
        "versions/read": api.read(name),
        "versions/list": api.list(name),
        "artifacts/read": api.artifact(name),
    }
    if env.capability("usage")[0]:
        calls["usage/read"] = api.usage(name)
    return calls


@pytest.mark.rule("API-1.h")
def test_every_call_refuses_a_name_part_outside_the_grammar(
    o41_env: Env, o41_api: Client
) -> None:
    box = open_box(o41_api, o41_env.artifact("grammar-no"), "box-a")
    commit_ok(o41_api, box, "step-00000001", make_files({"m": 8}, 90), "API-1.h")
    upload = expect_ok(o41_api.write(box.artifact, box.token, "step-00000002",
                                     [{"name": "m", "size": 1, "sha256": "0" * 64}]),
                       "API-1.h", "write")["upload"]
    before = snapshot(o41_api, box.artifact)
    for name in _outside(o41_env):
        for call, reply in _calls(o41_env, o41_api, name, box.token, str(upload)).items():
            expect_error(reply, 400, "invalid_argument", "API-1.h", f"{call} of {name!r}")
    for name in _outside(o41_env):
        fork = o41_env.artifact("grammar-fork")
        expect_error(o41_api.open(fork, f"o41://{name}/step-00000001", None, "box-f"), 400,
                     "invalid_argument", "API-1.h", f"a fork from {name!r}")
    expect_unchanged(o41_api, box.artifact, before, "API-1.h", "the refused calls")


@pytest.mark.rule("API-1.h")
def test_a_project_part_outside_the_grammar_is_refused(o41_env: Env, o41_api: Client) -> None:
    """The project part too (only where the write key may name other projects: spawn's
    covers every name; a URL target's key may rightly answer 403 first)."""
    if not o41_env.spawned:
        pytest.skip("a URL target's write key need not cover other projects (AUTH first)")
    for part in OUTSIDE:
        name = f"{part}/run-{secrets.token_hex(3)}"
        expect_error(o41_api.open(name, "latest", None, "box-x"), 400, "invalid_argument",
                     "API-1.h", f"open of {name!r}")
        expect_error(o41_api.artifact(name), 400, "invalid_argument", "API-1.h",
                     f"artifacts/read of {name!r}")


def _whole_life(env: Env, api: Client, name: str) -> None:
    """Open, two checkpoints, read, list, artifacts/read, usage, delete of the older one,
    a relaunch: each accepted. Rerun against a target that kept ``name``, it starts above
    the step the artifact has."""
    box = open_box(api, name, "box-a", rule="API-1.h")
    resumed = box.opened.get("resume_from") or {}
    base = parse_step(str(resumed.get("version"))) or 0
    first, second = version_name(base + 1), version_name(base + 2)
    commit_ok(api, box, first, make_files({"m": 8}, 91), "API-1.h")
    commit_ok(api, box, second, make_files({"m": 8}, 92), "API-1.h")
    check_equal(expect_ok(api.read(name, first), "API-1.h", f"read of {name!r}")["version"],
                first, "API-1.h", f"read of {name!r}")
    listed = [v["version"] for v in expect_ok(api.list(name), "API-1.h", "list")["versions"]]
    check_equal(listed[-2:], [first, second], "API-1.h", f"list of {name!r}")
    state = expect_ok(api.artifact(name), "API-1.h", f"artifacts/read of {name!r}")
    check_equal((state.get("artifact"), state.get("latest")), (name, second), "API-1.h",
                f"artifacts/read of {name!r}")
    if env.capability("usage")[0]:
        expect_ok(api.usage(name), "API-1.h", f"usage/read of {name!r}")
    expect_ok(api.delete(name, box.token, first), "API-1.h", f"delete in {name!r}")
    expect_error(api.read(name, first), 404, "not_found", "API-1.h", "read of the deleted")
    again = expect_ok(api.open(name, "latest", None, "box-b"), "API-1.h", f"relaunch {name!r}")
    check_equal((again.get("resume_from") or {}).get("version"), second, "API-1.h",
                f"the relaunch of {name!r}")


@pytest.mark.rule("API-1.h")
@pytest.mark.parametrize(
    "part",
    ["a", "Z", "7", "a.-_z", "9._-", "run.", "run-", "run_", "a..b", "x" * 128],
    ids=["a", "Z", "7", "a.-_z", "9._-", "dot-last", "dash-last", "underscore-last", "a..b",
         "128"],
)
def test_a_name_part_at_the_grammar_edge_goes_through_a_whole_life(
    o41_env: Env, o41_api: Client, part: str
) -> None:
    _whole_life(o41_env, o41_api, f"{o41_env.prefix}/{part}")


@pytest.mark.rule("API-1.h")
@pytest.mark.parametrize("part", ["p", "q.-_z", "y" * 128], ids=["p", "q.-_z", "128"])
def test_a_project_part_at_the_grammar_edge_goes_through_a_whole_life(
    o41_env: Env, o41_api: Client, part: str
) -> None:
    if not o41_env.spawned:
        pytest.skip("a URL target's write key need not cover other projects")
    _whole_life(o41_env, o41_api, f"{part}/{o41_env.prefix}-{part[:1]}")
