"""`tracegrade/...` names resolve from a real install, not only from this tree.

Once per session pip builds the wheel from a copy of the sources and installs
it, not editable, into a fresh venv; Inspect's CLI then runs there, outside
the source tree. The venv's dependencies are linked from the test
environment rather than installed (that would take most of a test run): only
the distributions tracegrade's declared requirements need, transitively, so
an undeclared import still fails, and `pip check` proves the versions fit.
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
from typing import Any

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.runs_long

REPO = Path(__file__).resolve().parents[1]
TASKS = ("tracegrade/stage_diagnosis", "tracegrade/ordered_extraction_recorded")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
ENV.pop("PYTHONPATH", None)
HAS_PIP = importlib.util.find_spec("pip") is not None
TEST_SITE = list(
    dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
)


def run_in(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        cwd=cwd,
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """This environment's pip pointed at `venv` (sparing it ensurepip's 2-4 s),
    or, where this one has none (a venv made by uv), the venv's own."""
    python = str(venv / "bin" / "python")
    own = [sys.executable, "-m", "pip", "--python", python]
    return subprocess.run(
        [*(own if HAS_PIP else [python, "-m", "pip"]), *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def link_dependencies(venv: Path) -> None:
    """Link into `venv` every distribution tracegrade's requirements (no
    extras) need, each distribution's top-level entries whole."""
    (site,) = venv.glob("lib/python*/site-packages")
    (tracegrade,) = metadata.distributions(name="tracegrade", path=[str(site)])
    todo: list[tuple[Any, frozenset[str]]] = [(tracegrade, frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        dist, extras = todo.pop()
        for requirement in map(Requirement, dist.requires or ()):
            marker = requirement.marker
            if marker and not any(marker.evaluate({"extra": e}) for e in ("", *extras)):
                continue
            key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
            found = list(metadata.distributions(name=requirement.name, path=TEST_SITE))
            if key in seen or not found:
                continue  # one the test environment lacks: `pip check` names it
            seen.add(key)
            todo.append((found[0], key[1]))
            for file in found[0].files or ():
                top = file.parts[0]
                if top not in ("..", "/", "__pycache__") and not (site / top).exists():
                    (site / top).symlink_to(Path(str(found[0].locate_file(top))))


@pytest.fixture(scope="session")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with tracegrade pip-installed from a copy of the sources."""
    root = tmp_path_factory.mktemp("install")
    source = root / "tracegrade-src"
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root / "venv")],
        check=True,
        env=ENV,
    )
    if not HAS_PIP:
        ensurepip = [str(root / "venv" / "bin" / "python"), "-m", "ensurepip"]
        subprocess.run(ensurepip, check=True, env=ENV, capture_output=True)
    done = pip(
        root / "venv", "install", "--quiet", "--no-deps", "--no-compile", str(source)
    )
    assert done.returncode == 0, done.stderr
    link_dependencies(root / "venv")
    return root / "venv"


# Run by the venv's interpreter: each `inspect` command in turn, as
# `python -m inspect_ai` runs it, then where tracegrade and Inspect's entry
# point are found; all written as JSON to the file named first.
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
    (e.name, importlib.util.find_spec(e.module).origin)
    for e in entry_points(group="inspect_ai")
]
with open(out, "w") as file:
    json.dump([codes, tracegrade.__file__, found], file)
"""


@pytest.fixture(scope="session")
def venv_run(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`inspect score` of a stage log, then `inspect eval` of both tasks, in
    one interpreter of the venv. The score comes first, so that Inspect finds
    the scorer through the installed entry point before anything imported
    tracegrade; the log scored is made here beforehand, alone in its folder."""
    from inspect_ai import eval

    from tracegrade import stage_diagnosis

    scoring = tmp_path_factory.mktemp("registry-score")
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
    (scoring / "labels.jsonl").write_text(
        '{"id": "missing-answer-label", "correct": false}\n'
    )
    evaluating = tmp_path_factory.mktemp("registry-eval")
    score = ["score", str(log), "--scorer", "tracegrade/stage_diagnosis"]
    score += [
        "-S",
        f"labels={scoring / 'labels.jsonl'}",
        "--action",
        "append",
        "--overwrite",
    ]
    commands = [
        (str(scoring), score),
        (str(evaluating), ["eval", *TASKS, "--log-dir", "logs"]),
    ]
    out = scoring / "run.json"
    done = run_in(
        venv, scoring, "python", "-c", VENV_COMMANDS, str(out), json.dumps(commands)
    )
    assert done.returncode == 0, done.stderr
    codes, module, entry_points = json.loads(out.read_text())
    assert codes == [0, 0]
    logs = {}
    for info in list_eval_logs(str(evaluating / "logs")):
        header = read_eval_log(info, header_only=True)
        logs[header.eval.task] = header.location.removeprefix("file://")
    return {"scored": log, "logs": logs, "module": module, "entry_points": entry_points}


def summarise(path: Path | str) -> tuple[str, list[str], int, int]:
    """A log's status, scorers, samples and scores holding a result."""
    log = read_eval_log(str(path))
    samples = log.samples or []
    scores = [score for s in samples for score in (s.scores or {}).values()]
    names = sorted({name for s in samples for name in (s.scores or {})})
    with_result = sum("result" in (score.metadata or {}) for score in scores)
    return log.status, names, len(samples), with_result


def test_the_installed_package_and_script_are_used(
    venv: Path, venv_run: dict[str, Any]
) -> None:
    """The import and Inspect's entry point find the venv's own copy, and the
    `tracegrade` script runs `tracegrade.__main__.run`."""
    module = Path(venv_run["module"]).resolve()
    assert module.is_relative_to(venv.resolve())
    assert venv_run["entry_points"] == [
        ["tracegrade", str(module.parent / "_registry.py")]
    ]
    script = (venv / "bin" / "tracegrade").read_text(encoding="utf-8")
    assert "from tracegrade.__main__ import run\n" in script
    assert pip(venv, "check").returncode == 0


@pytest.mark.parametrize(
    ("task", "scorer"),
    [(TASKS[0], "stage_diagnosis"), (TASKS[1], "ordered_extraction")],
)
def test_inspect_eval_finds_the_installed_tasks(
    venv_run: dict[str, Any], task: str, scorer: str
) -> None:
    status, scorers, samples, with_result = summarise(venv_run["logs"][task])
    assert (status, scorers, with_result) == ("success", [scorer], samples)
    assert (
        read_eval_log(venv_run["logs"][task], header_only=True).eval.model
        == "none/none"
    )


def test_inspect_score_finds_the_installed_scorer(venv_run: dict[str, Any]) -> None:
    log = venv_run["scored"]
    assert sorted(path.name for path in log.parent.iterdir()) == [log.name]
    status, scorers, samples, with_result = summarise(log)
    assert (status, scorers) == ("success", ["stage_diagnosis", "stage_diagnosis1"])
    assert with_result == 2 * samples


def test_import_trec_works_on_a_plain_install(venv: Path, tmp_path: Path) -> None:
    """A plain install has no ir-measures, and needs none."""
    (tmp_path / "qrels").write_text("q1 0 D1 1\n")
    (tmp_path / "run").write_text("q1 Q0 D1 1 1.0 sys\n")
    args = ("import", "trec", "--qrels", "qrels", "--run", "run", "--k", "1")
    done = run_in(venv, tmp_path, "tracegrade", *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        '{"id":"q1","input":{"required":["D1"],"context":["D1"],'
        '"steps":[{"name":"run","ids":["D1"]}]}}\n'
    )
