"""Replays a :class:`~conformance.scenarios.Scenario` against the target, step by step.

Each expectation is charged to a rule (the step's ``rule``, else the one the key and the
expected error code imply). On failure the steps replayed so far are attached to the
exception as notes: the report's "shortest failing sequence" of a scenario.
"""

from __future__ import annotations

import random
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from conformance.actions import Box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.env import Env
from conformance.model import Place
from conformance.replay_reads import ReadSteps
from conformance.replay_reads import as_place
from conformance.replay_rules import OK_RULE
from conformance.replay_rules import ROUTE_RULE
from conformance.replay_rules import WARNING_RULE
from conformance.replay_rules import error_rule
from conformance.rules import RuleViolation
from conformance.rules import check
from conformance.scenarios import STATUS_OF
from conformance.scenarios import Scenario
from conformance.scenarios import Step
from conformance.scenarios import parse_size

__all__ = ["ScenarioRunner"]

_ALIAS = re.compile(r"\{([\w-]+)\}")


class ScenarioRunner(ReadSteps):
    """State of one replay: artifact aliases, boxes, pending uploads, committed bytes."""

    def __init__(self, env: Env, api: Client) -> None:
        self.env, self.api = env, api
        self.aliases: dict[str, str] = {}
        self.boxes: dict[str, Box] = {}
        self.holders: dict[str, str] = {}
        self.epochs: dict[str, int] = {}
        self.uploads: dict[str, tuple[str, str]] = {}
        self.pending: dict[str, tuple[str, dict[str, bytes], Reply]] = {}
        self.committed: dict[tuple[str, str], dict[str, bytes]] = {}
        self.log: list[str] = []
        self.task_holders: dict[str, str] = {}

    def run(self, scenario: Scenario) -> None:
        for step in scenario.steps:
            self.log.append(f"{step.index}. {step.text}")
            try:
                getattr(self, f"_do_{step.action}")(step)
            except RuleViolation as exc:
                exc.add_note(f"scenario {scenario.name}, failing at step {step.index}:")
                for line in self.log:
                    exc.add_note(f"  {line}")
                raise

    # --- helpers -------------------------------------------------------------------

    def task_holder(self, label: str) -> str:
        """The holder id of a task label: every box opened with it reuses the same id."""
        return self.task_holders.setdefault(label, self.env.holder(label))

    def artifact(self, alias: str | None) -> str:
        alias = alias or "run"
        if alias not in self.aliases:
            self.aliases[alias] = self.env.artifact(alias)
        return self.aliases[alias]

    def resume(self, value: Any) -> str | None:
        if value in (None, "fresh"):
            return None
        return _ALIAS.sub(lambda m: self.artifact(m.group(1)), str(value))

    def files(self, step: Step, box: str) -> dict[str, bytes]:
        sizes = step.args.get("files") or {"model.pt": "64KB"}
        rng = random.Random(f"{step.args.get('version')}/{box}/{step.index}")
        return {name: rng.randbytes(parse_size(size)) for name, size in sizes.items()}

    def expect(self, step: Step, key: str, actual: Any, wanted: Any, rule: str) -> None:
        if actual != wanted:
            raise RuleViolation(
                step.rule or rule, f"step {step.index} {key}: expected {wanted!r}, got {actual!r}"
            )

    def outcome(self, step: Step, reply: Reply) -> dict[str, Any] | None:
        """Check status and code; the body on success, None on an (expected) error."""
        code = step.expect.get("code")
        if code is None:
            return expect_ok(reply, step.rule or OK_RULE[step.action], f"step {step.index}")
        status = int(step.expect.get("status", STATUS_OF[code]))
        rule = error_rule(step, code)
        expect_error(reply, status, code, rule, f"step {step.index}")
        return None

    def fenced_value(self, who: Any) -> dict[str, Any] | None:
        if who is None:
            return None
        box = self.boxes[str(who)]
        return {"epoch": box.epoch, "holder": box.holder}

    # --- actions -------------------------------------------------------------------

    def _opened(self, step: Step, name: str, box: str, place: Place | None, body: dict) -> None:
        epoch = body.get("epoch")
        check(
            isinstance(epoch, int) and epoch > self.epochs.get(name, -(2**63)),
            "FENCE-1.a",
            f"step {step.index}: epoch {epoch!r} after {self.epochs.get(name)}",
        )
        self.epochs[name] = epoch
        self.boxes[box] = Box(self.holders[box], name, place, body["token"], epoch, body)

    def client(self, key: Any) -> Client:
        """The write key, or the key an open step names: none, unknown, read or scoped."""
        if key is None:
            return self.api
        keys = {
            "none": None,
            "unknown": f"{self.env.key}-not-a-key",
            "read": self.env.read_key,
            "scoped": self.env.scoped_key,
        }
        if str(key) not in keys:
            raise RuleViolation("AUTH-1.a", f"scenario names an unknown key kind {key!r}")
        if key in ("read", "scoped") and not keys[str(key)]:
            pytest.skip(f"optional capability: the scenario needs a {key} key")
        return self.api.with_key(keys[str(key)])

    def _do_open(self, step: Step) -> None:
        a, e = step.args, step.expect
        box, name = str(a["box"]), self.artifact(a.get("artifact"))
        raw = a.get("place")
        place = None if isinstance(raw, dict) else as_place(raw)
        label = str(a.get("holder", box))  # boxes of one task share a holder id (SkyPilot)
        holder = self.holders.setdefault(box, self.task_holder(label))
        resume = self.resume(a.get("resume", "latest"))
        if isinstance(raw, dict):
            body_sent = {"artifact": name, "resume": resume, "place": raw, "holder": holder}
            reply = self.client(a.get("key")).call("POST", "/artifacts/open", body=body_sent)
        else:
            reply = self.client(a.get("key")).open(name, resume, place, holder)
        body = self.outcome(step, reply)
        if body is None:
            return
        self._opened(step, name, box, place, body)
        resume = body.get("resume_from") or {}
        if "resume_from" in e:
            rule = "OPEN-2.a" if e["resume_from"] else "OPEN-1.a"
            self.expect(step, "resume_from", resume.get("version"), e["resume_from"], rule)
        if "fenced" in e:
            self.expect(
                step, "fenced", body.get("fenced"), self.fenced_value(e["fenced"]), "FENCE-2.d"
            )
        wl = body.get("write_location") or {}
        route_rule = ROUTE_RULE.get(e.get("write_route", wl.get("route")), "PLACE-1.a")
        if "write_location" in e:
            self.expect(
                step,
                "write_location",
                Place.from_json(wl) if wl else None,
                as_place(e["write_location"]),
                route_rule,
            )
        if "write_route" in e:
            self.expect(step, "write_route", wl.get("route"), e["write_route"], route_rule)
        for key, clause in (("route", "XC-1.b"), ("cross_cloud", "XC-1.a")):
            if key in e:
                self.expect(step, key, resume.get(key), e[key], clause)
        if "warning" in e:
            self._warning(step, body.get("warnings") or [], str(e["warning"]))

    def _warning(self, step: Step, warnings: list[Any], kind: str) -> None:
        rule = step.rule or WARNING_RULE[kind]
        fb = self.env.topology.fallback
        if kind == "none":
            check(not warnings, rule, f"step {step.index}: unexpected warnings {warnings}")
        elif kind == "fallback":
            named = any(fb.cloud in str(w) and fb.region in str(w) for w in warnings)
            check(named, rule, f"step {step.index}: no warning naming {fb}: {warnings}")
        else:
            check(warnings, rule, f"step {step.index}: no warning")

    def _do_race_open(self, step: Step) -> None:
        a = step.args
        names = [str(b) for b in a["boxes"]]
        artifact, place = self.artifact(a.get("artifact")), as_place(a.get("place"))
        resume = self.resume(a.get("resume", "latest"))
        for box in names:
            self.holders.setdefault(box, self.env.holder(box))
        barrier = threading.Barrier(len(names))

        def go(box: str) -> Reply:
            barrier.wait()
            return self.api.open(artifact, resume, place, self.holders[box])

        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            replies = list(pool.map(go, names))
        bodies = [expect_ok(r, step.rule or "FENCE-1.a", f"step {step.index}") for r in replies]
        order = sorted(zip(names, bodies, strict=True), key=lambda nb: nb[1]["epoch"])
        epochs = [b["epoch"] for _, b in order]
        check(len(set(epochs)) == len(epochs), "FENCE-1.a", f"racing opens got epochs {epochs}")
        for box, body in order:
            self._opened(step, artifact, box, place, body)
        self.boxes["winner"] = self.boxes[order[-1][0]]
        self.boxes["loser"] = self.boxes[order[0][0]]
        for (_, prev), (_, cur) in zip(order, order[1:], strict=False):
            self.expect(
                step,
                "fenced",
                cur.get("fenced"),
                {"epoch": prev["epoch"], "holder": prev["holder"]},
                "FENCE-2.d",
            )

    def _do_upload(self, step: Step) -> None:
        a = step.args
        box = self.boxes[str(a["box"])]
        files = self.files(step, str(a["box"]))
        put = str(a.get("put", "all"))
        up = start_upload(
            self.api, box.artifact, box.token, str(a["version"]), files, put=put == "all"
        )
        body = self.outcome(step, up.write)
        if body is not None and put != "all":
            self._put_some(body, files, put)
        if body is not None:
            self._placed(step, body)
            label = str(a.get("as") or a["version"])
            self.pending[label] = (str(a["version"]), files, up.write)
            self.uploads[label] = (box.artifact, str(up.upload_id))

    def _placed(self, step: Step, body: dict[str, Any]) -> None:
        e = step.expect
        rule = ROUTE_RULE.get(e.get("route", body.get("route")), "PLACE-1.a")
        if "location" in e:
            self.expect(
                step, "location", Place.from_json(body.get("location")), as_place(e["location"]),
                rule,
            )
        if "route" in e:
            self.expect(step, "route", body.get("route"), e["route"], rule)

    def _do_commit(self, step: Step) -> None:
        a = step.args
        box = self.boxes[str(a["box"])]
        label = str(a["upload"])
        artifact, upload = self.uploads[label]
        body = self.outcome(step, self.api.commit(artifact, box.token, upload))
        if body is not None:
            version, files, _ = self.pending[label]
            self.committed[(artifact, version)] = files
            if "location" in step.expect:
                self.expect(
                    step,
                    "location",
                    Place.from_json(body.get("location")),
                    as_place(step.expect["location"]),
                    "PLACE-4.a",
                )

    def _put_some(self, body: dict[str, Any], files: dict[str, bytes], put: str) -> None:
        """A commit cut half way: ``none`` PUTs nothing, ``partial`` all but the last file,
        ``corrupt`` every file with the last one's final byte changed."""
        urls = {f["name"]: f["url"] for f in body.get("files", [])}
        names = list(files)
        if put == "none":
            return
        for name in names[:-1]:
            check(self.api.put(urls[name], files[name]).ok, "VER-4.a", f"PUT of {name}")
        if put == "corrupt":
            last = files[names[-1]]
            data = last[:-1] + bytes([last[-1] ^ 1]) if last else b"x"
            self.api.put(urls[names[-1]], data)

    def _do_checkpoint(self, step: Step) -> None:
        label = f"checkpoint-{step.index}"
        self._do_upload(
            Step(
                step.index,
                "upload",
                {**step.args, "as": label},
                {k: v for k, v in step.expect.items() if k != "location"},
                step.rule,
            )
        )
        if label in self.uploads:
            commit = Step(
                step.index,
                "commit",
                {"box": step.args["box"], "upload": label},
                {k: v for k, v in step.expect.items() if k != "route"},
                step.rule,
            )
            self._do_commit(commit)
