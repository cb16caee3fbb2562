"""``python -m o41`` runs the ``o41`` command."""

from o41.cli import main

main()
