"""`tracegrade/...` names resolve from a wheel installed in a fresh venv that
links only the declared requirements (`pip check` proves the versions fit)."""

from __future__ import annotations

import importlib.util
import json
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

from tests.support import SUBPROCESS_ENV

pytestmark = pytest.mark.runs_long

REPO = Path(__file__).resolve().parents[1]
TASKS = {
    "tracegrade/stage_diagnosis": ["stage_diagnosis"],
    "tracegrade/ordered_extraction_recorded": ["ordered_extraction"],
}
ENV = {key: value for key, value in SUBPROCESS_ENV.items() if key != "PYTHONPATH"}
TEST_SITE = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
HAS_PIP = importlib.util.find_spec("pip") is not None


def run(cwd: Path, *command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300
    )


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """This environment's pip (sparing ensurepip's 2-4 s), else the venv's."""
    python = venv / "bin" / "python"
    ours = (sys.executable, "-m", "pip", "--python", python)
    return run(venv, *(ours if HAS_PIP else (python, "-m", "pip")), *args)


def link_dependencies(venv: Path) -> None:
    """Link into `venv` the distributions tracegrade's requirements need."""
    (site,) = venv.glob("lib/python*/site-packages")
    (tracegrade,) = metadata.distributions(name="tracegrade", path=[str(site)])
    todo: list[tuple[Any, set[str]]] = [(tracegrade, set())]
    seen: set[str] = set()
    while todo:
        dist, extras = todo.pop()
        for requirement in map(Requirement, dist.requires or ()):
            marker, key = requirement.marker, str(requirement).split(";")[0]
            if marker and not any(marker.evaluate({"extra": e}) for e in {"", *extras}):
                continue
            found = list(metadata.distributions(name=requirement.name, path=TEST_SITE))
            if key in seen or not found:
                continue  # one the test environment lacks: `pip check` names it
            seen.add(key)
            todo.append((found[0], requirement.extras))
            for top in {file.parts[0] for file in found[0].files or ()}:
                if top not in ("..", "/", "__pycache__") and not (site / top).exists():
                    (site / top).symlink_to(Path(str(found[0].locate_file(top))))


# Each `inspect` command in the venv, as `python -m inspect_ai`; last line: the
# exit codes and where tracegrade and its entry point are found.
VENV_COMMANDS = """
import importlib.util, json, runpy, sys
from importlib.metadata import entry_points

codes = []
for args in json.loads(sys.argv[1]):
    sys.argv = ["inspect", *args]
    try:
        runpy.run_module("inspect_ai", run_name="__main__", alter_sys=True)
        codes.append(0)
    except SystemExit as stop:
        codes.append(stop.code if isinstance(stop.code, int) else int(bool(stop.code)))
import tracegrade
found = [(e.name, importlib.util.find_spec(e.module).origin) for e in entry_points(group="inspect_ai")]
print("\\n" + json.dumps([codes, tracegrade.__file__, found]))
"""  # noqa: E501


@pytest.fixture(scope="session")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("install")
    source, venv = root / "tracegrade-src", root / "venv"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "src", source / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    without_pip = ["--without-pip"] if HAS_PIP else []
    subprocess.run([sys.executable, "-m", "venv", *without_pip, venv], check=True)
    done = pip(venv, "install", "--quiet", "--no-deps", "--no-compile", str(source))
    assert done.returncode == 0, done.stderr
    link_dependencies(venv)
    done = pip(venv, "check")
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def test_the_installed_copy_is_found(venv: Path, tmp_path: Path) -> None:
    """`inspect score` (first: the scorer found through the entry point alone),
    then `inspect eval` of both tasks, in the venv, find the venv's copy."""
    from inspect_ai import eval

    from tracegrade import stage_diagnosis

    task = stage_diagnosis(dataset="edge-cases")
    (made,) = eval(task, limit=4, display="none", log_dir=str(tmp_path / "made"))
    scored = tmp_path / "scored" / Path(made.location).name
    scored.parent.mkdir()
    shutil.move(made.location, scored)
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "missing-answer-label", "correct": false}\n')
    score = ["score", str(scored), "--scorer", "tracegrade/stage_diagnosis"]
    score += ["--overwrite", "-S", f"labels={labels}", "--action", "append"]
    commands = json.dumps([score, ["eval", *TASKS, "--log-dir", "logs"]])
    done = run(tmp_path, venv / "bin/python", "-c", VENV_COMMANDS, commands)
    assert done.returncode == 0, done.stderr
    codes, module, found = json.loads(done.stdout.splitlines()[-1])
    assert codes == [0, 0]
    module = Path(module).resolve()
    assert module.is_relative_to(venv.resolve())
    found = [(name, Path(origin).resolve()) for name, origin in found]
    assert found == [("tracegrade", module.parent / "_registry.py")]
    script = (venv / "bin" / "tracegrade").read_text()
    assert "from tracegrade.__main__ import run\n" in script

    assert list(scored.parent.iterdir()) == [scored]
    logs = [info.name for info in list_eval_logs(str(tmp_path / "logs"))]
    tasks = []
    for log in map(read_eval_log, [*logs, str(scored)]):
        samples = log.samples or []
        scores = [score for s in samples for score in (s.scores or {}).values()]
        names = sorted({name for s in samples for name in (s.scores or {})})
        assert (log.status, log.eval.model) == ("success", "none/none")
        assert len(scores) == len(samples) * len(names) > 0
        assert all("result" in (score.metadata or {}) for score in scores)
        tasks.append((log.eval.task, names))
    rescored = ("tracegrade/stage_diagnosis", ["stage_diagnosis", "stage_diagnosis1"])
    assert sorted(tasks) == sorted([*TASKS.items(), rescored])


def test_import_trec_works_on_a_plain_install(venv: Path, tmp_path: Path) -> None:
    """A plain install has no ir-measures, and needs none."""
    (tmp_path / "qrels").write_text("q1 0 D1 1\n")
    (tmp_path / "run").write_text("q1 Q0 D1 1 1.0 sys\n")
    args = ("import", "trec", "--qrels", "qrels", "--run", "run", "--k", "1")
    done = run(tmp_path, venv / "bin" / "tracegrade", *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        '{"id":"q1","input":{"required":["D1"],"context":["D1"],'
        '"steps":[{"name":"run","ids":["D1"]}]}}\n'
    )
