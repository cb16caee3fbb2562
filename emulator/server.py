"""Serving the app with gunicorn (threads in each of several worker processes).

The CLI binds the socket itself so that `--port 0` can report the port it got before any
worker starts; gunicorn then serves on that file descriptor.
"""

from __future__ import annotations

import logging
import socket
import sys

from gunicorn.app.base import BaseApplication

from .app import create_app
from .config import Settings

LOG_FORMAT = "%(asctime)s %(message)s"


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


class EmulatorServer(BaseApplication):
    """A gunicorn application whose workers each build their own app on the same data."""

    def __init__(
        self,
        settings: Settings,
        sock: socket.socket,
        workers: int,
        threads: int,
        quiet: bool = False,
    ) -> None:
        self.settings = settings
        self.options = {
            "bind": [f"fd://{sock.fileno()}"],
            "workers": workers,
            "threads": threads,
            "worker_class": "gthread",
            "timeout": 0,  # long uploads are not a hung worker
            "graceful_timeout": 5,
            "keepalive": 30,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "warning",
            "proc_name": "o41-emulator",
        }
        self.quiet = quiet
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.WARNING if self.quiet else logging.INFO,
            format=LOG_FORMAT,
        )
        return create_app(self.settings, prepare=False)
