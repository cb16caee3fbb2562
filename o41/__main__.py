"""``python -m o41`` runs the ``o41`` command."""

from .cli import main

main()
