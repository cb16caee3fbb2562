from .run.cli import main

main()
