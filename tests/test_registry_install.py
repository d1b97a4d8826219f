"""`tracegrade/...` names resolve from a real install, not only from this tree.

An editable install and pytest's `pythonpath` can hide a packaging mistake:
an entry point that names the wrong module, fixtures left out of the wheel.
So, once per test session, pip builds tracegrade's wheel (hatchling, in an
isolated build env) from a copy of the sources and installs it, not editable,
into a fresh venv, and Inspect's own CLI is run from that venv in a directory
outside the source tree: one `inspect eval` of both tasks, whose logs the
tests share, and one `inspect score`.

The trade-off: the venv's dependencies are not installed but linked from the
environment pytest runs in (about 3 s for the whole venv; installing
inspect-ai and its ~100 dependencies took about 40). Only the distributions
that tracegrade's declared dependencies need, transitively, are linked, so
the venv holds what a plain `pip install tracegrade` would: no extra
(ir-measures, pandas), no other tracegrade (the dev venv's editable one,
nox's). A `.pth` to the whole test environment would cost the same but let a
module that imports an undeclared dependency pass. No longer proved: that pip
resolves and installs the dependencies from the index; `pip check` still
proves the linked versions satisfy every declared requirement.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.runs_long

REPO = Path(__file__).resolve().parents[1]
PACKAGE_FILES = ("pyproject.toml", "README.md", "LICENSE")
TASKS = ("tracegrade/stage_diagnosis", "tracegrade/ordered_extraction_recorded")
ENV = {
    key: value for key, value in os.environ.items() if not key.startswith("INSPECT_")
}
ENV.pop("PYTHONPATH", None)
# Where the test environment's distributions are, and only there: not
# pytest's `pythonpath` nor an editable install's path.
TEST_SITE = list(
    dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
)


def site_packages(venv: Path) -> Path:
    (site,) = venv.glob("lib/python*/site-packages")
    return site


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Pip run on `venv`: the test environment's, when it has one, spares the
    venv a pip of its own (ensurepip: 2-4 s); a venv made by uv has none."""
    python = str(venv / "bin" / "python")
    if (venv / "bin" / "pip").exists():
        command = [python, "-m", "pip"]
    else:
        command = [sys.executable, "-m", "pip", "--python", python]
    return subprocess.run(
        [*command, *args],
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def link_dependencies(venv: Path) -> None:
    """Link into `venv` every distribution that tracegrade's requirements
    (without extras) need, read from the metadata of the wheel just installed.

    A requirement the test environment lacks is left out for `pip check` to
    name. Each distribution's top-level entries are linked whole, as RECORD
    lists them (packages, modules, `.libs`, its `.dist-info`).
    """
    site = site_packages(venv)
    (tracegrade,) = metadata.distributions(name="tracegrade", path=[str(site)])
    todo: list[tuple[metadata.Distribution, frozenset[str]]] = [
        (tracegrade, frozenset())
    ]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        dist, extras = todo.pop()
        for text in dist.requires or ():
            requirement = Requirement(text)
            marker = requirement.marker
            if marker and not any(
                marker.evaluate({"extra": extra}) for extra in ("", *extras)
            ):
                continue
            key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
            if key in seen:
                continue
            seen.add(key)
            found = list(metadata.distributions(name=requirement.name, path=TEST_SITE))
            if not found:
                continue
            todo.append((found[0], key[1]))
            for file in found[0].files or ():
                top = file.parts[0]
                if top in ("..", "/", "__pycache__") or (site / top).exists():
                    continue
                (site / top).symlink_to(Path(str(found[0].locate_file(top))))


def make_venv(venv: Path) -> None:
    """A fresh venv with tracegrade pip-installed (not editable) from a copy,
    and its dependencies linked in (about 3 s)."""
    source = venv.parent / "tracegrade-src"
    source.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__")
    )
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        env=ENV,
    )
    if importlib.util.find_spec("pip") is None:
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "ensurepip", "--default-pip"],
            check=True,
            env=ENV,
            capture_output=True,
        )
    result = pip(venv, "install", "--quiet", "--no-deps", "--no-compile", str(source))
    assert result.returncode == 0, result.stderr
    link_dependencies(venv)


# pytest-xdist runs a file on one worker (`--dist loadfile`), so these are
# made once.
@pytest.fixture(scope="session")
def installed_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("install") / "venv"
    make_venv(venv)
    return venv


def run_in(
    venv: Path, cwd: Path, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        cwd=cwd,
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=check,
    )


def inspect_cli(venv: Path, cwd: Path, *args: str) -> None:
    """Inspect's CLI from the venv: `python -m inspect_ai` runs the `main` its
    `inspect` script would (that script is not linked: it names the test
    environment's interpreter)."""
    result = run_in(venv, cwd, "python", "-m", "inspect_ai", *args, check=False)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="session")
def eval_logs(
    installed_venv: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Each task's log from one `inspect eval` of both, which the tests below
    share (each Inspect start costs about 2 s, most of it importing Inspect)."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    cwd = tmp_path_factory.mktemp("registry-eval")
    inspect_cli(installed_venv, cwd, "eval", *TASKS, "--log-dir", "logs")
    logs: dict[str, Path] = {}
    for info in list_eval_logs(str(cwd / "logs")):
        log = read_eval_log(info, header_only=True)
        logs[log.eval.task] = Path(log.location.removeprefix("file://"))
    assert sorted(logs) == sorted(TASKS)
    return logs


def summarise(path: Path) -> dict[str, object]:
    """What the tests check of a log, read in pytest's process (the format is
    Inspect's, the same version as the venv's)."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path))
    samples = log.samples or []
    return {
        "status": log.status,
        "model": log.eval.model,
        "scorers": sorted({name for s in samples for name in (s.scores or {})}),
        "samples": len(samples),
        "with_result": sum(
            "result" in (score.metadata or {})
            for s in samples
            for score in (s.scores or {}).values()
        ),
    }


def test_the_installed_package_is_the_one_used(
    installed_venv: Path, tmp_path: Path
) -> None:
    """Both the import and Inspect's entry point find the venv's own copy, not
    a link to the test environment's."""
    code = (
        "import importlib.util, json, tracegrade\n"
        "from importlib.metadata import entry_points\n"
        "eps = entry_points(group='inspect_ai')\n"
        "print(json.dumps([tracegrade.__file__, [(ep.name, "
        "importlib.util.find_spec(ep.module).origin) for ep in eps]]))\n"
    )
    result = run_in(installed_venv, tmp_path, "python", "-c", code)
    module, entry_points = json.loads(result.stdout)
    venv = installed_venv.resolve()
    assert Path(module).resolve().is_relative_to(venv)
    ((name, origin),) = entry_points
    assert name == "tracegrade"
    assert Path(origin).resolve() == Path(module).resolve().parent / "_registry.py"


def test_the_installed_script_runs_the_program(installed_venv: Path) -> None:
    """`tracegrade` is `tracegrade.cli.run`: `main`, then a quick exit."""
    script = (installed_venv / "bin" / "tracegrade").read_text(encoding="utf-8")
    assert "from tracegrade.cli import run\n" in script
    assert "sys.exit(run())" in script


def test_the_declared_dependencies_are_satisfied(installed_venv: Path) -> None:
    result = pip(installed_venv, "check")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("task", "scorer"),
    [
        ("tracegrade/stage_diagnosis", "stage_diagnosis"),
        ("tracegrade/ordered_extraction_recorded", "ordered_extraction"),
    ],
)
def test_inspect_eval_finds_the_installed_tasks(
    eval_logs: dict[str, Path], task: str, scorer: str
) -> None:
    summary = summarise(eval_logs[task])
    assert summary["status"] == "success"
    assert summary["model"] == "none/none"
    assert summary["scorers"] == [scorer]
    assert summary["with_result"] == summary["samples"]


def test_inspect_score_finds_the_installed_scorer(
    installed_venv: Path, eval_logs: dict[str, Path], tmp_path: Path
) -> None:
    """Scores a copy, so the shared log stays as `inspect eval` wrote it."""
    log = tmp_path / "logs" / eval_logs["tracegrade/stage_diagnosis"].name
    log.parent.mkdir()
    shutil.copy2(eval_logs["tracegrade/stage_diagnosis"], log)
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "missing-answer-label", "correct": false}\n')
    inspect_cli(
        installed_venv,
        tmp_path,
        "score",
        str(log),
        "--scorer",
        "tracegrade/stage_diagnosis",
        "-S",
        f"labels={labels}",
        "--action",
        "append",
        "--overwrite",
    )
    assert [path.name for path in log.parent.iterdir()] == [log.name]
    summary = summarise(log)
    assert summary["status"] == "success"
    assert summary["scorers"] == ["stage_diagnosis", "stage_diagnosis1"]
    assert summary["with_result"] == 2 * int(str(summary["samples"]))


def test_import_trec_works_on_a_plain_install(
    installed_venv: Path, tmp_path: Path
) -> None:
    """A plain install has no ir-measures, and needs none: the command reads
    TREC files itself, with trec_eval's grammar."""
    (tmp_path / "qrels").write_text("q1 0 D1 1\n")
    (tmp_path / "run").write_text("q1 Q0 D1 1 1.0 sys\n")
    result = run_in(
        installed_venv,
        tmp_path,
        "tracegrade",
        "import",
        "trec",
        "--qrels",
        "qrels",
        "--run",
        "run",
        "--k",
        "1",
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        '{"id":"q1","input":{"required":["D1"],"context":["D1"],'
        '"steps":[{"name":"run","ids":["D1"]}]}}\n'
    )
    assert "ir_measures" not in result.stderr
