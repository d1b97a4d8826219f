"""The originals Node runs are the documents' own scripts, byte for byte, and
they pass: parity with a copy proves nothing otherwise."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from parity.node import PARITY_DIR, original_script

# Each document's SHA-256 as the project was given it.
DOCUMENTS = {
    "stage_diagnosis": (
        "000_dfd11cef632e8d90.txt",
        "112249b79dc84e219b22d307f7cd7494a4b2df828a46d813460041ffac3203dd",
    ),
    "ordered_extraction": (
        "001_a705b3246644a072.txt",
        "baa431a2f66dc7221252316481fcf7d4324bf9831346329d4402b59f6179b06c",
    ),
}
# What the harness's loader runs for a script, and what it hands back.
LOADED = """
import { readFileSync } from 'node:fs';
import { moduleSource, loadEvaluate } from %s;
const { evaluate, selfCheck } = await loadEvaluate(process.argv[1]);
process.stdout.write(JSON.stringify({
  ran: moduleSource(readFileSync(process.argv[1], 'utf8')),
  source: evaluate.toString(),
  selfCheck,
}));
"""


@pytest.mark.parametrize("evaluator", sorted(DOCUMENTS))
def test_node_runs_the_documents_own_script_and_it_passes(evaluator: str) -> None:
    name, digest = DOCUMENTS[evaluator]
    document = (PARITY_DIR / "reference" / name).read_bytes()
    assert hashlib.sha256(document).hexdigest() == digest
    script = original_script(evaluator)  # type: ignore[arg-type]
    assert script.read_bytes() in document
    loader = json.dumps((PARITY_DIR / "load-original.mjs").as_uri())
    load = ["node", "--input-type=module", "-e", LOADED % loader, str(script)]
    loaded = json.loads(subprocess.run(load, capture_output=True, check=True).stdout)
    # The script plus one export line; toString() gives evaluate's source.
    assert loaded["ran"] == script.read_text("utf-8") + "\nexport { evaluate };\n"
    assert loaded["source"].startswith("function evaluate(x){\n")
    assert loaded["source"] in document.decode("utf-8")
    direct = subprocess.run(["node", str(script)], capture_output=True, text=True)
    assert direct.returncode == 0, direct.stderr
    assert loaded["selfCheck"] + "\n" == direct.stdout
    # Its own assert loop checked every row of the document's cases table.
    lines = document.decode("utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("| Case |"))
    rows = next(n for n, line in enumerate(lines[start + 2 :]) if line[:1] != "|")
    printed = json.loads(direct.stdout)
    assert list(printed) == ["checked", "caseIds"]
    ids = printed["caseIds"]
    assert printed["checked"] == len(ids) == len(set(ids)) == rows
