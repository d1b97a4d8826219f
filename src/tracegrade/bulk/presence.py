"""Which of a task's input fields a whole file has: a field in no record at
all is most likely a key typo, which only a reader of the whole file can say."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The input fields each task reads, and what a run without one becomes.
READ_FIELDS = {
    "stage_diagnosis": {
        "required": "unresolved (nothing to diagnose)",
        "context": "invalid-input (the context was never recorded)",
        "correct": "answer-label (no label)",
    },
    "ordered_extraction": {
        "source": "invalid-input (no source IDs)",
        "answer": "invalid-input (no recorded answer or output)",
    },
}
STANDS_FOR = {"output": "answer"}
# Distinct input keys remembered for the warning; a file with more is
# not a typo case, and memory must not grow with it.
KEYS_KEPT = 50


@dataclass
class FieldPresence:
    """Which of a task's fields some record's input has, and the keys seen."""

    fields: dict[str, str]
    found: set[str] = field(default_factory=set)
    keys: dict[str, None] = field(default_factory=dict)  # the first seen, in order
    more_keys: bool = False

    def note(self, record_input: dict[str, Any]) -> None:
        for key in record_input:
            name = STANDS_FOR.get(key, key)
            if name in self.fields:
                self.found.add(name)
            self.add_key(key)

    def add_key(self, key: str) -> None:
        """Ranges added in file order keep the keys one process keeps."""
        if len(self.keys) < KEYS_KEPT:
            self.keys[key] = None
        elif key not in self.keys:
            self.more_keys = True

    def warnings(self, path: str) -> list[dict[str, str]]:
        from ..scorers.key_warnings import listed_keys

        keys = listed_keys(self.keys)
        if self.more_keys:
            keys += f"; more than {KEYS_KEPT} in all"
        warned = []
        for name, without in self.fields.items():
            if name not in self.found:
                # The field and the keys standing for it: `"answer" or "output"`.
                stand_ins = [key for key, field in STANDS_FOR.items() if field == name]
                either = " or ".join(f'"{key}"' for key in (name, *stand_ins))
                message = (
                    f"no record of {path} has {either} in its input (the "
                    f"inputs' keys: {keys}); without it every run is {without}"
                )
                warned.append({"field": name, "message": message})
        return warned
