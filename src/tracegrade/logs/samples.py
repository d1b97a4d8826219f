"""A log's samples one at a time, holding only what the report reads.

`read_eval_log` validates every sample as a pydantic `EvalSample` and keeps
the whole log in memory: on a log of 100,000 samples `tracegrade report`
took 21-31 s and 1.27 GB. The report needs four things of a sample: its id
and epoch (to name it in an error), its scores' values and metadata, and
whether it errored; `tracegrade compare` also reads each score's
explanation, to show why a run changed. So each sample is parsed as plain
JSON, those are taken, and the rest is dropped before the next sample is
read. Inspect's
public per-sample readers (`read_eval_log_samples`) validate an
`EvalSample` each, which alone costs several times the budget, and its
sample summaries drop metadata values over 1 KB, such as a long list of
missing IDs.

`.eval` logs are ZIP archives (`samples/{id}_epoch_{n}.json`, zstd as
method 93, or deflate in older logs). They are read here with `struct`,
not `zipfile`: `ZipFile` keeps an object per member (half a KB each), and
opens zstd members only through the patch Inspect installs. The central
directory is read a chunk at a time into 40 bytes per sample member
(where it lies, how it is compressed, a hash of its name to find a sample
logged twice, of which Inspect reads the last); then the samples are read
in archive order, each dropped before the next. What stays in memory is
those 40 bytes a sample (3 MB for a part of 75,000) and the counters.
A member too large to parse whole (`STREAM_OVER` bytes) is parsed as a
stream with ijson, keeping only the fields read here, as Inspect's
`exclude_fields` does (or whole, if it holds a NaN, which ijson refuses).

`.json` logs are one JSON object: its values are decoded one at a time
with the standard library, the samples among them, each dropped before
the next (`_JsonText`); what follows the samples is not read.

A sample still in the old `score` shape (one unnamed score) is validated
as an `EvalSample`, which migrates it, so it reads as Inspect reads it.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
import zlib
from array import array
from collections.abc import Callable, Iterator
from typing import IO, Any, Final, NamedTuple, cast

import ijson  # type: ignore[import-untyped]
import zstandard
from inspect_ai.log import EvalLog, EvalSample
from pydantic_core import from_json

SAMPLES_DIR: Final = b"samples/"
HEADER_MEMBER: Final = b"header.json"
# Members above this many bytes of JSON are parsed as a stream.
STREAM_OVER: Final = 16 * 1024 * 1024
# The fields of a sample the report reads ("score" for old logs).
READ_FIELDS: Final = frozenset({"id", "epoch", "scores", "score", "error"})

_STORED, _DEFLATED, _ZSTD = 0, 8, 93
_END = struct.Struct("<4s4H2LH")
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_DIRECTORY_ENTRY = struct.Struct("<4s4B4HL2L5H2L")
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_ZIP64_EXTRA = 0x0001
_MAX_COMMENT = 0xFFFF
_CHUNK = 1 << 20


class UnreadableLog(ValueError):
    """The log, or one of its samples, cannot be read; says why."""


class ScoreRead(NamedTuple):
    """A score's value, metadata and explanation, as logged."""

    value: Any
    metadata: Any
    explanation: str | None = None


class SampleRead(NamedTuple):
    """What the report reads of one sample."""

    id: int | str
    epoch: int
    scores: dict[str, ScoreRead]
    errored: bool


def log_samples(path: str) -> Iterator[SampleRead]:
    """The samples of the log at `path`, `.eval` or else `.json`.

    Raises `UnreadableLog` (or `OSError`) while iterating, at the first
    sample or structure that cannot be read.
    """
    if path.endswith(".eval"):
        return eval_samples(path)
    return json_samples(path)


def sample_read(data: Any) -> SampleRead:
    """The fields the report reads of one sample's JSON, checked as
    `EvalSample` would check them."""
    if not isinstance(data, dict):
        raise UnreadableLog(f"a sample must be an object, got {type(data).__name__}")
    if "score" in data:
        return _migrated(data)
    sample_id = data.get("id")
    epoch = data.get("epoch")
    if (
        not isinstance(sample_id, (str, int))
        or isinstance(sample_id, bool)
        or type(epoch) is not int
    ):
        raise UnreadableLog(
            f"a sample needs an id and an integer epoch, got {sample_id!r} "
            f"and {epoch!r}"
        )
    logged = data.get("scores")
    scores: dict[str, ScoreRead] = {}
    if logged is not None:
        if not isinstance(logged, dict):
            raise UnreadableLog(f"sample {sample_id!r}: scores must be an object")
        for name, score in logged.items():
            if not isinstance(score, dict) or "value" not in score:
                raise UnreadableLog(
                    f"sample {sample_id!r}: score {name!r} has no value"
                )
            metadata = score.get("metadata")
            if metadata is not None and not isinstance(metadata, dict):
                raise UnreadableLog(
                    f"sample {sample_id!r}: score {name!r} metadata must be an object"
                )
            explanation = score.get("explanation")
            if explanation is not None and not isinstance(explanation, str):
                raise UnreadableLog(
                    f"sample {sample_id!r}: score {name!r} explanation must be "
                    f"a string, got {explanation!r}"
                )
            scores[name] = ScoreRead(score["value"], metadata, explanation)
    return SampleRead(sample_id, epoch, scores, data.get("error") is not None)


def from_eval_sample(sample: EvalSample) -> SampleRead:
    """The same fields of a validated sample."""
    return SampleRead(
        sample.id,
        sample.epoch,
        {
            name: ScoreRead(score.value, score.metadata, score.explanation)
            for name, score in (sample.scores or {}).items()
        },
        sample.error is not None,
    )


def _migrated(data: dict[str, Any]) -> SampleRead:
    try:
        return from_eval_sample(EvalSample.model_validate(data))
    except (ValueError, TypeError) as error:
        # TypeError: both `score` and `scores`, which Inspect refuses so.
        raise UnreadableLog(f"a sample in the old score shape: {error}") from error


def _parse(text: bytes) -> Any:
    try:
        return from_json(text, cache_strings="keys")
    except ValueError:
        # The standard library reads what Inspect may have written that
        # pydantic refuses, such as a lone surrogate escape.
        try:
            return json.loads(text)
        except ValueError as error:
            raise UnreadableLog(f"a sample is not JSON ({error})") from error


# --- .eval logs ------------------------------------------------------------------


# Per sample member, from the central directory, in one array of 8-byte
# fields: flags and method, compressed size, size, local header offset, and
# the hash of the name.
_FIELDS = 5


class _Directory(NamedTuple):
    offset: int
    size: int
    entries: int
    # Bytes before the archive (a prefix), added to every offset.
    shift: int


def eval_samples(path: str) -> Iterator[SampleRead]:
    """The samples of a `.eval` log, in archive order, each read once."""
    with open(path, "rb", buffering=_CHUNK) as file:
        members = _sample_members(file, _find_directory(file))
        superseded = _superseded(file, members)
        zstd = zstandard.ZstdDecompressor()
        for at in range(0, len(members), _FIELDS):
            if at not in superseded:
                yield _read_member(file, members[at : at + _FIELDS], zstd)


def _find_directory(file: IO[bytes]) -> _Directory:
    file.seek(0, 2)
    length = file.tell()
    tail_start = max(0, length - _END.size - _MAX_COMMENT)
    file.seek(tail_start)
    tail = file.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        raise UnreadableLog("not a ZIP archive (no end of central directory)")
    _, _, _, _, entries, size, offset, _ = _END.unpack_from(tail, at)
    records_at = tail_start + at
    locator_at = at - _END64_LOCATOR.size
    if locator_at >= 0 and tail[locator_at : locator_at + 4] == b"PK\x06\x07":
        (_, _, end64_offset, _) = _END64_LOCATOR.unpack_from(tail, locator_at)
        file.seek(end64_offset)
        record = file.read(_END64.size)
        if len(record) < _END64.size or record[:4] != b"PK\x06\x06":
            raise UnreadableLog("a ZIP64 locator without its end record")
        fields = _END64.unpack(record)
        entries, size, offset = fields[7], fields[8], fields[9]
        records_at = end64_offset
    shift = records_at - size - offset
    if shift < 0:
        raise UnreadableLog("the central directory lies outside the file")
    return _Directory(offset + shift, size, entries, shift)


def eval_header(path: str) -> EvalLog | None:
    """A `.eval` log's `header.json`, or None if it has none yet (a log
    still being written; Inspect's reader then reads its journal).

    `read_eval_log(header_only=True)` also reads and validates every
    reduced score (`reductions.json`): 56 MB, and a peak near 600 MiB, for
    a part of 75,000 extraction samples. The report needs none of them.
    """
    with open(path, "rb", buffering=_CHUNK) as file:
        members = _sample_members(
            file, _find_directory(file), wanted=lambda name: name == HEADER_MEMBER
        )
        if not members:
            return None
        flags_and_method, compressed, size, offset, _ = members[-_FIELDS:]
        _, start = _local_header(file, offset)
        file.seek(start)
        raw = file.read(compressed)
        data = _decompressed(
            raw,
            flags_and_method & 0xFFFF,
            compressed,
            size,
            zstandard.ZstdDecompressor(),
        )
    header = EvalLog.model_validate(_parse(data))
    header.location = path
    return header


def _sample_members(
    file: IO[bytes],
    directory: _Directory,
    wanted: Callable[[bytes], bool] | None = None,
) -> array[int]:
    """The `_FIELDS` of the sample members (or those `wanted`), from the
    central directory read a chunk at a time."""
    wanted = wanted or _is_sample
    members = array("q")
    file.seek(directory.offset)
    remaining = directory.size
    buffer = b""
    at = 0
    fixed = _DIRECTORY_ENTRY.size
    for _ in range(directory.entries):
        if len(buffer) - at < fixed:
            buffer, at, remaining = _refill(file, buffer, at, remaining, fixed)
        fields = _DIRECTORY_ENTRY.unpack_from(buffer, at)
        if fields[0] != b"PK\x01\x02":
            raise UnreadableLog("a malformed central directory entry")
        name_length, extra_length, comment_length = fields[12], fields[13], fields[14]
        whole = fixed + name_length + extra_length + comment_length
        if len(buffer) - at < whole:
            buffer, at, remaining = _refill(file, buffer, at, remaining, whole)
        name = buffer[at + fixed : at + fixed + name_length]
        if wanted(name):
            compressed, size, offset = fields[10], fields[11], fields[18]
            if 0xFFFFFFFF in (compressed, size, offset):
                extra_at = at + fixed + name_length
                size, compressed, offset = _zip64_sizes(
                    buffer[extra_at : extra_at + extra_length], size, compressed, offset
                )
            members.extend(
                (
                    fields[5] << 16 | fields[6],
                    compressed,
                    size,
                    offset + directory.shift,
                    hash(name),
                )
            )
        at += whole
    return members


def _is_sample(name: bytes) -> bool:
    return name.startswith(SAMPLES_DIR) and name.endswith(b".json")


def _refill(
    file: IO[bytes], buffer: bytes, at: int, remaining: int, needed: int
) -> tuple[bytes, int, int]:
    wanted = min(remaining, max(_CHUNK, needed))
    more = file.read(wanted)
    buffer = buffer[at:] + more
    if len(buffer) < needed:
        raise UnreadableLog("the central directory is cut short")
    return buffer, 0, remaining - len(more)


def _zip64_sizes(
    extra: bytes, size: int, compressed: int, offset: int
) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        if kind == _ZIP64_EXTRA:
            values = iter(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            try:
                if size == 0xFFFFFFFF:
                    size = next(values)
                if compressed == 0xFFFFFFFF:
                    compressed = next(values)
                if offset == 0xFFFFFFFF:
                    offset = next(values)
            except StopIteration:
                break
            return size, compressed, offset
        at += 4 + length
    raise UnreadableLog("a ZIP64 member without its ZIP64 sizes")


def _superseded(file: IO[bytes], members: array[int]) -> set[int]:
    """The members of a name written again later (a re-logged sample),
    which Inspect does not read: it reads the last.

    Only names whose hash repeats are compared, so the common case (no name
    repeats) costs a sort of the hashes, not a set of every name.
    """
    hashes = members[_FIELDS - 1 :: _FIELDS]
    ordered = sorted(hashes)
    repeated = {a for a, b in itertools.pairwise(ordered) if a == b}
    superseded: set[int] = set()
    last: dict[bytes, int] = {}
    for index, name_hash in enumerate(hashes):
        if name_hash in repeated:
            at = index * _FIELDS
            name, _ = _local_header(file, members[at + 3])
            if name in last:
                superseded.add(last[name])
            last[name] = at
    return superseded


def _read_member(
    file: IO[bytes], fields: array[int], zstd: zstandard.ZstdDecompressor
) -> SampleRead:
    flags_and_method, compressed, size, offset, _ = fields
    flags, method = flags_and_method >> 16, flags_and_method & 0xFFFF
    name = b""
    try:
        name, start = _local_header(file, offset)
        if flags & 0x1:
            raise UnreadableLog("it is encrypted")
        data = None
        if size > STREAM_OVER:
            stream = _member_stream(file, method, start, compressed)
            data = _streamed_fields(stream)
        if data is None:
            file.seek(start)
            raw = file.read(compressed)
            data = _parse(_decompressed(raw, method, compressed, size, zstd))
        return sample_read(data)
    except (UnreadableLog, zlib.error, zstandard.ZstdError, EOFError) as error:
        shown = name.decode("utf-8" if flags & 0x800 else "cp437") or f"at {offset}"
        raise UnreadableLog(f"member {shown}: {error}") from error


def _local_header(file: IO[bytes], offset: int) -> tuple[bytes, int]:
    """A member's name as its local header has it, and where its data starts."""
    file.seek(offset)
    header = file.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise UnreadableLog("no local header where the directory points")
    fields = _LOCAL_HEADER.unpack(header)
    name_length: int = fields[10]
    extra_length: int = fields[11]
    name = file.read(name_length)
    return name, offset + _LOCAL_HEADER.size + name_length + extra_length


def _decompressed(
    raw: bytes,
    method: int,
    compressed: int,
    size: int,
    zstd: zstandard.ZstdDecompressor,
) -> bytes:
    if len(raw) != compressed:
        raise UnreadableLog("the member is cut short")
    if method == _ZSTD:
        # Inspect writes no content size in the frame; the directory has it.
        data = zstd.decompress(raw, max_output_size=size)
        if len(data) != size:
            # Several frames: read across them.
            data = zstd.stream_reader(raw, read_across_frames=True).readall()
    elif method == _DEFLATED:
        data = zlib.decompress(raw, -15, max(size, 1))
    elif method == _STORED:
        data = raw
    else:
        raise UnreadableLog(f"compression method {method} is not supported")
    if len(data) != size:
        raise UnreadableLog(f"{len(data)} bytes where the directory says {size}")
    return data


class _Region:
    """`size` bytes of a file from `start` on, read as a stream."""

    def __init__(self, file: IO[bytes], start: int, size: int) -> None:
        self.file = file
        self.position = start
        self.remaining = size

    def read(self, wanted: int = -1) -> bytes:
        if wanted < 0 or wanted > self.remaining:
            wanted = self.remaining
        self.file.seek(self.position)
        data = self.file.read(wanted)
        self.position += len(data)
        self.remaining -= len(data)
        return data


class _Inflating:
    """A deflated stream, inflated a chunk at a time."""

    def __init__(self, source: _Region) -> None:
        self.source = source
        self.inflate = zlib.decompressobj(-15)

    def read(self, wanted: int = -1) -> bytes:
        if wanted == 0:
            # zlib reads a max_length of 0 as no limit.
            return b""
        wanted = _CHUNK if wanted < 0 else wanted
        while True:
            source = self.inflate.unconsumed_tail or self.source.read(_CHUNK)
            data = self.inflate.decompress(source, wanted)
            if data or self.inflate.eof or not source:
                return data


def _member_stream(file: IO[bytes], method: int, start: int, compressed: int) -> Any:
    region = _Region(file, start, compressed)
    if method == _ZSTD:
        # The reader only calls `read`.
        return zstandard.ZstdDecompressor().stream_reader(
            cast("IO[bytes]", region), read_across_frames=True
        )
    if method == _DEFLATED:
        return _Inflating(region)
    if method == _STORED:
        return region
    raise UnreadableLog(f"compression method {method} is not supported")


def _streamed_fields(stream: Any) -> dict[str, Any] | None:
    """The top-level `READ_FIELDS` of a JSON object read as a stream; the
    other fields are parsed past without being built.

    None when ijson cannot parse it (NaN, Infinity, an integer over 64
    bits): the member is then parsed whole, as Inspect does then.
    """
    data: dict[str, Any] = {}
    key: str | None = None
    builder: Any = None
    try:
        for prefix, event, value in ijson.parse(stream, use_float=True):
            if prefix == "":
                if builder is not None:
                    data[key or ""] = builder.value
                    builder = None
                if event == "map_key":
                    key = value
                    if value in READ_FIELDS:
                        builder = ijson.ObjectBuilder()
            elif builder is not None:
                builder.event(event, value)
    except (ijson.JSONError, ValueError):
        return None
    return data


# --- .json logs ------------------------------------------------------------------


def json_samples(path: str) -> Iterator[SampleRead]:
    """The samples of a `.json` log, in file order, one parsed at a time.

    The log is one JSON object. Its top-level values are decoded in turn
    until `samples`, whose items are then decoded and dropped one by one;
    what follows the samples is not read.
    """
    with open(path, encoding="utf-8", newline="") as file:
        text = _JsonText(file)
        text.expect("{")
        while text.peek() != "}":
            key = text.value()
            text.expect(":")
            if key == "samples":
                yield from _samples_array(text)
                return
            text.value()
            if text.peek() == ",":
                text.expect(",")


def _samples_array(text: _JsonText) -> Iterator[SampleRead]:
    if text.peek() == "n":
        text.value()  # null: no samples
        return
    text.expect("[")
    if text.peek() == "]":
        return
    while True:
        yield sample_read(text.value())
        if text.peek() == "]":
            return
        text.expect(",")


class _JsonText:
    """JSON text read a window at a time, decoded a value at a time.

    `json.JSONDecoder.raw_decode` decodes one value where it starts and
    says where it ends; the window grows when a value does not fit, twice
    as much each time, so a huge sample costs a few tries, not one per
    chunk. The standard library parser reads the NaN and Infinity that
    Inspect writes (an unscored extraction's value is NaN), which ijson
    refuses, and parses a sample faster than ijson builds one.
    """

    def __init__(self, file: IO[str]) -> None:
        self.file = file
        self.text = ""
        self.at = 0
        self.read_size = _CHUNK
        self.ended = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        chunk = self.file.read(self.read_size)
        if not chunk:
            self.ended = True
            return False
        self.text = self.text[self.at :] + chunk
        self.at = 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace, not consumed."""
        while True:
            found = _NOT_WHITESPACE.search(self.text, self.at)
            if found is not None:
                self.at = found.start()
                return self.text[self.at]
            self.at = len(self.text)
            if not self._more():
                raise UnreadableLog("the log ends before its JSON does")

    def expect(self, character: str) -> None:
        found = self.peek()
        if found != character:
            raise UnreadableLog(f"expected {character!r} in the log, got {found!r}")
        self.at += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.at)
            except json.JSONDecodeError as error:
                if self.ended:
                    raise UnreadableLog(f"not JSON ({error})") from error
                end = None
            # A value that ends with the window may be a number cut short.
            if end is not None and (end < len(self.text) or self.ended):
                self.at = end
                return value
            if len(self.text) - self.at >= self.read_size:
                self.read_size *= 2
            self._more()


_NOT_WHITESPACE = re.compile(r"[^ \t\n\r]")


__all__ = [
    "READ_FIELDS",
    "STREAM_OVER",
    "SampleRead",
    "ScoreRead",
    "UnreadableLog",
    "eval_samples",
    "from_eval_sample",
    "json_samples",
    "log_samples",
    "sample_read",
]
