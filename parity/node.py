"""A client for the Node harness: the original evaluators, answering from Python.

One `NodeEvaluator` is one long-lived `node parity/harness.mjs` process, so
ten thousand hypothesis examples cost ten thousand pipe round trips, not ten
thousand Node start-ups. Requests carry only an id and the input, never the
expected answer. Answers are turned into canonical JSON text right away,
because parity compares text: parsed objects would let `true` equal `1`.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final

from tracegrade.core import canonical_json

from .contract import EVALUATORS, EvaluatorName

MINIMUM_NODE_MAJOR: Final = 18
PARITY_DIR: Final = Path(__file__).resolve().parent
HARNESS: Final = PARITY_DIR / "harness.mjs"

_VERSION = re.compile(r"v(\d+)\.(\d+)\.(\d+)")


class NodeUnavailable(RuntimeError):
    """`node` is missing, or too old to run the harness."""


class HarnessError(RuntimeError):
    """The harness died, or answered something other than the next request."""


class InputNotJSON(ValueError):
    """An input that has no JSON text, so Node could never be sent it."""

    def __init__(self, value: Any, problem: str) -> None:
        self.value = value
        super().__init__(f"input is not JSON ({problem}): {value!r:.120}")


@dataclass(frozen=True)
class NodeOutcome:
    """What the original `evaluate` did with one input.

    Exactly one is set: `result_json`, the canonical JSON of what it
    returned, or `threw`, `String(error)` of what it threw.
    """

    result_json: str | None
    threw: str | None

    def __post_init__(self) -> None:
        if (self.result_json is None) == (self.threw is None):
            raise ValueError(
                f"a NodeOutcome is a result or a throw, got {self.result_json!r} "
                f"and {self.threw!r}"
            )


def original_script(evaluator: EvaluatorName) -> Path:
    """The original evaluator script, extracted verbatim from its document."""
    if evaluator not in EVALUATORS:
        raise ValueError(
            f"unknown evaluator {evaluator!r}, expected one of {EVALUATORS}"
        )
    return PARITY_DIR / "reference" / f"{evaluator}.mjs"


def node_version(node: str = "node") -> tuple[int, int, int]:
    """The version of `node`; raises `NodeUnavailable` if too old or absent."""
    executable = shutil.which(node)
    if executable is None:
        raise NodeUnavailable(
            f"{node!r} was not found on PATH; the parity check runs the original "
            f"evaluators with Node.js {MINIMUM_NODE_MAJOR} or newer"
        )
    try:
        completed = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        raise NodeUnavailable(f"{executable} --version failed: {error}") from error
    found = _VERSION.match(completed.stdout.strip())
    if found is None:
        raise NodeUnavailable(
            f"{executable} --version printed {completed.stdout.strip()!r}, "
            "not a Node.js version"
        )
    major, minor, patch = (int(part) for part in found.groups())
    if major < MINIMUM_NODE_MAJOR:
        raise NodeUnavailable(
            f"{executable} is Node.js {found.group(0)}; the parity check needs "
            f"{MINIMUM_NODE_MAJOR} or newer"
        )
    return major, minor, patch


def _request_line(request_id: int, record: Any) -> bytes:
    # ASCII escapes carry lone surrogates, which UTF-8 cannot.
    try:
        text = canonical_json({"id": request_id, "input": record})
    except (TypeError, ValueError) as error:
        raise InputNotJSON(record, str(error)) from error
    return text.encode("ascii") + b"\n"


class NodeEvaluator:
    """One original evaluator in one Node process; use it as a context manager.

    `evaluate` sends one input and waits for its answer (for hypothesis);
    `evaluate_many` streams a whole fixture file through at once.
    """

    def __init__(self, evaluator: EvaluatorName, *, node: str = "node") -> None:
        self.evaluator = evaluator
        self.script = original_script(evaluator)
        self._node = node
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: list[str] = []
        self._stderr_reader: threading.Thread | None = None
        self._next_id = 0
        self.self_check: dict[str, Any] = {}

    def __enter__(self) -> NodeEvaluator:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close(check=kind is None)

    @property
    def pid(self) -> int | None:
        """The harness process id while it runs: one process serves every call."""
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        """Start the harness and wait until the original has checked itself."""
        if self._process is not None:
            raise HarnessError(f"the {self.evaluator} harness is already running")
        node_version(self._node)
        executable = shutil.which(self._node) or self._node
        self._process = subprocess.Popen(
            [executable, str(HARNESS), str(self.script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.self_check = self._await_self_check()
        self._stderr_reader = threading.Thread(
            target=self._drain_stderr, name=f"{self.evaluator}-stderr", daemon=True
        )
        self._stderr_reader.start()

    def _await_self_check(self) -> dict[str, Any]:
        # The original's assert loop runs on load and prints one JSON line;
        # anything before it (a warning) is kept for the error message.
        stderr = self._pipes()[2]
        while line := stderr.readline():
            text = line.decode("utf-8", "replace")
            self._stderr.append(text)
            try:
                printed = json.loads(text)
            except ValueError:
                continue
            if isinstance(printed, dict) and "checked" in printed:
                return printed
        raise self._died("before its self-check line")

    def _drain_stderr(self) -> None:
        stderr = self._pipes()[2]
        for line in stderr:
            self._stderr.append(line.decode("utf-8", "replace"))

    def _pipes(self) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise HarnessError(f"the {self.evaluator} harness is not running")
        assert process.stderr is not None
        return process.stdin, process.stdout, process.stderr

    def _died(self, when: str) -> HarnessError:
        process = self._process
        code = None if process is None else process.wait()
        if self._stderr_reader is not None:
            self._stderr_reader.join()
        stderr = "".join(self._stderr).strip() or "(nothing on stderr)"
        return HarnessError(
            f"the {self.evaluator} harness ({self.script.name}) exited with "
            f"code {code} {when}:\n{stderr}"
        )

    def evaluate(self, record: Any) -> NodeOutcome:
        """Send one input and wait for the original's answer."""
        return self.evaluate_many([record])[0]

    def evaluate_many(self, records: Sequence[Any]) -> list[NodeOutcome]:
        """Send every input, then read every answer, in order.

        A writer thread feeds stdin while this thread reads stdout; writing
        everything first could fill both pipes and deadlock.
        """
        first_id = self._next_id
        lines = [
            _request_line(first_id + n, record) for n, record in enumerate(records)
        ]
        self._next_id += len(lines)
        stdin, stdout, _ = self._pipes()
        if len(lines) == 1:
            self._send(stdin, lines)
            return [self._receive(stdout, first_id)]

        failures: list[BaseException] = []
        writer = threading.Thread(
            target=self._send_catching, args=(stdin, lines, failures), daemon=True
        )
        writer.start()
        try:
            return [self._receive(stdout, first_id + n) for n in range(len(lines))]
        finally:
            writer.join()
            if failures:
                raise self._died("while reading requests") from failures[0]

    def _send(self, stdin: IO[bytes], lines: Sequence[bytes]) -> None:
        try:
            stdin.writelines(lines)
            stdin.flush()
        except BrokenPipeError as error:
            raise self._died("while reading requests") from error

    @staticmethod
    def _send_catching(
        stdin: IO[bytes], lines: Sequence[bytes], failures: list[BaseException]
    ) -> None:
        try:
            stdin.writelines(lines)
            stdin.flush()
        except OSError as error:
            failures.append(error)

    def _receive(self, stdout: IO[bytes], request_id: int) -> NodeOutcome:
        line = stdout.readline()
        if not line:
            raise self._died(f"before answering request {request_id}")
        try:
            reply = json.loads(line)
        except ValueError as error:
            raise HarnessError(
                f"the {self.evaluator} harness answered request {request_id} "
                f"with a line that is not JSON: {line!r:.200}"
            ) from error
        # `type(...) is int`: in Python `true == 1`, and the ids must match.
        answered_id = reply.get("id") if isinstance(reply, dict) else None
        if type(answered_id) is not int or answered_id != request_id:
            raise HarnessError(
                f"the {self.evaluator} harness answered out of step: expected "
                f"the answer to request {request_id}, got {line!r:.200}"
            )
        if set(reply) == {"id", "result"}:
            return NodeOutcome(result_json=canonical_json(reply["result"]), threw=None)
        if set(reply) == {"id", "threw"} and isinstance(reply["threw"], str):
            return NodeOutcome(result_json=None, threw=reply["threw"])
        raise HarnessError(
            f"the {self.evaluator} harness answered request {request_id} with "
            f"neither a result nor a throw: {line!r:.200}"
        )

    def close(self, *, check: bool = True) -> None:
        """End the harness; with `check`, complain if it did not end cleanly."""
        process = self._process
        if process is None:
            return
        self._process = None
        if process.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        if self._stderr_reader is not None:
            self._stderr_reader.join()
        if process.stdout is not None:
            process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()
        if check and code != 0:
            stderr = "".join(self._stderr).strip()
            raise HarnessError(
                f"the {self.evaluator} harness exited with code {code}:\n{stderr}"
            )
