"""Sessions for tracegrade. A bare `nox` runs `tests`: pytest, lint and parity
in one venv (a venv per session cost minutes and gigabytes)."""

from __future__ import annotations

import re
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests"]
nox.options.reuse_venv = "yes"

PYTHON = "3.11"

PYPROJECT = Path(__file__).with_name("pyproject.toml").read_text(encoding="utf-8")


def _inspect_floor() -> str:
    """The oldest `inspect-ai` pyproject.toml allows: what is supported.
    (Read by pattern: `tomllib` is not in Python 3.10, which nox may run on.)"""
    found = re.search(r'^\s*"inspect-ai>=([\w.]+)",?$', PYPROJECT, re.MULTILINE)
    if found is None:
        raise ValueError("pyproject.toml gives no inspect-ai>= floor")
    return found[1]


OLDEST_INSPECT = _inspect_floor()
PLUGIN_TESTS = (
    "tests/test_core.py",
    "tests/test_itemise.py",
    "tests/test_strict_json.py",
    "tests/test_fixtures.py",
    "tests/test_generated_datasets.py",
    "tests/test_originals.py",
    "tests/test_registry_install.py",
    "tests/test_scorers.py",
    "tests/test_tasks.py",
    "tests/test_labels.py",
    "tests/test_label_scorer.py",
    "tests/test_key_warnings.py",
    "tests/test_live_extraction.py",
)
"""The plugin's tests: the registry and entry point, the scorers in tasks of
their own, `inspect eval tracegrade/...` and `inspect score`. Not the
`tracegrade` commands' (`tracegrade score` needs a newer Inspect)."""


LINTERS = ("ruff==0.17.6", "mypy==2.4.1", "nox")
"""Pinned, so that a linter's release never turns a clean tree red; raise
the pins on purpose."""


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run pytest, lint and parity in one venv; `-- ARGS`: pytest ARGS alone.

    Needs `node` 18 or newer (differential tests and parity)."""
    session.run("node", "--version", external=True)
    session.install(".[test]", *([] if session.posargs else LINTERS))
    session.run("pytest", *session.posargs)
    if not session.posargs:
        _lint(session, ["."])
        session.run("python", "-m", "parity")


@nox.session(python=PYTHON)
def compat(session: nox.Session) -> None:
    """Run the suite against the newest `inspect-ai` on the package index.

    The `tests` session installs what `pyproject.toml` allows; this one
    upgrades Inspect AI past any pin, so a release that moves one of the
    private symbols in `tracegrade._inspect_internals` shows here first.
    """
    session.run("node", "--version", external=True)
    session.install(".[test]")
    session.install("--upgrade", "inspect-ai")
    session.run("inspect", "--version")
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def oldest(session: nox.Session) -> None:
    """Run the plugin's tests against the oldest `inspect-ai` pyproject.toml
    allows, as a team that pinned it would run them (`PLUGIN_TESTS`, or
    the files given: `nox -s oldest -- tests/test_scorers.py`)."""
    session.install(".[test]", f"inspect-ai=={OLDEST_INSPECT}")
    session.run("inspect", "--version")
    session.run("pytest", *(session.posargs or PLUGIN_TESTS))


@nox.session(python=PYTHON)
def benchmarks(session: nox.Session) -> None:
    """Run each benchmark script end to end at toy sizes (`-m benchmark`).

    Not in the default set: a benchmark starts `tracegrade`, `inspect eval`
    and a baseline revision as processes of their own, which would take a
    large share of the suite's time budget, and a change to a benchmark is
    a change to a measuring tool, not to what users run. No timing is
    asserted. Needs `git` (`--baseline=HEAD`) and `node`.
    """
    session.run("node", "--version", external=True)
    session.run("git", "--version", external=True)
    session.install(".[test]")
    session.run("pytest", "-m", "benchmark", *session.posargs)


@nox.session(python=PYTHON)
def spark(session: nox.Session) -> None:
    """Run the Spark `mapInArrow` recipe on a local Spark (tests/test_spark.py).

    Not in the default set: pyspark is a large install, and starting a
    local Spark and running the recipe would take a large share of the
    suite's time budget; the `tests` session skips the file. Needs Java 17
    or newer.
    """
    session.run("java", "-version", external=True)
    session.install(".[test]", "pyspark>=4.0")
    session.run("pytest", "-n", "0", *(session.posargs or ["tests/test_spark.py"]))


@nox.session(python=PYTHON)
def ragas(session: nox.Session) -> None:
    """Hold the Ragas importer to Ragas itself (tests/test_ragas_import.py).

    Not in the default set: ragas 0.4 pulls LangChain (over a gigabyte) and
    needs it below 1.0, which nothing else here wants; the `tests` session
    skips the one test that imports it."""
    pins = ("ragas==0.4.3", "langchain-core<1", "langchain-community<0.4")
    session.install(".[test]", *pins)
    tests = session.posargs or ["tests/test_ragas_import.py"]
    session.run("pytest", "-n", "0", *tests)


@nox.session(python=PYTHON)
def record_pipelines(session: nox.Session) -> None:
    """Record the traced pipelines of tests/data/pipelines/ anew.

    Not in the default set: it installs Haystack, LlamaIndex and LangChain
    with OpenInference's instrumentors, which nothing else needs; the
    recorded files are committed, and the `tests` session reads them.
    `nox -s record_pipelines -- haystack` records one framework.
    """
    session.install(
        "haystack-ai>=3.4",
        "llama-index-core>=0.14",
        "langchain-core>=1.8",
        "openinference-instrumentation-haystack>=0.1.46",
        "openinference-instrumentation-llama-index>=4.6",
        "openinference-instrumentation-langchain>=0.1.80",
        "opentelemetry-sdk>=1.45",
        "opentelemetry-exporter-otlp-json-file>=0.66b1",
    )
    session.run("python", "scripts/record_pipelines.py", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Check style with ruff and types with mypy --strict, as `tests` does.

    `nox -s lint -- PATH` limits `ruff check` to PATH."""
    session.install(".", *LINTERS)
    _lint(session, session.posargs or ["."])


def _lint(session: nox.Session, paths: list[str]) -> None:
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


@nox.session(python=PYTHON)
def parity(session: nox.Session) -> None:
    """Diff the Python evaluators against the original Node ones.

    Extra fixture files: `nox -s parity -- --stage-diagnosis PATH
    --ordered-extraction PATH` (each flag repeatable).
    """
    session.run("node", "--version", external=True)
    session.install(".")
    session.run("python", "-m", "parity", *session.posargs)
