"""The front page's answer: each variant's steady iteration over jax_linen's, one column per question (a model size over
the 12 gymnax environments, an expensive environment, a GPU), each column computed from the records of the sweeps
that measured it, as plot.py computes its answer (report.timing: a ratio per block, the geometric mean over the blocks,
its bootstrap interval), so that every cell is the number the source's own summary.md gives (where a source ran
environments beyond the column's, its summary.md pools them too; the column does not). Writes answer.md (the
table README.md shows, and where each column comes from) and answer.png, made apart and moved in once all are made (the
page's copy too); what it cannot read, every file and folder of it, is an error (exit 2, nothing written).

    python -m report.front --readme README.md                # results/KIND/SET/records -> results/answer, and README's copy
    python -m report.front --records DIR --out DIR             # DIR/KIND/SET/records
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from bench.outputs import check_out
from bench.presets import STUDY_ENVS
from report import offpolicy, search
from report.records import DECLARED, VARIANTS, Unreadable, load_runs, machine, ordered, warm
from report.tables import table
from report.timing import REFERENCE, compare, memory

ROOT = Path(__file__).resolve().parent.parent
GPU_ONLY = {v.name for v in DECLARED if v.gpu_only}


@dataclass(frozen=True)
class Column:
    title: str
    size: str  # s, m or l
    sources: tuple  # sets (results/KIND/SET, their runs in records/); a variant's cell comes from the first with an interval
    env: Optional[str] = None  # one environment; None: those of `envs` that the source ran
    # the source of Linen's seconds in the header and, in the first column, of every variant's per-run statistics, so
    # that those come from one machine; None: the first source that ran Linen
    base: Optional[str] = None
    # where env is None, the environments the column pools and its header counts: the study's 12 gymnax ones, discrete
    # actions all; a source's other runs (Pendulum-v1's continuous actions, say) are not of this column
    envs: tuple = tuple(STUDY_ENVS)


# The README's table, column by column. Two sources where one sweep timed the torch variants beside Linen and another
# the JAX ones: a ratio is only ever taken within a block, so each sweep brings its own Linen. At size s the JAX
# variants' ratios come from the sweep made after their critic moved out of the rollout loop (speed/cpu-s-jax), their
# iteration 0 and memory from the cpu preset's runs, beside torch's on one machine.
COLUMNS = (
    Column("size s (64x64)", "s", ("speed/cpu-s-jax", "speed/cpu", "speed/cpu-nojit"), base="speed/cpu"),
    Column("size m (256x3)", "m", ("speed/cpu-m", "speed/cpu-m-jax")),
    Column("size l (1024x6)", "l", ("speed/cpu-l-12", "speed/cpu-l-12-jax")),
    Column("Craftax-Classic, size s", "s", ("speed/cpu",), env="Craftax-Classic-Symbolic-v1"),
    Column("full Craftax, size s", "s", ("speed/craftax-full", "speed/craftax-full-jax"), env="Craftax-Symbolic-v1"),
    Column("Pendulum-v1 (continuous actions), size s", "s", ("speed/pendulum", "speed/pendulum-nojit"), env="Pendulum-v1"),
    Column("CartPole-v1, size s", "s", ("gpu/h100-preset",), env="CartPole-v1"),
)
FIRST = COLUMNS[0]  # the column whose runs give the last ones: iteration 0 (compilation) and peak memory


class FrontError(ValueError):
    pass


def column_runs(column: Column, runs) -> list:
    """The overall runs of one source that the column reads: of its size, and of its environment or environments."""
    return [
        r
        for r in runs
        if r.experiment == "overall"
        and r.size == column.size
        and (r.env == column.env if column.env else r.env in column.envs)
    ]


def cell(column: Column, variant: str, sources: dict) -> Optional[dict]:
    """The variant's row (report.timing.compare) from the first of the column's sources that gives it an interval, or
    else from the first that gives it a ratio at all; with the source, its machine and its environments. None where no
    source ran it beside the reference."""
    found = []
    for name in column.sources:
        runs = column_runs(column, sources[name])
        row = compare(runs, REFERENCE, variant, "steady", column.size)
        if row:
            mine = [r for r in runs if r.variant == variant]
            found.append({**row, "source": name, "machine": one_machine(runs, name), "runs": mine})
    with_ci = [f for f in found if f["ci_low"] is not None]
    return (with_ci or found or [None])[0]


def one_machine(runs, source: str) -> str:
    """The machine of all the runs a column reads from one source: a ratio pairs any two variants of a block, so a
    source whose blocks, or whose variants, ran on two machines would divide one machine's time by another's."""
    machines = {machine(r.record) for r in runs}
    if len(machines) != 1:
        raise FrontError(f"{source}: the runs a column reads come from {len(machines)} machines: {sorted(machines)}")
    return machines.pop()


def reference(column: Column, sources: dict) -> Optional[dict]:
    """jax_linen's median steady iteration in the column's base source, else in its first source that ran it."""
    for name in [column.base] if column.base else column.sources:
        runs = column_runs(column, sources[name])
        mine = [r for r in runs if r.variant == REFERENCE]
        if mine:
            one_machine(runs, name)
            return {"seconds": float(np.median([r.steady for r in mine])), "source": name, "runs": mine}
    return None


def answer_columns(sources: dict) -> dict:
    """Every column's cells: {"columns": [{"column", "reference", "cells": {variant: row}, "envs", "header"}],
    "variants"}."""
    columns = []
    for column in COLUMNS:
        ref = reference(column, sources)
        if ref is None:
            raise FrontError(f"{column.title}: no {REFERENCE} run in {', '.join(column.sources)}")
        cells = {v: c for v in VARIANTS if v != REFERENCE and (c := cell(column, v, sources))}
        envs = {r.env for c in [ref, *cells.values()] for r in c["runs"]}
        # each variant's runs that the per-run statistics read: the base source's where it ran the variant
        in_base = column_runs(column, sources[column.base]) if column.base else []
        per_run = {v: [r for r in in_base if r.variant == v] or c["runs"] for v, c in [(REFERENCE, ref), *cells.items()]}
        columns.append({"column": column, "reference": ref, "cells": cells, "envs": len(envs), "per_run": per_run})
        columns[-1]["header"] = column_header(columns[-1])
    variants = ordered([REFERENCE, *(v for c in columns for v in c["cells"])], VARIANTS)
    return {"columns": columns, "variants": variants}


# ---------------------------------------------------------------- answer.md
def number(x: float, digits: int = 3) -> str:
    """x to `digits` significant digits, its trailing zeros kept (2.20, 35.0, 0.974), and no exponent (150, 1230)."""
    if abs(x) >= 10**digits:
        return f"{round(x, digits - len(str(int(abs(x))))):.0f}"
    return f"{x:#.{digits}g}".rstrip(".")


def seconds(s: float) -> str:
    return f"{number(s * 1000, 2)} ms" if s < 0.1 else f"{number(s, 2)} s"


def column_header(entry) -> str:
    """A column's header: its title, with how many environments it pools, or on a GPU which one."""
    column, device = entry["column"], entry["reference"]["runs"][0].record["device"]
    title = column.title if column.env else f"{column.title}, {entry['envs']} gymnax environments"
    return title if device == "cpu" else f"GPU ({device}): {title}"


def text(entry, variant: str) -> str:
    """A cell: the multiple of Linen's time and its interval, where fewer environments than the column's, how many."""
    if variant == REFERENCE:
        return f"1 ({seconds(entry['reference']['seconds'])} an iteration)"
    row = entry["cells"].get(variant)
    if row is None:
        return missing(entry, variant)
    envs = len({r.env for r in row["runs"]})
    fewer = f" ({envs} environment{'s' * (envs > 1)})" if envs < entry["envs"] else ""
    interval = f" [{number(row['ci_low'])}, {number(row['ci_high'])}]" if row["ci_low"] is not None else ""
    return number(row["ratio"]) + interval + fewer


def missing(entry, variant: str) -> str:
    on_cpu = entry["reference"]["runs"][0].record["device"] == "cpu"
    return "needs a GPU" if variant in GPU_ONLY and on_cpu else "not run"


def compile_seconds(runs) -> str:
    """The median iteration 0 of the runs that compiled from cold (a run given warm caches loaded its programs)."""
    cold = [r.record["iteration_durations"][0] for r in runs if not warm(r.record)]
    return seconds(float(np.median(cold))) if cold else "not timed from cold"


def peak_memory(runs) -> str:
    rows = memory(runs)  # report.timing's: the median of the records that hold it
    return f"{number(rows[0]['host_mb_median'], 2)} MiB" if rows else "not recorded"


# The last columns: a statistic of the runs behind each variant's cell in the first column
PER_RUN = {f"iteration 0 at {FIRST.size} (compilation)": compile_seconds, f"peak memory at {FIRST.size}": peak_memory}


def per_run(entry, variant: str, statistic) -> str:
    runs = entry["per_run"].get(variant)
    return missing(entry, variant) if runs is None else statistic(runs)


def provenance(entry, base: str) -> str:
    """Where a column comes from: each source, linked to its report (`base`: the results folder from the page), with its
    machine and how many blocks each variant's cell pooled."""
    column, cells = entry["column"], entry["cells"]
    parts = []
    for name in column.sources:
        mine = [v for v in cells if cells[v]["source"] == name]
        if mine or name == entry["reference"]["source"]:
            blocks = ", ".join(f"{v} {cells[v]['n_blocks']}" for v in mine)
            made_on = next(iter({cells[v]["machine"] for v in mine} or {"-"}))
            parts.append(f"[{name}]({base}{name}/report/summary.md) ({made_on}; blocks: {blocks or 'none'})")
    return f"- {column_header(entry)}: " + "; ".join(parts)


def markdown(result: dict, base: str = "../", sources: bool = True) -> str:
    """answer.md; its links to the reports start with `base`, the results folder as seen from the page's folder.
    Without `sources` (README's copy) one link to answer.md stands for the list of where each column comes from."""
    columns = result["columns"]
    first = next(c for c in columns if c["column"] == FIRST)
    rows = [
        [v, *(text(c, v) for c in columns), *(per_run(first, v, statistic) for statistic in PER_RUN.values())]
        for v in result["variants"]
    ]
    head = ["variant", *(column_header(c) for c in columns), *PER_RUN]
    where = (
        " Where each column comes from (a set of results/, its runs in `records/`; linked, its report, with every"
        " environment's cell):"
        if sources
        else f" Where each column comes from, its machine and blocks: [answer.md]({base}answer/answer.md)."
    )
    return "\n".join(
        [
            table(head, rows),
            "",
            "Each cell: the variant's steady iteration (the median of iterations 1-end) over jax_linen's in the same"
            " block of runs, the geometric mean over the blocks and its 95% bootstrap interval; iteration 0 and the"
            " peak of the process's resident memory: the median over the first column's runs of the variant in its base"
            f" set ({FIRST.base or 'its first'}), where it ran there, else over those behind its cell." + where,
            "",
            *([*(provenance(c, base) for c in columns), ""] if sources else []),
        ]
    )


# ---------------------------------------------------------------- the command
# README.md holds a copy of answer.md between these two lines, and of offpolicy.md between its two
MARKERS = re.compile(r"(<!-- answer\.md[^\n]*-->\n\n)(.*?)(<!-- end of answer\.md -->)", re.S)
SAC_MARKERS = re.compile(r"(<!-- offpolicy\.md[^\n]*-->\n\n)(.*?)(<!-- end of offpolicy\.md -->)", re.S)
# Each off-policy algorithm's sets: its sweep (the sac, td3 or dqn preset), then its learn and environments sets
# (sac-learn, sac-envs; td3-learn, td3-envs; dqn-learn), which join its tables where they are there.
OFFPOLICY_SOURCES = {
    "sac": ("speed/sac-cpu-xeon", "learn/sac-pendulum", "learn/sac-envs"),
    "td3": ("speed/td3-cpu", "learn/td3-pendulum", "learn/td3-envs"),
    "dqn": ("speed/dqn-cpu", "learn/dqn-cartpole-fourrooms"),
}


# The search presets' sets, PPO's (search) and DQN's (search-dqn): what a hyperparameter search's trials cost, one
# configuration a run or a batch at once; search.md holds a table of each.
SEARCH_SOURCES = ("speed/search-cpu-xeon", "speed/search-dqn-cpu-xeon")
SEARCH_MARKERS = re.compile(r"(<!-- search\.md[^\n]*-->\n\n)(.*?)(<!-- end of search\.md -->)", re.S)


def with_copy(page: str, made: str, markers=MARKERS, name: str = "answer.md") -> str:
    """page with its copy of answer.md (or of offpolicy.md, with its markers) replaced by `made`."""
    if not markers.search(page):
        raise FrontError(f"no <!-- {name} ... --> and <!-- end of {name} --> lines to put the table between")
    return markers.sub(lambda m: m.group(1) + made + "\n" + m.group(3), page, count=1)


def offpolicy_found(records: Path) -> dict:
    """{algorithm: the names of its sets that are there}, for each algorithm with any; FrontError where an algorithm
    has sets but not its sweep, whose cells its tables are."""
    found = {}
    for algorithm, names in OFFPOLICY_SOURCES.items():
        there = [name for name in names if (records / name / "records").is_dir()]
        if there and there[0] != names[0]:
            raise FrontError(f"no records directory {records / names[0] / 'records'} (the off-policy table's source)")
        if there:
            found[algorithm] = there
    return found


def offpolicy_summary(records: Path, page: Optional[str], learning: bool = True) -> Optional[dict]:
    """{algorithm: its summary (report.offpolicy)} from OFFPOLICY_SOURCES' records, without `learning` the timing
    alone (README's copy); None where no algorithm's sets are there and the page has no place for them. SAC's sweep
    must be there where the page has its place."""
    found = offpolicy_found(records)
    if not found and not (page and SAC_MARKERS.search(page)):
        return None
    if "sac" not in found:
        raise FrontError(
            f"no records directory {records / OFFPOLICY_SOURCES['sac'][0] / 'records'} (the off-policy table's source)"
        )
    summaries = {}
    for algorithm, names in found.items():
        runs, machines = [], {}
        for name in names:
            made, failures = load_runs(records / name / "records")
            if any(f.endswith(": does not parse") for f in failures):
                raise FrontError(f"a record of {records / name / 'records'} does not parse")
            made = [r for r in made if r.record.get("algorithm") == algorithm]
            if made:
                machines[name] = one_machine(made, name)  # a time of one machine is never divided by another's
            runs += made
        try:
            summaries[algorithm] = {**offpolicy.summary(runs, learning), "sources": names, "machines": machines}
        except offpolicy.MixedSettings as e:
            raise FrontError(str(e)) from None
    return summaries


def offpolicy_table(summaries: dict, base: str, learning: bool = True) -> str:
    """offpolicy.md: each algorithm's tables (report.offpolicy) under its name, with where they come from; without
    `learning`, README's copy: the one timing table of every algorithm's cells (report.offpolicy.front_markdown)."""
    links = lambda names: ", ".join(f"[{name}]({base}{name}/report/summary.md)" for name in names)
    if not learning:  # the timing is each algorithm's sweep (its first set); two sweeps may be two machines
        sweep = lambda s: s["sources"][0]
        sets = ", ".join(
            f"[{sweep(s)}]({base}{sweep(s)}/report/summary.md) ({s['machines'][sweep(s)]})" for s in summaries.values()
        )
        return offpolicy.front_markdown(summaries) + f"\nFrom: {sets} (each set's runs in `records/`).\n"
    parts = [
        f"## {offpolicy.ALGORITHMS[algorithm]}\n\n{offpolicy.markdown(s)}\nFrom: {links(s['sources'])} (each set's runs in"
        " `records/`).\n"
        for algorithm, s in summaries.items()
    ]
    return "\n".join(parts)


def search_table(records: Path, page: Optional[str], base: str) -> Optional[str]:
    """search.md: a table of each search set (report.search) and where it comes from; None where no set is there and
    the page has no place for them. FrontError where one set is missing and another there, or the page has a place."""
    folders = [records / source / "records" for source in SEARCH_SOURCES]
    if not any(folder.is_dir() for folder in folders) and not (page and SEARCH_MARKERS.search(page)):
        return None
    tables = []
    for source, folder in zip(SEARCH_SOURCES, folders):
        if not folder.is_dir():
            raise FrontError(f"no records directory {folder} (a search table's source)")
        runs, failures = load_runs(folder)
        if any(f.endswith(": does not parse") for f in failures):
            raise FrontError(f"a record of {folder} does not parse")
        summary = search.search(runs)
        if summary is None:
            raise FrontError(f"no search run in {folder}")
        where = f"[{source}]({base}{source}/report/summary.md) ({one_machine(runs, source)})"
        tables.append(search.front_markdown(summary) + f"\nFrom: {where} (its runs in `records/`).\n")
    return "\n".join(tables)


def load(records: Path) -> dict:
    """{source: its runs} for every source a column names. Raises Unreadable naming every file and folder of every
    source that could not be read, not the first source's alone."""
    names = sorted({name for column in COLUMNS for name in column.sources})
    missing = [name for name in names if not (records / name / "records").is_dir()]
    if missing:
        raise FrontError(f"no records directory {records / missing[0] / 'records'} (every column's source must be there)")
    sources, unreadable = {}, []
    for name in names:
        try:
            runs, failures = load_runs(records / name / "records")
            sources[name] = [r for r in runs if not offpolicy.is_offpolicy(r)]  # a GPU set's SAC runs are offpolicy.md's
        except Unreadable as e:  # the other sources are read still, so that one refusal names all there is to mend
            unreadable.append(str(e))
            continue
        # a record that does not parse would move the answer's numbers in silence: refused, as one that cannot be read
        unreadable += [f"{records / name / 'records' / f}" for f in failures if f.endswith(": does not parse")]
    if unreadable:
        raise Unreadable("; ".join(unreadable))
    return sources


def read(records: Path, readme: Optional[Path]) -> tuple:
    """({source: its runs}, the page's text, None without one), or FrontError naming all that could not be read."""
    problems, sources, page = [], {}, None
    try:
        sources = load(records)
    except Unreadable as e:
        problems.append(str(e))
    if readme is not None:
        try:
            page = readme.read_text()
        except OSError as e:
            problems.append(f"cannot read --readme {readme} ({e.strerror})")
    if problems:
        raise FrontError("; ".join(problems))
    return sources, page


def base(results: Path, page_folder: Path) -> str:
    """The results folder as a page in page_folder links it: "../" from results/answer, "results/" from the root."""
    return Path(os.path.relpath(results.resolve(), page_folder.resolve())).as_posix() + "/"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=Path, default=ROOT / "results", help="the sets' folder (SET/records each)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "answer", help="where answer.md and answer.png go")
    parser.add_argument("--readme", type=Path, help="a page whose copy of answer.md (between its markers) to replace")
    args = parser.parse_args(argv)
    check_out(args.out, "--out", directory=True)
    if args.readme is not None:  # before the work: a page that cannot be written would leave answer.md made alone
        check_out(args.readme, "--readme")
    try:
        sources, page = read(args.records, args.readme)
        if page is not None:  # before the work: a page with no place for the table is refused at once
            with_copy(page, "")
        result = answer_columns(sources)
        made = markdown(result, base(args.records, args.out))
        summary = offpolicy_summary(args.records, page)
        sac = None if summary is None else offpolicy_table(summary, base(args.records, args.out))
        trials = search_table(args.records, page, base(args.records, args.out))
        if page is not None:
            page = with_copy(page, markdown(result, base(args.records, args.readme.parent), sources=False))
            if sac is not None:
                sac_page = offpolicy_table(summary, base(args.records, args.readme.parent), learning=False)
                page = with_copy(page, sac_page, SAC_MARKERS, "offpolicy.md")
            if trials is not None and SEARCH_MARKERS.search(page):
                trials_page = search_table(args.records, page, base(args.records, args.readme.parent))
                page = with_copy(page, trials_page, SEARCH_MARKERS, "search.md")
    except (FrontError, OSError, Unreadable) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    more = {name: text for name, text in (("offpolicy.md", sac), ("search.md", trials)) if text is not None}
    publish(result, made, args.out, args.readme, page, more)
    made = f"{args.out / 'answer.md'}, answer.png" + "".join(f", {name}" for name in more)
    print(f"wrote {made}" + (f", and their copies in {args.readme}" if args.readme else ""))
    return 0


def publish(result: dict, made: str, out: Path, readme: Optional[Path], page: Optional[str], more=None) -> None:
    """answer.md and answer.png made in a temporary folder in `out`, and the page's new text beside it, then all moved
    in, only once all are made: a failure or a Ctrl-C on the way leaves the previous ones whole, and no folder it made."""
    from report.figures import front  # matplotlib only here: the statistics import without it

    absent = [p for p in (*reversed(out.absolute().parents), out.absolute()) if not p.exists()]  # the folders it makes
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".tmp-front-", dir=out))
    staged_page = readme.parent / f".tmp-{os.getpid()}-{readme.name}" if page is not None else None
    try:
        (stage / "answer.md").write_text(made)
        more = more or {}
        for name, text in more.items():  # offpolicy.md
            (stage / name).write_text(text)
        front(result, stage)
        if staged_page is not None:
            staged_page.write_text(page)
        for name in ("answer.md", "answer.png", *more):
            os.replace(stage / name, out / name)
        if staged_page is not None:
            os.replace(staged_page, readme)
    except BaseException:
        if staged_page is not None:
            staged_page.unlink(missing_ok=True)
        if absent:
            shutil.rmtree(absent[0], ignore_errors=True)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
