"""`tracegrade/...` names resolve from a real install, not only from this tree.

An editable install and pytest's `pythonpath` can hide a packaging mistake:
an entry point that names the wrong module, fixtures left out of the wheel.
So the package is built and installed with pip into a fresh venv, once per
test session (about 40 s, most of it installing inspect-ai), and Inspect's
own CLI is run from that venv in a directory outside the source tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE_FILES = ("pyproject.toml", "README.md", "LICENSE")
ENV = {
    key: value for key, value in os.environ.items() if not key.startswith("INSPECT_")
}
ENV.pop("PYTHONPATH", None)


@pytest.fixture(scope="session")
def installed_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with tracegrade pip-installed (not editable) from a copy."""
    root = tmp_path_factory.mktemp("install")
    source = root / "tracegrade-src"
    source.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__")
    )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=ENV)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(source)],
        check=True,
        env=ENV,
        timeout=900,
    )
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


READ_LOG = """
import json, sys
from inspect_ai.log import list_eval_logs, read_eval_log
(info,) = list_eval_logs(sys.argv[1])
log = read_eval_log(info.name)
print(json.dumps({
    "location": log.location,
    "status": log.status,
    "model": log.eval.model,
    "scorers": sorted({name for s in log.samples for name in (s.scores or {})}),
    "samples": len(log.samples),
    "with_result": sum(
        "result" in (score.metadata or {})
        for s in log.samples for score in (s.scores or {}).values()
    ),
}))
"""


def read_log(venv: Path, log_dir: Path) -> dict[str, object]:
    import json

    result = run_in(venv, log_dir.parent, "python", "-c", READ_LOG, str(log_dir))
    summary: dict[str, object] = json.loads(result.stdout)
    return summary


def test_the_installed_package_is_the_one_used(
    installed_venv: Path, tmp_path: Path
) -> None:
    result = run_in(
        installed_venv,
        tmp_path,
        "python",
        "-c",
        "import tracegrade; print(tracegrade.__file__)",
    )
    assert Path(result.stdout.strip()).is_relative_to(installed_venv)


@pytest.mark.parametrize(
    ("task", "scorer"),
    [
        ("tracegrade/stage_diagnosis", "stage_diagnosis"),
        ("tracegrade/ordered_extraction_recorded", "ordered_extraction"),
    ],
)
def test_inspect_eval_finds_the_installed_tasks(
    installed_venv: Path, tmp_path: Path, task: str, scorer: str
) -> None:
    run_in(installed_venv, tmp_path, "inspect", "eval", task, "--log-dir", "logs")
    summary = read_log(installed_venv, tmp_path / "logs")
    assert summary["status"] == "success"
    assert summary["model"] == "none/none"
    assert summary["scorers"] == [scorer]
    assert summary["with_result"] == summary["samples"]


def test_inspect_score_finds_the_installed_scorer(
    installed_venv: Path, tmp_path: Path
) -> None:
    run_in(
        installed_venv,
        tmp_path,
        "inspect",
        "eval",
        "tracegrade/stage_diagnosis",
        "--log-dir",
        "logs",
    )
    location = str(read_log(installed_venv, tmp_path / "logs")["location"])
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "missing-answer-label", "correct": false}\n')
    run_in(
        installed_venv,
        tmp_path,
        "inspect",
        "score",
        location,
        "--scorer",
        "tracegrade/stage_diagnosis",
        "-S",
        f"labels={labels}",
        "--action",
        "append",
        "--overwrite",
    )
    summary = read_log(installed_venv, tmp_path / "logs")
    assert summary["status"] == "success"
    assert summary["scorers"] == ["stage_diagnosis", "stage_diagnosis1"]
    assert summary["with_result"] == 2 * int(str(summary["samples"]))


def test_import_trec_without_the_trec_extra_says_how_to_install_it(
    installed_venv: Path, tmp_path: Path
) -> None:
    """A plain install has no ir-measures; the command names the extra."""
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
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "Error: tracegrade import trec reads TREC files with ir-measures, which "
        "is not installed; install it with: pip install 'tracegrade[trec]'\n"
    )
