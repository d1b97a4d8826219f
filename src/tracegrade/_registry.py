"""Everything Inspect AI finds under the `tracegrade/` prefix: Inspect imports
this module through the `inspect_ai` entry point, and importing the decorated
tasks, scorers, solver and metrics registers them."""

from . import scorers, tasks
from .tasks import live

__all__ = ["live", "scorers", "tasks"]
