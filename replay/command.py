"""``o41-emulator replay SCENARIO -- COMMAND...``: the click command.

Exit status: 0 when every check passes, 1 when any is violated (each violation printed with
its check id), 2 for a bad command line or scenario, 3 when the replay could not run.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import click

from .checks import CHECKS, DEFAULT_LOCATIONS, check
from .runner import HarnessError, Runner, start_emulator
from .scenario import ScenarioError, find_scenario, load_scenario
from .table import render

EXIT_VIOLATIONS = 1
EXIT_HARNESS = 3


def _log(message: str) -> None:
    click.echo(f"[replay {time.strftime('%H:%M:%S')}] {message}", err=True)


@click.command("replay", context_settings={"ignore_unknown_options": True})
@click.argument("scenario")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--artifact", help="Artifact to check, project/name (default: the one the boxes "
              "opened).")
@click.option("--timeout", default=120.0, show_default=True, type=click.FloatRange(1),
              help="Seconds a box may run before it is killed and flagged.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path),
              help="Where box directories, box logs and emulator data go (default: a new "
              "temporary directory, kept and printed).")
@click.option("--location", "locations", multiple=True, metavar="CLOUD/REGION",
              help="A location of the emulator (repeatable; default: aws/us-east-1, "
              "gcp/europe-west4, azure/westeurope). Give them when --emulator-arg --config "
              "changes them.")
@click.option("--emulator-arg", "emulator_args", multiple=True,
              help="Extra argument for `o41-emulator serve` (repeatable), e.g. "
              "--emulator-arg=--fault --emulator-arg=no-fencing.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the violations as JSON to this file.")
def replay(scenario: str, command: tuple[str, ...], artifact: str | None, timeout: float,
           workdir: Path | None, locations: tuple[str, ...], emulator_args: tuple[str, ...],
           json_path: Path | None) -> None:
    """Run COMMAND as each box of SCENARIO (a file, or a bundled scenario's name such as
    spot-hop) against a fresh emulator, preempting it, then check the artifact's history and
    print a per-hop table.

    Put `--` before COMMAND. Each box gets SKYPILOT_CLUSTER_INFO, SKYPILOT_TASK_ID,
    SKYPILOT_NODE_RANK, O41_ARTIFACTS_API_URL and O41_ARTIFACTS_API_KEY, and a fresh working
    directory; arguments naming existing relative paths are made absolute.
    """
    try:
        plan = load_scenario(find_scenario(scenario))
    except ScenarioError as exc:
        raise click.BadParameter(str(exc), param_hint="SCENARIO") from None
    workdir = workdir or Path(tempfile.mkdtemp(prefix="o41-replay-"))
    workdir.mkdir(parents=True, exist_ok=True)
    runner = Runner(plan, command, workdir, timeout=timeout, log=_log)
    try:
        emulator = start_emulator(workdir / "emulator-data", emulator_args)
    except HarnessError as exc:
        click.echo(f"replay: {exc}", err=True)
        sys.exit(EXIT_HARNESS)
    _log(f"emulator at {emulator.url}; {len(plan.boxes)} boxes; logs in {workdir}")
    try:
        result = runner.run(emulator, artifact.removeprefix("o41://") if artifact else None)
    except HarnessError as exc:
        click.echo(f"replay: {exc}\nreplay: box logs in {workdir}", err=True)
        sys.exit(EXIT_HARNESS)
    finally:
        emulator.stop()
    violations = check(result, frozenset(locations) or DEFAULT_LOCATIONS)
    click.echo(render(result, violations))
    if json_path is not None:
        json_path.write_text(json.dumps(
            {"scenario": plan.name, "artifact": result.artifact, "checks": list(CHECKS),
             "violations": [{"check": v.check, "box": v.box, "message": v.message}
                            for v in violations]}, indent=2))
    if violations:
        click.echo(f"replay: {len(violations)} violation(s): "
                   f"{', '.join(sorted({v.check for v in violations}))}", err=True)
        sys.exit(EXIT_VIOLATIONS)
