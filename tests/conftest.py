"""Hypothesis's profiles (`dev` in every run; `HYPOTHESIS_PROFILE=deep`, 10,000
examples, in CI's `properties` job), the long files first, and what collection
imported frozen out of the garbage collector's walks (Inspect's imports)."""

from __future__ import annotations

import gc
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("dev", max_examples=2_500, deadline=None)
settings.register_profile("deep", max_examples=10_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Workers take whole files: the long ones first, so that none ends alone.
    items.sort(key=lambda item: item.get_closest_marker("runs_long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


@pytest.fixture
def parity_evals_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m parity`'s `inspect eval` in this interpreter, not one that
    imports Inspect afresh per eval; `test_parity_logs` keeps one fresh run."""
    from tests.commands import run_inspect

    def in_process(
        args: Sequence[str], env: Mapping[str, str]
    ) -> subprocess.CompletedProcess[str]:
        # `env` is this one without INSPECT_*, as `run_inspect` runs.
        return run_inspect(*args, cwd=Path.cwd())

    monkeypatch.setattr("parity.logs.run_inspect", in_process)
