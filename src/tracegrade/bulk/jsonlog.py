"""The `.json` log format, written in a stream."""

from __future__ import annotations

import contextlib
import os
import tempfile
from array import array
from pathlib import Path
from typing import IO

from inspect_ai.log import EvalLog

from .._inspect_internals import to_json_safe
from ..outputs import PARTIAL_SUFFIX, publish_output
from .evallog import StreamedReductions, sample_json
from .samples import SampleParts, SampleTemplates


class JsonLogWriter:
    """A `.json` log: samples spooled as they come, the file made at the end."""

    def __init__(self, location: Path, templates: SampleTemplates) -> None:
        self.location = location
        self._templates = templates
        self.partial = location.with_name(location.name + PARTIAL_SUFFIX)
        self.published: Path | None = None
        # Unnamed, so it disappears with the process whatever happens.
        self._spool: IO[bytes] = tempfile.TemporaryFile(dir=location.parent)  # noqa: SIM115
        self._ids: list[str] = []
        self._offsets = array("Q")
        self._lengths = array("Q")
        self.spooled = 0

    def add(self, parts: SampleParts) -> None:
        sample = sample_json(self._templates.build(parts))
        self._spool.write(sample)
        self._ids.append(parts.id)
        self._offsets.append(self.spooled)
        self._lengths.append(len(sample))
        self.spooled += len(sample)

    def suspend(self) -> None:
        """Nothing to let go: a spool file and two arrays are all it holds."""

    def resume(self) -> None:
        """See `suspend`."""

    def complete(self, header: EvalLog, reductions: StreamedReductions | None) -> None:
        head = to_json_safe(header).rstrip()
        if not head.endswith(b"}"):
            raise RuntimeError("Inspect's log header did not serialise to an object")
        spool = self._spool
        spool.flush()
        # Inspect's writer sorts samples by (epoch, id); one epoch here.
        order = sorted(range(len(self._ids)), key=self._ids.__getitem__)
        self._ids = []
        try:
            # "x": never write into a file some other run left.
            with open(self.partial, "xb") as out:
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
                    reduction_head = to_json_safe(reductions.head, indent=None)
                    if not reduction_head.endswith(b"[]}"):
                        raise RuntimeError(
                            "Inspect's reductions did not serialise as expected"
                        )
                    out.write(b',\n  "reductions": [\n')
                    out.write(reduction_head[:-2] + b"\n")
                    for chunk in reductions.samples_json:
                        out.write(chunk)
                    out.write(b"\n]}\n  ]")
                out.write(b"\n}\n")
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                self.partial.unlink(missing_ok=True)
            raise
        finally:
            with contextlib.suppress(OSError):
                spool.close()

    def publish(self, location: Path) -> None:
        publish_output(str(self.partial), str(location), replace=False)
        self.published = location

    def abort(self) -> str | None:
        with contextlib.suppress(OSError):
            self._spool.close()
        try:
            self.partial.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            return str(self.partial)
        return None
