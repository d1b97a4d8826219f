"""Make the docs' screenshots, and find how large a log `inspect view` opens.

    python scripts/screenshots.py report   # docs/images/report.png
    python scripts/screenshots.py sample   # docs/images/inspect-view.png
    python scripts/screenshots.py bulk --samples 10000,100000 [--keep-going]
        # docs/images/bulk-*.png and benchmarks/results/viewer.json

Chromium is driven over the DevTools protocol, so each picture is taken once
the page shows what proves it drawn, never after a guessed delay.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.measure import (  # noqa: E402
    CLEAN_ENV,
    machine,
    tracegrade,
    write_stage_records,
)

IMAGES = REPO / "docs" / "images"
OFFLINE_TASKS = ("tracegrade/stage_diagnosis", "tracegrade/ordered_extraction_recorded")
INSPECT = (sys.executable, "-m", "inspect_ai")
# Nothing that would reach the network or a user profile.
CHROMIUM_FLAGS = (
    *("--headless", "--disable-gpu", "--disable-quic", "--no-first-run"),
    *("--disable-background-networking", "--disable-component-update"),
    *("--disable-sync", "--hide-scrollbars", "--remote-debugging-port=0"),
)
READY_TIMEOUT = 60.0
# A process quiet in a session of its own, so that its helpers stop with it.
ALONE: dict[str, Any] = {"start_new_session": True, "stdin": subprocess.DEVNULL}
ALONE |= {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
# What the viewer shows instead of a sample list when loading fails.
FAILURE_TEXTS = ("An error occurred", "No samples", "exceeds the maximum", "Failed to")


class ScreenshotError(RuntimeError):
    """A step of making a screenshot failed; the message says which."""


class Step(NamedTuple):
    """Seconds from navigation until the page showed the text, or why not."""

    seconds: float | None = None
    failure: str | None = None


class SampleListTiming(NamedTuple):
    sample_list: Step
    view_server_peak_rss: int
    browser_peak_rss: int


def find_chromium(given: str | None) -> str:
    names = [
        os.environ.get("CHROMIUM"),
        "chromium",
        "chromium-browser",
        "google-chrome",
    ]
    candidates = [name for name in ([given] if given else names) if name]
    for candidate in candidates:
        if found := shutil.which(candidate):
            return found
    raise ScreenshotError(
        f"no Chromium found (tried {', '.join(candidates)}); "
        "pass --chromium PATH or set CHROMIUM"
    )


def run(command: Sequence[str | Path]) -> str:
    """Run a command quietly (no INSPECT_* settings); its stdout, or the error."""
    quiet: dict[str, Any] = {"env": CLEAN_ENV, "stdin": subprocess.DEVNULL}
    done = subprocess.run(command, capture_output=True, timeout=3600, **quiet)
    if done.returncode != 0:
        error = done.stderr.decode(errors="replace").strip()[-2000:]
        raise ScreenshotError(f"{command[3]} failed: {error}")
    return str(done.stdout.decode())


def run_offline_tasks(log_dir: Path, tasks: Sequence[str] = OFFLINE_TASKS) -> None:
    """`inspect eval` each task on the packaged fixtures; it exits 0 even when
    an eval fails, so each log's status is checked."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    for task in tasks:
        options = ("-T", "dataset=edge-cases", "--log-dir", str(log_dir))
        run([*INSPECT, "eval", task, *options, "--display", "none"])
    for info in list_eval_logs(str(log_dir)):
        header = read_eval_log(info.name, header_only=True)
        if header.status != "success":
            raise ScreenshotError(f"{header.eval.task}: {header.status} {header.error}")


def stop_group(process: subprocess.Popen[Any]) -> None:
    """Stop `process` and every process of the group it leads."""
    for stop in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):  # the group is gone
            os.killpg(process.pid, stop)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                process.poll()
                os.killpg(process.pid, 0)
                time.sleep(0.1)
    process.wait()


def tree_kib(root: int, key: str) -> int:
    """`key` of /proc/PID/status (VmRSS, VmHWM) summed over `root`'s tree."""
    found, total = [root], 0
    for pid in found:
        with contextlib.suppress(OSError):
            found += map(
                int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            )
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    total += int(line.split()[1])
    return total


class Chromium:
    """One headless Chromium page, driven over the DevTools protocol."""

    def __init__(self, binary: str, width: int, height: int) -> None:
        self.binary, self.size = binary, (width, height)
        self.profile = tempfile.TemporaryDirectory(prefix="tracegrade-chromium-")
        self.peak_rss = self._next_id = 0

    async def __aenter__(self) -> Chromium:
        flags = [*CHROMIUM_FLAGS, f"--user-data-dir={self.profile.name}"]
        flags.append("--window-size={},{}".format(*self.size))
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses root in its sandbox
        self.process = subprocess.Popen([self.binary, *flags, "about:blank"], **ALONE)
        self.session = aiohttp.ClientSession()
        try:
            port = await self._devtools_port()
            async with self.session.get(f"http://127.0.0.1:{port}/json/list") as got:
                page = next(t for t in await got.json() if t["type"] == "page")
            self.socket = await self.session.ws_connect(
                page["webSocketDebuggerUrl"], max_msg_size=0
            )
            width, height = self.size
            await self.call(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.session.close()
        stop_group(self.process)
        self.profile.cleanup()

    async def _devtools_port(self) -> str:
        port_file = Path(self.profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ScreenshotError(f"{self.binary} exited at start")
            # Chromium writes the port, then a second line: wait for both.
            if port_file.exists() and len(lines := port_file.read_text().split()) > 1:
                return lines[0]
            await asyncio.sleep(0.1)
        raise ScreenshotError(f"{self.binary} did not open its DevTools port")

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        await self.socket.send_json(
            {"id": self._next_id, "method": method, "params": params}
        )
        while True:  # events arrive on the same socket; only our reply matters
            message = await self.socket.receive_json()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise ScreenshotError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    async def evaluate(self, expression: str) -> Any:
        self.peak_rss = max(self.peak_rss, tree_kib(self.process.pid, "VmRSS") * 1024)
        reply = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True
        )
        if "exceptionDetails" in reply:
            raise ScreenshotError(f"page script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def open(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def wait_for(self, expression: str, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if await self.evaluate(expression):
                return
            await asyncio.sleep(0.2)
        raise ScreenshotError(
            f"timed out after {READY_TIMEOUT:.0f} s waiting for {what}"
        )

    async def screenshot(self, out: Path) -> None:
        reply = await self.call("Page.captureScreenshot", format="png")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(reply["data"]))


@contextlib.contextmanager
def inspect_view(log_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Serve `log_dir` with `inspect view` on a free localhost port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = ("--host", "127.0.0.1", "--port", str(port))
    view = [*INSPECT, "view", "--log-dir", str(log_dir), *address]
    server = subprocess.Popen(view, env=CLEAN_ENV, **ALONE)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while server.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError), urllib.request.urlopen(base, timeout=2):
                break
            time.sleep(0.2)
        else:
            raise ScreenshotError(f"inspect view did not answer at {base}")
        yield base, server
    finally:
        stop_group(server)


def sample_url(base: str, log_name: str, sample: str) -> str:
    sample = quote(sample, safe="")
    return f"{base}#/logs/{quote(log_name)}/samples/sample/{sample}/1/scoring"


# --- report and sample: the docs' pictures of the packaged fixtures ---------

# True once every plotly chart has drawn its bars; the page must have
# loaded, or the charts drawn so far would pass on their own.
CHARTS_DRAWN = """(() => {
  const charts = document.querySelectorAll('.js-plotly-plot');
  return document.readyState === 'complete' && charts.length > 0 &&
    [...charts].every(chart => chart.querySelector('.barlayer .point') !== null);
})()"""
# Metadata entries to unfold, outermost first: children exist once opened.
EXPANDED_KEYS = ("result", "missing", "record", "required", "context")


async def report_picture(args: argparse.Namespace, work: Path) -> None:
    run_offline_tasks(work / "logs")
    run(tracegrade("report", work / "logs", "--html", work / "report.html"))
    async with Chromium(args.chromium, args.width, args.height) as browser:
        await browser.open((work / "report.html").as_uri())
        await browser.wait_for(CHARTS_DRAWN, "the plotly charts to draw")
        await browser.screenshot(args.out)


async def sample_picture(args: argparse.Namespace, work: Path) -> None:
    """The Scoring tab of one sample, its `result` and `record` unfolded."""
    from inspect_ai.log import list_eval_logs, read_eval_log_sample

    run_offline_tasks(work / "logs", OFFLINE_TASKS[:1])
    (log,) = list_eval_logs(str(work / "logs"))
    try:
        sample = read_eval_log_sample(log.name, id=args.sample, epoch=1)
    except IndexError:
        raise ScreenshotError(f"no sample {args.sample!r}") from None
    explanation = (
        sample.scores["stage_diagnosis"].explanation if sample.scores else None
    )
    if not explanation:
        raise ScreenshotError(f"sample {args.sample!r} has no explanation")
    shown = f"document.body?.innerText.includes({json.dumps(explanation)})"
    keys = "[...document.querySelectorAll('.record-tree-key')]"
    with inspect_view(work / "logs") as (base, _):
        async with Chromium(args.chromium, args.width, args.height) as browser:
            await browser.open(sample_url(base, Path(log.name).name, args.sample))
            await browser.wait_for(shown, "the sample's explanation")
            for name in EXPANDED_KEYS:
                label = json.dumps(name + ":")
                key = f"{keys}.find(key => key.textContent.trim() === {label})"
                await browser.wait_for(f"{key} !== undefined", name)
                before = await browser.evaluate(f"{keys}.length")
                await browser.evaluate(f"{key}.click()")
                await browser.wait_for(
                    f"{keys}.length !== {before}", f"{name!r} to open"
                )
            await browser.screenshot(args.out)


# --- bulk: how many samples one .eval log can hold and still open -----------


def click_text(text: str) -> str:
    """Script clicking the innermost element showing exactly `text`, any case."""
    return (
        "(() => { const hit = [...document.querySelectorAll('body *')].find(e =>"
        " e.children.length === 0 &&"
        f" e.textContent.trim().toLowerCase() === {json.dumps(text.lower())});"
        " if (!hit) return false; hit.click(); return true; })()"
    )


# A sample opens on its transcript; the explanation is on its Scoring tab.
OPEN_SCORING_TAB = f"if (!window.__scored) window.__scored = {click_text('scoring')};"


async def timed_wait(
    browser: Chromium, shown: str, give_up: float, each_poll: str = ""
) -> Step:
    """Seconds until `shown` is in the page's text; a failure text fails at
    once. `each_poll` is a statement run in the page before each look."""
    check = (
        f"(() => {{ {each_poll} const text = document.body?.innerText ?? '';"
        f" if (text.includes({json.dumps(shown)})) return 'shown';"
        f" for (const f of {json.dumps(FAILURE_TEXTS)})"
        "   if (text.includes(f)) return 'failed: ' + text.slice(0, 400);"
        " return ''; })()"
    )
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < give_up:
        try:
            state = await asyncio.wait_for(browser.evaluate(check), give_up - elapsed)
        except (ScreenshotError, TimeoutError) as error:
            return Step(failure=f"page stopped answering: {error}")
        if state == "shown":
            return Step(seconds=round(time.monotonic() - started, 2))
        if state:
            return Step(failure=str(state))
        await asyncio.sleep(0.25)
    return Step(failure=f"not shown after {give_up:.0f} s")


def time_sample_list(
    chromium: str,
    log_dir: Path,
    log_name: str,
    first_sample: str,
    give_up: float,
    width: int = 1300,
    height: int = 760,
) -> SampleListTiming:
    """Serve `log_dir` afresh and time a fresh browser until `log_name`'s
    sample list shows `first_sample` (also for `benchmarks/bulk_scoring.py`)."""

    async def listed() -> tuple[Step, int]:
        async with Chromium(chromium, width, height) as browser:
            await browser.open(f"{base}#/logs/{quote(log_name)}/samples")
            return await timed_wait(browser, first_sample, give_up), browser.peak_rss

    with inspect_view(log_dir) as (base, server):
        step, browser_peak = asyncio.run(listed())
        return SampleListTiming(
            step, tree_kib(server.pid, "VmHWM") * 1024, browser_peak
        )


async def browse(
    args: argparse.Namespace, base: str, log: Path, shots: Path
) -> tuple[list[Step], int]:
    """The list, a clicked sample, and a deep link (a fresh page, as a shared
    link opens) to a sample in the middle of the log."""
    with log.with_suffix(".results.jsonl").open() as results:
        explanations = [json.loads(line)["explanation"] for line in results]
    ids = [f"stage-{n:07d}" for n in range(len(explanations))]
    clicked, middle = min(3, len(ids) - 1), len(ids) // 2
    give_up = args.give_up_seconds
    async with Chromium(args.chromium, args.width, args.height) as browser:
        await browser.open(f"{base}#/logs/{quote(log.name)}/samples")
        listed = await timed_wait(browser, ids[0], give_up)
        if listed.seconds is None:
            never = Step(failure="sample list never showed")
            return [listed, never, never], browser.peak_rss
        await browser.screenshot(shots / "bulk-sample-list.png")
        opened = Step(failure=f"no row shows {ids[clicked]}")
        if await browser.evaluate(click_text(ids[clicked])):
            opened = await timed_wait(
                browser, explanations[clicked], give_up, OPEN_SCORING_TAB
            )
            if opened.seconds is not None:
                await browser.screenshot(shots / "bulk-sample.png")
        await browser.open("about:blank")
        await browser.wait_for("location.href === 'about:blank'", "a blank page")
        await browser.open(sample_url(base, log.name, ids[middle]))
        linked = await timed_wait(browser, explanations[middle], give_up)
        return [listed, opened, linked], browser.peak_rss


def measure(count: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Score `count` records into one log with `tracegrade score`, then browse it."""
    records, logs, shots = work / "records.jsonl", work / "logs", work / "shots"
    shots.mkdir(parents=True)
    write_stage_records(records, count)
    started = time.perf_counter()
    options = ("--log-dir", logs, "--max-samples-per-log", str(count))
    run(tracegrade("score", "stage_diagnosis", records, *options, "--no-progress"))
    written = round(time.perf_counter() - started, 1)
    (log,) = logs.glob("*.eval")
    with inspect_view(logs) as (base, server):
        steps, peak = asyncio.run(browse(args, base, log, shots))
        server_peak = tree_kib(server.pid, "VmHWM") * 1024
    listed, clicked, linked = steps
    limit = args.limit_seconds

    def within(*steps: Step) -> bool:
        return all(s.seconds is not None and s.seconds <= limit for s in steps)

    return {
        "samples": count,
        "log_bytes": log.stat().st_size,
        "write_seconds": written,
        "sample_list": listed._asdict(),
        "clicked_sample": clicked._asdict(),
        "deep_link": linked._asdict(),
        "within_limit": within(listed, clicked),
        "deep_link_within_limit": within(linked),
        "view_server_peak_rss": server_peak,
        "browser_peak_rss": peak,
    }


def bulk(args: argparse.Namespace, work: Path) -> None:
    """Each count of `--samples`, smallest first, until one is over the limit."""
    results: list[dict[str, Any]] = []
    limit = deep_link_limit = None
    for count in args.samples:
        result = measure(count, args, work / str(count))
        results.append(result)
        steps = [
            result[step] for step in ("sample_list", "clicked_sample", "deep_link")
        ]
        print(f"{count:>9,} samples:", *(s["seconds"] or s["failure"] for s in steps))
        if all(r["within_limit"] for r in results):
            limit = count
            for shot in (work / str(count) / "shots").iterdir():
                shutil.copyfile(shot, args.images / shot.name)
        if all(r["deep_link_within_limit"] for r in results):
            deep_link_limit = count
        shutil.rmtree(work / str(count))
        if not result["within_limit"] and not args.keep_going:
            break
    version = subprocess.run(
        [args.chromium, "--version"], capture_output=True, text=True
    )
    report = {
        "command": " ".join(["python", *sys.argv]),
        "what": "seconds until `inspect view` shows a .eval log's sample list, a "
        "sample opened by clicking its row, and one opened by its address "
        "(deep link); limit_samples is the largest count whose list and clicked "
        "sample took at most limit_seconds, every smaller count included",
        "chromium": version.stdout.strip(),
        "machine": machine(),
        "limit_seconds": args.limit_seconds,
        "limit_samples": limit,
        "limit_samples_deep_link": deep_link_limit,
        "results": results,
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"limit: {limit} samples ({deep_link_limit} by deep link); wrote {args.json}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("picture", choices=("report", "sample", "bulk"))
    add("--chromium", help="Chromium binary (default: $CHROMIUM or on PATH)")
    add("--out", type=Path, help="PNG to write (report, sample)")
    add("--width", type=int, help="default 1200 for report, else 1300")
    add("--height", type=int, help="default 1680 for report, else 760")
    add("--sample", default="lucky-answer-gap", help="sample: its id")
    add("--samples", default="10000,100000,200000,500000,1000000")
    add("--limit-seconds", type=float, default=15.0)
    add("--give-up-seconds", type=float, default=120.0)
    add("--keep-going", action="store_true", help="bulk: past a miss")
    add("--images", type=Path, default=IMAGES)
    add("--json", type=Path, default=REPO / "benchmarks/results/viewer.json")
    args = parser.parse_args(argv)
    args.samples = sorted({int(n) for n in args.samples.replace("_", "").split(",")})
    report = args.picture == "report"
    args.width = args.width or (1200 if report else 1300)
    args.height = args.height or (1680 if report else 760)
    default = {"report": "report.png", "sample": "inspect-view.png"}.get(
        args.picture, ""
    )
    args.out = args.out or IMAGES / default
    make = {"report": report_picture, "sample": sample_picture}.get(args.picture)
    try:
        args.chromium = find_chromium(args.chromium)
        with tempfile.TemporaryDirectory(prefix="tracegrade-shots-") as temp:
            if make is None:
                bulk(args, Path(temp))
            else:
                asyncio.run(make(args, Path(temp)))
                print(f"wrote {args.out}")
    except (ScreenshotError, subprocess.TimeoutExpired) as error:
        print(f"screenshots: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
