"""Inspect's `.eval` and `.json` logs written in a stream, a sample at a time."""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import textwrap
import time
import zipfile
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Final, Literal

from inspect_ai.log import EvalLog, EvalPlan, EvalSample, EvalSampleReductions, EvalSpec
from inspect_ai.scorer import Score
from isal import isal_zlib
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from .._inspect_internals import (
    MAX_TEXT_LENGTH,
    METADATA_VALUE_LIMIT,
    METADATA_VALUE_REMOVED,
    THIN_TEXT_SCAN,
    THIN_TEXT_WIDTH,
    to_json_safe,
)
from ..outputs import PARTIAL_SUFFIX

SUMMARIES_JSON: Final = "summaries.json"


def sample_member(sample_id: int | str, epoch: int) -> str:
    return f"samples/{sample_id}_epoch_{epoch}.json"


def _no_value(_: Any) -> None:
    return None


def sample_json(data: Any, indent: int | None = None) -> bytes:
    """Inspect's `to_json_safe`, in one pass for data JSON-safe but for scores."""
    try:
        return to_json(data, indent=indent, exclude_none=True, fallback=_no_value)
    except PydanticSerializationError:
        serialised: bytes = to_json_safe(data, indent=indent)
        return serialised


# `EvalSample.summary()`'s rules, mirrored for speed (`_inspect_internals`).
# `EvalSample` fields a summary copies when they are set, in summary order.
_COPIED_BEFORE_ERROR = (
    "model_fallbacks started_at completed_at total_time working_time uuid"
)
_COPIED_AFTER_COUNTS = (
    "turn_count token_limit token_limit_type token_limit_usage message_limit time_limit"
)


def _truncate_text(text: str) -> str:
    if len(text) > MAX_TEXT_LENGTH:
        return text[:MAX_TEXT_LENGTH] + "...\n(content truncated)"
    return text


def _thin_text(text: str) -> str:
    # Text that `textwrap.shorten` would return unchanged, without its cost.
    if len(text) <= THIN_TEXT_WIDTH and " ".join(text.split()) == text:
        return text
    return textwrap.shorten(
        text[:THIN_TEXT_SCAN], width=THIN_TEXT_WIDTH, placeholder="..."
    )


def _thin_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    # When the whole is short enough, each value is too: one serialisation.
    fits = _json_length_within(metadata, METADATA_VALUE_LIMIT)
    return {key: _thin_value(value, fits) for key, value in metadata.items()}


def _thin_value(value: Any, fits: bool) -> Any:
    if isinstance(value, str):
        return _thin_text(value)
    if (
        fits
        or value is None
        or isinstance(value, (int, float))  # bool is an int
        or _json_length_within(value, METADATA_VALUE_LIMIT)
    ):
        return value
    return METADATA_VALUE_REMOVED


def _json_length_within(value: Any, limit: int) -> bool:
    if isinstance(value, (list, dict)) and len(value) > limit:
        return False  # every item takes at least a character
    encoded = sample_json(value, indent=2)
    return len(encoded) <= limit or len(encoded.decode("utf-8")) <= limit


def _utc_iso(value: str) -> str:
    """A timestamp as `UtcDatetimeStr` normalises it (Inspect's summaries do)."""
    # `datetime.isoformat` of a UTC time is normal already.
    if (
        value.endswith("+00:00")
        and value[10:11] == "T"
        and (len(value) == 25 or (len(value) == 32 and value[20:26] != "000000"))
    ):
        return value
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat()


def _thin_score(score: Mapping[str, Any] | Score) -> dict[str, Any]:
    """The score a summary keeps, read field by field: dumping it in JSON
    mode would turn a NaN value (unscored) into null."""
    fields: Mapping[str, Any] = vars(score) if isinstance(score, Score) else score
    thinned: dict[str, Any] = {"value": fields["value"]}
    for key in ("answer", "explanation", "reason"):
        text = fields.get(key)
        if text is not None:
            thinned[key] = _thin_text(text) if isinstance(text, str) else text
    metadata = fields.get("metadata")
    if metadata is not None:
        thinned["metadata"] = _thin_metadata(metadata)
    thinned["history"] = []
    return thinned


def sample_summary(sample: Mapping[str, Any]) -> dict[str, Any]:
    """What `EvalSample.summary()` gives for this sample, serialised; mirrored
    for speed where the input and target are text, as the replay tasks' are."""
    target = sample.get("target", "")
    if not (
        isinstance(sample["input"], str)
        and (isinstance(target, str) or all(isinstance(t, str) for t in target))
        and isinstance(sample.get("metadata") or {}, dict)
    ):
        validated = EvalSample.model_validate(dict(sample)).summary()
        return to_jsonable_python(validated, exclude_none=True, fallback=_no_value)  # type: ignore[no-any-return]
    summary: dict[str, Any] = {
        "id": sample["id"],
        "epoch": sample["epoch"],
        "input": _truncate_text(sample["input"]),
    }
    if (choices := sample.get("choices")) is not None:
        summary["choices"] = choices
    summary["target"] = (
        _truncate_text(target)
        if isinstance(target, str)
        else [_truncate_text(item) for item in target]
    )
    if (description := sample.get("description")) is not None:
        summary["description"] = description
    summary["metadata"] = _thin_metadata(sample.get("metadata") or {})
    if (scores := sample.get("scores")) is not None:
        summary["scores"] = {name: _thin_score(score) for name, score in scores.items()}
    summary["model_usage"] = sample.get("model_usage") or {}
    summary["role_usage"] = sample.get("role_usage") or {}
    for key in _COPIED_BEFORE_ERROR.split():
        if (value := sample.get(key)) is not None:
            summary[key] = _utc_iso(value) if key.endswith("ed_at") else value
    if (error := sample.get("error")) is not None:
        summary["error"] = error["message"]
    if (limit := sample.get("limit")) is not None:
        summary["limit"] = f"{limit['type']}"
        if limit.get("reason") is not None:
            summary["limit_reason"] = limit["reason"]
    if (retries := sample.get("error_retries")) is not None:
        summary["retries"] = len(retries)
    summary["completed"] = True
    summary["message_count"] = len(sample.get("messages") or [])
    for key in _COPIED_AFTER_COUNTS.split():
        if (value := sample.get(key)) is not None:
            summary[key] = value
    return summary


# On these small JSON members about as small as Inspect's zstd level 3.
DEFLATE_LEVEL: Final = 1


@contextlib.contextmanager
def _deflating_with_isal() -> Iterator[None]:
    """Within the block, `zipfile` deflates with ISA-L, faster than zlib and
    read alike, through its private `_get_compressor`."""
    stdlib = zipfile._get_compressor  # type: ignore[attr-defined]

    def compressor(compress_type: int, compresslevel: int | None = None) -> Any:
        # The archive deflates every member.
        return isal_zlib.compressobj(DEFLATE_LEVEL, isal_zlib.DEFLATED, -15)

    zipfile._get_compressor = compressor  # type: ignore[attr-defined]
    try:
        yield
    finally:
        zipfile._get_compressor = stdlib  # type: ignore[attr-defined]


@dataclass(frozen=True)
class StreamedReductions:
    """One scorer's reductions whose sample scores are already serialised."""

    head: EvalSampleReductions
    samples_json: Iterable[bytes]


class EvalArchive:
    """One `.eval` log as Inspect's `EvalRecorder` lays one out, written only
    as `<name>.partial` (its caller publishes it; `abort` removes it)."""

    def __init__(
        self,
        location: Path,
        eval_spec: EvalSpec,
        plan: EvalPlan,
        *,
        journal_every: int = 1000,
    ) -> None:
        self.partial = location.with_name(location.name + PARTIAL_SUFFIX)
        self._journal_every = journal_every
        self._zip: zipfile.ZipFile | None = None
        self._summaries: IO[bytes] | None = None
        # "x": never reuse another writer's partial file; "+": `resume`
        # reads the directory back.
        self._file = open(self.partial, "x+b")  # noqa: SIM115
        self._journal: list[bytes] = []
        self._journal_files = 0
        self.samples_written = 0
        try:
            self._zip = self._open_zip("w")
            # Until `complete` copies them in: zipfile writes a member at a time.
            self._summaries = tempfile.TemporaryFile(dir=location.parent)  # noqa: SIM115
            self._summaries.write(b"[")
            # The header readers read until the log has its own.
            version = EvalLog.model_fields["version"].default
            start = {"version": version, "eval": eval_spec, "plan": plan}
            self._add("_journal/start.json", to_json_safe(start, indent=None))
        except BaseException:
            self.abort()
            raise

    def _open_zip(self, mode: Literal["w", "a"]) -> zipfile.ZipFile:
        return zipfile.ZipFile(
            self._file,
            mode,
            compression=zipfile.ZIP_DEFLATED,
            compresslevel=DEFLATE_LEVEL,
        )

    def add_sample(self, sample: bytes, summary: Mapping[str, Any]) -> None:
        summary_json = sample_json(summary)
        self._add(sample_member(summary["id"], summary["epoch"]), sample)
        assert self._summaries is not None
        self._summaries.write(
            b"," + summary_json if self.samples_written else summary_json
        )
        self.samples_written += 1
        self._journal.append(summary_json)
        if len(self._journal) >= self._journal_every:
            self._flush_journal()

    def _flush_journal(self) -> None:
        if self._journal:
            self._journal_files += 1
            chunk = b"[" + b",".join(self._journal) + b"]"
            self._journal.clear()
            self._add(f"_journal/summaries/{self._journal_files}.json", chunk)

    def _add(self, name: str, data: bytes) -> None:
        """What `ZipFile.writestr` writes, in one write: zipfile's own seeks
        back to rewrite the header, which costs more than deflating a sample."""
        archive = self._zip
        assert archive is not None and archive.fp is not None
        info = zipfile.ZipInfo(name, time.localtime()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o600 << 16  # as writestr sets it
        info.file_size = len(data)
        info.CRC = zlib.crc32(data)
        # A compressor, as zipfile's: `compress` can give other bytes.
        compressor = isal_zlib.compressobj(DEFLATE_LEVEL, isal_zlib.DEFLATED, -15)
        deflated = compressor.compress(data) + compressor.flush()
        info.compress_size = len(deflated)
        # zipfile leaves its file at the directory's start between members.
        info.header_offset = archive.start_dir
        member = info.FileHeader() + deflated
        archive.fp.write(member)
        archive.start_dir += len(member)
        archive.filelist.append(info)
        archive.NameToInfo[name] = info
        archive._didModify = True  # type: ignore[attr-defined]

    def _add_streamed(self, name: str, chunks: Iterable[bytes]) -> None:
        """A member too large to hold, streamed with ZIP64 sizes, as Inspect's."""
        assert self._zip is not None
        with (
            _deflating_with_isal(),
            self._zip.open(name, "w", force_zip64=True) as member,
        ):
            for chunk in chunks:
                member.write(chunk)

    def suspend(self) -> None:
        """Write the journal and directory, letting go of zipfile's `ZipInfo`
        per member while other parts of the run are written."""
        assert self._zip is not None
        self._flush_journal()
        self._zip.close()
        self._file.flush()
        self._zip = None

    def resume(self) -> None:
        # The directory is read back; the next member overwrites it.
        self._zip = self._open_zip("a")

    def complete(self, header: EvalLog, reductions: StreamedReductions | None) -> None:
        if self._zip is None:
            self.resume()
        summaries = self._summaries
        assert self._zip is not None and summaries is not None
        self._flush_journal()
        summaries.write(b"]")
        summaries.seek(0)
        self._add_streamed(
            SUMMARIES_JSON, iter(functools.partial(summaries.read, 1 << 20), b"")
        )
        summaries.close()
        self._add_streamed("reductions.json", _reductions_json(reductions))
        self._add("header.json", to_json_safe(_header(header), indent=None))
        self._zip.close()
        # Its `ZipInfo`s too: a run's parts wait, complete, to be published.
        self._zip = None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()

    def abort(self) -> None:
        """Remove the partial file; safe to call again, raising nothing on a
        full disk or out of memory. The file is closed first: zipfile then
        writes no directory of what goes."""
        closing = [self._file.close]
        if self._zip is not None:
            closing.append(self._zip.close)
        if self._summaries is not None:
            closing.append(self._summaries.close)
        for close in closing:
            with contextlib.suppress(OSError, ValueError, MemoryError):
                close()
        if self._zip is not None:
            # Else a close refused mid-member is tried again when collected.
            self._zip.fp = None
        self.partial.unlink(missing_ok=True)


def _reductions_json(reductions: StreamedReductions | None) -> Iterator[bytes]:
    """`reductions.json`, a reduced score at a time, not a copy held whole."""
    yield b"["
    if reductions is not None:
        yield _reductions_head(reductions.head)
        yield from reductions.samples_json
        yield b"]}"
    yield b"]"


def _reductions_head(reductions: EvalSampleReductions) -> bytes:
    """A reduction serialised up to its samples' opening bracket."""
    head = to_json_safe(reductions.model_copy(update={"samples": []}), indent=None)
    if not head.endswith(b"[]}"):
        raise RuntimeError("Inspect's reductions did not serialise as expected")
    return head[:-2]


def _header(log: EvalLog) -> EvalLog:
    """The log as `EvalRecorder.log_finish` rebuilds it for `header.json`."""
    return EvalLog(
        version=log.version,
        invalidated=log.invalidated,
        log_updates=log.log_updates,
        config_updates=log.config_updates or None,
        eval=log.eval,
        plan=log.plan,
        results=log.results,
        stats=log.stats,
        status=log.status,
        error=log.error,
    )


class JsonLogWriter:
    """A `.json` log: samples spooled as they come, the file made at the end."""

    def __init__(self, location: Path) -> None:
        self.partial = location.with_name(location.name + PARTIAL_SUFFIX)
        # Unnamed, so it disappears with the process whatever happens.
        self._spool: IO[bytes] = tempfile.TemporaryFile(dir=location.parent)  # noqa: SIM115
        self._ids: list[str] = []
        self._offsets = array("Q")
        self._lengths = array("Q")
        self.spooled = 0

    def add(self, sample_id: str, sample: bytes) -> None:
        self._spool.write(sample)
        self._ids.append(sample_id)
        self._offsets.append(self.spooled)
        self._lengths.append(len(sample))
        self.spooled += len(sample)

    def suspend(self) -> None:
        pass  # a spool file and two arrays are all it holds

    resume = suspend

    def complete(self, header: EvalLog, reductions: StreamedReductions | None) -> None:
        head = to_json_safe(header).rstrip()
        if not head.endswith(b"}"):
            raise RuntimeError("Inspect's log header did not serialise to an object")
        spool = self._spool
        spool.flush()
        # Inspect's writer sorts samples by (epoch, id); one epoch here.
        order = sorted(range(len(self._ids)), key=self._ids.__getitem__)
        self._ids = []
        # Its owner's `abort` removes what a failure leaves.
        with spool, open(self.partial, "xb") as out:
            out.write(head[:-1].rstrip())
            out.write(b',\n  "samples": [')
            separator = b"\n"
            for position in order:
                out.write(separator)
                spool.seek(self._offsets[position])
                out.write(spool.read(self._lengths[position]))
                separator = b",\n"
            out.write(b"\n  ]")
            if reductions is not None:
                out.write(b',\n  "reductions": ')
                out.writelines(_reductions_json(reductions))
            out.write(b"\n}\n")
            out.flush()
            os.fsync(out.fileno())

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._spool.close()
        self.partial.unlink(missing_ok=True)
