"""`tracegrade report` through click's runner, on logs of the offline tasks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from plotly.offline import get_plotlyjs

from tests import test_reporting
from tests.support import split_into_parts
from tests.test_reporting import OfflineLogs
from tracegrade.cli import main
from tracegrade.logs.evals import find_logs
from tracegrade.report.aggregate import Report
from tracegrade.report.html import plot_text
from tracegrade.report.page import Table
from tracegrade.report.tables import report_tables
from tracegrade.scorers.explain import show_id

# The offline tasks' logs, and their report, once for both files.
offline_logs, report = test_reporting.offline_logs, test_reporting.report


@pytest.fixture(scope="session")
def log_dir(offline_logs: OfflineLogs) -> Path:
    return offline_logs.log_dir


def invoke(*args: str) -> Result:
    # Wide enough that rich never wraps a table cell.
    return CliRunner().invoke(main, ["report", *args], env={"COLUMNS": "250"})


def test_terminal_output_shows_every_table(log_dir: Path, report: Report) -> None:
    for verbose in (False, True):
        result = invoke(str(log_dir), *(["--verbose"] if verbose else []))

        assert result.exit_code == 0, result.output
        assert "95% Wilson score intervals" in result.stdout
        for table in report_tables(report):
            shown = table if verbose else table.briefly()
            assert shown.title in result.stdout
            said = " ".join(result.stdout.split())
            assert (" ".join(table.caption.split()) in said) is verbose
            for row in shown.rows:
                # Each row's cells appear on one line, in order.
                pattern = r"\s+".join(re.escape(cell) for cell in row)
                assert re.search(pattern, result.stdout), row


def test_an_80_column_terminal_shows_every_row_within_its_width(
    log_dir: Path, report: Report
) -> None:
    """Rows name their eval by label, so the figures fit 80 columns."""
    result = CliRunner().invoke(main, ["report", str(log_dir)], env={"COLUMNS": "80"})

    assert result.exit_code == 0, result.output
    logs = {log.path for log in report.logs}
    for line in result.stdout.splitlines():
        # The log paths alone run on unbroken, to be copied whole.
        assert len(line) <= 80 or line.split(": ", 1)[-1] in logs, line
    said = " ".join(result.stdout.split())
    for table in map(Table.briefly, report_tables(report)):
        assert table.title in result.stdout
        for row in table.rows:
            # A row of a table, or a record of "column value" lines.
            as_row = " ".join(" ".join(cell.split()) for cell in row)
            as_record = " ".join(
                f"{column} {' '.join(cell.split())}"
                for column, cell in zip(table.columns, row, strict=True)
            )
            assert as_row in said or as_record in said, row
        for note in table.notes:
            assert note in result.stdout.splitlines()


def test_json_is_the_report_structure(log_dir: Path, report: Report) -> None:
    result = invoke(str(log_dir), "--json")

    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert json.loads(result.stdout) == json.loads(json.dumps(report.to_json()))
    # Runs without steps: no table of where documents were lost.
    assert report.stage_diagnosis[0].pipeline is None
    assert "Where missing documents were lost" not in invoke(str(log_dir)).stdout


def test_top_limits_the_ids_shown(log_dir: Path, report: Report) -> None:
    as_json = json.loads(invoke(str(log_dir), "--json", "--top", "3").stdout)
    text = invoke(str(log_dir), "--top", "3").stdout
    (extraction,) = report.ordered_extraction

    (stage,), (graded,) = as_json["stage_diagnosis"], as_json["ordered_extraction"]
    assert (
        len(stage["missed"]) == len(graded["dropped"]) == len(graded["invented"]) == 3
    )
    for kind in ("missing document", "dropped", "invented"):
        assert f"Most often {kind} IDs (top 3)" in text
    # Ranked 4th and lower, so --top 3 leaves it out.
    assert f" {show_id(extraction.invented[3].id)} " not in text


def chart_data(page: str, chart: str) -> list[dict[str, Any]]:
    """The traces plotly is given for the chart div `chart`."""
    call = re.search(rf'Plotly\.newPlot\(\s*"{chart}",\s*', page)
    assert call is not None, chart
    traces, _ = json.JSONDecoder().raw_decode(page, call.end())
    assert isinstance(traces, list)
    return traces


def test_html_is_one_self_contained_file_that_plots_the_report(
    log_dir: Path, report: Report, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    result = invoke(str(log_dir), "--html", str(out))

    assert result.exit_code == 0, result.output
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
    assert list(stacked) == [*stages.stages, "not diagnosed"]
    for stage, proportion in stages.stages.items():
        assert stacked[stage]["y"] == [
            pytest.approx(100 * proportion.count / stages.runs)
        ]
        assert stacked[stage]["text"] == [str(proportion.count)]
    undiagnosed = stages.runs - stages.diagnosed
    assert undiagnosed > 0
    assert stacked["not diagnosed"]["y"] == [
        pytest.approx(100 * undiagnosed / stages.runs)
    ]
    assert sum(trace["y"][0] for trace in stacked.values()) == pytest.approx(100)
    (missed,) = chart_data(page, "chart-missed")
    assert missed["y"] == [document.missed for document in stages.missed]
    bars = {trace["name"]: trace for trace in chart_data(page, "chart-extraction")}
    assert bars["gap"]["y"] == [pytest.approx(100 * extraction.gap.share)]
    (dropped,) = chart_data(page, "chart-dropped")
    assert dropped["y"] == [d.dropped for d in extraction.dropped]
    assert dropped["x"] == [plot_text(show_id(d.id)) for d in extraction.dropped]
    (invented,) = chart_data(page, "chart-invented")
    assert invented["y"] == [i.invented for i in extraction.invented]
    assert invented["x"] == [plot_text(show_id(i.id)) for i in extraction.invented]


def test_logs_under_a_linked_directory_are_read_once(
    log_dir: Path, tmp_path: Path
) -> None:
    """Links followed, a cycle or a second link read once."""
    root, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.symlink_to(log_dir)
    (root / "day2").symlink_to(Path("..", "elsewhere"))
    (root / "again").symlink_to(log_dir)
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


def test_an_unreadable_log_exits_1(tmp_path: Path) -> None:
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"not a zip file")
    result = invoke(str(broken))

    assert result.exit_code == 1
    assert "cannot read" in result.stderr


@pytest.fixture(scope="session")
def parts_dir(log_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stage log of `log_dir` as three parts of one run."""
    (stage,) = [p for p in find_logs([log_dir]) if "stage-diagnosis" in p]
    parts = tmp_path_factory.mktemp("parts")
    split_into_parts(stage, parts, 3)
    return parts


def test_parts_of_a_run_are_one_eval(parts_dir: Path) -> None:
    result = invoke(str(parts_dir))

    assert result.exit_code == 0, result.output
    assert "1 eval in 3 logs" in result.stdout
    assert re.search(r"E1\s+tracegrade/stage_diagnosis\s+.*\s+success", result.stdout)
    assert re.search(
        r"^E1: 3 parts, \S+-part1of3\.eval to \S+-part3of3\.eval$", result.stdout, re.M
    )
    assert "warning" not in result.stdout


def test_a_missing_part_is_warned_of_everywhere(
    parts_dir: Path, tmp_path: Path
) -> None:
    two = [p for p in sorted(parts_dir.iterdir()) if "part2of3" not in p.name]
    text = invoke(*map(str, two))
    as_json = invoke(*map(str, two), "--json", "--html", str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")

    warning = "is missing part 2; its figures cover only the parts read"
    assert "1 eval in 2 logs" in text.stdout
    assert len([line for line in text.stdout.splitlines() if warning in line]) == 1
    assert warning in as_json.stderr and warning in page
    assert [log["part"] for log in json.loads(as_json.stdout)["logs"]] == [
        {"index": 1, "count": 3},
        {"index": 3, "count": 3},
    ]


@pytest.mark.parametrize(
    "args",
    [[], ["does-not-exist"], [".", "--top", "0"]],
    ids=["no path", "missing path", "top zero"],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert invoke(*args).exit_code == 2
