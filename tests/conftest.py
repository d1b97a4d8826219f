"""Settings for the whole suite.

Property tests draw a few thousand examples on a developer's machine and
10,000 where `CI=true`, whose run is the one that gates a change; a test
that needs fewer says so with its own `@settings(max_examples=...)`.
`HYPOTHESIS_PROFILE=ci` asks for the CI profile anywhere.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("dev", max_examples=2_500, deadline=None)
settings.register_profile("ci", max_examples=10_000, deadline=None)
settings.load_profile(
    os.environ.get(
        "HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") == "true" else "dev"
    )
)
