"""What Ray adds to a test install and to the suite.

The test extra includes `tracegrade[ray]` so that the Ray Data recipe is
run (`tests/test_beyond_one_machine.py`). This measures what that costs a contributor:

- the packages only Ray brings: the test extra resolved with and without
  `ray[data]` (`pip install --dry-run --report`), and the difference;
- the time to install those packages into a fresh virtual environment
  that already holds the rest, and the disk they take there;
- the Ray test's own time in pytest (set-up, which starts a local Ray of
  two CPUs, and the run), in a fresh pytest of that one file.

    python benchmarks/ray_cost.py [--json OUT]

It reads the package index as pip is configured to; nothing is timed
while resolving, only while installing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import venv
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
RAY_EXTRA = "tracegrade[ray]"


def test_requirements(with_ray: bool) -> list[str]:
    """The test extra's requirements, tracegrade's own extras expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras: dict[str, list[str]] = project["project"]["optional-dependencies"]
    wanted: list[str] = [*project["project"]["dependencies"]]

    def add(requirement: str) -> None:
        own = re.fullmatch(r"tracegrade\[(\w+)\]", requirement)
        if own is None:
            wanted.append(requirement)
            return
        for inner in extras[own[1]]:
            add(inner)

    for requirement in extras["test"]:
        if requirement == RAY_EXTRA and not with_ray:
            continue
        add(requirement)
    return wanted


def resolve(python: Path, requirements: Sequence[str], scratch: Path) -> dict[str, str]:
    """Name to version of everything pip would install for `requirements`."""
    report = scratch / "report.json"
    subprocess.run(
        [
            *(str(python), "-m", "pip", "install", "--quiet", "--dry-run"),
            *("--ignore-installed", "--report", str(report), *requirements),
        ],
        check=True,
    )
    found = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {
        entry["metadata"]["name"].lower(): entry["metadata"]["version"]
        for entry in found
    }


def site_packages_bytes(environment: Path) -> int:
    total = 0
    for directory, _, files in os.walk(environment / "lib"):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total


def ray_test_seconds(scratch: Path) -> dict[str, float]:
    """The Ray test alone: its set-up (a local Ray) and its run."""
    junit = scratch / "ray.xml"
    subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "pytest",
                "tests/test_beyond_one_machine.py",
                "-q",
                "-n",
                "0",
            ),
            *("-p", "no:cacheprovider", f"--junitxml={junit}"),
            *("-o", "junit_duration_report=total"),
        ],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    cases = list(ElementTree.parse(junit).iter("testcase"))
    return {
        "tests": len(cases),
        "seconds": round(sum(float(case.get("time", 0)) for case in cases), 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tracegrade-ray-cost-") as scratch:
        work = Path(scratch)
        environment = work / "venv"
        venv.create(environment, with_pip=True)
        python = environment / ("Scripts" if os.name == "nt" else "bin") / "python"
        without = resolve(python, test_requirements(with_ray=False), work)
        with_ray = resolve(python, test_requirements(with_ray=True), work)
        only_ray = sorted(set(with_ray) - set(without))
        changed = sorted(
            name
            for name in without
            if name in with_ray and with_ray[name] != without[name]
        )
        pinned = [f"{name}=={version}" for name, version in without.items()]
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--no-deps", *pinned],
            check=True,
        )
        before = site_packages_bytes(environment)
        started = time.perf_counter()
        subprocess.run(
            [
                *(str(python), "-m", "pip", "install", "--quiet", "--no-deps"),
                *(f"{name}=={with_ray[name]}" for name in only_ray),
            ],
            check=True,
        )
        install_seconds = time.perf_counter() - started
        added_bytes = site_packages_bytes(environment) - before
        suite = ray_test_seconds(work)
    result: dict[str, Any] = {
        "command": "python benchmarks/ray_cost.py",
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_before": [round(load, 2) for load in os.getloadavg()],
        },
        "packages_without_ray": len(without),
        "packages_only_ray_needs": only_ray,
        "versions_changed_by_ray": changed,
        "ray": with_ray.get("ray"),
        "install_seconds": round(install_seconds, 1),
        "installed_mib": round(added_bytes / 2**20, 1),
        "ray_test": suite,
    }
    print(
        f"Ray adds {len(only_ray)} packages to the test install "
        f"({', '.join(only_ray)}): {result['install_seconds']} s to install, "
        f"{result['installed_mib']} MiB on disk; its Ray test takes "
        f"{suite['seconds']} s ({suite['tests']} test, a local Ray started)."
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
