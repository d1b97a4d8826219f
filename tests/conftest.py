"""Hypothesis's profiles, long files first, and the packaged tasks' logs."""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support import OfflineLogs

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
    """`python -m parity`'s `inspect eval` in this interpreter (faster)."""
    from tests.commands import Completed, run_inspect

    def in_process(args: Sequence[str], env: Mapping[str, str]) -> Completed:
        return run_inspect(*args, cwd=Path.cwd())

    monkeypatch.setattr("parity.logs.run_inspect", in_process)


def packaged_task_logs(log_dir: Path, epochs: int) -> list[str]:
    """The stage then extraction log of both packaged tasks; read, never written."""
    from inspect_ai import eval

    from tracegrade import ordered_extraction_recorded, stage_diagnosis

    tasks = [stage_diagnosis(dataset="edge-cases"), ordered_extraction_recorded()]
    logs = eval(
        tasks, epochs=epochs, display="none", log_dir=str(log_dir), log_realtime=False
    )
    assert all(log.status == "success" for log in logs), logs[0].error
    return [log.location for log in logs]


@pytest.fixture(scope="session")
def offline_logs(tmp_path_factory: pytest.TempPathFactory) -> OfflineLogs:
    """One epoch of each, alone in `log_dir`."""
    log_dir = tmp_path_factory.mktemp("offline-logs")
    return OfflineLogs(log_dir, *packaged_task_logs(log_dir, epochs=1))


@pytest.fixture(scope="session")
def two_epoch_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two epochs of each, by score name."""
    logs = packaged_task_logs(tmp_path_factory.mktemp("two-epoch-logs"), epochs=2)
    return {"stage_diagnosis": Path(logs[0]), "ordered_extraction": Path(logs[1])}
