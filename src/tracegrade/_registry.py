"""The `inspect_ai` entry point: importing it registers the `tracegrade/` names."""

from . import scorers, tasks
from .tasks import live

__all__ = ["live", "scorers", "tasks"]
