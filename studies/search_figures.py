"""The figures of studies.search's studies: the best return found against wall-clock time, a line per study (the way
it ran: one trial at a time, workers, or batches), and each study's own Optuna figures (its optimization history, and
its parameters' importances by PED-ANOVA, which needs no scikit-learn); and ways.md, a row per study: its seconds, its
trials an hour, when its first trial reached --bar and how many did.

    python -m studies.search_figures runs/search-a runs/search-b --out results/studies/search-best
"""

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench.outputs import check_out

BEST = "best-against-time.png"


def ways(found: list, bar: float) -> str:
    """ways.md: a row per study, from its search.json."""
    lines = [
        f"| way | trials | seconds | trials an hour | first trial at {bar:g} or more | trials at {bar:g} or more | best |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for _, study in found:
        rows = study["trials"]
        seconds = rows[-1]["wall_seconds"]
        reached = [r["wall_seconds"] for r in rows if r["value"] >= bar]
        first = f"{min(reached):.0f} s" if reached else "none"
        lines.append(
            f"| {label(study, rows)} | {len(rows)} | {seconds:.0f} | {3600 * len(rows) / seconds:,.0f} | {first}"
            f" | {len(reached)} | {max(r['value'] for r in rows):.1f} |"
        )
    return "\n".join(lines) + "\n"


def label(study: dict, rows: list) -> str:
    """The way a study ran, from its trials: '<study>, batches of N', ', N workers' or ', one at a time'."""
    name = "-".join(study["study"].split("-", 2)[:2])  # ALGORITHM-VARIANT-ENV_ID: the environment left to the title
    batches = {r.get("batch") for r in rows if r.get("batch") is not None}
    workers = {r.get("worker") for r in rows if r.get("worker") is not None}
    if batches:
        return f"{name}, batches of {round(len(rows) / len(batches))}"
    return f"{name}, {len(workers)} workers" if len(workers) > 1 else f"{name}, one at a time"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("studies", nargs="+", help="studies.search's OUT directories")
    parser.add_argument("--out", required=True, help="where the figures go")
    parser.add_argument("--bar", type=float, default=475.0, help="the return ways.md counts trials reaching")
    a = parser.parse_args(argv)
    found = []
    for directory in map(Path, a.studies):
        try:
            study = json.loads((directory / "search.json").read_text())
        except (OSError, ValueError) as e:
            print(f"error: {directory / 'search.json'} cannot be read ({e})", file=sys.stderr)
            return 2
        if not study["trials"]:
            print(f"error: {directory} holds no completed trial", file=sys.stderr)
            return 2
        found.append((directory, study))
    check_out(a.out, directory=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna

    Path(a.out).mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".tmp-search-figures-", dir=a.out))
    try:
        fig, ax = plt.subplots(figsize=(7, 4.4))
        for _, study in found:
            rows = study["trials"]
            minutes = [r["wall_seconds"] / 60 for r in rows]
            (line,) = ax.step([0] + minutes, [None] + [r["best"] for r in rows], where="post", label=label(study, rows))
            # each trial as it completed: how fast a way runs trials shows even where every best is the same
            ax.plot(minutes, [r["value"] for r in rows], "o", ms=3, alpha=0.45, color=line.get_color())
        ax.set_xlabel("wall-clock minutes since the search began (compilation included)")
        ax.set_ylabel("final return: best so far (line), each trial (dots)")
        ax.set_title(f"Best configuration found against time: {found[0][1]['study'].split('-', 2)[2]}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.savefig(stage / BEST, dpi=120, bbox_inches="tight")
        plt.close(fig)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        for directory, study in found:
            loaded = optuna.load_study(study_name=study["study"], storage=f"sqlite:///{directory / 'study.db'}")
            name = label(study, study["trials"]).replace(", ", "-").replace(" ", "-")
            ax = optuna.visualization.matplotlib.plot_optimization_history(loaded)
            ax.figure.savefig(stage / f"{name}-history.png", dpi=120, bbox_inches="tight")
            evaluator = optuna.importance.PedAnovaImportanceEvaluator()
            ax = optuna.visualization.matplotlib.plot_param_importances(loaded, evaluator=evaluator)
            ax.figure.savefig(stage / f"{name}-importances.png", dpi=120, bbox_inches="tight")
            plt.close("all")
        (stage / "ways.md").write_text(ways(found, a.bar))
        for path in stage.iterdir():
            path.replace(Path(a.out) / path.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    print(f"wrote {BEST}, ways.md and each study's history and importances in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
