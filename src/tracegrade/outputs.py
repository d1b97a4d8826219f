"""Writing outputs so that no file is destroyed and no half-written one passes.

Every file a tracegrade command writes goes through `AtomicFile`: it is
written under a temporary name beside its final one (`NAME.XXXXXX.partial`,
which no reader takes for a log or results file), flushed to disk, and put
under its final name only once it is complete (`publish`). A failure, a
signal or a full disk removes the temporary file; only `SIGKILL` can leave
it, and then under its `.partial` name.

Before anything is written, `check_output` refuses an output that is one
of the command's inputs (compared by device and inode, so hard and
symbolic links are caught) even with `--force`, and an existing file
unless `--force` is given. A file that appears under the final name while
the command runs (another run, a user's `echo > out`) is not replaced
either: without `--force` the finished file is hard-linked to its name,
which fails if the name is taken (where the file system has no hard links,
the name is first claimed by creating it exclusively, see `publish`), and
the command then keeps what it wrote under a name it reports
(`OutputAppeared`). With `--force` the rename replaces the file
atomically: whole or not at all.

A write that fails names the output it was for, and a file system that
keeps no permissions (FAT, some FUSE drivers) is written all the same.
Standard output is checked like any output (`StandardOutput`).

Devices and pipes (`/dev/null`, a FIFO, `/dev/stdout`) cannot be renamed
into: they are streams, and are written in place.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import IO, Any, NoReturn

PARTIAL_SUFFIX = ".partial"


class OutputError(Exception):
    """An output a command must not write; the message says why and how."""


class OutputAppeared(OutputError):
    """The output's name was taken while the command ran; what was written
    is kept under `kept`."""

    def __init__(self, path: str, kept: str) -> None:
        self.path = path
        self.kept = kept
        super().__init__(
            f"{path!r} appeared while the command ran and was not replaced (pass "
            f"--force to replace it); what was written is kept as {kept!r}"
        )


def publish(temporary: str, final: str, *, replace: bool) -> None:
    """Put the finished file `temporary` under the name `final`.

    With `replace`, an atomic rename over whatever is there. Without it,
    never over an existing file, even one that appeared a moment ago:
    `FileExistsError` then, and `temporary` is left as it is. A hard link
    is the atomic "create unless it exists". Where the file system has
    none (FAT, exFAT, some network and FUSE file systems), the name is
    claimed by creating it exclusively, which fails just the same if it is
    taken, and the finished file is then renamed over that empty claim:
    for that moment the name holds an empty file, never another's.
    """
    if replace:
        os.replace(temporary, final)
        return
    try:
        os.link(temporary, final)
    except FileExistsError:
        raise
    except OSError:
        _claim_and_rename(temporary, final)
        return
    os.unlink(temporary)


def _claim_and_rename(temporary: str, final: str) -> None:
    claim = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        claimed = os.fstat(claim)
    finally:
        os.close(claim)
    try:
        os.replace(temporary, final)
    except BaseException:
        # Take the claim back, if it is still ours.
        with contextlib.suppress(OSError):
            if _same_file(os.stat(final), claimed):
                os.unlink(final)
        raise


def _same_file(one: os.stat_result, other: os.stat_result) -> bool:
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def sync_directory(directory: str) -> None:
    """Make a rename in `directory` durable, where a directory can be
    synced: Windows cannot open one, and some file systems refuse."""
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


_NO_MODES = frozenset(
    {errno.ENOSYS, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EINVAL}
)
"""What `fchmod` fails with on a file system that keeps no permissions."""


def _give_usual_mode(descriptor: int) -> None:
    """The permissions any new file of the user's would get (mkstemp makes
    its files private), where the file system keeps permissions."""
    fchmod = getattr(os, "fchmod", None)
    if fchmod is None:  # Windows before Python 3.13: no modes but read-only
        return
    try:
        fchmod(descriptor, 0o666 & ~_umask())
    except OSError as error:
        if error.errno not in _NO_MODES:
            raise


_outputs: list[tuple[str, str, int, int]] = []


def publish_output(
    temporary: str, final: str, *, replace: bool, shown: str | None = None
) -> None:
    """`publish`, noting the output (as `shown`, by default `final`) for
    `written_outputs` first."""
    status = os.stat(temporary)
    _outputs.append((shown or final, final, status.st_dev, status.st_ino))
    publish(temporary, final, replace=replace)


def written_outputs() -> list[str]:
    """The outputs this process has put under their final names, and that
    are there still: what a signal that stops the command now leaves.

    Told by looking at each name (`publish_output` notes the file it puts
    there, and a rename keeps a file's identity), so a signal a moment
    after or before a rename gets the truth, and a log a failed run
    removed again is not among them.
    """
    found: list[str] = []
    for shown, path, device, inode in _outputs:
        try:
            status = os.stat(path)
        except OSError:
            continue
        if (status.st_dev, status.st_ino) == (device, inode) and shown not in found:
            found.append(shown)
    return found


FileState = tuple[int, int, int, int]
"""What changes when anything writes or replaces a file (`file_state`)."""


def file_state(path: str) -> FileState:
    """The file's device, inode, size and time of last change of content."""
    status = os.stat(path)
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


class OutputChanged(OutputError):
    """The file under an output's name was rewritten by another program
    since it was read; it was not replaced, and what was written is gone."""


def replace_unless_changed(temporary: str, final: str, expected: FileState) -> None:
    """Rename `temporary` over `final` only if `final` is still the file of
    state `expected`, whenever another program rewrote it, even a moment
    before this rename: else `OutputChanged`, and `final` as the other
    program left it.

    A check and then a rename would leave a moment between them. So the
    file under `final` is first moved aside by a rename, which takes
    whatever is there at that instant, and checked there; if it is not the
    one expected it goes back. Then `temporary` is published under `final`
    without replacing anything (a file written meanwhile under the name
    wins), and the file moved aside is checked once more, for a program
    that wrote into it while it was open: if it changed it goes back over
    `temporary`'s. For that moment `final` is missing: hold signals
    around the call (`held` of `AtomicFile`), so that only SIGKILL there
    could leave it so, moved to `NAME.XXXXXX.replaced` beside its name.
    """
    descriptor, aside = tempfile.mkstemp(
        dir=os.path.dirname(final),
        prefix=os.path.basename(final) + ".",
        suffix=".replaced",
    )
    os.close(descriptor)
    try:
        os.replace(final, aside)
    except BaseException:
        os.unlink(aside)
        raise
    try:
        if not _unchanged(file_state(aside), expected):
            raise OutputChanged(f"{final!r} was rewritten by another program")
        publish(temporary, final, replace=False)
    except FileExistsError:
        os.unlink(aside)  # a newer file took the name: the one read is old
        raise OutputChanged(f"{final!r} was rewritten by another program") from None
    except BaseException:
        _put_back(aside, final)
        raise
    if not _unchanged(file_state(aside), expected):
        os.replace(aside, final)
        raise OutputChanged(f"{final!r} was rewritten by another program")
    os.unlink(aside)


def _unchanged(moved: FileState, expected: FileState) -> bool:
    """Whether the file moved aside is still the one of state `expected`:
    the same device, size and time of last change. Not its inode, which a
    rename keeps on most file systems but not through every FUSE driver
    (FAT has no inodes): a rewrite there gets a later time of change."""
    return (moved[0], *moved[2:]) == (expected[0], *expected[2:])


def _put_back(aside: str, final: str) -> None:
    """Return the file moved aside to its name, unless a file has taken the
    name since; then it stays where it is, and the error says where."""
    try:
        publish(aside, final, replace=False)
    except FileExistsError:
        raise OutputChanged(
            f"{final!r} was rewritten by other programs more than once; the "
            f"one it held when this command checked it is kept as {aside!r}"
        ) from None


def describe_os_error(error: OSError) -> str:
    """One line for an `OSError`: what failed on which file, in plain words."""
    reason = error.strerror or str(error)
    if error.filename is not None:
        return f"{reason}: {os.fsdecode(error.filename)!r}"
    return reason


def _identity(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def is_stream(path: str) -> bool:
    """True for an existing path that is not a regular file or a directory."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_output(path: str, *, inputs: Iterable[str], option: str, force: bool) -> None:
    """Refuse to write `path` over an input, or over any file without `force`.

    Raises `OutputError` with a one-line message naming `option`.
    """
    if not path:
        raise OutputError(f"{option} '' names no file; give a file name")
    if path.endswith(os.sep):
        raise OutputError(
            f"{option} {path!r} ends in {os.sep}, as a directory does; give a file name"
        )
    if os.path.islink(path) and not os.path.exists(path):
        try:
            os.stat(path)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise OutputError(
                    f"{option} {path!r} is a loop of symbolic links; give a file"
                ) from None
    identity = _identity(path)
    if identity is not None:
        for source in inputs:
            if _identity(source) == identity:
                same_name = os.path.abspath(path) == os.path.abspath(source)
                how = "" if same_name else " (the same file, through a link)"
                raise OutputError(
                    f"{option} {path!r} is the input {source!r}{how}; writing it "
                    "would destroy the input, so choose another file"
                )
        if os.path.isdir(path):
            raise OutputError(f"{option} {path!r} is a directory, not a file")
        if not force and not is_stream(path):
            raise OutputError(
                f"{option} {path!r} already exists; pass --force to replace it"
            )
    directory = os.path.dirname(os.path.realpath(path)) or "."
    if not os.path.isdir(directory):
        raise OutputError(
            f"{option} {path!r}: the directory {directory!r} does not exist"
        )


_STREAMS = {1: "standard output", 2: "standard error"}


def check_standard_streams(inputs: Iterable[str]) -> None:
    """Refuse to run with stdout or stderr redirected into an input
    (`>> runs.jsonl`, `1<>runs.jsonl`): the command would read its own
    output back, growing the file without end, or overwrite it as it reads.

    Raises `OutputError` naming the stream and the input. The message
    goes to stderr, so when stderr is the input it is pointed at stdout
    first (or, if that is the input too, at nothing): not even the refusal
    is written into the input.
    """
    identities: dict[tuple[int, int], str] = {}
    for source in inputs:
        identity = _identity(source)
        if identity is not None:
            identities.setdefault(identity, source)
    found: dict[int, str] = {}
    for descriptor in _STREAMS:
        try:
            status = os.fstat(descriptor)
        except OSError:
            continue  # closed: nothing will be written there
        if stat.S_ISREG(status.st_mode):
            same = identities.get((status.st_dev, status.st_ino))
            if same is not None:
                found[descriptor] = same
    if not found:
        return
    if 2 in found:
        if 1 in found:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        else:
            os.dup2(1, 2)
    descriptor, source = next(iter(found.items()))
    raise OutputError(
        f"{_STREAMS[descriptor]} is the input {source!r} (redirected into it); "
        "the command would write into the file it reads, so redirect it elsewhere"
    )


def _not_written(path: str, error: OSError) -> OutputError:
    """A failed write as one line naming the file: a full disk's bare
    "No space left on device" says neither which file nor what was left."""
    return OutputError(
        f"cannot write {path!r} ({error.strerror or error}); nothing was written"
    )


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _NamedFile(io.FileIO):
    """A file whose failed writes name the output they were for: a full
    disk's bare "No space left on device" says neither which file nor
    what was left."""

    def __init__(self, descriptor: int, mode: str, shown: str) -> None:
        super().__init__(descriptor, mode)
        self.shown = shown

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except OSError as error:
            raise OSError(error.errno, error.strerror, self.shown) from None


def _named_handle(descriptor: int, shown: str, *, binary: bool) -> IO[Any]:
    """A buffered handle on `descriptor` (whatever PYTHONUNBUFFERED says:
    the buffer writes every byte or raises), its errors naming `shown`."""
    raw = _NamedFile(descriptor, "wb", shown)
    buffered = io.BufferedWriter(raw)
    if binary:
        return buffered
    return io.TextIOWrapper(buffered, encoding="utf-8", newline="\n")


class AtomicFile:
    """A file that appears under its final name only once it is complete.

    Use `handle` to write, then `commit()`; on any failure call
    `discard()`, which never raises. A stream path (see `is_stream`) is
    opened in place instead: it has no final name to protect. `replace`
    (the command's `--force`) lets `commit` replace a file under the final
    name; without it a file there is never replaced (see `publish`).
    """

    def __init__(
        self,
        path: str,
        *,
        binary: bool = False,
        replace: bool = False,
        unless_changed: FileState | None = None,
        held: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
    ) -> None:
        self.path = path
        self.replace = replace
        self.unless_changed = unless_changed
        """The state (`file_state`) the file under the final name must still
        have for `commit` to replace it: it is replaced only if no one has
        rewritten it (see `replace_unless_changed`)."""
        self.held = held
        """What holds signals while `commit` renames (see
        `replace_unless_changed`)."""
        self.streaming = is_stream(path)
        self.temporary: str | None = None
        if self.streaming:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
            self.handle: IO[Any] = _named_handle(
                os.open(path, flags, 0o666), path, binary=binary
            )
            return
        # Through a symbolic link, the file it points to is what is replaced.
        final = os.path.realpath(path)
        self._final = final
        descriptor, self.temporary = tempfile.mkstemp(
            dir=os.path.dirname(final),
            prefix=os.path.basename(final) + ".",
            suffix=PARTIAL_SUFFIX,
        )
        try:
            _give_usual_mode(descriptor)
            self.handle = _named_handle(descriptor, path, binary=binary)
        except BaseException:
            os.close(descriptor)
            os.unlink(self.temporary)
            raise

    def flush_to_disk(self) -> None:
        """Write everything out and fsync, so a later rename cannot fail on
        space: `commit` then only renames."""
        self.handle.flush()
        if not self.streaming:
            try:
                os.fsync(self.handle.fileno())
            except OSError as error:
                raise OSError(error.errno, error.strerror, self.path) from None

    def commit(self) -> None:
        """Put the finished file under its final name.

        Raises `OutputAppeared` when the name was taken meanwhile and
        `replace` was not given; the file is then kept under another name.
        """
        self.flush_to_disk()
        self.handle.close()
        if self.temporary is None:
            return
        try:
            if self.unless_changed is not None:
                with self.held():
                    replace_unless_changed(
                        self.temporary, self._final, self.unless_changed
                    )
            else:
                publish_output(
                    self.temporary, self._final, replace=self.replace, shown=self.path
                )
        except FileExistsError:
            kept = self.temporary.removesuffix(PARTIAL_SUFFIX)
            publish(self.temporary, kept, replace=False)
            self.temporary = None
            raise OutputAppeared(self.path, kept) from None
        self.temporary = None
        sync_directory(os.path.dirname(self._final))

    @classmethod
    def write_text(cls, path: str, text: str, *, replace: bool = False) -> None:
        """Write `text` to `path` whole or not at all."""
        cls.write_through(path, lambda handle: handle.write(text), replace=replace)

    @classmethod
    def write_through(
        cls,
        path: str,
        write: Callable[[IO[Any]], object],
        *,
        binary: bool = False,
        replace: bool = False,
    ) -> None:
        """Fill `path` by `write(handle)`, whole or not at all (a Parquet
        writer given the handle, say)."""
        try:
            written = cls(path, binary=binary, replace=replace)
        except OSError as error:
            raise _not_written(path, error) from None
        try:
            write(written.handle)
            written.commit()
        except OSError as error:
            written.discard()
            raise _not_written(path, error) from None
        except BaseException:
            written.discard()
            raise

    def write_with(
        self,
        write: Callable[[str], object],
        before_commit: Callable[[], None] = lambda: None,
    ) -> None:
        """Fill the file through `write(path)` and commit it.

        For a writer that opens the path itself, such as Inspect's
        `write_eval_log`; it is given the temporary name. Not for a stream,
        which such a writer may need to seek in. `before_commit` runs once
        the file is written, and may still refuse to publish it by raising.
        """
        if self.temporary is None:
            raise OutputError(f"{self.path!r} is not a regular file; give a file")
        self.handle.close()
        # Made afresh by the writer: Inspect's gives a file it replaces the
        # permissions of the one there, which FAT refuses (ENOSYS). The
        # name stays unguessable.
        os.unlink(self.temporary)
        try:
            write(self.temporary)
        except OSError as error:
            raise _not_written(self.path, error) from None
        self.handle = open(self.temporary, "ab")  # noqa: SIM115
        before_commit()
        try:
            self.commit()
        except OSError as error:
            raise _not_written(self.path, error) from None

    def discard_quietly(self) -> None:
        """`discard`, for a caller that needs no answer (a signal handler)."""
        self.discard()

    def discard(self) -> str | None:
        """Drop the unfinished file; the path of anything left, else None.

        Never raises: it runs while another error is being reported, and a
        full disk must not turn one error into two.
        """
        with contextlib.suppress(OSError):
            self.handle.close()
        if self.temporary is None:
            return None
        try:
            os.unlink(self.temporary)
        except FileNotFoundError:
            pass
        except OSError:
            return self.temporary
        self.temporary = None
        return None


class StandardOutputFailed(OutputError):
    """Standard output could not be written (a full disk, a file too large)."""


class _CheckedStandardOutput(io.RawIOBase):
    """Descriptor 1, whose every write is whole or an error naming it.

    With PYTHONUNBUFFERED=1 (common in CI images and containers) Python
    writes standard output straight to the descriptor and ignores a short
    write: on a full disk the output ends part way and the command still
    exits 0. Here a short write goes on with the rest, and a failed one
    raises `StandardOutputFailed`; a regular file is first cut back to
    where it was when the command began, so that no part passes for the
    whole. Once failed, further writes are dropped: the command is ending.
    """

    def __init__(self, descriptor: int) -> None:
        super().__init__()
        self.descriptor = descriptor
        status = os.fstat(descriptor)
        self.regular = stat.S_ISREG(status.st_mode)
        # `>>` leaves the position at 0 until the first write.
        self.start = (
            max(os.lseek(descriptor, 0, os.SEEK_CUR), status.st_size)
            if self.regular
            else 0
        )
        self.failed = False
        self.retracted = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.descriptor

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view and not self.failed:
            try:
                written = os.write(self.descriptor, view)
            except BrokenPipeError:
                raise  # the reader stopped early, which the command says
            except OSError as error:
                self._fail(error.strerror or str(error))
            if written == 0:
                self._fail("nothing could be written")
            view = view[written:]
        return size

    def retract(self) -> bool:
        """Cut a regular file back to where it was when the command began;
        whether it was."""
        if self.regular and not self.retracted:
            with contextlib.suppress(OSError):
                os.ftruncate(self.descriptor, self.start)
                self.retracted = True
        return self.retracted

    def _fail(self, reason: str) -> NoReturn:
        self.failed = True
        if self.retract():
            left = "it was cut back to what it held before the command"
        elif self.regular:
            left = "what it holds is incomplete"
        else:
            left = "what was written to it is incomplete"
        raise StandardOutputFailed(f"cannot write standard output ({reason}); {left}")


_standard_output: _CheckedStandardOutput | None = None


def check_standard_output() -> None:
    """Make `sys.stdout` write through `_CheckedStandardOutput`, keeping its
    encoding and buffering. For the `tracegrade` program, once, before
    anything is written; a terminal is left as it is (nothing fills it,
    and Windows writes to its console otherwise)."""
    global _standard_output
    stream = sys.stdout
    if _standard_output is not None or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        if stream.fileno() != 1 or os.isatty(1):
            return
    except (OSError, ValueError, io.UnsupportedOperation):
        return
    stream.flush()
    raw = _CheckedStandardOutput(1)
    buffer: Any = raw if stream.write_through else io.BufferedWriter(raw)
    sys.stdout = io.TextIOWrapper(
        buffer,
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )
    _standard_output = raw
