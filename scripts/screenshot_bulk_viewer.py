"""Find how many samples one `.eval` log can hold and still open in `inspect view`.

For each sample count N: a synthetic log of N stage samples is written
with `EvalArchive` (`bulk_eval_log.py`), served by `inspect view --log-dir
DIR --host 127.0.0.1 --port FREE`, and opened in a fresh headless
Chromium. Three steps are timed, each until the page shows the text that
proves it done:

1. `list`: from navigating to the log's sample list until it shows the
   first sample (`stage-0000000`);
2. `clicked`: from clicking the row of the fourth sample until that
   sample's score explanation shows, its Scoring tab clicked as soon as
   it appears (how a person opens a sample);
3. `deep_link`: from navigating a blank page to the address of a sample
   in the middle of the log until its explanation shows (a shared link:
   the viewer starts afresh and reads the log again).

A count works when the list and the clicked sample both show within
`--limit-seconds` (15 by default); the largest count that works, with
every smaller one tried working too, is the measured limit. The same is
reported for deep links. Each step is given up after `--give-up-seconds`,
and a page reporting an error (a failed load, "No samples") fails at once.
The view server's and the browser's peak resident memory are recorded.

The sample list and the sample of the largest working count are saved as
`docs/images/bulk-sample-list.png` and `docs/images/bulk-sample.png`, and
every measurement, with the command, to `benchmarks/results/viewer.json`.

    python scripts/screenshot_bulk_viewer.py [--samples 10000,100000,...]
        [--limit-seconds 15] [--give-up-seconds 120] [--chromium PATH]
        [--json OUT] [--images DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

from bulk_eval_log import (
    Template,
    make_template,
    sample_id,
    stage_record,
    write_synthetic_log,
)
from screenshot_report import (
    REPO,
    HeadlessChromium,
    ScreenshotError,
    find_chromium,
    quiet_environment,
    stop_process_group,
)
from screenshot_viewer import _wait_until_serving, free_port
from tracegrade.bulk.scoring import score_stage_input

DEFAULT_COUNTS = (10_000, 100_000, 200_000, 500_000, 1_000_000)
# Text the viewer shows instead of a sample list when loading fails.
FAILURE_TEXTS = (
    "An error occurred",
    "No samples",
    "exceeds the maximum",
    "Failed to",
)
POLL_SECONDS = 0.25


@dataclass
class Step:
    """One timed step: seconds from navigation, or why it never showed."""

    seconds: float | None = None
    failure: str | None = None


@dataclass
class Measurement:
    samples: int
    log_bytes: int = 0
    write_seconds: float = 0.0
    writer_us_per_sample: float = 0.0
    sample_list: Step = field(default_factory=Step)
    clicked_sample: Step = field(default_factory=Step)
    deep_link: Step = field(default_factory=Step)
    within_limit: bool = False
    deep_link_within_limit: bool = False
    view_server_peak_rss: int = 0
    browser_peak_rss: int = 0


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def status_kib(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss(root: int) -> int:
    """Resident bytes of a process and its descendants now."""
    return sum(status_kib(pid, "VmRSS") for pid in process_tree(root)) * 1024


def tree_peak_rss(root: int) -> int:
    """The sum of each process's own peak (VmHWM) in the tree, in bytes."""
    return sum(status_kib(pid, "VmHWM") for pid in process_tree(root)) * 1024


@contextmanager
def view_server(log_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`inspect view` on `log_dir` at a free localhost port."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "view",
            "--log-dir",
            str(log_dir),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
        ],
        env=quiet_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_serving(server, base)
        yield base, server
    finally:
        asyncio.run(stop_process_group(server))
        if server.stderr is not None:
            server.stderr.close()


class PeakWatcher:
    """Samples a process tree's resident memory while steps wait."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak = 0

    def sample(self) -> None:
        self.peak = max(self.peak, tree_rss(self.root))


async def timed_wait(
    browser: HeadlessChromium,
    shown: str,
    give_up: float,
    watcher: PeakWatcher,
    each_poll: str = "",
) -> Step:
    """Seconds until `shown` is in the page's text; fails on failure text.
    `each_poll` is a statement run in the page before each look."""
    started = time.monotonic()
    check = (
        f"(() => {{ {each_poll}"
        " const text = document.body ? document.body.innerText : '';"
        f" if (text.includes({json.dumps(shown)})) return 'shown';"
        f" for (const f of {json.dumps(FAILURE_TEXTS)})"
        "   if (text.includes(f)) return 'failed: ' + text.slice(0, 400);"
        " return ''; })()"
    )
    while (elapsed := time.monotonic() - started) < give_up:
        watcher.sample()
        try:
            state = await asyncio.wait_for(
                browser.evaluate(check), timeout=give_up - elapsed
            )
        except (ScreenshotError, TimeoutError) as error:
            return Step(failure=f"page stopped answering: {error}")
        if state == "shown":
            return Step(seconds=round(time.monotonic() - started, 2))
        if state:
            return Step(failure=str(state))
        await asyncio.sleep(POLL_SECONDS)
    try:
        showing = await asyncio.wait_for(
            browser.evaluate("document.body ? document.body.innerText : ''"), 10
        )
    except (ScreenshotError, TimeoutError):
        showing = "(the page did not answer)"
    return Step(
        failure=f"not shown after {give_up:.0f} s; the page shows: "
        + " ".join(str(showing).split())[:300]
    )


def sample_list_url(base: str, log_name: str) -> str:
    return f"{base}#/logs/{quote(log_name)}/samples"


def sample_url(base: str, log_name: str, sample: str) -> str:
    return f"{base}#/logs/{quote(log_name)}/samples/sample/{quote(sample)}/1/scoring"


CLICKED_INDEX = 3


def click_text(text: str) -> str:
    """Script clicking the innermost element showing exactly `text` (in any
    case); true if there was one."""
    return (
        "(() => { const hit = [...document.querySelectorAll('body *')].find("
        "e => e.children.length === 0 &&"
        f" e.textContent.trim().toLowerCase() === {json.dumps(text.lower())});"
        " if (!hit) return false; hit.click(); return true; })()"
    )


# A sample opens on its transcript; the explanation is on its Scoring tab,
# clicked as soon as it exists.
OPEN_SCORING_TAB = (
    "if (!window.__scoringOpened) window.__scoringOpened = "
    + click_text("scoring")
    + ";"
)


async def open_sample_list(
    browser: HeadlessChromium,
    base: str,
    log_name: str,
    first_sample: str,
    give_up: float,
    watcher: PeakWatcher,
) -> Step:
    """Step 1: navigate to a log's sample list; seconds until `first_sample`
    shows."""
    await browser.open(sample_list_url(base, log_name))
    return await timed_wait(browser, first_sample, give_up, watcher)


@dataclass
class SampleListTiming:
    """Step 1 alone on any log, and what the viewer's two sides held."""

    sample_list: Step
    view_server_peak_rss: int
    browser_peak_rss: int


def time_sample_list(
    chromium: str,
    log_dir: Path,
    log_name: str,
    first_sample: str,
    give_up: float,
    width: int = 1300,
    height: int = 760,
) -> SampleListTiming:
    """Serve `log_dir` afresh and time step 1 on `log_name` in a fresh browser.

    For logs this script did not write (`benchmarks/bulk_scoring.py` times
    the logs of `tracegrade score`), so both measure the same thing.
    """

    async def run() -> tuple[Step, int]:
        async with HeadlessChromium(chromium, width, height) as browser:
            assert browser._process is not None
            watcher = PeakWatcher(browser._process.pid)
            listed = await open_sample_list(
                browser, base, log_name, first_sample, give_up, watcher
            )
            return listed, watcher.peak

    with view_server(log_dir) as (base, server):
        listed, browser_peak = asyncio.run(run())
        server_peak = tree_peak_rss(server.pid)
    return SampleListTiming(listed, server_peak, browser_peak)


async def browse(
    chromium: str,
    base: str,
    log_name: str,
    count: int,
    give_up: float,
    shots: Path,
    width: int,
    height: int,
) -> tuple[Step, Step, Step, int]:
    """Time the list, a clicked sample, and a deep-linked sample."""
    clicked_index = min(CLICKED_INDEX, count - 1)
    middle = count // 2
    clicked_text, middle_text = (
        score_stage_input(stage_record(index)).explanation
        for index in (clicked_index, middle)
    )
    assert clicked_text and middle_text
    never = Step(failure="sample list never showed")
    async with HeadlessChromium(chromium, width, height) as browser:
        assert browser._process is not None
        watcher = PeakWatcher(browser._process.pid)
        listed = await open_sample_list(
            browser, base, log_name, sample_id(0), give_up, watcher
        )
        if listed.seconds is None:
            return listed, never, never, watcher.peak
        await browser.screenshot(shots / "bulk-sample-list.png")
        if not await browser.evaluate(click_text(sample_id(clicked_index))):
            clicked = Step(failure=f"no row shows {sample_id(clicked_index)}")
        else:
            clicked = await timed_wait(
                browser, clicked_text, give_up, watcher, OPEN_SCORING_TAB
            )
            if clicked.seconds is not None:
                await browser.screenshot(shots / "bulk-sample.png")
        # From a blank page, so the viewer starts afresh, as for a shared link.
        await browser.open("about:blank")
        await browser.wait_for("location.href === 'about:blank'", "a blank page")
        await browser.open(sample_url(base, log_name, sample_id(middle)))
        linked = await timed_wait(browser, middle_text, give_up, watcher)
        return listed, clicked, linked, watcher.peak


def measure(
    count: int,
    template: Template,
    chromium: str,
    args: argparse.Namespace,
    shots: Path,
) -> Measurement:
    result = Measurement(samples=count)
    with tempfile.TemporaryDirectory(prefix="tracegrade-bulk-view-") as temp:
        log_dir = Path(temp) / "logs"
        written = write_synthetic_log(log_dir, count, template)
        result.log_bytes = written.log_bytes
        result.write_seconds = written.seconds_total
        result.writer_us_per_sample = written.writer_us
        log_name = Path(written.log).name
        with view_server(log_dir) as (base, server):
            listed, clicked, linked, browser_peak = asyncio.run(
                browse(
                    chromium,
                    base,
                    log_name,
                    count,
                    args.give_up_seconds,
                    shots,
                    args.width,
                    args.height,
                )
            )
            result.view_server_peak_rss = tree_peak_rss(server.pid)
        result.sample_list = listed
        result.clicked_sample, result.deep_link = clicked, linked
        result.browser_peak_rss = browser_peak

    def within(*steps: Step) -> bool:
        return all(
            step.seconds is not None and step.seconds <= args.limit_seconds
            for step in steps
        )

    result.within_limit = within(result.sample_list, result.clicked_sample)
    result.deep_link_within_limit = within(result.deep_link)
    return result


def counts(text: str) -> list[int]:
    values = sorted({int(part.replace("_", "")) for part in text.split(",")})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("sample counts must be at least 1")
    return values


def report_line(result: Measurement) -> str:
    def shown(step: Step) -> str:
        return f"{step.seconds:.1f} s" if step.seconds is not None else "never"

    return (
        f"{result.samples:>9,} samples  log {result.log_bytes / 1e6:7.1f} MB  "
        f"list {shown(result.sample_list):>7}  "
        f"clicked {shown(result.clicked_sample):>7}  "
        f"deep link {shown(result.deep_link):>7}  "
        f"server {result.view_server_peak_rss / 1e6:6.0f} MB  "
        f"browser {result.browser_peak_rss / 1e6:6.0f} MB  "
        f"{'ok' if result.within_limit else 'OVER LIMIT'}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--samples",
        type=counts,
        default=list(DEFAULT_COUNTS),
        help="comma-separated sample counts, tried smallest first",
    )
    parser.add_argument("--limit-seconds", type=float, default=15.0)
    parser.add_argument("--give-up-seconds", type=float, default=120.0)
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="try larger counts after one is over the limit",
    )
    parser.add_argument("--chromium", help="Chromium binary")
    parser.add_argument(
        "--json", type=Path, default=REPO / "benchmarks" / "results" / "viewer.json"
    )
    parser.add_argument("--images", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--width", type=int, default=1300)
    parser.add_argument("--height", type=int, default=760)
    args = parser.parse_args(argv)

    results: list[Measurement] = []
    limit: int | None = None
    deep_link_limit: int | None = None
    try:
        chromium = find_chromium(args.chromium)
        with tempfile.TemporaryDirectory(prefix="tracegrade-bulk-") as temp:
            template = make_template(Path(temp))
            for count in args.samples:
                shots = Path(temp) / f"shots-{count}"
                shots.mkdir()
                result = measure(count, template, chromium, args, shots)
                results.append(result)
                print(report_line(result), flush=True)
                if all(r.within_limit for r in results):
                    limit = count
                    args.images.mkdir(parents=True, exist_ok=True)
                    for shot in shots.iterdir():
                        shutil.copyfile(shot, args.images / shot.name)
                if all(r.deep_link_within_limit for r in results):
                    deep_link_limit = count
                if not result.within_limit and not args.keep_going:
                    break
    except (ScreenshotError, subprocess.TimeoutExpired) as error:
        print(f"screenshot_bulk_viewer: {error}", file=sys.stderr)
        return 1

    report = {
        "command": " ".join(["python", *sys.argv]),
        "what": (
            "seconds until `inspect view` shows a synthetic .eval log's sample "
            "list (from navigation), a sample opened by clicking its row, and "
            "a sample opened by its address (deep link); limit_samples is the "
            "largest count whose list and clicked sample took at most "
            "limit_seconds, all smaller counts tried included; "
            "limit_samples_deep_link the same for deep links"
        ),
        "inspect_ai": _version("inspect_ai"),
        "chromium": _chromium_version(chromium),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "limit_seconds": args.limit_seconds,
        "give_up_seconds": args.give_up_seconds,
        "limit_samples": limit,
        "limit_samples_deep_link": deep_link_limit,
        "results": [asdict(result) for result in results],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"limit: {limit} samples ({deep_link_limit} by deep link); wrote {args.json}")
    return 0


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


def _chromium_version(chromium: str) -> str:
    completed = subprocess.run(
        [chromium, "--version"], capture_output=True, text=True, check=False
    )
    return completed.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
