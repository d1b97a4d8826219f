"""`tracegrade/...` names resolve from a real install, not only from this tree.

An editable install and pytest's `pythonpath` can hide a packaging mistake:
an entry point that names the wrong module, fixtures left out of the wheel.
So, once per test session, pip builds tracegrade's wheel (hatchling, in an
isolated build env) from a copy of the sources and installs it, not editable,
into a fresh venv, and Inspect's own CLI is run from that venv in directories
outside the source tree, in one interpreter: one `inspect score`, then one
`inspect eval` of both tasks, whose logs the tests share.

The trade-off: the venv's dependencies are not installed but linked from the
environment pytest runs in, as installing inspect-ai and its hundred
dependencies afresh would take most of a test run. Only the distributions
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
from typing import NamedTuple

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
    and its dependencies linked in."""
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


# Run in the venv's interpreter, outside the source tree: each `inspect`
# command given as JSON in turn, as `python -m inspect_ai` runs it (the
# `inspect` script is not linked: it names the test environment's
# interpreter), then what the import of tracegrade and Inspect's entry point
# find. Written as JSON to the file named first: the exit codes, then the
# module and entry points.
VENV_COMMANDS = """
import importlib.util, json, os, runpy, sys
from importlib.metadata import entry_points

out, commands = sys.argv[1], json.loads(sys.argv[2])
codes = []
for cwd, args in commands:
    os.chdir(cwd)
    sys.argv = ["inspect", *args]
    try:
        runpy.run_module("inspect_ai", run_name="__main__", alter_sys=True)
        codes.append(0)
    except SystemExit as stop:
        codes.append(stop.code if isinstance(stop.code, int) else int(bool(stop.code)))
import tracegrade
found = [
    (ep.name, importlib.util.find_spec(ep.module).origin)
    for ep in entry_points(group="inspect_ai")
]
with open(out, "w") as file:
    json.dump([codes, tracegrade.__file__, found], file)
"""


class VenvRun(NamedTuple):
    """What the venv's one run of Inspect gave: the stage log it scored, in
    a directory of its own, each task's log from its eval, and the
    tracegrade module and entry points its import then found."""

    scored: Path
    eval_logs: dict[str, Path]
    module: str
    entry_points: list[tuple[str, str]]


@pytest.fixture(scope="session")
def venv_run(installed_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> VenvRun:
    """`inspect score`, then one `inspect eval` of both tasks, in one
    interpreter of the venv (each start imports Inspect again), each test
    reading its part.

    The score comes first, so that it looks the scorer up before anything in
    that interpreter has imported tracegrade: Inspect finds it through the
    installed entry point, as in a process of its own. The eval then finds
    the tasks through the registry that entry point loaded, the installed
    copy's: no other is on the venv's path. The log scored is the packaged
    stage task's, evaluated in pytest's interpreter beforehand (the same
    Inspect, the same task), since the commands are given before the venv's
    interpreter starts; it is scored in a directory of its own, so that the
    test sees whatever else the score writes there."""
    from inspect_ai import eval

    from tracegrade import stage_diagnosis

    scoring = tmp_path_factory.mktemp("registry-score")
    # Its first samples, the one the labels file labels among them.
    (made,) = eval(
        stage_diagnosis(dataset="edge-cases"),
        limit=4,
        display="none",
        log_dir=str(scoring / "made"),
        log_realtime=False,
    )
    assert made.status == "success", made.error
    log = scoring / "logs" / Path(made.location).name
    log.parent.mkdir()
    shutil.move(made.location, log)
    labels = scoring / "labels.jsonl"
    labels.write_text('{"id": "missing-answer-label", "correct": false}\n')
    evaluating = tmp_path_factory.mktemp("registry-eval")
    commands = [
        (
            str(scoring),
            [
                *("score", str(log), "--scorer", "tracegrade/stage_diagnosis"),
                *("-S", f"labels={labels}", "--action", "append", "--overwrite"),
            ],
        ),
        (str(evaluating), ["eval", *TASKS, "--log-dir", "logs"]),
    ]
    out = tmp_path_factory.mktemp("registry-out") / "run.json"
    run_in(
        installed_venv,
        out.parent,
        "python",
        "-c",
        VENV_COMMANDS,
        str(out),
        json.dumps(commands),
    )
    codes, module, entry_points = json.loads(out.read_text())
    assert codes == [0, 0]
    return VenvRun(
        log,
        logs_by_task(evaluating / "logs"),
        module,
        [tuple(entry_point) for entry_point in entry_points],
    )


def logs_by_task(log_dir: Path) -> dict[str, Path]:
    from inspect_ai.log import list_eval_logs, read_eval_log

    logs: dict[str, Path] = {}
    for info in list_eval_logs(str(log_dir)):
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
    installed_venv: Path, venv_run: VenvRun
) -> None:
    """Both the import and Inspect's entry point find the venv's own copy, not
    a link to the test environment's."""
    venv = installed_venv.resolve()
    assert Path(venv_run.module).resolve().is_relative_to(venv)
    ((name, origin),) = venv_run.entry_points
    assert name == "tracegrade"
    assert (
        Path(origin).resolve()
        == Path(venv_run.module).resolve().parent / "_registry.py"
    )


def test_the_installed_script_runs_the_program(installed_venv: Path) -> None:
    """`tracegrade` is `tracegrade.__main__.run`: the commands imported, then run."""
    script = (installed_venv / "bin" / "tracegrade").read_text(encoding="utf-8")
    assert "from tracegrade.__main__ import run\n" in script
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
    venv_run: VenvRun, task: str, scorer: str
) -> None:
    summary = summarise(venv_run.eval_logs[task])
    assert summary["status"] == "success"
    assert summary["model"] == "none/none"
    assert summary["scorers"] == [scorer]
    assert summary["with_result"] == summary["samples"]


def test_inspect_score_finds_the_installed_scorer(venv_run: VenvRun) -> None:
    log = venv_run.scored
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
