"""The run's processes keep their home folder in the run's temp folder; ``home_untouched``
(conftest) compares the real one before and after the whole run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .conftest import HOME_VARIABLES, REAL_HOME, home_snapshot


def test_every_home_variable_points_into_the_runs_temp_folder() -> None:
    home = Path(os.environ["HOME"])
    assert home != REAL_HOME and not home.is_relative_to(REAL_HOME)
    for name in HOME_VARIABLES:
        assert Path(os.environ[name]).is_relative_to(home), name
    shell = subprocess.run(["bash", "-lc", "echo ~"], capture_output=True, text=True, check=True)
    assert shell.stdout.strip() == str(home)


def test_the_snapshot_sees_a_file_added_two_folders_down(tmp_path: Path) -> None:
    (tmp_path / ".cache" / "tool").mkdir(parents=True)
    before = home_snapshot(tmp_path)
    (tmp_path / ".cache" / "tool" / "run-1").mkdir()
    after = home_snapshot(tmp_path)
    assert before != after and before[".cache/tool"] != after[".cache/tool"]
    (tmp_path / ".bash_history").write_text("ls\n")
    assert ".bash_history" in home_snapshot(tmp_path)
