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
which fails if the name is taken, and the command then keeps what it
wrote under a name it reports (`OutputAppeared`). With `--force` the
rename replaces the file atomically: whole or not at all.

Devices and pipes (`/dev/null`, a FIFO, `/dev/stdout`) cannot be renamed
into: they are streams, and are written in place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from typing import IO, Any

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


# Hard links are not everywhere (some network and FUSE file systems).
_NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})


def publish(temporary: str, final: str, *, replace: bool) -> None:
    """Put the finished file `temporary` under the name `final`.

    With `replace`, an atomic rename over whatever is there. Without it,
    never over an existing file, even one that appeared a moment ago:
    `FileExistsError` then, and `temporary` is left as it is. A hard link
    is the atomic "create unless it exists"; where the file system has
    none, the name is checked and then renamed onto, which leaves a moment
    for a race.
    """
    if replace:
        os.replace(temporary, final)
        return
    try:
        os.link(temporary, final)
    except FileExistsError:
        raise
    except OSError as error:
        if error.errno not in _NO_LINKS:
            raise
        if os.path.lexists(final):
            raise FileExistsError(
                errno.EEXIST, os.strerror(errno.EEXIST), final
            ) from None
        os.rename(temporary, final)
        return
    os.unlink(temporary)


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


class AtomicFile:
    """A file that appears under its final name only once it is complete.

    Use `handle` to write, then `commit()`; on any failure call
    `discard()`, which never raises. A stream path (see `is_stream`) is
    opened in place instead: it has no final name to protect. `replace`
    (the command's `--force`) lets `commit` replace a file under the final
    name; without it a file there is never replaced (see `publish`).
    """

    def __init__(
        self, path: str, *, binary: bool = False, replace: bool = False
    ) -> None:
        self.path = path
        self.replace = replace
        self.streaming = is_stream(path)
        mode = "wb" if binary else "w"
        encoding = None if binary else "utf-8"
        newline = None if binary else "\n"
        self.temporary: str | None = None
        if self.streaming:
            self.handle: IO[Any] = open(  # noqa: SIM115
                path, mode, encoding=encoding, newline=newline
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
            # mkstemp makes the file private; a finished output gets the
            # permissions any new file of the user's would.
            os.fchmod(descriptor, 0o666 & ~_umask())
            self.handle = os.fdopen(
                descriptor, mode, encoding=encoding, newline=newline
            )
        except BaseException:
            os.close(descriptor)
            os.unlink(self.temporary)
            raise

    def flush_to_disk(self) -> None:
        """Write everything out and fsync, so a later rename cannot fail on
        space: `commit` then only renames."""
        self.handle.flush()
        if not self.streaming:
            os.fsync(self.handle.fileno())

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
            publish(self.temporary, self._final, replace=self.replace)
        except FileExistsError:
            kept = self.temporary.removesuffix(PARTIAL_SUFFIX)
            publish(self.temporary, kept, replace=False)
            self.temporary = None
            raise OutputAppeared(self.path, kept) from None
        self.temporary = None
        with contextlib.suppress(OSError):
            directory = os.open(os.path.dirname(self._final), os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    @classmethod
    def write_text(cls, path: str, text: str, *, replace: bool = False) -> None:
        """Write `text` to `path` whole or not at all."""
        try:
            written = cls(path, replace=replace)
        except OSError as error:
            raise _not_written(path, error) from None
        try:
            written.handle.write(text)
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
