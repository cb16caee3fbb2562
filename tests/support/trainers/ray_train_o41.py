"""Ray Train V2 with ``storage_path`` on o41://, as written for s3://: refused at launch.

``python ray_train_o41.py PROJECT/NAME``: one Ray session, two launches written as for s3
(``RunConfig(storage_path=url, storage_filesystem=PyFileSystem(FSSpecHandler(fs)))``), with
``storage_path`` the artifact (Ray adds its run's folder) and its project (the run's folder
is the artifact). Prints ``refused <one line>`` for each launch that fails before training,
``trained`` for one that trains.
"""

from __future__ import annotations

import sys

import fsspec
import ray
from pyarrow.fs import FSSpecHandler, PyFileSystem
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer


def train_func() -> None:
    print("trained", flush=True)


def launch(storage_path: str, name: str | None) -> None:
    storage = PyFileSystem(FSSpecHandler(fsspec.filesystem("o41")))
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=1),
                           run_config=RunConfig(storage_path=storage_path, name=name,
                                                storage_filesystem=storage))
    try:
        trainer.fit()
    except Exception as exc:  # Ray wraps the controller's error; the line is in its text
        line = next((t for t in str(exc).splitlines() if "o41" in t and "Ray Train" in t),
                    repr(exc)[:300])
        print(f"refused {line.split('ConfigError: ')[-1]}", flush=True)


def main() -> None:
    project, name = sys.argv[1].split("/")
    ray.init(num_cpus=1, include_dashboard=False)
    launch(f"o41://{project}/{name}", None)
    launch(f"o41://{project}", name)
    ray.shutdown()


if __name__ == "__main__":
    main()
