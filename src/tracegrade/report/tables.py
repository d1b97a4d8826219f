"""A `Report` as the `Page`: verdict, what was read, headlines, tables."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path

from ..logs.evals import missing_parts_text, superseded_note, unused_reducer
from ..schema import EXTRACTION_SCORER, STAGE_SCORER
from ..scorers.explain import show_id
from .aggregate import ExtractionSummary, Proportion, Report, StageSummary
from .page import Page, Section, Table
from .runs import plural, why_text
from .steps import NDCG_DEPTH, NEAR_THE_CUT
from .thresholds import OVER_ALL_RUNS, ThresholdCheck, threshold_line

Summary = StageSummary | ExtractionSummary


def percent(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f}%"


def share_with_interval(p: Proportion) -> str:
    """ "57.1% [39.1, 73.5]": the share and its interval, in percent."""
    if p.share is None or p.low is None or p.high is None:
        return "n/a"
    return f"{percent(p.share)} [{100 * p.low:.1f}, {100 * p.high:.1f}]"


def _of_all(count: int, runs: int) -> str:
    return percent(count / runs if runs else None)


def eval_label(s: Summary) -> str:
    """E1, E1+E2 pooled; with the score's name when not the default."""
    named = s.scorer not in (STAGE_SCORER, EXTRACTION_SCORER)
    return "+".join(s.evals) + f" [{s.scorer}]" * named


def _got(s: Summary) -> tuple[int, str]:
    """The runs with a result, and why the rest have none."""
    if isinstance(s, StageSummary):
        return s.diagnosed, why_text(s.not_diagnosed)
    return s.graded, why_text(s.not_graded)


def headline(s: Summary) -> str:
    """The row in one line, every share beside the runs it rests on."""
    runs = plural(s.runs, "run")
    got, why = _got(s)
    if isinstance(s, StageSummary):
        word, passed = "diagnosed", s.stages["pass"]
        text = f"pass {passed.count} of {runs}: {got} diagnosed"
        text += f", {share_with_interval(passed)} of them pass" * bool(got)
    else:
        word, m, o = "graded", s.membership, s.order
        text = f"membership {m.count} and order {o.count} of {runs}: {got} graded"
        if got:
            text += f", membership {share_with_interval(m)} and order "
            text += f"{share_with_interval(o)} of them"
    if s.runs - got:
        text += f"; {s.runs - got} not {word}: {why}"
    return f"{eval_label(s)} ({s.task}, {s.model}): {text}."


def eval_warnings(report: Report) -> list[str]:
    """An eval not complete, or a stage eval that asked for a reducer."""
    warnings = []
    staged = {label for s in report.stage_diagnosis for label in s.evals}
    logs = {log.path: log for log in report.logs}
    for e in report.evals:
        unused = unused_reducer(e.label, e.epochs_reducer)
        if unused and e.label in staged:
            warnings.append(unused)
        if e.missing_count:
            missing = missing_parts_text(e.missing_parts, e.missing_count)
            warnings.append(
                f"{e.label} ({e.name}) is missing {missing}; its figures cover "
                "only the parts read."
            )
        elif e.status != "success":
            not_run = sum(logs[path].not_run for path in e.logs)
            never = f"; the {plural(not_run, 'sample-epoch')} it never ran count as "
            never += "runs not diagnosed"
            warnings.append(
                f"{e.label} ({e.name}) has status {e.status!r}{never * bool(not_run)}."
            )
    return warnings


def report_page(report: Report) -> Page:
    """The page: verdict, what was read, headlines, warnings, tables."""
    evals, logs = len(report.evals), len(report.logs) + len(report.superseded)
    read = f"{plural(evals, 'eval')} in {plural(logs, 'log')}"
    read += ", pooled by task, model and score" * report.pooled
    note = superseded_note(report.superseded)
    read += f" ({note})" if note else ""
    samples = sum(log.samples for log in report.logs)
    read += (
        f", {samples} sample-epochs. Counted per {report.unit}; [low, high] are "
        f"{round(100 * report.confidence)}% Wilson score intervals"
    )
    if any(s.epochs != [1] for s in report.summaries):
        read += (
            ", with the sample as the cluster where it ran several epochs "
            "(its epochs are not independent evidence)"
        )
    read += "."
    checks = report.thresholds
    failed = [check for check in checks if not check.met]
    rule = f"(--fail-under, {OVER_ALL_RUNS})."
    verdict = ["No gate asked", "no --fail-under threshold: the report gates nothing"]
    if failed:
        head = f"Gate failed: {len(failed)} of {len(checks)} thresholds not met {rule}"
        verdict = [head, *(f"Not met: {threshold_line(check)}." for check in failed)]
    elif checks:
        verdict = [f"Gate passed: all {len(checks)} thresholds met {rule}"]
    return Page(
        command="tracegrade report",
        verdict=verdict[0],
        reasons=verdict[1:],
        failed=bool(failed) if checks else None,
        summary=[read],
        headlines=[headline(s) for s in report.summaries],
        warnings=eval_warnings(report),
        sections=[Section(None, report_tables(report))],
        quiet_verdict=True,
    )


_OF_ALL = ["membership of all runs", "order of all runs"]
# Per table: title, columns after eval, task and model, caption (`_table` formats).
TABLES = {
    "runs": (
        "Runs",
        ["score", "runs", "diagnosed", "not diagnosed", "why"],
        "runs: every sample-epoch of the eval, with a result or not. diagnosed: runs "
        "that got a stage (extraction: a grade, answer failures included); every share "
        "below is of these, and says so. not diagnosed: runs with no result, and why: "
        "a data error (the sample's data is at fault), a sample error (the sample "
        "errored before it had an answer, scored so or not scored at all), a run "
        "logged without the score, or one its eval never ran (it stopped).",
    ),
    "thresholds": (
        "Thresholds (--fail-under)",
        ["score", "metric", "runs", "value", "threshold", "met"],
        f"Each value is {OVER_ALL_RUNS}. The gate fails when a value is under "
        "its threshold.",
    ),
    "stages": (
        "Stage shares",
        ["stage", "runs", "of", "{ci}", "of all runs"],
        "runs: runs in the stage; of: the runs diagnosed, which the share "
        "and its interval are of; of all runs: the runs in the stage over every "
        "run, those not diagnosed (table Runs) included.",
    ),
    "lucky": (
        "Lucky answers",
        ["lucky", "of", "{ci}"],
        "Runs labelled correct whose required evidence never reached the "
        "context (stage retrieval), of all diagnosed runs labelled correct.",
    ),
    "context": (
        "Context recall and precision",
        ["recall", "recall runs", "precision", "precision runs"],
        "recall: the mean share of each run's unique required IDs that reached its "
        "context, over the runs with a required set and a context. precision: the mean "
        "share of each run's unique context IDs that were required (a repeated ID is "
        "one document), over the runs whose context held an ID and was judged (an "
        "empty required list gives 0). Labelled or not: the logged context_recall and "
        "context_precision metrics cover the scored runs only. Means; no interval. "
        "Runs with no figure (a sample error has no context) are in the Runs table.",
    ),
    "pipeline": (
        "Where missing documents were lost",
        ["step", "lost", "share", "recall", "MRR", "nDCG@{depth}", "runs"],
        "Over the diagnosed runs whose records carried the pipeline's steps (runs with "
        "steps), each missing required ID counted at the step that took the last "
        "output holding it. lost: missing IDs lost at the step; share: of all the "
        "missing IDs of those runs. context: no step dropped the ID, but it was ranked "
        "below the cut that fills the prompt. recall, MRR and nDCG@{depth}: the step's "
        "output against the required IDs, means over the diagnosed runs that have the "
        "step (runs), as trec_eval computes them.",
    ),
    "cut": (
        "Lost at the prompt's cut",
        ["lost at the cut", "median last rank", "within {near} of the cut"],
        "The missing IDs every step kept but the prompt did not hold (lost at "
        "context): the rank where each was last seen, in the last step's output; the "
        "cut is the run's context size. within {near} of the cut: last seen at most "
        "{near} ranks below it, where a slightly larger k would have kept it.",
    ),
    "errors": (
        "Errors by kind",
        ["kind", "side", "runs", "of"],
        "side data: the sample's data is at fault, so it is unscored. side "
        "run: the sample errored before it had an answer, so it is unscored. side "
        "answer: the model's answer broke the answer contract and fails both "
        "criteria. Counted per {unit}.",
    ),
    "missed": (
        "Most often missing document IDs (top {top})",
        ["document", "missed", "required", "rate"],
        "missed: diagnosed runs whose context lacked the required ID; "
        "required: diagnosed runs that required it.{distinct}",
    ),
    "dropped": (
        "Most often dropped IDs (top {top})",
        ["ID", "dropped", "in source", "rate"],
        "dropped: itemised answers that left out the source ID; in "
        "source: itemised answers whose source held it. Itemised: graded answers "
        "except those that repeat an ID or cannot be read, which fail both "
        "criteria with nothing compared.{distinct}",
    ),
    "invented": (
        "Most often invented IDs (top {top})",
        ["ID", "invented", "of", "rate"],
        "invented: itemised answers that held the ID though their "
        "source did not; of: all itemised answers (graded, neither repeating an "
        "ID nor unreadable).{distinct}",
    ),
    "extraction": (
        "Membership versus order",
        ["runs", "graded", "membership", "order", "gap", *_OF_ALL],
        "Accuracy over graded runs; answer failures count as failures. "
        "gap = membership minus order accuracy: the runs that kept every ID but "
        "lost the source order. of all runs: membership and order over every "
        "run, those not graded (table Runs) included.",
    ),
}
ID_TABLES = ("missed", "dropped", "invented")


def _table(key: str, rows: list[list[str]], **values: object) -> Table:
    """Rows that start with eval, task and model (dropped when constant)."""
    title, columns, caption = TABLES[key]
    values.update(depth=NDCG_DEPTH, near=NEAR_THE_CUT)
    return Table(
        key,
        title.format(**values),
        caption.format(**values),
        ["eval", "task", "model", *(column.format(**values) for column in columns)],
        rows,
        constant=["eval", "task", "model", "score"],
    )


def _row(start: Summary | ThresholdCheck, *cells: object) -> list[str]:
    label = start.eval if isinstance(start, ThresholdCheck) else eval_label(start)
    return [label, start.task, start.model, *map(str, cells)]


def report_tables(report: Report) -> list[Table]:
    """Every table, in display order; those with no row are left out."""
    staged, extraction = report.stage_diagnosis, report.ordered_extraction
    ci = f"share [{round(100 * report.confidence)}% CI]"
    runs = [
        _row(s, s.scorer, s.runs, got, s.runs - got, why or "none")
        for s in sorted(report.summaries, key=lambda s: int(s.evals[0][1:]))
        for got, why in [_got(s)]
    ]
    thresholds = [
        _row(c, c.score, c.metric, c.runs, value, f"{c.threshold:g}", met)
        for c in report.thresholds
        for value in ["none" if c.value is None else f"{c.value:.4f}"]
        for met in ["yes" if c.met else "NO"]
    ]
    stages = [
        _row(s, stage, p.count, p.total, share_with_interval(p), of_all)
        for s in staged
        for stage, p in s.stages.items()
        for of_all in [_of_all(p.count, s.runs)]
    ]
    lucky = [
        _row(s, s.lucky.count, s.lucky.total, share_with_interval(s.lucky))
        for s in staged
    ]
    context = [
        _row(s, percent(s.recall), s.recall_runs, *precision)
        for s in staged
        for precision in [(percent(s.precision), s.precision_runs)]
    ]
    errors = [
        _row(s, e.kind, e.side, e.count, s.runs)
        for s in report.summaries
        for e in s.errors
    ]
    gaps = [
        _row(s, s.runs, s.graded, *map(share_with_interval, shares), *of_all)
        for s in extraction
        for shares in [(s.membership, s.order, s.gap)]
        for of_all in [(_of_all(p.count, s.runs) for p in shares[:2])]
    ]
    tables = [
        _table("runs", runs),
        _table("thresholds", thresholds),
        _table("stages", stages, ci=ci),
        _table("lucky", lucky, ci=ci),
        _table("context", context),
        *_pipeline_tables(staged),
        _table("errors", errors, unit=report.unit),
        *(_id_table(report, kind) for kind in ID_TABLES),
        _table("extraction", gaps),
        _evals_table(report),
    ]
    return [table for table in tables if table.rows]


def _figure(value: float | None, form: str = ".3f") -> str:
    return "n/a" if value is None else format(value, form)


def _pipeline_tables(summaries: list[StageSummary]) -> list[Table]:
    steps, cuts = [], []
    for s, losses in [(s, s.pipeline) for s in summaries if s.pipeline is not None]:
        for step in losses.steps:
            figures = percent(step.recall), _figure(step.mrr), _figure(step.ndcg)
            lost = step.lost, percent(step.lost_share)
            steps.append(_row(s, step.step, *lost, *figures, step.runs))
        cut = losses.context
        lost = cut.lost, percent(cut.share)
        steps.append(_row(s, "context", *lost, "", "", "", losses.runs))
        median = _figure(cut.median_last_rank, ".1f").removesuffix(".0")
        cuts.append(_row(s, cut.lost, median, cut.near_the_cut))
    return [_table("pipeline", steps), _table("cut", cuts)]


def _evals_table(report: Report) -> Table:
    logs = {log.path: log for log in report.logs}
    rows, notes = [], []
    for e in report.evals:
        samples = sum(logs[path].samples for path in e.logs)
        no_score = sum(logs[path].samples_without_tracegrade_score for path in e.logs)
        counts = e.epochs, samples, no_score
        rows.append([e.label, e.task, e.model, e.status, *map(str, counts)])
        many = f"{len(e.logs)} parts, {e.logs[0]} to {e.logs[-1]}"
        notes.append(f"{e.label}: {many if len(e.logs) > 2 else ' and '.join(e.logs)}")
    caption = (
        "samples: sample-epochs in its logs. no score: samples with no "
        "tracegrade score, such as one that errored before scoring. An eval "
        "is one log, the newest of a retried eval, or the parts of a run "
        "`tracegrade score` split; its logs are listed below."
    )
    if note := superseded_note(report.superseded):
        superseded = ", ".join(Path(s.path).name for s in report.superseded)
        caption += f" {note[0].upper()}{note[1:]}: {superseded}."
    columns = ["eval", "task", "model", "status", "epochs", "samples", "no score"]
    return Table("evals", "Evals read", caption, columns, rows, notes=notes)


def ranked_ids(
    report: Report, kind: str
) -> list[tuple[Summary, list[tuple[str, int, int]], int]]:
    """Each row's top `kind` IDs as (id, count, of), and distinct count."""
    found = []
    for s in report.stage_diagnosis if kind == "missed" else report.ordered_extraction:
        # An invented ID is in no source: it is counted of all itemised answers.
        itemised = [s.itemised] if isinstance(s, ExtractionSummary) else []
        ids = [(*astuple(i), *itemised)[:3] for i in getattr(s, kind)]
        found.append((s, ids, getattr(s, f"distinct_{kind}")))
    return found


def _id_table(report: Report, kind: str) -> Table:
    rankings = ranked_ids(report, kind)
    rows = [
        _row(s, show_id(i), count, of, percent(count / of))
        for s, ids, _ in rankings
        for i, count, of in ids
    ]
    distinct = "; ".join(f"{n} in {eval_label(s)}" for s, _, n in rankings)
    distinct = f" Distinct IDs ever {kind}: {distinct}."
    return _table(kind, rows, top=report.top, distinct=distinct)
