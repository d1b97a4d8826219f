"""The `tracegrade` command line."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..outputs import (
    OutputError,
    StandardOutputFailed,
    check_standard_output,
    written_outputs,
)
from ._failures import (
    SIGPIPE_EXIT,
    CommandStopped,
    exiting,
    fault,
    install,
    signals_as_exceptions,
)


class _Group(click.Group):
    """A fault as one line on stderr and its exit code, not `Aborted!` or a
    traceback; `ending_handled`: a signal while the program ends too."""

    ending_handled = False

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with signals_as_exceptions():
                try:
                    return super().invoke(ctx)
                finally:
                    # What is still buffered goes out here, where a full disk
                    # is one line like any other write's.
                    sys.stdout.flush()
        except CommandStopped as stopped:
            message, exit_code = stopped.args
        except OutputError as error:
            own = isinstance(error, StandardOutputFailed)
            message, exit_code = f"{'tracegrade' if own else 'Error'}: {error}", 2
        except BrokenPipeError:
            # The reader stopped (`| head`): SIGPIPE's exit code, and stdout
            # to devnull so that nothing flushes into the pipe again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            message = (
                "tracegrade: standard output was closed before everything "
                "was written (the reader stopped early)"
            )
            exit_code = SIGPIPE_EXIT
        except BaseException as error:
            described = fault(error)
            if described is None:
                raise
            message, exit_code = described
            if exit_code > 128:
                message = _stopped_message(message)
            elif not message.startswith("tracegrade "):
                message = f"tracegrade: {message}"
        finally:
            if self.ending_handled:  # from now on a signal exits at once
                install(exiting(_stopped_by, lambda: None))
        click.echo(message, err=True)
        ctx.exit(exit_code)


def _stopped_message(stopped: str) -> str:
    """`tracegrade: stopped by SIGNAL`, naming outputs already complete."""
    message = f"tracegrade: {stopped}"
    if written := written_outputs():
        was = "was" if len(written) == 1 else "were"
        message += f"; {', '.join(written)} {was} written"
    return message


def _stopped_by(name: str) -> str:
    return _stopped_message(f"stopped by {name}")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tracegrade")
def main() -> None:
    """Deterministic RAG stage diagnosis and ordered-extraction grading.

    Exit codes: 0 success; 1 an input is not what the command needs (data
    errors, lines that cannot become samples, a file that is not a log or
    labels file, nothing to report or compare); 2 a usage error (a missing
    input included), a file that cannot be read or written (nothing is left
    under an output's name), a memory limit, or an Inspect AI too old for
    the command (`tracegrade score` needs 0.3.269: the line says which to
    install); 3 a gate failed (`compare --fail-on-regression` found a
    regression or a lost result, or a `--fail-under` threshold of `report`
    or `compare` is not met); 128+N stopped by signal N (130 for Ctrl-C,
    143 for SIGTERM; when it comes after an output was written, the line
    names it: it is complete, and stays). Each command's --help says which
    of these it gives, and when.
    """


from .check import check  # noqa: E402
from .compare import compare  # noqa: E402
from .import_runs import import_group  # noqa: E402
from .labels import labels  # noqa: E402
from .report import report  # noqa: E402
from .score import score  # noqa: E402

for command in (check, compare, import_group, labels, report, score):
    main.add_command(command)


def run() -> None:
    """`main`, with a closed or unwritable stdout told before any work."""
    check_standard_output()
    _Group.ending_handled = True
    main(prog_name="tracegrade")
