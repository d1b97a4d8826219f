"""Make the docs' screenshot of `tracegrade report --html`.

Runs the two offline tasks on the packaged fixtures into a temporary log
directory, writes the HTML report from those logs with the `tracegrade`
console script, renders it in headless Chromium and saves
`docs/images/report.png`.

Chromium is driven over the DevTools protocol rather than with
`--screenshot`, so the picture is taken once plotly has drawn every chart,
not after a guessed delay. `scripts/screenshot_viewer.py` uses the same
helpers.

    python scripts/screenshot_report.py [--chromium PATH] [--out PNG]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
from inspect_ai.log import list_eval_logs, read_eval_log

REPO = Path(__file__).resolve().parents[1]
OFFLINE_TASKS = ("tracegrade/stage_diagnosis", "tracegrade/ordered_extraction_recorded")
CHROMIUM_NAMES = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
)
# Everything that would reach the network or a user profile stays off.
CHROMIUM_FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
READY_TIMEOUT = 60.0


class ScreenshotError(RuntimeError):
    """A step of making a screenshot failed; the message says which."""


def quiet_environment() -> dict[str, str]:
    """This environment without INSPECT_* settings (a default model, a log
    dir) that would change what the offline tasks do."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("INSPECT_")
    }


def run_offline_tasks(log_dir: Path, tasks: Sequence[str] = OFFLINE_TASKS) -> list[str]:
    """Run `tasks` with `inspect eval` into `log_dir`; return their log files.

    `inspect eval` exits 0 even when an eval fails, so each log's status is
    checked instead of the exit code.
    """
    for task in tasks:
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "inspect_ai",
                "eval",
                task,
                # The packaged fixtures, which docs/images/report.png shows.
                *("-T", "dataset=edge-cases"),
                "--log-dir",
                str(log_dir),
                "--display",
                "none",
            ],
            env=quiet_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if completed.stderr.strip():
            print(completed.stderr.strip(), file=sys.stderr)
    logs: dict[str, str] = {}
    for info in list_eval_logs(str(log_dir)):
        header = read_eval_log(info.name, header_only=True)
        if header.status != "success":
            raise ScreenshotError(
                f"{header.eval.task} ended with status {header.status!r}: "
                f"{header.error}"
            )
        logs[header.eval.task] = info.name
    if sorted(logs) != sorted(tasks):
        raise ScreenshotError(f"expected logs of {list(tasks)}, found {sorted(logs)}")
    return [logs[task] for task in tasks]


async def stop_process_group(process: subprocess.Popen[Any]) -> None:
    """Stop `process` and every process of its group, which it leads."""
    group = process.pid
    for stop in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, stop)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            process.poll()
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            await asyncio.sleep(0.1)
    process.wait()


def find_chromium(given: str | None) -> str:
    candidates = [given] if given else [os.environ.get("CHROMIUM"), *CHROMIUM_NAMES]
    for candidate in candidates:
        if candidate and (found := shutil.which(candidate)):
            return found
    raise ScreenshotError(
        f"no Chromium found (tried {', '.join(c for c in candidates if c)}); "
        "pass --chromium PATH or set CHROMIUM"
    )


class HeadlessChromium:
    """One headless Chromium page, driven over the DevTools protocol."""

    def __init__(self, binary: str, width: int, height: int) -> None:
        self.binary = binary
        self.width = width
        self.height = height
        self._profile = tempfile.TemporaryDirectory(prefix="tracegrade-chromium-")
        self._process: subprocess.Popen[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._next_id = 0

    async def __aenter__(self) -> HeadlessChromium:
        profile = Path(self._profile.name)
        flags = [
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            f"--window-size={self.width},{self.height}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Chromium refuses to run as root inside its sandbox.
            flags.append("--no-sandbox")
        # A session of its own: Chromium's helpers (zygote, renderers) are
        # then stopped with it, and none still writes to the profile when it
        # is deleted.
        self._process = subprocess.Popen(
            [self.binary, *flags, "about:blank"],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            port = await self._devtools_port(profile / "DevToolsActivePort")
            self._session = aiohttp.ClientSession()
            async with self._session.get(
                f"http://127.0.0.1:{port}/json/list"
            ) as response:
                targets = await response.json()
            page = next(target for target in targets if target["type"] == "page")
            self._socket = await self._session.ws_connect(
                page["webSocketDebuggerUrl"], max_msg_size=0
            )
            await self.call(
                "Emulation.setDeviceMetricsOverride",
                width=self.width,
                height=self.height,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _devtools_port(self, port_file: Path) -> str:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise ScreenshotError(
                    f"{self.binary} exited with {self._process.returncode} at start"
                )
            # Chromium writes the port, then a second line: wait for both.
            if port_file.exists() and len(lines := port_file.read_text().split()) >= 2:
                return lines[0]
            await asyncio.sleep(0.1)
        raise ScreenshotError(f"{self.binary} did not open its DevTools port")

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._session is not None:
            await self._session.close()
        if self._process is not None:
            await stop_process_group(self._process)
        self._profile.cleanup()

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._socket is not None
        self._next_id += 1
        call_id = self._next_id
        await self._socket.send_json(
            {"id": call_id, "method": method, "params": params}
        )
        while True:
            # Events arrive on the same socket; only our reply matters.
            message = await self._socket.receive_json()
            if message.get("id") == call_id:
                if "error" in message:
                    raise ScreenshotError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    async def evaluate(self, expression: str) -> Any:
        reply = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True
        )
        if "exceptionDetails" in reply:
            raise ScreenshotError(f"page script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def open(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def wait_for(self, expression: str, what: str) -> None:
        """Poll until `expression` is truthy in the page, or fail saying `what`."""
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


# True once every plotly chart on the page has drawn its bars. The page
# must have finished loading first: while the parser is still on the
# later charts, the ones drawn so far would pass on their own.
CHARTS_DRAWN = """(() => {
  const charts = document.querySelectorAll('.js-plotly-plot');
  return document.readyState === 'complete' && charts.length > 0 &&
    [...charts].every(chart => chart.querySelector('.barlayer .point') !== null);
})()"""


def write_report(log_dir: Path, html: Path) -> None:
    console_script = Path(sys.executable).with_name("tracegrade")
    if not console_script.exists():
        raise ScreenshotError(f"no tracegrade console script beside {sys.executable}")
    completed = subprocess.run(
        [str(console_script), "report", str(log_dir), "--html", str(html)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if completed.returncode != 0:
        raise ScreenshotError(f"tracegrade report failed: {completed.stderr.strip()}")


async def capture_report(
    html: Path, out: Path, chromium: str, width: int, height: int
) -> None:
    async with HeadlessChromium(chromium, width, height) as browser:
        await browser.open(html.resolve().as_uri())
        await browser.wait_for(CHARTS_DRAWN, "the plotly charts to draw")
        await browser.screenshot(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--chromium", help="Chromium binary (default: $CHROMIUM or on PATH)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "docs" / "images" / "report.png",
        help="PNG to write",
    )
    parser.add_argument("--width", type=int, default=1200)
    # Tall enough for the three rows of charts and the first table.
    parser.add_argument("--height", type=int, default=1680)
    args = parser.parse_args(argv)
    try:
        chromium = find_chromium(args.chromium)
        with tempfile.TemporaryDirectory(prefix="tracegrade-report-") as temp:
            log_dir = Path(temp) / "logs"
            run_offline_tasks(log_dir)
            html = Path(temp) / "report.html"
            write_report(log_dir, html)
            asyncio.run(
                capture_report(html, args.out, chromium, args.width, args.height)
            )
    except (ScreenshotError, subprocess.TimeoutExpired) as error:
        print(f"screenshot_report: {error}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
