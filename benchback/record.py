"""A run's record: the progress line, TensorBoard, the timings and the JSON record (schema 2, docs/record.md), written
atomically. A script times each iteration in `with log.timed(guards):`, hands its metrics to log.iteration and ends
with log.record; logged and torch_logged compute what the log shows of a PPO iteration, on the device.
"""

import contextlib
import dataclasses
import importlib.metadata
import json
import math
import os
import platform
import resource
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.plugins.text.summary_v2 import text_pb
from tensorboard.summary import Writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from benchback import checks, compiles, gymnax_envs, machine


class Log:
    """The untimed bookkeeping of the iterations: plan and progress lines, TensorBoard, the timings, the JSON record.
    A script times each iteration in `with log.timed(guards):` and hands its metrics, on the host, to log.iteration.
    devices: {"jax": jax's device} and in the torch scripts "torch": torch's; libraries: those the record gives versions of.
    """

    def __init__(
        self,
        args,
        variant: str,
        devices: dict,
        libraries: tuple,
        num_iterations: int,
        start: float,
        steps_per_iteration: Optional[int] = None,
        grad_steps: Optional[int] = None,
    ):
        """steps_per_iteration: each env's steps in an iteration, and grad_steps: the run's gradient steps; by default
        PPO's (num_steps; update_epochs * num_minibatches an iteration), an off-policy script names its own."""
        if "jax" not in compiles.COUNTING:  # a record's compile count would be 0 whatever compiled
            raise RuntimeError("compiles.count_compiles() was not called before the Log: the record would count nothing")
        self.args, self.variant, self.num_iterations, self.start = args, variant, num_iterations, start
        self.steps_per_iteration = args.num_steps if steps_per_iteration is None else steps_per_iteration
        self.grad_steps = num_iterations * args.update_epochs * args.num_minibatches if grad_steps is None else grad_steps
        self.devices, self.libraries = devices, libraries
        device = devices.get("torch", devices["jax"])
        self.commit = machine.run_quietly("git", "rev-parse", "HEAD")  # now, not at the end: the checkout may move
        self.durations, self.phases, self.finished, self.split = [], [], [], None
        self.envs = "" if getattr(args, "env_backend", "gymnax") == "gymnax" else f"+{args.env_backend}"  # if not gymnax
        run = f"runs/{args.env_id}__{args.exp_name}{self.envs}__{args.seed}__{int(time.time())}"
        self.writer = Writer(run) if args.tensorboard else None
        if self.writer:  # the hyperparameters as a text summary, as CleanRL writes them
            table = "\n".join(["|param|value|", "|-|-|", *(f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items())])
            text = EventFileWriter(run)
            text.add_event(Event(wall_time=time.time(), step=0, summary=text_pb("hyperparameters", table)))
            text.close()
        if not args.quiet:
            plan = f"{num_iterations} iterations of {args.num_envs} envs x {self.steps_per_iteration} steps"
            print(f"{variant}{self.envs} on {device}: {args.env_id}, hidden {args.hidden}, {plan}")
        self.setup_duration = time.perf_counter() - start

    @contextlib.contextmanager
    def timed(self, guards: contextlib.AbstractContextManager):
        """Time one iteration, under the script's guards (what it may not do while timed), to the wait that ends it
        inside; log.rollout_done(), where --sync-timing waits after the rollout, ends the rollout's phase."""
        self.split = None
        t0 = time.perf_counter()
        with guards:
            yield
        end = time.perf_counter()
        self.durations.append(end - t0)
        self.phases.append((self.split - t0, end - self.split) if self.split else None)

    def rollout_done(self) -> None:
        self.split = time.perf_counter()

    def iteration(self, metrics: dict):
        """The iteration just timed. metrics: a number each, or a number per seed (--num-seeds); shown as the mean over
        seeds."""
        self.finished.append((np.atleast_1d(metrics["return_sum"]), np.atleast_1d(metrics["episodes"])))  # per seed
        metrics = {
            name: np.sum(value) if name in ("episodes", "return_sum", "length_sum") else np.mean(value)
            for name, value in metrics.items()
        }
        episodes = int(metrics["episodes"])
        mean_return = float(metrics["return_sum"]) / episodes if episodes else None
        done = len(self.durations)
        step = done * self.args.num_envs * self.steps_per_iteration
        sps = int(step * len(self.finished[-1][0]) / sum(self.durations))  # the steps of every seed
        if self.writer:
            if episodes:
                self.writer.add_scalar("charts/episodic_return", mean_return, step)
                self.writer.add_scalar("charts/episodic_length", float(metrics["length_sum"]) / episodes, step)
            self.writer.add_scalar("charts/SPS", sps, step)
            if "learning_rate" in metrics:  # PPO's; SAC's rates are constant
                self.writer.add_scalar("charts/learning_rate", metrics["learning_rate"], step)
            for name in metrics.keys() - {"episodes", "return_sum", "length_sum", "learning_rate"}:
                self.writer.add_scalar(f"losses/{name}", metrics[name], step)
        if not self.args.quiet:
            shown = "n/a" if mean_return is None else f"{mean_return:.1f}"
            steady = self.durations[1:]  # iteration 0 compiles: the time left is estimated from the iterations after it
            left = f"~{(self.num_iterations - done) * np.mean(steady):.0f}s left" if steady else "time left: after the next"
            elapsed = time.perf_counter() - self.start
            print(f"iteration {done}/{self.num_iterations}  SPS {sps}  return {shown}  {elapsed:.0f}s, {left}")
        if done == 1:
            self.compiles_after_first = len(compiles.COMPILES)
        self.compiles_at_end = len(
            compiles.COMPILES
        )  # the record counts to here: what builds it later may compile (gymnax.make)

    def record(self, parameters, rollout: Optional[str] = None, extra: Optional[dict] = None) -> dict:
        """The JSON record (schema 2, docs/record.md) of a run that trained `parameters` (every seed's: a pytree of
        arrays, or torch's tensors), whose rollout was `rollout` (scan: the steps in the iteration's program; python: a
        Python loop over them), by default --rollout's. extra: fields a script adds or sets (SAC's random steps)."""
        if self.writer:
            self.writer.close()
        args, libraries = self.args, self.libraries
        libraries += ("craftax",) * args.env_id.startswith("Craftax")
        libraries += ("gymnasium",) * (str(getattr(args, "env_backend", None)).startswith("gymnasium"))
        returns, episodes = (np.array(x, dtype=float) for x in zip(*self.finished))  # (iterations, seeds) each
        per_iteration = [[float(r / n) if n else None for r, n in zip(*seed)] for seed in zip(returns.T, episodes.T)]
        window = final_window(len(returns))
        last = [(r[-window:].sum(), n[-window:].sum()) for r, n in zip(returns.T, episodes.T)]
        final = [float(r / n) if n else None for r, n in last]
        configs = checks.read_configs(args) if getattr(args, "configs", None) else None  # a search's batch
        lanes = returns.shape[1]  # the seeds or configurations trained at once
        one = lanes == 1 and not configs  # one seed: a list of numbers; several, or configurations: a list each
        gpu = machine.gpu_info(self.devices["jax"], self.devices.get("torch"))
        return {
            "schema_version": 2,
            "variant": self.variant,
            "status": "ok",
            "env_id": args.env_id,
            "env_backend": getattr(args, "env_backend", "gymnax"),
            **{name: getattr(args, name, False) for name in ("seed", "matmul_precision", "sync_timing")},  # also in args
            "action_space": gymnax_envs.action_space(args.env_id),
            "normalization": None,  # observations and rewards as the environment gives them, in every variant
            "rollout": rollout or getattr(args, "rollout", "python"),
            "hidden": list(checks.parse_hidden(args.hidden)),
            "args": dataclasses.asdict(args),
            "device": gpu["name"] if gpu else "cpu",
            "devices": {name: str(device) for name, device in self.devices.items()},
            "gpu": gpu,
            "host": platform.node(),
            "cpu": machine.cpu_info(),
            "xla_flags": os.environ.get("XLA_FLAGS"),  # XLA's options (its CPU threads, a GPU's command buffers)
            "peak_host_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux counts KiB
            "versions": {"python": platform.python_version(), **{n: importlib.metadata.version(n) for n in libraries}},
            "git_commit": self.commit,
            "param_count": sum(math.prod(x.shape) for x in jax.tree.leaves(parameters)) // lanes,  # one seed's
            "env_steps": len(self.durations) * args.num_envs * self.steps_per_iteration,
            "grad_steps": self.grad_steps,
            "setup_duration": self.setup_duration,
            "iteration_durations": self.durations,
            "rollout_durations": [phases[0] for phases in self.phases] if getattr(args, "sync_timing", False) else None,
            "update_durations": [phases[1] for phases in self.phases] if getattr(args, "sync_timing", False) else None,
            "total_duration": time.perf_counter() - self.start,
            "compiles_after_first_iteration": self.compiles_at_end - self.compiles_after_first,
            "caches": compiles.compiler_caches(inductor="torch" in self.devices),
            "episodic_return": per_iteration[0] if one else per_iteration,
            "episodes": [int(x) for x in episodes[:, 0]] if one else episodes.T.astype(int).tolist(),
            "final_return": final[0] if one else final,
            **({"configs": configs} if configs else {}),  # final_return's order
            "final_window": window,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        } | (extra or {})


def final_window(iterations: int) -> int:
    """How many of the last iterations final_return averages the episodes of: the last tenth of the run's (equal)
    iterations, so of its timed env steps, and at least one: the end of the run, whatever an iteration's size."""
    return max(1, -(-iterations // 10))


def random_steps_fields(
    args, random_steps: int, random_duration: float, num_iterations: int, ended=None, algorithm: str = "sac"
) -> dict:
    """What an off-policy record adds (SAC's, TD3's: the algorithm's name): the steps of every env taken at random before learning, timed apart
    (random_duration, their compilation included), env_steps, theirs and the iterations' together, and the episodes
    that ended among the random steps: how many, their mean return (the return of random actions, which learning must
    beat; None where none ended). ended: those episodes, an EpisodeStats per step (JAX's) or a tally's sums (torch's)."""
    learned = num_iterations * args.num_envs * args.steps_per_iteration
    random = random_steps * args.num_envs
    lanes = len(checks.read_configs(args)) if getattr(args, "configs", None) else 1  # a search's batch: one's alone
    if ended is None:
        episodes, return_sum = 0, 0.0
    elif isinstance(ended, gymnax_envs.EpisodeStats):
        episodes, return_sum = int((np.asarray(ended.lengths) > 0).sum()), float(np.asarray(ended.returns).sum())
        episodes, return_sum = episodes // lanes, return_sum / lanes  # a search's configurations step alike at random
    else:
        episodes, return_sum = int(ended["episodes"]), float(ended["return_sum"])
    return {
        "algorithm": algorithm,
        "random_steps": random,
        "random_duration": random_duration,
        "random_episodes": episodes,
        "random_return": return_sum / episodes if episodes else None,
        "env_steps": random + learned,
    }


def logged(traj, values, returns, learning_rate) -> dict:
    """What the log shows of a JAX iteration, computed in its program: how many episodes ended, their returns and
    lengths summed, the learning rate, and how much of the returns' variance the critic explains."""
    episodes, finished = jnp.logical_or(traj.terminated, traj.truncated).sum(), traj.finished
    stats = dict(episodes=episodes, return_sum=finished.returns.sum(), length_sum=finished.lengths.sum())
    return stats | dict(learning_rate=learning_rate, explained_variance=1 - jnp.var(returns - values) / jnp.var(returns))


def torch_logged(traj, values, returns) -> dict:
    """What the log shows of a torch iteration, computed on the device: how many episodes ended, their returns and
    lengths summed, and how much of the returns' variance the critic explains."""
    episodes, finished = (traj.terminated | traj.truncated).sum(), traj.finished
    stats = dict(episodes=episodes, return_sum=finished.returns.sum(), length_sum=finished.lengths.sum())
    return stats | dict(explained_variance=1 - (returns - values).var(correction=0) / returns.var(correction=0))


def torch_fetched(metrics: dict) -> dict:
    """A torch iteration's metrics on the host, in one read of the device."""
    import torch

    if not metrics:  # an iteration without updates (--updates-per-step 0) has none
        return {}
    return dict(zip(metrics, torch.stack([x.float() for x in metrics.values()]).tolist()))


def write_json_atomic(path: str, record: dict) -> None:
    """Write a temporary file beside `path`, then rename it: readers never see half a file."""
    temporary = os.path.join(os.path.dirname(os.path.abspath(path)), f".tmp-{os.getpid()}.json")
    os.makedirs(os.path.dirname(temporary), exist_ok=True)
    try:
        with open(temporary, "w") as f:
            json.dump(record, f, indent=1)
        os.replace(temporary, path)
    except BaseException:  # a disk that filled during the run, a Ctrl-C: no half file left behind
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
