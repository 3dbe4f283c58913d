"""Several real processes on one SQLite file: concurrency and kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings

from ..conftest import PYTHON, cli_env

LOOP = str(Path(__file__).resolve().parents[1] / "helpers" / "checkpoint_loop.py")

pytestmark = pytest.mark.slow  # hundreds of checkpoints from many real processes


def run_writers(project_dir: Path, store_url: str, processes: int, each: int) -> list[int]:
    """``processes`` real processes checkpointing ``each`` times; the versions they were given."""
    procs = [
        subprocess.Popen(
            [PYTHON, LOOP, str(project_dir), str(each), str(n)],
            env=cli_env(store_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(processes)
    ]
    versions: list[int] = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        versions += [int(line.split()[0]) for line in out.splitlines()]
    return versions


@pytest.mark.parametrize("backend_name", ["sqlite", "redis"])
def test_eight_processes_times_25_checkpoints_on_each_backend(
    backend_name: str, project_dir: Path, store_url: str, request: pytest.FixtureRequest
) -> None:
    if backend_name == "redis":
        import redis

        store_url = request.getfixturevalue("redis_server").url
        redis.Redis.from_url(store_url).flushall()
    assert sorted(run_writers(project_dir, store_url, 8, 25)) == list(range(1, 201))
    with ProjectBrain.open(project_dir, load_settings(store_url=store_url)) as brain:
        status = brain.status()
        assert status.version == 200
        assert status.history_versions == [196, 197, 198, 199, 200]


def test_kill_9_during_checkpoints_never_breaks_the_state(project_dir: Path, store_url: str) -> None:
    settings = load_settings(store_url=store_url)
    for round_ in range(20):
        proc = subprocess.Popen(
            [PYTHON, LOOP, str(project_dir), "forever", f"k{round_}"],
            env=cli_env(store_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one checkpoint landed; kill it mid-loop
        time.sleep(0.005 * (round_ % 5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with ProjectBrain.open(project_dir, settings) as brain:
            state = brain.store.states.get_state(brain.session_id)
            assert state is not None
            latest = brain.store.states.history(brain.session_id, 1)[0]
            assert latest.version == state.meta.version
            assert latest.state == state
            assert brain.resume().state == state
