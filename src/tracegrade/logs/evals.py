"""Logs grouped into evals: a retry's failed log or a split run's parts count once."""

from __future__ import annotations

import errno
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NamedTuple

from inspect_ai.log import EvalLog, EvalSpec

from .samples import SampleRead, log_samples
from .scores import LogError, LogPart, LogRead, log_part, read_header

LOG_SUFFIXES: Final = (".eval", ".json")
LISTED_PARTS: Final = 10
SampleReader = Callable[[str], Iterable[SampleRead]]
_PART_SUFFIX = re.compile(r"-part\d+of\d+$")
_LOG_NAME_START = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}")


def find_logs(paths: Iterable[str | Path]) -> list[str]:
    """The logs at or under `paths`, as `inspect view` lists them, else `LogError`."""
    found: list[str] = []
    for path in map(Path, paths):
        if path.is_dir():
            if not (listed := logs_under(path)):
                suffixes = ", ".join(LOG_SUFFIXES)
                raise LogError(f"no Inspect logs ({suffixes}) under {str(path)!r}")
            found += listed
        elif path.suffix in LOG_SUFFIXES:
            found.append(str(path))
        elif path.suffix == ".jsonl":
            raise LogError(
                f"{str(path)!r} is JSON Lines, not an Inspect log (.eval or .json); "
                "if it holds recorded runs, score it first (`tracegrade score TASK "
                f"{path}`, or `inspect eval tracegrade/TASK -T dataset={path}`) and "
                "give the logs that writes"
            )
        else:
            raise LogError(
                f"{str(path)!r} is not an Inspect log: a log ends in .eval or .json"
            )
    return list(dict.fromkeys(found))


def logs_under(directory: Path) -> list[str]:
    """The logs under `directory`, as absolute paths (as Inspect lists them)."""
    try:
        files = files_under(directory)
        return sorted(os.path.abspath(f) for f in files if is_log_name(f.name))
    except OSError as error:
        raise LogError(f"cannot list {str(directory)!r} ({error})") from None


def is_log_name(name: str) -> bool:
    """Inspect's `is_log_file`: any `.eval`, and a `.json` named from its start time."""
    return name.endswith(".eval") or (
        name.endswith(".json") and _LOG_NAME_START.match(name) is not None
    )


def files_under(
    directory: Path, skip: Callable[[str], bool] = lambda name: False
) -> Iterator[Path]:
    """The files under `directory` not to `skip`, in order, each real file once."""
    seen: set[str] = set()
    for folder, folders, names in os.walk(directory, onerror=_raise, followlinks=True):
        if (real := os.path.realpath(folder)) in seen:
            folders.clear()
            continue
        seen.add(real)
        folders[:] = sorted(name for name in folders if not skip(name))
        for name in sorted(name for name in names if not skip(name)):
            path = os.path.join(folder, name)
            try:
                os.stat(path)  # a loop of links raises, saying so
            except FileNotFoundError:
                message = "a symbolic link to nothing"
                raise FileNotFoundError(errno.ENOENT, message, path) from None
            if (real := os.path.realpath(path)) not in seen:
                seen.add(real)
                yield Path(path)


def _raise(error: OSError) -> None:
    raise error


class LogFile(NamedTuple):
    path: str
    header: EvalLog
    mtime: float
    part: LogPart | None


@dataclass(frozen=True)
class Superseded:
    """A log not counted for the newer log `by`; not a `retry`: the same `eval_id`."""

    path: str
    by: str
    retry: bool


@dataclass(frozen=True)
class EvalRun:
    """One eval: its log, or a split run's parts in order."""

    key: str
    logs: tuple[LogFile, ...]

    @property
    def spec(self) -> EvalSpec:
        return self.logs[0].header.eval

    task = property(lambda self: self.spec.task)
    model = property(lambda self: self.spec.model)
    created = property(lambda self: self.spec.created)
    epochs = property(lambda self: self.spec.config.epochs or 1)
    epochs_reducer = property(lambda self: self.spec.config.epochs_reducer)

    @property
    def missing_count(self) -> int:
        part = self.logs[0].part
        return 0 if part is None else part.count - len(self.logs)

    @property
    def missing_parts(self) -> list[int]:
        """The first `LISTED_PARTS` parts not found: absurdly many cost nothing."""
        if (part := self.logs[0].part) is None:
            return []
        found = {log.part.index for log in self.logs if log.part is not None}
        missing = (index for index in range(1, part.count + 1) if index not in found)
        return list(itertools.islice(missing, LISTED_PARTS))

    @property
    def status(self) -> str:
        """The first status that is not `success`; `incomplete` for a missing part."""
        for log in self.logs:
            if log.header.status != "success":
                return log.header.status
        return "incomplete" if self.missing_count else "success"

    complete = property(lambda self: self.status == "success")

    @property
    def name(self) -> str:
        """The log's file name; for a split run, without part number, and the count."""
        first, part = Path(self.logs[0].path), self.logs[0].part
        if part is None:
            return first.name
        return f"{_PART_SUFFIX.sub('', first.stem)}{first.suffix} ({part.count} parts)"

    def reads(self, samples: SampleReader = log_samples) -> Iterator[LogRead]:
        return (LogRead(log.path, log.header, samples(log.path)) for log in self.logs)


@dataclass(frozen=True)
class Evals:
    """The evals found, in the order of their first log, and the logs superseded."""

    runs: list[EvalRun]
    superseded: list[Superseded]


def read_evals(paths: Iterable[str | Path]) -> Evals:
    """The evals of the logs at or under `paths`, the newest log of each kept."""
    groups: dict[str, dict[int, list[LogFile]]] = {}
    for path in find_logs(paths):
        header = read_header(path)
        spec, part = header.eval, log_part(header.eval.metadata)
        try:
            file = LogFile(path, header, os.stat(path).st_mtime, part)
        except OSError as error:
            raise LogError(f"cannot read {path!r} ({error.strerror})") from error
        # Both are Inspect's 22-letter ids: prefixed, they cannot meet.
        key = f"run:{spec.run_id}" if part is not None else f"task:{spec.task_id}"
        index = 0 if part is None else part.index
        groups.setdefault(key, {}).setdefault(index, []).append(file)
    runs: list[EvalRun] = []
    superseded: list[Superseded] = []
    for key, by_part in groups.items():
        kept = []
        for index in sorted(by_part):
            # `created` has whole seconds: within one, the newer file wins.
            newest, *older = sorted(by_part[index], key=_age, reverse=True)
            kept.append(newest)
            eval_id = newest.header.eval.eval_id
            superseded += [
                Superseded(log.path, newest.path, log.header.eval.eval_id != eval_id)
                for log in older
            ]
        runs.append(EvalRun(key, tuple(kept)))
    return Evals(runs, sorted(superseded, key=lambda s: s.path))


def _age(file: LogFile) -> tuple[str, float, str]:
    return file.header.eval.created, file.mtime, file.path


def superseded_note(superseded: Sequence[Superseded]) -> str | None:
    """ "2 logs superseded by their retry, not counted", or None."""
    retries = sum(s.retry for s in superseded)
    copies = len(superseded) - retries
    their = "its" if retries == 1 else "their"
    parts = [
        f"{count} log{'' if count == 1 else 's'} superseded by {by}"
        for count, by in ((retries, f"{their} retry"),
                          (copies, "a newer copy of the same eval"))
        if count
    ]  # fmt: skip
    return "; ".join(parts) + ", not counted" if parts else None


def missing_parts_text(listed: Sequence[int], count: int) -> str:
    """ "part 2", "parts 2, 3, 5", or "1,000 parts (2, 3, ... and 990 more)"."""
    shown = ", ".join(f"{index:,}" for index in listed)
    if count == 1:
        return f"part {shown}"
    if count <= len(listed):
        return f"parts {shown}"
    return f"{count:,} parts ({shown} and {count - len(listed):,} more)"


def unused_reducer(name: str, reducers: Sequence[str] | None) -> str | None:
    """Why eval `name`'s `--epochs-reducer` leaves its stage figures alone."""
    if not reducers:
        return None
    return (
        f"{name} asked for the epochs reducer {', '.join(reducers)}, which "
        "stage diagnosis does not use: a stage is a category, so its figures "
        "count every epoch (stage_modes gives each sample's most frequent "
        "stage)."
    )
