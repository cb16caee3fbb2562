"""Dockerfile, docker-compose.yml and the README's CI example cannot drift from the code.

No Docker engine runs here, so the image is checked by what it would run: the Dockerfile
must install with the README's command and start with `o41-emulator serve`; its start
command and HEALTHCHECK are then run for real, and compose's environment is handed to a
served emulator on the test session's S3 server (standing in for MinIO).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import yaml

from emulator.run.cli import serve
from tests.support.deadlines import HANG_GUARD
from tests.support.emulator_http import AWS, AZURE, GCP, Box

ROOT = Path(__file__).resolve().parents[2]


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def instructions(name: str) -> list[str]:
    return [rest for word, rest in dockerfile() if word == name]


def commands(line: str) -> list[list[str]]:
    """A shell line of commands joined by `&&`, each split into words."""
    return [shlex.split(c) for c in line.split("&&")]


def readme_commands() -> tuple[list[list[str]], list[str]]:
    """The README's install-and-serve line, split into install commands and the start."""
    line = next(ln for ln in (ROOT / "README.md").read_text().splitlines()
                if "pip install ." in ln and "serve" in ln)
    *install, start = commands(line)
    return install, start


def serve_args(args: list[str]) -> click.Context:
    """Parse `serve` options exactly as the CLI would, without serving."""
    return serve.make_context("serve", list(args))


def test_dockerfile_is_slim_python_and_runs_as_a_non_root_user():
    (base,) = instructions("FROM")
    assert re.fullmatch(r"python:3\.\d+-slim", base)
    users = instructions("USER")
    assert users and users[-1] not in ("root", "0")


def test_dockerfile_installs_with_the_readmes_command():
    install, _ = readme_commands()
    # `--no-cache-dir` only keeps pip's cache out of the image; it installs the same thing.
    runs = [[[w for w in cmd if w != "--no-cache-dir"] for cmd in commands(run)]
            for run in instructions("RUN")]
    assert install in runs
    (path,) = [v for k, v in (i.split("=", 1) for i in instructions("ENV")) if k == "PATH"]
    (workdir,) = instructions("WORKDIR")
    assert path.startswith(f"{workdir}/.venv/bin:"), "the venv's o41-emulator must be found"


def test_dockerfile_starts_with_the_readmes_serve_command_and_real_options():
    _, start = readme_commands()
    (entry,) = instructions("ENTRYPOINT")
    command = json.loads(entry)
    assert [Path(start[0]).name, *start[1:]] == command[:2] == ["o41-emulator", "serve"]
    ctx = serve_args(command[2:])
    assert ctx.params["host"] == "0.0.0.0" and str(ctx.params["data_dir"]) in instructions(
        "VOLUME")[0]
    # Beyond loopback without an admin key, serve refuses unless told the risk is accepted:
    # the image says so explicitly (its comment says why and how to avoid it).
    assert ctx.params["allow_unauthenticated_admin"] is True


def test_dockerfile_copies_every_package_the_project_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = {w for c in instructions("COPY") for w in c.split()[:-1]}
    assert packages | {"pyproject.toml", project["project"]["readme"]} <= copied


def test_image_start_command_serves_and_its_healthcheck_passes(live_factory, tmp_path):
    (entry,) = instructions("ENTRYPOINT")
    # The image's own options, then a free port, loopback and a temporary data dir for a test.
    emu = live_factory(*json.loads(entry)[2:], "--host", "127.0.0.1", "--port", "0",
                       "--data-dir", str(tmp_path / "data"))
    (check,) = instructions("HEALTHCHECK")
    command = shlex.split(check.split(" CMD ", 1)[1])
    assert command[0] == "python"
    port = emu.url.rsplit(":", 1)[1]
    probe = [sys.executable, *(a.replace(":8041/", f":{port}/") for a in command[1:])]
    assert subprocess.run(probe, timeout=HANG_GUARD).returncode == 0


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_runs_this_image_on_minio_with_the_s3_backend():
    services = compose()["services"]
    minio, emulator = services["minio"], services["emulator"]
    assert minio["image"].startswith("minio/minio") and "healthcheck" in minio
    assert emulator["build"] == "."
    assert emulator["depends_on"]["minio"]["condition"] == "service_healthy"
    env = emulator["environment"]
    options = {f"O41_EMULATOR_SERVE_{p.name.upper()}" for p in serve.params}
    assert set(env) <= options, "every variable must be an option of serve"
    assert env["O41_EMULATOR_SERVE_STORAGE"] == "s3"
    assert env["O41_EMULATOR_SERVE_S3_ENDPOINT"] == "http://minio:9000"
    assert env["O41_EMULATOR_SERVE_S3_ACCESS_KEY"] == minio["environment"]["MINIO_ROOT_USER"]
    assert env["O41_EMULATOR_SERVE_S3_SECRET_KEY"] == minio["environment"]["MINIO_ROOT_PASSWORD"]
    assert "127.0.0.1:8041:8041" in emulator["ports"], "no key: publish it on loopback only"
    assert env["O41_EMULATOR_SERVE_ALLOWED_HOSTS"] == "emulator", "its service name is a Host"


def test_compose_services_reach_the_emulator_by_its_service_name(live_factory, tmp_path,
                                                                 artifact):
    """Another container calls http://emulator:8041: that Host is admitted by compose's
    environment, and the signed URLs it gets back carry the same name."""
    env = {k: v for k, v in compose()["services"]["emulator"]["environment"].items()
           if k == "O41_EMULATOR_SERVE_ALLOWED_HOSTS"}
    emu = live_factory("--data-dir", str(tmp_path / "data"), env=env)
    port = emu.url.rsplit(":", 1)[1]
    as_service = {"Host": f"emulator:{port}"}
    box = Box(emu.http, artifact, AWS)
    opened = emu.http.request("POST", "/api/v1/artifacts/open", headers=as_service,
                              json={"artifact": artifact, "resume": "latest", "place": AWS})
    assert opened.status == 200
    box.token = opened.body["token"]
    files = {"model.bin": b"m" * 100}
    written = box.write("step-00000001", files)
    assert written.status == 200
    box.upload(written, files)
    assert box.commit(written.body["upload"]).status == 200
    signed = emu.http.request("GET", "/api/v1/versions/read", headers=as_service,
                              params={"artifact": artifact, "urls": "1"}).body["files"][0]["url"]
    assert signed.startswith(f"http://emulator:{port}/data/")
    got = emu.http.request("GET", signed.replace("emulator", "127.0.0.1", 1), key=None,
                           headers=as_service)
    assert got.status == 200 and got.content == files["model.bin"]
    other = emu.http.request("GET", "/_emulator/health", headers={"Host": f"minio:{port}"})
    assert (other.status, other.code) == (403, "forbidden")


def test_compose_environment_puts_each_regions_checkpoints_in_its_own_bucket(
        live_factory, s3_server, tmp_path, artifact):
    env = dict(compose()["services"]["emulator"]["environment"])
    # The test session's S3 server in MinIO's place, with its own keys: a real server
    # refuses MinIO's (moto took any key, so swapping the endpoint alone once passed).
    env |= {k: v for k, v in s3_server.env().items() if "_S3_" in k}
    emu = live_factory("--data-dir", str(tmp_path / "data"), env=env)
    s3 = s3_server.boto3()
    project = artifact.split("/")[0]
    for n, place in enumerate((AWS, GCP, AZURE)):
        box = Box(emu.http, f"{project}/{place['cloud']}", place)
        box.open()
        assert box.checkpoint(f"step-{n:08d}").status == 200
        bucket = f"o41-{place['cloud']}-{place['region']}"
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=project + "/")
                .get("Contents", [])]
        assert keys and all(k.startswith(f"{project}/{place['cloud']}/") for k in keys)


def github_actions_example() -> dict:
    text = (ROOT / "README.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    return yaml.safe_load(block)


def test_readme_ci_example_serves_then_tests_the_client_then_runs_conformance():
    workflow = github_actions_example()
    (job,) = workflow["jobs"].values()
    runs = [step.get("run", "") for step in job["steps"]]
    serve_at = next(i for i, r in enumerate(runs) if "o41-emulator serve" in r)
    line = next(ln for ln in runs[serve_at].splitlines() if "o41-emulator serve" in ln)
    assert line.rstrip().endswith("&"), "the emulator must run in the background"
    words = shlex.split(line.split("o41-emulator serve", 1)[1].split(">")[0].rstrip("& "))
    ctx = serve_args(words)
    url = f"http://127.0.0.1:{ctx.params['port']}"
    assert f"{url}/_emulator/health" in runs[serve_at], "wait until it is healthy"
    client = next(i for i, r in enumerate(runs) if i > serve_at and "pytest" in r
                  and "--target" not in r)
    conformance = next(i for i, r in enumerate(runs) if "--target" in r)
    assert serve_at < client < conformance
    # the suite starts an emulator of its own, with every key and URL lifetime it checks
    assert "--target spawn" in runs[conformance]
    assert job["env"]["O41_ARTIFACTS_API_URL"] == f"{url}/api/v1"


# The team's emulator: docker-compose.team.yml, two replicas behind one port.

def team() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.team.yml").read_text())


def compose_default(value: str) -> str:
    """A value as compose reads it with no variables set: `${X:-d}` is d, `$$` is `$`."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value).replace("$$", "$")


REPLICAS = ("emulator-a", "emulator-b")


def test_team_compose_runs_replicas_of_this_image_on_one_database_and_one_bucket_store(
        tmp_path):
    doc = team()
    services = doc["services"]
    postgres, minio = services["postgres"], services["minio"]
    replicas = [services[name] for name in REPLICAS]
    assert postgres["image"].startswith("postgres:") and "healthcheck" in postgres
    assert minio["image"].startswith("minio/minio") and "healthcheck" in minio
    (entry,) = instructions("ENTRYPOINT")
    options = {f"O41_EMULATOR_SERVE_{p.name.upper()}" for p in serve.params}
    for replica in replicas:
        assert replica["build"] == "."
        assert {k: v["condition"] for k, v in replica["depends_on"].items()} == {
            "postgres": "service_healthy", "minio": "service_healthy"}
        assert set(replica["environment"]) <= options, "every variable must be an option"
        (mount,) = replica["configs"]
        config = tmp_path / mount["source"]  # the config compose mounts, here
        config.write_text(compose_default(doc["configs"][mount["source"]]["content"]))
        command = [str(config) if a == mount["target"] else a for a in replica["command"]]
        serve_args([*json.loads(entry)[2:], *command])  # the options parse
    env = replicas[0]["environment"]
    assert all(r["environment"] == env for r in replicas), "one truth: the same settings"
    pg = postgres["environment"]
    assert env["O41_EMULATOR_SERVE_DATABASE"] == (
        f"postgresql://{pg['POSTGRES_USER']}:{pg['POSTGRES_PASSWORD']}@postgres:5432/"
        f"{pg['POSTGRES_DB']}")
    assert env["O41_EMULATOR_SERVE_STORAGE"] == "s3"
    assert env["O41_EMULATOR_SERVE_S3_ENDPOINT"] == "http://minio:9000"
    assert env["O41_EMULATOR_SERVE_S3_ACCESS_KEY"] == minio["environment"]["MINIO_ROOT_USER"]
    assert env["O41_EMULATOR_SERVE_S3_SECRET_KEY"] == minio["environment"]["MINIO_ROOT_PASSWORD"]
    assert compose_default(env["O41_EMULATOR_SERVE_ADMIN_KEY"]).startswith("ak_")
    data = [r["volumes"][0].split(":")[0] for r in replicas]
    assert len(set(data)) == len(replicas), "each replica its own data dir"
    assert not any("ports" in r for r in replicas), "clients reach the front only"


def test_team_front_serves_one_port_spread_over_both_replicas_without_buffering():
    doc = team()
    front = doc["services"]["front"]
    assert front["image"].startswith("nginx:")
    assert front["ports"] == ["8041:8041"]
    assert {k: v["condition"] for k, v in front["depends_on"].items()} == {
        name: "service_healthy" for name in REPLICAS}
    (mount,) = front["configs"]
    conf = compose_default(doc["configs"][mount["source"]]["content"])
    assert mount["target"].startswith("/etc/nginx/conf.d/")
    (upstream,) = re.findall(r"upstream (\w+) \{([^}]*)\}", conf)
    assert re.findall(r"server ([\w-]+):8041;", upstream[1]) == list(REPLICAS)
    assert f"proxy_pass http://{upstream[0]};" in conf and "listen 8041;" in conf
    for line in ("client_max_body_size 0;", "proxy_request_buffering off;",
                 "proxy_buffering off;", "proxy_set_header Host $http_host;"):
        assert line in conf


def test_team_replicas_sign_urls_for_the_front(tmp_path):
    from emulator.run.cli import load_config

    doc = team()
    replica = doc["services"]["emulator-a"]
    (mount,) = replica["configs"]
    assert replica["command"] == ["--config", mount["target"]]
    config = tmp_path / "emulator.toml"
    config.write_text(compose_default(doc["configs"][mount["source"]]["content"]))
    port = doc["services"]["front"]["ports"][0].split(":")[0]
    assert load_config(config, tmp_path).public_url == f"http://localhost:{port}"
