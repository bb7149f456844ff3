"""What every benchback script does alike to be measured: the checks of its input, the environments' shared pieces, the
progress line and TensorBoard, the JSON record (docs/record.md), atomic writes and the command line.

Nothing here is PPO or a framework's own: each script keeps its algorithm above its harness line, and below it what only
its framework does (what it waits for, how it counts its compilations, its devices and guards). CleanRL keeps what its
scripts share in cleanrl_utils/; this is the same, for measuring. The environments are gymnax's (JAX) in every script,
so this module imports jax; it never imports torch.
"""

import contextlib
import dataclasses
import importlib.metadata
import io
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import time
from typing import NamedTuple, Optional, Sequence

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import tyro
from jax._src.lib import cuda_versions  # the CUDA plugin's version queries (None without one)
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.plugins.text.summary_v2 import text_pb
from tensorboard.summary import Writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter


class UsageError(ValueError):
    """Bad input: reported in one line, exit code 2, nothing written."""


def variant_of(script: str) -> str:
    """A script's variant name: its file name without the algorithm's prefix (ppo_jax_linen.py, sac_jax_linen.py ->
    jax_linen); the record says the algorithm where it is not PPO (random_steps_fields)."""
    return os.path.basename(script)[: -len(".py")].removeprefix("ppo_").removeprefix("sac_")


# ---------------------------------------------------------------- environments
def make_env(env_id: str):
    """gymnax's environment and its parameters, or Craftax's from craftax_gymnax.py (imported for a Craftax id only)."""
    if env_id.startswith("Craftax"):
        import craftax_gymnax

        return craftax_gymnax.make(env_id)
    return gymnax.make(env_id)


class EpisodeStats(NamedTuple):  # per env: the return and length of its episode so far, or of one that just ended
    returns: jax.Array
    lengths: jax.Array


def count_episodes(episode: EpisodeStats, reward, done):
    """After a step: each env's episode so far (0 where one ended), and the episodes that ended (0 where none did)."""
    returns, lengths = episode.returns + reward, episode.lengths + 1
    finished = EpisodeStats(jnp.where(done, returns, 0.0), jnp.where(done, lengths, 0))
    return EpisodeStats(jnp.where(done, 0.0, returns), jnp.where(done, 0, lengths)), finished


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


def clipped(space, action):
    """An action as the environment is stepped with it: continuous ones clipped to the space's bounds, as CleanRL's
    ClipAction wrapper does (gymnax's Reacher-misc and Swimmer-misc do not clip, PointRobot-misc observes the unclipped
    action); the log-probability stays the sample's. Discrete actions are returned as they are."""
    return jnp.clip(action, space.low, space.high) if isinstance(space, gymnax.environments.spaces.Box) else action


def action_space(env_id: str) -> dict:
    """The environment's actions, as the record names them: discrete (how many) or continuous (the shape, the bounds)."""
    if env_id.startswith("Craftax"):  # all discrete; named without building one
        return {"kind": "discrete"}
    env, env_params = make_env(env_id)
    space = env.action_space(env_params)
    if isinstance(space, gymnax.environments.spaces.Discrete):
        return {"kind": "discrete", "n": int(space.n)}
    return {
        "kind": "continuous",
        "shape": list(space.shape),
        "low": np.asarray(space.low).tolist(),
        "high": np.asarray(space.high).tolist(),
    }


def strongly_typed(env_state):
    """gymnax's reset leaves some fields weakly typed (MountainCar's velocity is jnp.array(0.0)) and a step makes them
    strong: a jitted step would trace and compile again on its second call. Strong from the start (Craftax's state also
    holds typed PRNG keys, which have no weak type)."""
    return jax.tree.map(lambda x: jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x, env_state)


# ---------------------------------------------------------------- input checks
def parse_hidden(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or not all(p.isdigit() for p in parts) or min(int(p) for p in parts) <= 0:
        raise UsageError(f"--hidden must be comma-separated positive integers such as 64,64; got {text!r}")
    return tuple(int(p) for p in parts)


def check_writable(path: str) -> None:
    """--json-out must name a file that can be written: found out before the run, not after it. The tools' rule
    (bench/outputs.py): no empty path, no directory's name ("new/"), no file its mode makes read-only."""
    if not path:
        raise UsageError("--json-out is empty; name a file, such as 'run.json'")
    if os.path.isdir(path) or path.endswith(os.sep):  # "new/" names a directory, absent or not
        what = "is" if os.path.isdir(path) else "names"
        raise UsageError(
            f"--json-out {path!r} {what} a directory; name a file in it, such as {os.path.join(path, 'run.json')!r}"
        )
    if os.path.exists(path) and not (os.access(path, os.W_OK) and os.stat(path).st_mode & 0o222):  # root: the mode
        raise UsageError(f"--json-out {path!r} is read-only: make it writable, or name another file")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(parent):  # write_json_atomic creates the missing directories below the nearest that exists
        if os.path.exists(parent):
            raise UsageError(f"--json-out {path!r} cannot be written: {parent!r} is a file")
        parent = os.path.dirname(parent)
    probe = os.path.join(parent, f".tmp-{os.getpid()}.json")
    try:
        open(probe, "w").close()
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"--json-out {path!r} cannot be written: {e.strerror} in {parent!r}") from None


SEEDS = 2**32  # the seeds every generator here takes (numpy's, jax's keys and torch's alike): 0 .. 2**32 - 1


def check_limits(args) -> None:
    """A seed every generator takes, and networks whose parameters fit in this machine's memory: beyond either a run
    fails part way with a traceback (or after asking the allocator for terabytes)."""
    last = args.seed + getattr(args, "num_seeds", 1) - 1  # --num-seeds trains seed .. last; the torch scripts one seed
    if args.seed < 0 or last >= SEEDS:
        raise UsageError(f"--seed must be between 0 and {SEEDS - 1}, and so must every seed --num-seeds adds; got {args.seed}")
    hidden = parse_hidden(args.hidden)
    weights = sum(hidden) + sum(a * b for a, b in zip(hidden, hidden[1:]))  # a network's, its input and output aside
    needed = 2 * weights * 4 * 4  # actor and critic, float32: parameters, gradients and Adam's two moments
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if needed > memory:
        raise UsageError(
            f"--hidden {args.hidden} needs {needed / 2**30:.3g} GiB for its networks' parameters alone; this machine"
            f" has {memory / 2**30:.3g} GiB"
        )


def check_coefficients(args) -> None:
    """PPO's coefficients in their ranges: out of them, training would run on quietly to a wrong result."""
    ranges = {  # what each must be: nan passes none of these tests
        "positive": (lambda x: 0 < x < float("inf"), ("learning_rate", "clip_coef", "max_grad_norm")),
        "0 or more": (lambda x: 0 <= x < float("inf"), ("ent_coef", "vf_coef")),
        "between 0 and 1": (lambda x: 0 <= x <= 1, ("gamma", "gae_lambda")),
    }
    for must_be, (holds, names) in ranges.items():
        for name in names:
            if not holds(getattr(args, name)):
                raise UsageError(f"--{name.replace('_', '-')} must be {must_be}; got {getattr(args, name)}")


def check_ppo_args(args) -> tuple[int, ...]:
    """What every PPO script checks before anything is built or written: sizes, coefficients, the batch's shape, the
    output path, the limits and the environment id (named with the ids it can train). Returns the hidden sizes."""
    hidden = parse_hidden(args.hidden)
    positive = ("total_timesteps", "num_seeds", "num_envs", "num_steps", "num_minibatches", "update_epochs")
    for name in (name for name in positive if hasattr(args, name)):  # the torch scripts train one seed
        if getattr(args, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive; got {getattr(args, name)}")
    check_coefficients(args)
    batch_size = args.num_envs * args.num_steps
    if batch_size % args.num_minibatches:
        raise UsageError(f"num_envs * num_steps = {batch_size} is not divisible by --num-minibatches {args.num_minibatches}")
    if args.total_timesteps < batch_size:
        raise UsageError(f"--total-timesteps {args.total_timesteps} is smaller than one batch of {batch_size} steps")
    if args.json_out is not None:
        check_writable(args.json_out)
    check_limits(args)
    check_backend(args)
    check_env_id(args.env_id)
    return hidden


def check_backend(args) -> None:
    """An --env-backend other than gymnax has torch_envs.py's ids alone."""
    if getattr(args, "env_backend", "gymnax") != "gymnax":
        import torch_envs  # only when asked for; first, so that a wrong id is told this backend's ids alone

        if args.env_id not in torch_envs.ENVS:
            raise UsageError(f"--env-backend {args.env_backend} has {', '.join(torch_envs.ENVS)}, not --env-id {args.env_id}")


def check_env_id(env_id: str) -> None:
    """An id the scripts can train: gymnax's (but MNISTBandit-bsuite, which downloads MNIST when built) and Craftax's
    symbolic ones (its pixel ones load textures); otherwise the ids, by their kind of actions."""
    supported = [e for e in gymnax.registered_envs if e != "MNISTBandit-bsuite"]
    supported += ["Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1"]
    if env_id not in supported:
        kinds = {"discrete": [], "continuous": []}
        for e in supported:
            kinds[action_space(e)["kind"]].append(e)
        ids = "; ".join(f"{kind}-action ids: {', '.join(ids)}" for kind, ids in kinds.items())
        raise UsageError(f"unsupported --env-id {env_id!r}; {ids}")


def check_sac_args(args) -> tuple[int, ...]:
    """What every SAC script checks before anything is built or written: sizes, coefficients, the output path, the
    limits and the environment id, which must have continuous actions. Returns the hidden sizes."""
    hidden = parse_hidden(args.hidden)
    positive = ("total_timesteps", "num_envs", "steps_per_iteration", "buffer_size", "batch_size")
    for name in positive + ("policy_frequency", "target_network_frequency"):
        if getattr(args, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive; got {getattr(args, name)}")
    for name in ("learning_starts", "updates_per_step"):  # 0 updates a step: the steps alone, what they cost
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be 0 or more; got {getattr(args, name)}")
    if args.buffer_size < args.num_envs:
        raise UsageError(f"--buffer-size {args.buffer_size} is smaller than one step of --num-envs {args.num_envs}")
    if args.full_buffer and args.learning_starts == 0:
        raise UsageError("--full-buffer copies the random steps' transitions: it needs --learning-starts above 0")
    ranges = {  # nan passes none of these tests
        "positive": (lambda x: 0 < x < float("inf"), ("policy_lr", "q_lr", "alpha")),
        "between 0 and 1": (lambda x: 0 <= x <= 1, ("gamma", "tau")),
    }
    for must_be, (holds, names) in ranges.items():
        for name in names:
            if not holds(getattr(args, name)):
                raise UsageError(f"--{name.replace('_', '-')} must be {must_be}; got {getattr(args, name)}")
    random_steps = -(-args.learning_starts // args.num_envs) * args.num_envs  # whole steps of every env
    if args.total_timesteps < random_steps + args.num_envs * args.steps_per_iteration:
        raise UsageError(
            f"--total-timesteps {args.total_timesteps} is smaller than --learning-starts {args.learning_starts} and one"
            f" iteration of num_envs * steps_per_iteration = {args.num_envs * args.steps_per_iteration} steps"
        )
    if args.json_out is not None:
        check_writable(args.json_out)
    check_limits(args)
    check_backend(args)
    check_env_id(args.env_id)
    if action_space(args.env_id)["kind"] != "continuous":
        raise UsageError(f"SAC needs continuous actions; --env-id {args.env_id} has discrete ones")
    return hidden


# ---------------------------------------------------------------- compilations and caches
COMPILES = []  # one entry per compilation in this process: XLA's (every script's envs are JAX), and what a script adds
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **_: COMPILES.append(event) if event == "/jax/core/compile/backend_compile_duration" else None
)
# The persistent compilation cache's answers, where benchmark.sh turns it on (docs/method.md, "Compiler caches"). A hit
# loads the program instead of compiling it (jax/_src/compiler.py, compile_or_get_cached: the hit is recorded and no
# backend compile follows), so a hit counts as a compilation too: a program traced again after iteration 0 is found
# either way. A miss is recorded as its compiled program is written (compilation_cache.py, put_executable_and_time).
JAX_CACHE = {"hits": 0, "misses": 0}


def count_cache_event(event: str, **_) -> None:
    for answer in ("hits", "misses"):
        if event == f"/jax/compilation_cache/cache_{answer}":
            JAX_CACHE[answer] += 1
            if answer == "hits":
                COMPILES.append(event)


jax.monitoring.register_event_listener(count_cache_event)


def count_dynamo_compile(_) -> None:
    COMPILES.append("dynamo")


def count_dynamo_compiles(callbacks) -> None:
    """Count each dynamo compilation (a frame (re)compiled, a lazy backward compiled, a CUDA graph recorded) through
    torch's start callbacks, once per process: two torch.compile scripts loaded in one (the tests) would otherwise
    count every compilation twice (callback_handler keeps a list)."""
    if count_dynamo_compile not in callbacks.start_callbacks:
        callbacks.register_start_callback(count_dynamo_compile)


def compiler_caches(inductor: bool = False) -> dict:
    """Whether this process read and wrote persistent compiler caches, and what it found there. A hit loads the very
    program a miss compiled and wrote, so only the compile time differs: JAX's executable (jax/_src/compilation_cache.py:
    get_executable_and_time deserializes what put_executable_and_time serialized), and with `inductor` (the torch
    scripts) Inductor's generated code for the same graph, inputs, config and versions (torch/_inductor/codecache.py:
    FxGraphCache's key hashes them, _lookup_graph loads the module it wrote), whose counters these are. Dynamo traces
    every run anew."""
    persistent = jax.config.jax_compilation_cache_dir is not None
    if not inductor:
        return {"persistent": persistent, "jax": dict(JAX_CACHE)}
    import torch

    counters = torch._dynamo.utils.counters["inductor"]
    return {
        "persistent": persistent and not torch.compiler.config.force_disable_caches,
        "jax": dict(JAX_CACHE),
        "inductor": {"hits": counters["fxgraph_cache_hit"], "misses": counters["fxgraph_cache_miss"]},
    }


# ---------------------------------------------------------------- the machine
def cpu_info() -> dict:
    """The CPU model as Linux names it, the cores this process may use (timings of two models never mix), the
    OpenMP settings the process ran under (how torch's threads wait, which can change its CPU time twofold) and the
    allocator's (glibc's tunables, a preloaded malloc): whether freed memory goes back to the kernel, to be faulted
    in again page by page, which slows every call that allocates much afresh (docs/findings.md)."""
    first = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]  # the first processor's block
    fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
    model = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields:  # hypervisors may hide the name ("AMD EPYC"), not the family and model numbers
        model += f" (family {fields['cpu family']}, model {fields.get('model')})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    openmp = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    allocator = {name: os.environ.get(name) for name in ("GLIBC_TUNABLES", "LD_PRELOAD")}
    return {"model": model, "cores": cores, "openmp": openmp, "allocator": allocator}


def gpu_info(jax_device, torch_device=None) -> Optional[dict]:
    """What a GPU result needs to be read, as each framework on it reports it (the driver as nvidia-smi does), with each
    allocator's own peak (torch counts its tensors, XLA its buffers); None on the CPU."""
    if jax_device.platform == "cpu":
        return None
    version = lambda name: getattr(cuda_versions, name, lambda: None)() if cuda_versions else None
    cuda = {"cuda_runtime": version("cuda_runtime_get_version"), "cudnn": version("cudnn_get_version")}
    jax_info = {"device_kind": jax_device.device_kind, "platform_version": jax_device.client.platform_version, **cuda}
    driver = run_quietly("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")  # a line per GPU
    jax_peak = (jax_device.memory_stats() or {}).get("peak_bytes_in_use")
    info = {"name": jax_device.device_kind, "driver": driver and driver.split()[0], "jax": jax_info}
    info["peak_memory_mb"] = {"jax": jax_peak and jax_peak / 2**20}
    if torch_device is not None:
        import torch

        info["name"] = torch.cuda.get_device_name(torch_device)
        info["torch"] = {"cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
        info["peak_memory_mb"]["torch"] = torch.cuda.max_memory_allocated(torch_device) / 2**20
    return info


def run_quietly(*command: str) -> Optional[str]:
    """A command's output, or None if it is missing or fails."""
    try:
        out = subprocess.run(command, cwd=os.path.dirname(__file__) or ".", capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


# ---------------------------------------------------------------- the log and the record
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
        self.args, self.variant, self.num_iterations, self.start = args, variant, num_iterations, start
        self.steps_per_iteration = args.num_steps if steps_per_iteration is None else steps_per_iteration
        self.grad_steps = num_iterations * args.update_epochs * args.num_minibatches if grad_steps is None else grad_steps
        self.devices, self.libraries = devices, libraries
        device = devices.get("torch", devices["jax"])
        self.commit = run_quietly("git", "rev-parse", "HEAD")  # now, not at the end: the checkout may move
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
            self.compiles_after_first = len(COMPILES)
        self.compiles_at_end = len(COMPILES)  # the record counts to here: what builds it later may compile (gymnax.make)

    def record(self, parameters, rollout: Optional[str] = None, extra: Optional[dict] = None) -> dict:
        """The JSON record (schema 2, docs/record.md) of a run that trained `parameters` (every seed's: a pytree of
        arrays, or torch's tensors), whose rollout was `rollout` (scan: the steps in the iteration's program; python: a
        Python loop over them), by default --rollout's. extra: fields a script adds or sets (SAC's random steps)."""
        if self.writer:
            self.writer.close()
        args, libraries = self.args, self.libraries
        libraries += ("craftax",) * args.env_id.startswith("Craftax")
        libraries += ("gymnasium",) * (getattr(args, "env_backend", None) == "gymnasium")
        returns, episodes = (np.array(x, dtype=float) for x in zip(*self.finished))  # (iterations, seeds) each
        per_iteration = [[float(r / n) if n else None for r, n in zip(*seed)] for seed in zip(returns.T, episodes.T)]
        window = final_window(len(returns))
        last = [(r[-window:].sum(), n[-window:].sum()) for r, n in zip(returns.T, episodes.T)]
        final = [float(r / n) if n else None for r, n in last]
        seeds = getattr(args, "num_seeds", 1)
        one = seeds == 1  # one seed: a list of numbers; several: a list per seed
        gpu = gpu_info(self.devices["jax"], self.devices.get("torch"))
        return {
            "schema_version": 2,
            "variant": self.variant,
            "status": "ok",
            "env_id": args.env_id,
            "env_backend": getattr(args, "env_backend", "gymnax"),
            **{name: getattr(args, name, False) for name in ("seed", "matmul_precision", "sync_timing")},  # also in args
            "action_space": action_space(args.env_id),
            "normalization": None,  # observations and rewards as the environment gives them, in every variant
            "rollout": rollout or getattr(args, "rollout", "python"),
            "hidden": list(parse_hidden(args.hidden)),
            "args": dataclasses.asdict(args),
            "device": gpu["name"] if gpu else "cpu",
            "devices": {name: str(device) for name, device in self.devices.items()},
            "gpu": gpu,
            "host": platform.node(),
            "cpu": cpu_info(),
            "xla_flags": os.environ.get("XLA_FLAGS"),  # XLA's options (its CPU threads, a GPU's command buffers)
            "peak_host_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux counts KiB
            "versions": {"python": platform.python_version(), **{n: importlib.metadata.version(n) for n in libraries}},
            "git_commit": self.commit,
            "param_count": sum(math.prod(x.shape) for x in jax.tree.leaves(parameters)) // seeds,  # one seed's
            "env_steps": len(self.durations) * args.num_envs * self.steps_per_iteration,
            "grad_steps": self.grad_steps,
            "setup_duration": self.setup_duration,
            "iteration_durations": self.durations,
            "rollout_durations": [phases[0] for phases in self.phases] if getattr(args, "sync_timing", False) else None,
            "update_durations": [phases[1] for phases in self.phases] if getattr(args, "sync_timing", False) else None,
            "total_duration": time.perf_counter() - self.start,
            "compiles_after_first_iteration": self.compiles_at_end - self.compiles_after_first,
            "caches": compiler_caches(inductor="torch" in self.devices),
            "episodic_return": per_iteration[0] if one else per_iteration,
            "episodes": [int(x) for x in episodes[:, 0]] if one else episodes.T.astype(int).tolist(),
            "final_return": final[0] if one else final,
            "final_window": window,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        } | (extra or {})


def final_window(iterations: int) -> int:
    """How many of the last iterations final_return averages the episodes of: the last tenth of the run's (equal)
    iterations, so of its timed env steps, and at least one: the end of the run, whatever an iteration's size."""
    return max(1, -(-iterations // 10))


def random_steps_fields(args, random_steps: int, random_duration: float, num_iterations: int, ended=None) -> dict:
    """What an off-policy record adds (SAC's): the steps of every env taken at random before learning, timed apart
    (random_duration, their compilation included), env_steps, theirs and the iterations' together, and the episodes
    that ended among the random steps: how many, their mean return (the return of random actions, which learning must
    beat; None where none ended). ended: those episodes, an EpisodeStats per step (JAX's) or a tally's sums (torch's)."""
    learned = num_iterations * args.num_envs * args.steps_per_iteration
    random = random_steps * args.num_envs
    if ended is None:
        episodes, return_sum = 0, 0.0
    elif isinstance(ended, EpisodeStats):
        episodes, return_sum = int((np.asarray(ended.lengths) > 0).sum()), float(np.asarray(ended.returns).sum())
    else:
        episodes, return_sum = int(ended["episodes"]), float(ended["return_sum"])
    return {
        "algorithm": "sac",
        "random_steps": random,
        "random_duration": random_duration,
        "random_episodes": episodes,
        "random_return": return_sum / episodes if episodes else None,
        "env_steps": random + learned,
    }


# ---------------------------------------------------------------- JAX's study modes
def study_iteration(jit, vmap, rollout, make_batch, update, args, log: Log):
    """The iteration of a JAX script as the studies run it, from its parts: each takes the models its framework passes
    (NNX's modules; none elsewhere), then the carry: rollout(..., carry, num_steps) -> (carry, traj), make_batch(...,
    carry, traj) -> (carry, batch, stats), update(..., carry, batch) -> (carry, losses). --num-seeds maps each program
    over the seeds with `vmap`. --sync-timing compiles two programs, rollout with its batch and the update, and waits
    between them (log.rollout_done). --rollout python compiles a rollout of one step (XLA drops a scan of one trip) and
    calls it from Python a step at a time, as the torch scripts step, its steps going to the rest of the iteration."""
    compiled = lambda f: jit(vmap(f) if args.num_seeds > 1 else f)
    python = args.rollout == "python"

    def rollout_and_batch(*inputs):  # (*models, carry), or with --rollout python (*models, carry, steps)
        *models, carry, steps = inputs if python else (*inputs, None)
        if python:  # one array per field, as the scan stacks them
            return make_batch(*models, carry, jax.tree.map(lambda *xs: jnp.concatenate(xs), *steps))
        return make_batch(*models, *rollout(*models, carry, args.num_steps))

    def updated(*inputs):  # (*models, carry, batch): update under a name of its own, which its program takes
        return update(*inputs)

    def iteration(*inputs):
        carry, batch, stats = rollout_and_batch(*inputs)
        carry, losses = update(*inputs[: -2 if python else -1], carry, batch)
        return carry, {**stats, **losses}

    step = compiled(lambda *inputs: rollout(*inputs, 1)) if python else None
    first, second, whole = compiled(rollout_and_batch), compiled(updated), compiled(iteration)

    def iterate(carry):
        inputs = (carry,)
        if python:
            steps = []
            for _ in range(args.num_steps):
                carry, traj = step(carry)
                steps.append(traj)
            inputs = (carry, steps)
        if not args.sync_timing:
            return whole(*inputs)
        carry, batch, stats = jax.block_until_ready(first(*inputs))
        log.rollout_done()
        carry, losses = second(carry, batch)
        return carry, {**stats, **losses}

    return iterate


def stack_seeds(seeds: list):
    """One seed's pytree, or several seeds' stacked on a leading axis, which vmap maps over."""
    return seeds[0] if len(seeds) == 1 else jax.tree.map(lambda *xs: jnp.stack(xs), *seeds)


# ---------------------------------------------------------------- the command line
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


def parse_args(Args, argv: Optional[Sequence[str]]):
    """The command line as Args. tyro reports a bad one in a box of several lines: here it is one line, exit code 2."""
    told = io.StringIO()
    try:
        with contextlib.redirect_stderr(told):
            return tyro.cli(Args, args=argv)
    except SystemExit as e:
        if e.code:
            lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in told.getvalue().splitlines()]  # its colours out
            lines = [re.sub(r"^[\s│╭╰]*─*\s*|\s*─*[\s│╮╯]*$", "", line) for line in lines]  # and its box
            said = " ".join(line for line in lines if line.strip("─- ") and not line.startswith("For full helptext"))
            told = io.StringIO(f"error: {said} (--help lists every flag)\n")
        raise
    finally:
        sys.stderr.write(told.getvalue())


def shown(final_return) -> str:
    """A final return for the progress line: one decimal; one per seed after --num-seeds."""
    if isinstance(final_return, list):
        return "[" + ", ".join(map(shown, final_return)) + "]"
    return "n/a" if final_return is None else f"{final_return:.1f}"


def main(Args, train, argv: Optional[Sequence[str]] = None) -> int:
    """A script's command line: parse, train, write the record atomically; bad input is one line and exit code 2."""
    args = parse_args(Args, argv)
    sys.stdout.reconfigure(line_buffering=True)  # each progress line at once, also into a pipe
    try:
        result = train(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json_out is not None:
        try:
            write_json_atomic(args.json_out, result)
        except OSError as e:
            print(json.dumps(result))  # the run's numbers, so that they are not lost
            print(
                f"error: the record could not be written to {args.json_out!r} ({e.strerror}): it is printed above",
                file=sys.stderr,
            )
            return 1
    if not args.quiet:
        durations = result["iteration_durations"]
        steady = np.median(durations[1:] or durations)
        done = f"done: final_return {shown(result['final_return'])}  iteration 0 {durations[0]:.3f}s  steady {steady:.4f}s/iteration"
        print(f"{done}  compiles after iteration 0: {result['compiles_after_first_iteration']}")
    return 0
