"""Settings for the whole suite.

Property tests draw a few thousand examples on a developer's machine and
10,000 where `CI=true`, whose run is the one that gates a change; a test
that needs fewer says so with its own `@settings(max_examples=...)`.
`HYPOTHESIS_PROFILE=ci` asks for the CI profile anywhere.

What a test process has imported and collected stays for the session, so
it is frozen out of the garbage collector's sight: each collection then
walks only what the tests create (a tenth of the time of the tests that
run evals in-process).
"""

from __future__ import annotations

import gc
import os
import subprocess

import pytest
from hypothesis import settings

settings.register_profile("dev", max_examples=2_500, deadline=None)
settings.register_profile("ci", max_examples=10_000, deadline=None)
settings.load_profile(
    os.environ.get(
        "HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") == "true" else "dev"
    )
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Workers take whole files in this order: the long ones first, so that
    # no worker is left alone with one at the end.
    items.sort(key=lambda item: item.get_closest_marker("runs_long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


@pytest.fixture
def parity_evals_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m parity`'s `inspect eval` runs forked from the command
    server (tests/commands.py), not in a fresh interpreter: 0.7 s an eval
    rather than 3. `test_parity_logs` keeps one fresh run."""
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from tests.commands import run_inspect

    def served(
        args: Sequence[str], env: Mapping[str, str]
    ) -> subprocess.CompletedProcess[str]:
        return run_inspect(*args, cwd=Path.cwd(), env=dict(env))

    monkeypatch.setattr("parity.logs.run_inspect", served)
