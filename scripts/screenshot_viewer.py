"""Make the docs' screenshot of a diagnosed sample in `inspect view`.

Runs the offline stage diagnosis task on the packaged fixtures into a
temporary log directory, serves it with `inspect view` on a free localhost
port, opens the Scoring tab of one sample (by default `lucky-answer-gap`,
a correct answer whose required evidence never reached the context),
expands the score's `result` and `record` metadata, and saves
`docs/images/inspect-view.png`. The server is always shut down.

The viewer routes a sample as
`#/logs/<log file>/samples/sample/<id>/<epoch>/<tab>` (`logSamplesUrl` in
the viewer's sources). The page counts as drawn once it shows the sample's
own explanation, read from the log, so a blank or wrong page fails the
script instead of becoming the screenshot.

    python scripts/screenshot_viewer.py [--sample ID] [--chromium PATH] [--out PNG]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

from inspect_ai.log import read_eval_log_sample

from screenshot_report import (
    READY_TIMEOUT,
    REPO,
    HeadlessChromium,
    ScreenshotError,
    find_chromium,
    quiet_environment,
    run_offline_tasks,
)

STAGE_TASK = "tracegrade/stage_diagnosis"
SCORE_NAME = "stage_diagnosis"
# Metadata entries to unfold, outermost first: an entry's children exist
# only once its parent is open.
EXPANDED_KEYS = ("result", "missing", "record", "required", "context")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def inspect_view(log_dir: Path) -> Iterator[str]:
    """Serve `log_dir` with `inspect view` on localhost; yield its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "view",
            "start",
            "--log-dir",
            str(log_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=quiet_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_serving(server, base)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stderr is not None:
            server.stderr.close()


def _wait_until_serving(server: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            message = server.stderr.read().decode() if server.stderr else ""
            raise ScreenshotError(f"inspect view exited at start: {message.strip()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise ScreenshotError(f"inspect view did not answer at {url}")


def sample_url(base: str, log_dir: Path, log_file: str, sample_id: str) -> str:
    local = unquote(urlparse(log_file).path) if "://" in log_file else log_file
    relative = Path(local).resolve().relative_to(log_dir.resolve())
    return (
        f"{base}#/logs/{quote(relative.as_posix())}/samples/sample/"
        f"{quote(sample_id, safe='')}/1/scoring"
    )


def _text_shown(text: str) -> str:
    quoted = json.dumps(text)
    return f"document.body !== null && document.body.innerText.includes({quoted})"


def _metadata_key(name: str) -> str:
    """Script finding the viewer's tree row of metadata entry `name`."""
    return (
        "[...document.querySelectorAll('.record-tree-key')]"
        f".find(key => key.textContent.trim() === {json.dumps(name + ':')})"
    )


async def capture_sample(
    url: str, explanation: str, out: Path, chromium: str, width: int, height: int
) -> None:
    async with HeadlessChromium(chromium, width, height) as browser:
        await browser.open(url)
        await browser.wait_for(_text_shown(explanation), "the sample's explanation")
        for name in EXPANDED_KEYS:
            await browser.wait_for(f"{_metadata_key(name)} !== undefined", name)
            rows = await browser.evaluate(
                "document.querySelectorAll('.record-tree-key').length"
            )
            await browser.evaluate(f"{_metadata_key(name)}.click()")
            # Opened once its children are rendered as rows of their own.
            await browser.wait_for(
                f"document.querySelectorAll('.record-tree-key').length !== {rows}",
                f"metadata entry {name!r} to open",
            )
        await browser.screenshot(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--sample", default="lucky-answer-gap", help="sample id to show"
    )
    parser.add_argument(
        "--chromium", help="Chromium binary (default: $CHROMIUM or on PATH)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "docs" / "images" / "inspect-view.png",
        help="PNG to write",
    )
    parser.add_argument("--width", type=int, default=1300)
    parser.add_argument("--height", type=int, default=760)
    args = parser.parse_args(argv)
    try:
        chromium = find_chromium(args.chromium)
        with tempfile.TemporaryDirectory(prefix="tracegrade-view-") as temp:
            log_dir = Path(temp) / "logs"
            (log_file,) = run_offline_tasks(log_dir, [STAGE_TASK])
            try:
                sample = read_eval_log_sample(log_file, id=args.sample, epoch=1)
            except IndexError:
                raise ScreenshotError(
                    f"no sample {args.sample!r} in {log_file}"
                ) from None
            score = (sample.scores or {}).get(SCORE_NAME)
            if score is None or not score.explanation:
                raise ScreenshotError(
                    f"sample {args.sample!r} has no {SCORE_NAME} explanation"
                )
            with inspect_view(log_dir) as base:
                url = sample_url(base, log_dir, log_file, args.sample)
                asyncio.run(
                    capture_sample(
                        url,
                        score.explanation,
                        args.out,
                        chromium,
                        args.width,
                        args.height,
                    )
                )
    except (ScreenshotError, subprocess.TimeoutExpired) as error:
        print(f"screenshot_viewer: {error}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
