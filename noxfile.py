"""Sessions for tracegrade. A bare `nox` runs tests, lint and parity."""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests", "lint", "parity"]
nox.options.reuse_venv = "yes"

PYTHON = "3.11"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the pytest suite; differential tests need `node` 18 or newer."""
    session.run("node", "--version", external=True)
    session.install(".[test]")
    session.run("pytest", *session.posargs)


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
    session.run("python", "-m", "pip", "show", "inspect-ai")
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Check style with ruff and types with mypy --strict.

    The linters are pinned so that a linter's release never turns a clean
    tree red (ruff format now checks Python blocks in Markdown); raise the
    pins on purpose.
    """
    session.install(".", "ruff==0.17.6", "mypy==2.4.1", "nox")
    session.run("ruff", "check", *(session.posargs or ["."]))
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
