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
"""

import argparse
import json
import sys
import time
from pathlib import Path

from bench.load_script import load
from bench.outputs import check_out, write_atomic
from bench.variants import discover, scripts
from studies.envs import env_problem

# What each algorithm's search tunes on which environment: the scripts' own Args names, and Optuna's ranges. No
# parameter changes a shape, so a batch of configurations can be one vmapped program.
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
            "target_network_frequency": ("int", 100, 2000, True),
        },
    },
}


def suggest(trial, name: str, kind: str, low, high, log: bool):
    return (trial.suggest_float if kind == "float" else trial.suggest_int)(name, low, high, log=log)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithm", default="ppo", help=f"one of {', '.join(SPACES)}")
    parser.add_argument("--variant", default="jax_linen", help="a script of the algorithm: ALGORITHM_VARIANT.py")
    parser.add_argument("--trials", type=int, default=8, help="completed trials the study ends with")
    parser.add_argument("--params", help="a comma-separated subset of the algorithm's parameters (default: all)")
    parser.add_argument("--total-timesteps", type=int, help="each trial's budget (default: the algorithm's)")
    parser.add_argument("--seed", type=int, default=1, help="the sampler's seed and every trial's")
    parser.add_argument("--out", required=True, help="the study's directory")
    a = parser.parse_args(argv)

    def refuse(problem: str) -> int:
        print(f"error: {problem}", file=sys.stderr)
        return 2

    if a.algorithm not in SPACES:
        return refuse(f"--algorithm must be one of {', '.join(SPACES)}")
    space = SPACES[a.algorithm]
    offered = [v.name for v in scripts(discover(algorithm=a.algorithm))]
    if a.variant not in offered:
        return refuse(f"--variant must be one of {', '.join(offered)} for {a.algorithm}")
    if a.trials < 1:
        return refuse("--trials must be at least 1")
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

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    study = optuna.create_study(
        study_name=f"{a.algorithm}-{a.variant}-{space['env_id']}",
        storage=f"sqlite:///{out / 'study.db'}",
        direction="maximize",
        load_if_exists=True,
    )
    # A seeded sampler made again on resume would repeat its first suggestions (its random start draws anew from the
    # seed): seeded with the seed plus the trials the study holds, a resumed search goes on to new configurations, the
    # same ones for the same interruptions.
    study.sampler = optuna.samplers.TPESampler(seed=a.seed + len(study.trials))
    module = load(f"{a.algorithm}_{a.variant}.py", f"benchback_search_{a.algorithm}_{a.variant}")
    fixed = dict(
        env_id=space["env_id"],
        total_timesteps=a.total_timesteps or space["total_timesteps"],
        seed=a.seed,
        tensorboard=False,
        quiet=True,
    )
    started = time.perf_counter()

    def objective(trial) -> float:
        suggested = {name: suggest(trial, name, *spec) for name, spec in params.items()}
        begun = time.perf_counter()
        record = module.train(module.Args(**fixed, **suggested))
        seconds = time.perf_counter() - begun
        value = record["final_return"]
        if value is None:  # no episode ended in the run's last tenth: nothing to compare
            raise optuna.TrialPruned("no episode ended in the last tenth of the run")
        trial.set_user_attr("seconds", seconds)
        record = {**record, "search": {"trial": trial.number, "params": suggested, "seconds": seconds}}
        write_atomic(out / "trials" / f"trial-{trial.number:04d}.json", json.dumps(record) + "\n")
        return value

    def progress(study, trial) -> None:
        done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
        mean = (time.perf_counter() - started) / max(1, len(done) - before)
        left = max(0, a.trials - len(done)) * mean
        best = f"best {study.best_value:.1f}" if done else "none completed"
        print(
            f"trial {trial.number}: {trial.state.name.lower()} {trial.value}; {len(done)}/{a.trials}, {best}, about {left / 60:.0f} min left",
            flush=True,
        )
        write_atomic(out / "search.json", json.dumps(summary(study, optuna), indent=1) + "\n")

    before = sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    if before:
        print(f"resuming {study.study_name}: {before} of {a.trials} trials completed", flush=True)
    # as many trials as are missing, once: a pruned trial (no episode ended late in its run) is not retried here, or a
    # budget too small for any episode would loop for ever; the same command again tries the ones still missing
    study.optimize(objective, n_trials=a.trials - before, callbacks=[progress])
    if (missing := a.trials - sum(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)) > 0:
        print(f"{missing} trials pruned (no episode ended in the last tenth of their runs): run again to replace them")
    return 0


def summary(study, optuna) -> dict:
    """The completed trials in order, with the best value found so far after each and the seconds they took."""
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    best, rows = float("-inf"), []
    for t in done:
        best = max(best, t.value)
        rows.append({"trial": t.number, "value": t.value, "best": best, "seconds": t.user_attrs.get("seconds"), **t.params})
    return {"study": study.study_name, "completed": len(done), "trials": rows}


if __name__ == "__main__":
    sys.exit(main())
