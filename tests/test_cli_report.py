"""`tracegrade report` through click's runner, on logs of the offline tasks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from plotly.offline import get_plotlyjs

from tests import test_reporting, test_steps
from tests.support import OfflineLogs
from tracegrade.cli import main
from tracegrade.report.aggregate import Report
from tracegrade.report.html import plot_text
from tracegrade.report.tables import report_tables
from tracegrade.scorers.explain import show_id

# The offline tasks' report and parts, once for both files.
report, stage_parts = test_reporting.report, test_reporting.stage_parts
pipeline_log = test_steps.pipeline_log


def invoke(*args: str, columns: int = 250) -> Result:
    """Wide enough by default that rich never wraps a table cell."""
    return CliRunner().invoke(main, ["report", *args], env={"COLUMNS": str(columns)})


@pytest.mark.parametrize(("columns", "verbose"), [(250, True), (80, False)])
def test_the_terminal_shows_every_table_within_its_width(
    offline_logs: OfflineLogs, report: Report, columns: int, verbose: bool
) -> None:
    """Rows name their eval by label, so the figures fit 80 columns."""
    result = invoke(str(offline_logs.log_dir), *["-v"] * verbose, columns=columns)

    assert result.exit_code == 0, result.output
    assert "95% Wilson score intervals" in result.stdout
    logs = {log.path for log in report.logs}
    for line in result.stdout.splitlines():
        # The log paths alone run on unbroken, to be copied whole.
        assert len(line) <= columns or line.split(": ", 1)[-1] in logs, line
    said = " ".join(result.stdout.split())
    for table in report_tables(report):
        shown = table if verbose else table.briefly()
        assert shown.title in result.stdout
        assert (" ".join(table.caption.split()) in said) is verbose
        for row in shown.rows:
            # A row of a table, or a record of "column value" lines.
            as_row = " ".join(" ".join(cell.split()) for cell in row)
            as_record = " ".join(
                f"{column} {' '.join(cell.split())}"
                for column, cell in zip(shown.columns, row, strict=True)
            )
            assert as_row in said or as_record in said, row
        for note in table.notes:
            assert note in result.stdout.splitlines()


def test_top_limits_the_ids(offline_logs: OfflineLogs, report: Report) -> None:
    text = invoke(str(offline_logs.log_dir), "--top", "3").stdout
    # Runs without steps: no table of where documents were lost.
    assert "Where missing documents were lost" not in text
    for kind in ("missing document", "dropped", "invented"):
        assert f"Most often {kind} IDs (top 3)" in text
    # Ranked 4th and lower, so --top 3 leaves it out.
    (extraction,) = report.ordered_extraction
    assert f" {show_id(extraction.invented[3].id)} " not in text


def chart_data(page: str, chart: str) -> list[dict[str, Any]]:
    call = re.search(rf'Plotly\.newPlot\(\s*"{chart}",\s*', page)
    assert call is not None, chart
    traces, _ = json.JSONDecoder().raw_decode(page, call.end())
    assert isinstance(traces, list)
    return traces


def test_json_is_the_report_and_html_one_self_contained_file_that_plots_it(
    offline_logs: OfflineLogs, report: Report, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    result = invoke(str(offline_logs.log_dir), "--html", str(out), "--json")

    assert result.exit_code == 0, result.output
    assert result.stderr == f"HTML report written to {out}\n"
    assert json.loads(result.stdout) == json.loads(json.dumps(report.to_json()))
    assert [path.name for path in tmp_path.iterdir()] == ["report.html"]
    page = out.read_text(encoding="utf-8")
    assert get_plotlyjs() in page
    assert not re.search(r"<script[^>]*\ssrc=", page)
    assert "<link" not in page
    for table in report_tables(report):
        assert f'id="table-{table.key}"' in page
    # The charts plot the report's figures.
    (stages,) = report.stage_diagnosis
    (extraction,) = report.ordered_extraction
    stacked = {trace["name"]: trace for trace in chart_data(page, "chart-stages")}
    # Shares of every run: the runs not diagnosed are a segment of their own.
    counts = {stage: p.count for stage, p in stages.stages.items()}
    counts["not diagnosed"] = stages.runs - stages.diagnosed
    assert counts["not diagnosed"] > 0
    assert {name: trace["y"] for name, trace in stacked.items()} == {
        name: [pytest.approx(100 * count / stages.runs)]
        for name, count in counts.items()
    }
    texts = [trace["text"] for trace in stacked.values()]
    assert texts == [[str(count)] for count in counts.values()]
    bars = {trace["name"]: trace for trace in chart_data(page, "chart-extraction")}
    assert bars["gap"]["y"] == [pytest.approx(100 * extraction.gap.share)]
    for kind, ids in (
        ("missed", [(d.id, d.missed) for d in stages.missed]),
        ("dropped", [(d.id, d.dropped) for d in extraction.dropped]),
        ("invented", [(i.id, i.invented) for i in extraction.invented]),
    ):
        (chart,) = chart_data(page, f"chart-{kind}")
        assert list(zip(chart["x"], chart["y"], strict=True)) == [
            (plot_text(show_id(i)), count) for i, count in ids
        ]


def test_the_pipeline_tables_read_as_the_docs_show(pipeline_log: Any) -> None:
    docs = (Path(__file__).parents[1] / "docs" / "pipeline-steps.md").read_text()
    rows = {line.strip() for line in docs.splitlines() if "| E1 |" in line}
    shown = invoke(str(pipeline_log[0]), "--markdown").stdout.splitlines()
    assert len(rows) == 4 and rows <= set(shown)


def test_logs_under_a_linked_directory_are_read_once(
    offline_logs: OfflineLogs, tmp_path: Path
) -> None:
    """Links followed, a cycle or a second link read once."""
    root, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.symlink_to(offline_logs.log_dir)
    (root / "day2").symlink_to(Path("..", "elsewhere"))
    (root / "again").symlink_to(offline_logs.log_dir)
    (root / "loop").symlink_to(Path(".."))
    (root / "loop-too").symlink_to(root)

    result = invoke(str(root), "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["evals"]) == 2
    (root / "gone").symlink_to(tmp_path / "gone")
    result = invoke(str(root))
    assert result.exit_code == 1, result.output
    assert "a symbolic link to nothing" in result.stderr
    assert "Traceback" not in result.output


def test_a_missing_part_is_warned_of_everywhere(
    stage_parts: list[str], tmp_path: Path
) -> None:
    two = [stage_parts[0], stage_parts[2]]
    text = invoke(*two)
    as_json = invoke(*two, "--json", "--html", str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")

    warning = "is missing part 2; its figures cover only the parts read"
    assert "1 eval in 2 logs" in text.stdout
    assert len([line for line in text.stdout.splitlines() if warning in line]) == 1
    assert warning in as_json.stderr and warning in page
    parts = [log["part"] for log in json.loads(as_json.stdout)["logs"]]
    assert parts == [{"index": index, "count": 3} for index in (1, 3)]


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        ([".", "--top", "0"], 2, "--top"),
        (["bad.eval"], 1, "cannot read 'bad.eval' as an Inspect log"),
        # An engine's bookkeeping alone: neither logs nor results.
        (["empty"], 1, "no Inspect logs"),
        # Records, not logs: named as such, and what to run on them.
        (
            ["runs.jsonl"],
            1,
            "'runs.jsonl' is JSON Lines, not an Inspect log (.eval or .json); if "
            "it holds recorded runs, score it first (`tracegrade score TASK "
            "runs.jsonl`",
        ),
    ],
)
def test_bad_input_exits_1_or_2(
    args: list[str], code: int, said: str, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.eval").write_bytes(b"not a zip file")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_text("")
    (tmp_path / "runs.jsonl").write_text('{"id": "r1", "input": {}}\n')
    result = invoke(*args)

    assert result.exit_code == code
    assert said in " ".join(result.stderr.split())
    if code == 1:  # not a usage error: one line
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
