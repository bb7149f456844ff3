"""What a hyperparameter search costs in a framework, Optuna's trials one at a time (the post's way): a seeded TPE
sampler suggests a configuration, the objective trains it with the script's own train() and returns its final return.

    python -m studies.search --algorithm ppo --variant jax_linen --trials 8 --out results/studies/search/ppo-jax_linen

Every trial trains the same seed on the same budget of environment steps, so that the best configurations found in
two frameworks compare too. The study lives in OUT/study.db (Optuna's SQLite storage, `optuna-dashboard
sqlite:///OUT/study.db` reads it): run again with the same flags, it goes on to --trials completed trials; a trial cut
off by an interrupt is left as it was and not counted. Each completed trial's record is OUT/trials/trial-NNNN.json
(the script's record with the suggested parameters); OUT/search.json the study's summary, rewritten after each trial.
A trial's seconds include its compilation: a JAX script compiles its iteration again for every configuration, since
each is a new program (its hyperparameters are constants in it).

With --workers N, N processes share the study (Optuna's way to run trials in parallel: one storage, a sampler each),
each training one configuration at a time, until the study holds --trials completed trials (one more per worker at
most: a worker's trial in flight when the last is told still counts). Which configurations the sampler suggests then
depends on the order in which trials end, so a search with workers does not repeat run for run; one without does.

With --batch N (the JAX scripts), the study asks for N trials at once (study.ask; the sampler a constant liar, which
counts the trials in flight as bad so that the N differ), the script trains the N configurations as one vmapped
program from the same seed (its --configs), and the study is told each one's final return. A batch compiles once for
its N configurations; its record is OUT/trials/batch-NNNN.json, each trial's row naming its batch.
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench.load_script import load
from bench.outputs import check_out, write_atomic
from bench.variants import discover, scripts
from studies.envs import env_problem

# What each algorithm's search tunes on which environment: the scripts' own Args names, and Optuna's ranges (kind, low,
# high, log-uniform, and for a whole number its step). No parameter changes a shape, so a batch of configurations can
# be one vmapped program.
SPACES = {
    "ppo": {
        "env_id": "CartPole-v1",
        "total_timesteps": 204_800,  # 25 of the script's iterations (32 envs x 256 steps)
        "params": {
            "learning_rate": ("float", 1e-4, 1e-2, True),
            "gamma": ("float", 0.9, 0.999, False),
            "gae_lambda": ("float", 0.8, 1.0, False),
            "clip_coef": ("float", 0.1, 0.3, False),
        },
    },
    "dqn": {
        "env_id": "FourRooms-misc",
        "total_timesteps": 100_000,
        "params": {
            "learning_rate": ("float", 1e-4, 1e-2, True),
            "gamma": ("float", 0.9, 0.999, False),
            "exploration_fraction": ("float", 0.1, 0.9, False),
            # steps of the env, a whole number of train_frequency's groups (Optuna's step and log do not combine)
            "target_network_frequency": ("int", 100, 2000, False, 10),
        },
    },
}


def drawn(algorithm: str, n: int, seed: int = 0) -> list:
    """n configurations of the algorithm's space drawn at random (log-uniform where the space says so), as a sampler's
    first suggestions are: the search preset's batches (studies/search_configs/, written by `--draw N`)."""
    rng, configs = np.random.default_rng(seed), []
    for _ in range(n):
        config = {}
        for name, (kind, low, high, log, *step) in SPACES[algorithm]["params"].items():
            value = float(np.exp(rng.uniform(np.log(low), np.log(high))) if log else rng.uniform(low, high))
            whole = (step or [1])[0]  # a whole number: the nearest multiple of its step
            config[name] = round(value / whole) * whole if kind == "int" else value
        configs.append(config)
    return configs


def configs_file(algorithm: str, n: int) -> Path:
    """Where the search preset's batch of n configurations of the algorithm is kept."""
    return Path(__file__).resolve().parent / "search_configs" / f"{algorithm}-{SPACES[algorithm]['env_id']}-{n:03d}.json"


def suggest(trial, name: str, kind: str, low, high, log: bool, step: int = 1):
    if kind == "float":
        return trial.suggest_float(name, low, high, log=log)
    return trial.suggest_int(name, low, high, log=log, step=step)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithm", default="ppo", help=f"one of {', '.join(SPACES)}")
    parser.add_argument("--variant", default="jax_linen", help="a script of the algorithm: ALGORITHM_VARIANT.py")
    parser.add_argument("--trials", type=int, default=8, help="completed trials the study ends with")
    parser.add_argument("--params", help="a comma-separated subset of the algorithm's parameters (default: all)")
    parser.add_argument("--total-timesteps", type=int, help="each trial's budget (default: the algorithm's)")
    parser.add_argument("--seed", type=int, default=1, help="the sampler's seed and every trial's")
    parser.add_argument("--workers", type=int, default=1, help="processes training trials at once, sharing the study")
    parser.add_argument("--batch", type=int, default=1, help="trials trained at once in one vmapped program (JAX)")
    parser.add_argument("--out", help="the study's directory")
    parser.add_argument("--draw", type=int, help="write the search preset's batch of N random configurations, and stop")
    a = parser.parse_args(argv)

    def refuse(problem: str) -> int:
        print(f"error: {problem}", file=sys.stderr)
        return 2

    if a.algorithm not in SPACES:
        return refuse(f"--algorithm must be one of {', '.join(SPACES)}")
    if a.draw is not None:  # the preset's configurations, drawn once and kept in the repository
        if a.draw < 1:
            return refuse("--draw must be at least 1")
        write_atomic(configs_file(a.algorithm, a.draw), json.dumps(drawn(a.algorithm, a.draw), indent=1) + "\n")
        print(f"wrote {configs_file(a.algorithm, a.draw)}")
        return 0
    if not a.out:
        return refuse("--out is required: the study's directory")
    space = SPACES[a.algorithm]
    offered = [v.name for v in scripts(discover(algorithm=a.algorithm))]
    if a.variant not in offered:
        return refuse(f"--variant must be one of {', '.join(offered)} for {a.algorithm}")
    if a.trials < 1:
        return refuse("--trials must be at least 1")
    if a.workers < 1:
        return refuse("--workers must be at least 1")
    if a.batch < 1:
        return refuse("--batch must be at least 1")
    batched = [v.name for v in scripts(discover(algorithm=a.algorithm)) if v.configs]
    if a.batch > 1 and a.variant not in batched:
        return refuse(
            f"--batch: {a.variant} trains one configuration at a time; {', '.join(batched) or 'none'} train a batch"
            " (for any script, --workers N trains N at once)"
        )
    if a.batch > 1 and a.workers > 1:
        return refuse("--batch and --workers do not combine: one process trains a batch on every core")
    if a.total_timesteps is not None and a.total_timesteps < 1:
        return refuse("--total-timesteps must be at least 1")
    params = space["params"]
    if a.params:
        names = a.params.split(",")
        if unknown := [n for n in names if n not in params]:
            return refuse(f"--params: {', '.join(unknown)} not among {', '.join(params)}")
        params = {n: params[n] for n in names}
    check_out(a.out, directory=True)  # before the environment's check, which imports gymnax
    if problem := env_problem(space["env_id"]):
        return refuse(problem)

    Path(a.out).mkdir(parents=True, exist_ok=True)
    before = completed(open_study(a))
    if before:
        print(f"resuming {a.algorithm}-{a.variant}: {before} of {a.trials} trials completed", flush=True)
    if a.batch > 1:
        search_batches(a, params)
    elif a.workers == 1:
        search(a, params, worker=0)
    else:  # spawned, not forked: a forked child would inherit the parent's JAX or torch runtime threads mid-state
        context = multiprocessing.get_context("spawn")
        workers = [context.Process(target=search, args=(a, params, k)) for k in range(a.workers)]
        for w in workers:
            w.start()
        try:
            for w in workers:
                w.join()
        finally:  # an interrupt stops every worker; their trials in flight are left unfinished, as one alone's
            for w in workers:
                w.terminate()
        if failed := [k for k, w in enumerate(workers) if w.exitcode != 0]:
            print(f"error: workers {', '.join(map(str, failed))} failed (their messages above)", file=sys.stderr)
            return 1
    import optuna

    study = open_study(a)  # the summary once more, after every worker: theirs may have crossed
    write_atomic(Path(a.out) / "search.json", json.dumps(summary(study, optuna), indent=1) + "\n")
    if (missing := a.trials - completed(study)) > 0:
        print(f"{missing} trials pruned (no episode ended in the last tenth of their runs): run again to replace them")
    return 0


def open_study(a):
    """The study in OUT/study.db, made on first use. SQLite's lock is waited on for up to a minute: workers write to
    it at the ends of their trials, never long."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(
        f"sqlite:///{Path(a.out) / 'study.db'}", engine_kwargs={"connect_args": {"timeout": 60}}
    )
    name = f"{a.algorithm}-{a.variant}-{SPACES[a.algorithm]['env_id']}"
    return optuna.create_study(study_name=name, storage=storage, direction="maximize", load_if_exists=True)


def completed(study) -> int:
    import optuna

    return sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)


def pin(worker: int, workers: int) -> None:
    """A worker on cores of its own (an equal share; with more workers than cores, one core each, taken in turn), set
    before its framework is imported: torch's OpenMP and XLA's thread pools size themselves from this mask, so
    workers do not split one another's matrix products."""
    if not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    share = max(1, len(cores) // workers)
    first = worker * share % len(cores)
    os.sched_setaffinity(0, cores[first : first + share])


def search(a, params: dict, worker: int) -> None:
    """One worker's trials, one configuration at a time, until the study holds --trials completed trials."""
    import optuna

    space, out = SPACES[a.algorithm], Path(a.out)
    if a.workers > 1:
        pin(worker, a.workers)
    study = open_study(a)
    # A seeded sampler made again on resume would repeat its first suggestions (its random start draws anew from the
    # seed): seeded with the seed plus the trials the study holds, a resumed search goes on to new configurations, the
    # same ones for the same interruptions. Workers draw apart: each its own stream of the seed's.
    held = len(study.trials)
    seed = a.seed + held if a.workers == 1 else int(np.random.SeedSequence([a.seed, held, worker]).generate_state(1)[0])
    study.sampler = optuna.samplers.TPESampler(seed=seed)
    module = load(f"{a.algorithm}_{a.variant}.py", f"benchback_search_{a.algorithm}_{a.variant}")
    fixed = dict(
        env_id=space["env_id"],
        total_timesteps=a.total_timesteps or space["total_timesteps"],
        seed=a.seed,
        tensorboard=False,
        quiet=True,
    )
    started, before = time.perf_counter(), completed(study)
    who = f"worker {worker}: " if a.workers > 1 else ""

    def objective(trial) -> float:
        suggested = {name: suggest(trial, name, *spec) for name, spec in params.items()}
        begun = time.perf_counter()
        record = module.train(module.Args(**fixed, **suggested))
        seconds = time.perf_counter() - begun
        value = record["final_return"]
        if value is None:  # no episode ended in the run's last tenth: nothing to compare
            raise optuna.TrialPruned("no episode ended in the last tenth of the run")
        trial.set_user_attr("seconds", seconds)
        trial.set_user_attr("worker", worker)
        record = {**record, "search": {"trial": trial.number, "params": suggested, "seconds": seconds, "worker": worker}}
        write_atomic(out / "trials" / f"trial-{trial.number:04d}.json", json.dumps(record) + "\n")
        return value

    def progress(study, trial) -> None:
        done = completed(study)
        mean = (time.perf_counter() - started) / max(1, done - before)  # the study's pace, every worker's trials
        left = max(0, a.trials - done) * mean
        best = f"best {study.best_value:.1f}" if done else "none completed"
        print(
            f"{who}trial {trial.number}: {trial.state.name.lower()} {trial.value}; {done}/{a.trials}, {best}, about {left / 60:.0f} min left",
            flush=True,
        )
        write_atomic(out / "search.json", json.dumps(summary(study, optuna), indent=1) + "\n")

    # as many trials as are missing, once: a pruned trial (no episode ended late in its run) is not retried here, or a
    # budget too small for any episode would loop for ever; the same command again tries the ones still missing. With
    # workers, each stops once the study holds --trials completed trials, whoever completed them.
    stop = optuna.study.MaxTrialsCallback(a.trials, states=(optuna.trial.TrialState.COMPLETE,))
    study.optimize(objective, n_trials=max(0, a.trials - before), callbacks=[progress, stop])


def search_batches(a, params: dict) -> None:
    """Trials --batch at a time, until the study holds --trials completed ones: the study asks for a batch, the script
    trains its configurations as one program (--configs), and the study is told each one's final return."""
    import optuna

    space, out = SPACES[a.algorithm], Path(a.out)
    study = open_study(a)
    # seeded as search()'s; a constant liar: the trials asked for and not yet told count as the worst so far, so that
    # the batch's suggestions spread out rather than repeat the sampler's one best guess
    study.sampler = optuna.samplers.TPESampler(seed=a.seed + len(study.trials), constant_liar=True)
    module = load(f"{a.algorithm}_{a.variant}.py", f"benchback_search_{a.algorithm}_{a.variant}")
    started, before = time.perf_counter(), completed(study)
    while completed(study) < a.trials:
        trials = [study.ask() for _ in range(a.batch)]  # a whole batch, the last too: one program's shape
        configs = [{name: suggest(t, name, *spec) for name, spec in params.items()} for t in trials]
        number = trials[0].number
        path = out / "batches" / f"batch-{number:04d}.json"  # the script's --configs
        write_atomic(path, json.dumps(configs) + "\n")
        begun = time.perf_counter()
        fixed = dict(env_id=space["env_id"], total_timesteps=a.total_timesteps or space["total_timesteps"], seed=a.seed)
        record = module.train(module.Args(**fixed, configs=str(path), tensorboard=False, quiet=True))
        seconds = time.perf_counter() - begun
        record = {**record, "search": {"trials": [t.number for t in trials], "seconds": seconds}}
        write_atomic(out / "trials" / f"batch-{number:04d}.json", json.dumps(record) + "\n")
        for trial, value in zip(trials, record["final_return"]):
            trial.set_user_attr("seconds", seconds)
            trial.set_user_attr("batch", number)
            if value is None:  # no episode ended in the run's last tenth: nothing to compare
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            else:
                study.tell(trial, value)
        done = completed(study)
        mean = (time.perf_counter() - started) / max(1, done - before)
        best = f"best {study.best_value:.1f}" if done else "none completed"
        left = max(0, a.trials - done) * mean
        print(
            f"batch {number}: {len(trials)} trials in {seconds:.0f} s; {done}/{a.trials}, {best}, about {left / 60:.0f} min left",
            flush=True,
        )
        write_atomic(out / "search.json", json.dumps(summary(study, optuna), indent=1) + "\n")
        if all(value is None for value in record["final_return"]):
            break  # every trial pruned: the budget ends no episode, and another batch would end none either


def summary(study, optuna) -> dict:
    """The completed trials in the order they completed, with the best value found so far after each, the seconds
    their training took and when they completed: wall seconds since the study's first trial began (an interrupted
    search's pause included)."""
    done = sorted(
        (t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE), key=lambda t: (t.datetime_complete, t.number)
    )
    began = min((t.datetime_start for t in study.trials if t.datetime_start), default=None)
    best, rows = float("-inf"), []
    for t in done:
        best = max(best, t.value)
        wall = (t.datetime_complete - began).total_seconds()
        rows.append({"trial": t.number, "value": t.value, "best": best, "wall_seconds": wall, **t.user_attrs, **t.params})
    return {"study": study.study_name, "completed": len(done), "trials": rows}


if __name__ == "__main__":
    sys.exit(main())
