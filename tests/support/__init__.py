"""What the tests share: the emulator over HTTP (``emulator_http``), the S3 servers of the
S3-backend tests (``s3_servers``), the live emulator and file server of the client tests
(``client_fixtures``, loaded with ``pytest_plugins = ["tests.support.client_fixtures"]``;
``client_helpers``: ``make_fs`` and ``blob``),
the real trainers as subprocesses (``trainer_runs``, scripts in ``trainers/``), race tools,
fake conformance targets, the dashboard's seeded world and the docs' examples."""
