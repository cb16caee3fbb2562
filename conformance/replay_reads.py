"""The read steps of a scenario replay: ``read``, ``list`` and ``artifact`` (what a box or a
user sees of versions, their places and bytes, and of the artifact's state)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from conformance.actions import Box
from conformance.actions import download
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.model import Place
from conformance.scenarios import Step

__all__ = ["ReadSteps", "as_place"]


def as_place(value: Any) -> Place | None:
    """A place a scenario spells as ``cloud/region`` (None stays None)."""
    return None if value is None else Place.parse(str(value))


class ReadSteps:
    """Mixin of :class:`~conformance.replay.ScenarioRunner`: the steps that only read."""

    api: Client
    boxes: dict[str, Box]
    epochs: dict[str, int]
    committed: dict[tuple[str, str], dict[str, bytes]]

    if TYPE_CHECKING:  # given by the runner

        def artifact(self, alias: str | None) -> str: ...

        def expect(self, step: Step, key: str, actual: Any, wanted: Any, rule: str) -> None: ...

        def outcome(self, step: Step, reply: Reply) -> dict[str, Any] | None: ...

    def _do_read(self, step: Step) -> None:
        a, e = step.args, step.expect
        box = self.boxes.get(str(a.get("box")))
        name = self.artifact(a.get("artifact")) if "artifact" in a or box is None else box.artifact
        place = as_place(a["place"]) if "place" in a else (box.place if box else None)
        reply = self.api.read(name, str(a.get("version", "latest")), urls=True, place=place)
        body = self.outcome(step, reply)
        if body is None:
            return
        if "version" in e:
            self.expect(step, "version", body.get("version"), e["version"], "READ-1.a")
        if "location" in e:
            self.expect(
                step,
                "location",
                Place.from_json(body.get("location")),
                as_place(e["location"]),
                "PLACE-4.a",
            )
        for key, clause in (("route", "XC-1.b"), ("cross_cloud", "XC-1.a")):
            if key in e:
                self.expect(step, key, body.get(key), e[key], clause)
        if e.get("bytes") == "exact":
            parts = int(a.get("parts", 1))
            got = download(self.api, body, parts=parts)
            want = self.committed.get((name, str(body.get("version"))))
            self.expect(step, "bytes", got == want, True, "READ-3.a" if parts > 1 else "READ-2.a")

    def _do_list(self, step: Step) -> None:
        name = self.artifact(step.args.get("artifact"))
        versions = expect_ok(self.api.list(name), step.rule or "READ-1.a", "list")["versions"]
        if "versions" in step.expect:
            self.expect(
                step,
                "versions",
                [v.get("version") for v in versions],
                list(step.expect["versions"]),
                "VER-4.c",
            )
        if "locations" in step.expect:
            self.expect(
                step,
                "locations",
                [Place.from_json(v.get("location")) for v in versions],
                [as_place(p) for p in step.expect["locations"]],
                "PLACE-4.a",
            )

    def _do_artifact(self, step: Step) -> None:
        name, e = self.artifact(step.args.get("artifact")), step.expect
        body = expect_ok(self.api.artifact(name), step.rule or "READ-1.a", "artifacts/read")
        if "latest" in e:
            self.expect(step, "latest", body.get("latest"), e["latest"], "READ-1.a")
        if "versions" in e:
            self.expect(step, "versions", body.get("versions"), e["versions"], "VER-4.c")
        if "holder" in e:
            self.expect(
                step, "holder", body.get("holder"), self.boxes[str(e["holder"])].holder, "FENCE-4.a"
            )
        if "epoch" in e:
            want = self.epochs[name] if e["epoch"] == "unchanged" else self.boxes[e["epoch"]].epoch
            self.expect(step, "epoch", body.get("epoch"), want, "FENCE-4.a")
        if "forked_from" in e:
            ff = e["forked_from"]
            want = (
                None
                if ff is None
                else {"artifact": self.artifact(ff["artifact"]), "version": ff["version"]}
            )
            self.expect(step, "forked_from", body.get("forked_from"), want, "FORK-2.b")
