"""Outputs written whole or not at all, never over a file without `--force`."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
from collections.abc import Callable, Iterable
from typing import IO, Any

PARTIAL_SUFFIX = ".partial"
FileState = tuple[int, int, int, int]
_BINARY = getattr(os, "O_BINARY", 0)
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY
_outputs: list[tuple[str, str, tuple[int, int] | None]] = []  # shown, path, file


class OutputError(Exception):
    """An output a command must not write; the message says why and how."""


class OutputAppeared(OutputError):
    """The name was taken while the command ran; ours was kept beside it."""


class OutputChanged(OutputError):
    """Another program rewrote the file since it was read; it was kept."""


class StandardOutputFailed(OutputError):
    """Standard output could not be written (a full disk, a file too large)."""


def _identity(path: str) -> tuple[int, int] | None:
    with contextlib.suppress(OSError):
        return file_state(path)[:2]
    return None


def publish(temporary: str, final: str, *, replace: bool) -> None:
    """Rename `temporary` to `final`; without `replace`, `FileExistsError` if
    `final` exists: a hard link, or on FAT an exclusive create renamed over."""
    if replace:
        return os.replace(temporary, final)
    try:
        os.link(temporary, final)
    except FileExistsError:
        raise
    except OSError:
        claimed = os.fstat(claim := os.open(final, _NEW, 0o600))
        os.close(claim)
        try:
            os.replace(temporary, final)
        except BaseException:
            if _identity(final) == (claimed.st_dev, claimed.st_ino):
                with contextlib.suppress(OSError):
                    os.unlink(final)
            raise
    else:
        os.unlink(temporary)


def sync_directory(directory: str) -> None:
    """Make a rename durable, where a directory can be synced at all."""
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


def publish_output(
    temporary: str, final: str, *, replace: bool, shown: str | None = None
) -> None:
    _outputs.append((shown or final, final, _identity(temporary)))
    publish(temporary, final, replace=replace)


def written_outputs() -> list[str]:
    """The outputs published and still there (the same file under the name)."""
    return list(dict.fromkeys(s for s, p, i in _outputs if _identity(p) == i))


def file_state(path: str) -> FileState:
    status = os.stat(path)
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def replace_unless_changed(temporary: str, final: str, expected: FileState) -> None:
    """Rename over `final` only if unchanged: checked once it is moved aside,
    and again after, for a writer that still had it open."""

    def unchanged() -> bool:  # not by inode, which some FUSE drivers change
        state = file_state(aside)
        return (state[0], *state[2:]) == (expected[0], *expected[2:])

    changed = OutputChanged(f"{final!r} was rewritten by another program")
    descriptor, aside = _create_beside(final, ".replaced")
    os.close(descriptor)
    try:
        os.replace(final, aside)
    except BaseException:
        os.unlink(aside)
        raise
    try:
        if not unchanged():
            raise changed
        publish(temporary, final, replace=False)
    except FileExistsError:
        os.unlink(aside)  # a newer file took the name
        raise changed from None
    except BaseException:
        try:
            publish(aside, final, replace=False)
        except FileExistsError:
            raise OutputChanged(
                f"{final!r} was rewritten by other programs more than once; the "
                f"one it held when this command checked it is kept as {aside!r}"
            ) from None
        raise
    if not unchanged():
        os.replace(aside, final)
        raise changed
    os.unlink(aside)


def _create_beside(final: str, suffix: str) -> tuple[int, str]:
    while True:
        name = f"{final}.{os.urandom(4).hex()}{suffix}"
        with contextlib.suppress(FileExistsError):
            return os.open(name, _NEW, 0o666), name


def is_link_loop(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def is_stream(path: str) -> bool:
    with contextlib.suppress(OSError):  # absent or unreachable: a file to make
        mode = os.stat(path).st_mode
        return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
    return False


def check_output(
    path: str | None, *, inputs: Iterable[str], option: str, force: bool
) -> None:
    """`check_standard_streams`, then refuse `path` (None: none) over an input
    (even with `force`) or a file without it."""
    check_standard_streams(inputs := list(inputs))
    if path is None:
        return
    said = f"{option} {path!r}"
    if not path or path.endswith(os.sep):
        why = f"ends in {os.sep}, as a directory does" if path else "names no file"
        raise OutputError(f"{said} {why}; give a file name")
    try:  # one look at the name, so every check below reads the same file
        status: os.stat_result | None = os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OutputError(
                f"{said} is a loop of symbolic links; give a file"
            ) from None
        status = None  # absent or unreachable: a file to make
    mode = 0 if status is None else status.st_mode
    identity = None if status is None else (status.st_dev, status.st_ino)
    for source in (s for s in inputs if identity and _identity(s) == identity):
        same = os.path.abspath(path) == os.path.abspath(source)
        how = "" if same else " (the same file, through a link)"
        raise OutputError(
            f"{said} is the input {source!r}{how}; writing it "
            "would destroy the input, so choose another file"
        )
    if stat.S_ISDIR(mode):
        raise OutputError(f"{said} is a directory, not a file")
    if not force and stat.S_ISREG(mode):
        raise OutputError(f"{said} already exists; pass --force to replace it")
    directory = os.path.dirname(os.path.realpath(path)) or "."
    if not os.path.isdir(directory):
        raise OutputError(f"{said}: the directory {directory!r} does not exist")


def check_standard_streams(inputs: Iterable[str]) -> None:
    """Refuse stdout or stderr into an input, stderr first pointed away."""
    identities = {_identity(source): source for source in reversed(list(inputs))}
    found: dict[int, str] = {}
    for descriptor in (1, 2):
        with contextlib.suppress(OSError):  # closed: nothing goes there
            status = os.fstat(descriptor)
            same = identities.get((status.st_dev, status.st_ino))
            if stat.S_ISREG(status.st_mode) and same is not None:
                found[descriptor] = same
    if not found:
        return
    if 2 in found:
        os.dup2(os.open(os.devnull, os.O_WRONLY) if 1 in found else 1, 2)
    descriptor, source = next(iter(found.items()))
    stream = "standard output" if descriptor == 1 else "standard error"
    raise OutputError(
        f"{stream} is the input {source!r} (redirected into it); the command "
        "would write into the file it reads, so redirect it elsewhere"
    )


def not_written(path: str, error: OSError) -> OutputError:
    return OutputError(
        f"cannot write {path!r} ({error.strerror or error}); nothing was written"
    )


class _NamedFile(io.FileIO):
    """A failed write names the output (a bare ENOSPC names none)."""

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except OSError as error:
            raise OSError(error.errno, error.strerror, self.name) from None


class AtomicFile:
    """Write `handle`, then `commit()` gives the final name (or `discard()`);
    `unless_changed`: replace the file only if it still has that state."""

    def __init__(
        self,
        path: str,
        *,
        binary: bool = False,
        replace: bool = False,
        unless_changed: FileState | None = None,
    ) -> None:
        self.path, self.replace, self.unless_changed = path, replace, unless_changed
        self.temporary: str | None = None  # None: a stream, written in place
        if is_stream(path):
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _BINARY
            descriptor = os.open(path, flags, 0o666)
        else:  # through a symbolic link, the file it points to is replaced
            self.final = os.path.realpath(path)
            descriptor, self.temporary = _create_beside(self.final, PARTIAL_SUFFIX)
        raw = _NamedFile(descriptor, "wb")
        raw.name = path
        buffered = io.BufferedWriter(raw)
        self.handle: IO[Any] = (
            buffered if binary else io.TextIOWrapper(buffered, "utf-8", newline="\n")
        )

    def flush_to_disk(self) -> None:
        self.handle.flush()
        if self.temporary is not None:
            try:
                os.fsync(self.handle.fileno())
            except OSError as error:
                raise OSError(error.errno, error.strerror, self.path) from None

    def commit(self) -> None:
        self.flush_to_disk()
        self.handle.close()
        if self.temporary is None:
            return
        try:
            if self.unless_changed is not None:
                replace_unless_changed(self.temporary, self.final, self.unless_changed)
            else:
                publish_output(
                    self.temporary, self.final, replace=self.replace, shown=self.path
                )
        except FileExistsError:
            kept = self.temporary.removesuffix(PARTIAL_SUFFIX)
            publish(self.temporary, kept, replace=False)
            self.temporary = None
            raise OutputAppeared(
                f"{self.path!r} appeared while the command ran and was not replaced "
                f"(pass --force to replace it); what was written is kept as {kept!r}"
            ) from None
        self.temporary = None
        sync_directory(os.path.dirname(self.final))

    @classmethod
    def write_text(cls, path: str, text: str, *, replace: bool = False) -> None:
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
        try:
            written = cls(path, binary=binary, replace=replace)
            try:
                write(written.handle)
                written.commit()
            except BaseException:
                written.discard()
                raise
        except OSError as error:
            raise not_written(path, error) from None

    def discard(self) -> str | None:
        """Drop the unfinished file (never raises); the path of what is left."""
        with contextlib.suppress(OSError):
            self.handle.close()
        if self.temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)
            if os.path.lexists(self.temporary):
                return self.temporary
        self.temporary = None
        return None


class _CheckedStandardOutput(io.FileIO):
    """Descriptor 1 written whole (a regular file cut back on failure)."""

    def __init__(self) -> None:
        super().__init__(1, "w", closefd=False)
        status = os.fstat(1)
        self.regular = stat.S_ISREG(status.st_mode)
        # `>>` leaves the position at 0 until the first write.
        self.start = max(self.tell(), status.st_size) if self.regular else 0
        self.failed = False

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view and not self.failed:  # once failed, the command is ending
            reason = "nothing could be written"
            try:
                written = super().write(view)
            except BrokenPipeError:
                raise  # the reader stopped early, which the command says
            except OSError as error:
                written, reason = 0, error.strerror or str(error)
            if not written:
                self.failed = True
                left = "what was written to it is incomplete"
                if self.regular:
                    left = "what it holds is incomplete"
                    with contextlib.suppress(OSError):
                        os.ftruncate(1, self.start)
                        left = "it was cut back to what it held before the command"
                raise StandardOutputFailed(
                    f"cannot write standard output ({reason}); {left}"
                )
            view = view[written:]
        return size


_standard_output: _CheckedStandardOutput | None = None


def check_standard_output() -> None:
    """`sys.stdout` (but a terminal) written through `_CheckedStandardOutput`."""
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
    _standard_output = raw = _CheckedStandardOutput()
    sys.stdout = io.TextIOWrapper(
        raw if stream.write_through else io.BufferedWriter(raw),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )
