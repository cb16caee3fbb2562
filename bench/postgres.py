"""A throwaway PostgreSQL cluster for a benchmark or test run (Debian's `postgresql` 15).

`initdb` refuses root, so as root the cluster belongs to the `postgres` user (`runuser`);
it listens on 127.0.0.1 only, on a free port below 32768 (above it, ports collide with the
kernel's ephemeral ones), with durability off: the data is thrown away at the end.
`python -m bench.postgres -- CMD...` runs CMD with `O41_EMULATOR_SERVE_DATABASE` naming a
fresh database of a cluster that lives as long as CMD (how .ci/run gives the conformance
suite's spawned emulator a PostgreSQL).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

BIN = Path(os.environ.get("O41_POSTGRES_BIN", "/usr/lib/postgresql/15/bin"))
ENV_VAR = "O41_EMULATOR_SERVE_DATABASE"


class PostgresError(RuntimeError):
    """The cluster could not be made or started; the message carries its log's tail."""


def available() -> bool:
    return (BIN / "initdb").exists()


def _free_port() -> int:
    for _ in range(100):
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise PostgresError("no free port below 32768")


class Postgres:
    """One cluster in a temporary directory; `database()` makes a fresh database's URL."""

    def __init__(self, durable: bool = False) -> None:
        """`durable`: commits survive a crash (an immediate restart); the default trades
        that for speed, as throwaway test clusters may."""
        self.durable = durable
        self.dir = Path(tempfile.mkdtemp(prefix="o41-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = 0
        self.options = ""
        self._as_root = os.geteuid() == 0

    def _run(self, *argv: str) -> None:
        cmd = list(argv)
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode:
            log = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
            raise PostgresError(f"{' '.join(argv[:2])} failed: {done.stderr[-1500:]}{log}")

    def start(self) -> Postgres:
        if not available():
            raise PostgresError(f"no PostgreSQL in {BIN}: apt-get install -y postgresql")
        if self._as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(str(BIN / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync")
        for attempt in range(5):
            self.port = _free_port()
            fast = ("" if self.durable else
                    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off ")
            self.options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                            f"{fast}-c max_connections=500")
            try:
                self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                          "-w", "-t", "60", "-o", self.options, "start")
                return self
            except PostgresError:
                if attempt == 4:
                    raise
        return self

    def restart(self, mode: str = "fast") -> None:
        """Restart the server on its port: `fast` ends sessions politely, `immediate` as a
        crash does (recovery at start-up)."""
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-m", mode,
                  "-w", "-t", "60", "-o", self.options, "restart")

    def url(self, name: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def database(self, prefix: str = "o41") -> str:
        """A new, empty database: what a fresh data dir is to SQLite."""
        return create_database(self.url(), prefix)

    def stop(self) -> None:
        if self.port:
            try:
                self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
            except PostgresError:
                pass  # already gone; the directory goes anyway
            self.port = 0
        shutil.rmtree(self.dir, ignore_errors=True)


def create_database(server_url: str, prefix: str = "o41") -> str:
    """A new database on the server of `server_url` (any database of it); its URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + "/" + name


def create_schema(database_url: str, prefix: str = "t") -> str:
    """A new, empty schema in the database of `database_url`; a URL whose connections use
    it (libpq's `options`): as cheap as a fresh data dir, where a database costs a second."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    return f"{database_url}?options=-csearch_path%3D{name}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m bench.postgres -- CMD [ARGS...]", file=sys.stderr)
        return 2
    pg = Postgres().start()
    try:
        env = {**os.environ, ENV_VAR: pg.database()}
        return subprocess.call(argv, env=env)
    finally:
        pg.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
