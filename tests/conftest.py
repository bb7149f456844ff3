"""Shared helpers: load a variant script as a module, run it as a process."""

import ast
import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The tests run up to three scripts at once (this process and two background runs). torch's OpenMP
# threads must not busy-wait then (the scripts default to ~30 us, for one process alone): spinning
# threads of one process would take the cores the others need, several times slower in all.
# Set before anything loads torch; the scripts' processes inherit it.
os.environ["GOMP_SPINCOUNT"] = "0"
# The torch scripts' other OpenMP default, set here too so that importing one in this process (load) changes nothing in
# os.environ: the background runs start their processes from other threads while a test imports a script.
os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
# Inductor compiles in a pool of worker processes by default (one per core), each importing torch first: about 10 s of
# CPU per process that compiles, on 2 cores shared with the runs beside it, for no gain. In this process and the
# scripts it starts, inductor compiles in the process itself; what it generates is the same.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

# The variants are the ppo_*.py scripts, each with what it declares of itself (bench/variants.py). Every test
# parametrized over VARIANTS runs once per script.
# The root is on the path (pytest.ini's pythonpath): the tools as bench.*, the studies as studies.*, and the Craftax
# adapter the scripts import as their sibling.
from bench.variants import scripts

DECLARED = {v.name: v for v in scripts()}
SCRIPTS = {name: v.script for name, v in DECLARED.items()}
VARIANTS = list(SCRIPTS)
# The JAX variants that compile their whole iteration into one program (all but linen_nojit).
JIT_VARIANTS = [v for v in VARIANTS if DECLARED[v].framework == "jax" and DECLARED[v].compiles]
TORCH_VARIANTS = [v for v in VARIANTS if DECLARED[v].framework == "torch"]
# Every variant, an eager JAX one (linen_nojit: every op dispatched from Python, tens of seconds even for a tiny
# run) marked slow: for the tests whose check is the same for every JAX variant, to keep the default run short.
EAGER_JAX_SLOW = [
    pytest.param(v, marks=pytest.mark.slow) if DECLARED[v].framework == "jax" and not DECLARED[v].compiles else v
    for v in VARIANTS
]
# Every variant, all but one per framework (jax_linen, torch) marked slow: for the checks that are the same code in
# every script of a framework (what is each script's own has tests of its own), to keep the default run short.
ONE_PER_FRAMEWORK_SLOW = [v if v in ("jax_linen", "torch") else pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS]


# The line below which a script holds what measures it, not its algorithm: "# ===...=== benchmark harness"
HARNESS_LINE = re.compile(r"^# =+ benchmark harness$")


def harness_line(text: str) -> int:
    """The number (from 1) of a script's harness line."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if HARNESS_LINE.match(line))


def script_parts(variant: str, below: bool) -> dict:
    """{name: source} of a script's top-level functions and classes, below its harness line or above it."""
    text = (ROOT / SCRIPTS[variant]).read_text()
    line = harness_line(text)
    return {
        node.name: ast.get_source_segment(text, node)
        for node in ast.parse(text).body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (node.lineno > line if below else node.lineno < line)
    }


def framework(variant: str) -> str:
    """ "jax" or "torch": the framework the variant's script trains with."""
    return DECLARED[variant].framework


# A short config that still exercises every part of an iteration (3 iterations of 8x32), as Args fields
# (SHORT_ARGS, for train() in this process) and as flags (SHORT, for a script's CLI). Every test runs
# on the CPU (cuda=False), whatever the machine has: what the tests check is the arithmetic and the
# contract, which the CPU settles; benchmark.sh --preset gpu-check is for a GPU.
SHORT_ARGS = dict(cuda=False, num_envs=8, num_steps=32, num_minibatches=4, update_epochs=2, total_timesteps=3 * 8 * 32)


def as_flags(fields: dict) -> list[str]:
    """Args fields as the CLI's flags: cuda=False -> --no-cuda, num_envs=8 -> --num-envs 8."""
    flags = []
    for name, value in fields.items():
        name = name.replace("_", "-")
        flags += [f"--{name}" if value else f"--no-{name}"] if isinstance(value, bool) else [f"--{name}", str(value)]
    return flags


SHORT = as_flags(SHORT_ARGS)
QUIET = dict(tensorboard=False, quiet=True)  # for train() called in this process


def needs(*variants: str):
    """Skip a test when one of these variant scripts is absent."""
    missing = set(variants) - set(VARIANTS)
    return pytest.mark.skipif(bool(missing), reason=f"variant script missing: {', '.join(sorted(missing))}")


def make_batch(variant: str, module, **arrays):
    """The variant's Batch from NumPy arrays (field name -> array)."""
    return module.Batch(**{name: to_native(variant, x) for name, x in arrays.items()})


def tensorboard_events(run_dir: Path):
    """The TensorBoard event files of one run, loaded."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    return events


_modules = {}


def load(variant: str, script: str | None = None):
    """Import a variant script (by default the PPO variant's; `script`: another file of the root) as a module, once per
    test process."""
    if variant not in _modules:
        path = ROOT / (script or SCRIPTS[variant])
        spec = importlib.util.spec_from_file_location(f"benchback_{variant}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as an import would: tyro and dynamo look modules up by name
        environ = dict(os.environ)
        spec.loader.exec_module(module)
        # The torch scripts set their OpenMP defaults in os.environ when imported: keep them out of the environment
        # of the runs this process starts later, which must see what the tests set (their records say what they saw).
        os.environ.clear()
        os.environ.update(environ)
        _modules[variant] = module
    return _modules[variant]


def run_script(variant: str, *flags: str, cwd: Path, timeout: float = 600, env: dict | None = None):
    """Run a variant's CLI in `cwd`, with `env` added to this process's environment; returns the CompletedProcess."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, str(ROOT / SCRIPTS[variant]), *flags],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_json(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def records_of(variant: str, directory: Path, runs, *flags: str) -> list:
    """The records of runs of a script, [(name, its flags)], each a process in `directory` with `flags` first."""
    found = []
    for name, more in runs:
        out = directory / f"{name}.json"
        proc = run_script(variant, *flags, *more, "--json-out", str(out), cwd=directory)
        assert proc.returncode == 0, proc.stderr[-3000:]
        found.append(read_json(out))
    return found


@pytest.fixture(params=VARIANTS)
def variant(request):
    return request.param


@pytest.fixture(autouse=True)
def torch_as_in_a_new_process():
    """A torch script's train() sets torch for its process (matmul precision, dynamo's and inductor's flags), and
    dynamo keeps what it compiled per function, which every train() in a process shares: after each test, torch's
    defaults are back and its compiled code is dropped, so that the next train() compiles afresh as a new process."""
    yield
    if "torch" in sys.modules:
        import torch

        torch.set_float32_matmul_precision("highest")
    if "torch._dynamo" in sys.modules:
        reset_torch_compile()
        torch._dynamo.config.trace_autograd_ops = False
        torch._inductor.config.cpp_wrapper = False


def to_native(variant: str, x):
    """A NumPy array as the variant's framework array (on the CPU)."""
    if framework(variant) == "torch":
        import torch

        return torch.as_tensor(x)
    import jax.numpy as jnp

    return jnp.asarray(x)


def to_numpy(x):
    import numpy as np

    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def loss_and_output_grads(variant: str, module, logits, value, mb, args):
    """ppo_loss of a categorical policy over `logits`, and the gradient of its total with respect to the network outputs."""
    if framework(variant) == "torch":
        logits, value = logits.clone().requires_grad_(), value.clone().requires_grad_()
        loss, info = module.ppo_loss(module.Policy(logits, None), value, mb, args)
        loss.backward()
        return loss, info, (logits.grad, value.grad)
    import jax

    loss_of = lambda logits, value: module.ppo_loss(module.Policy(logits, None), value, mb, args)
    (loss, info), grads = jax.value_and_grad(loss_of, argnums=(0, 1), has_aux=True)(logits, value)
    return loss, info, grads


# CLI runs that several tests read, started in the background as soon as collection shows a test
# needs them, two at a time beside the in-process tests: each run keeps about one core busy, so on a
# 2-core machine this takes minutes off the suite. kind -> (variants, flags).
SMOKE = [*SHORT, "--hidden", "32,16", "--seed", "3"]
CRAFTAX_DEFAULT = [v for v in ("jax_linen", "torch") if v in VARIANTS]
CRAFTAX_FLAGS = [*SMOKE, "--env-id", "Craftax-Classic-Symbolic-v1"]
# Linen's by default; the others' (torch's: a minute and a half on 2 cores; NNX's and Equinox's draw Linen's random
# numbers and run Linen's run from its parameters, test_jax_variants.py) under the slow marker
LEARNED_DEFAULT = [v for v in ("jax_linen",) if v in VARIANTS]
LEARN_FLAGS = ["--seed", "1", "--no-cuda", "--no-tensorboard", "--quiet"]
BACKGROUND_RUNS = {
    # one short run per variant, shared by the contract and equivalence tests
    "smoke": (VARIANTS, SMOKE),
    # the same on Craftax-Classic, through the adapter the scripts share. Its compilation (tens of seconds) is most
    # of a run: by default the two ways a script steps it (inside its jitted iteration; a jitted step per rollout
    # step, over DLPack), with -m slow every variant.
    "craftax": (CRAFTAX_DEFAULT, CRAFTAX_FLAGS),
    "craftax_rest": ([v for v in VARIANTS if v not in CRAFTAX_DEFAULT], CRAFTAX_FLAGS),
    # the default config (819200 steps): test_learning.py. linen_nojit dispatches every op eagerly,
    # too slow for the default pytest; benchmark.sh's `learn` preset runs it in full. torch_compile's run (its
    # compilation, then 100 iterations) is the longest of the others: with -m slow; by default, test_torch.py
    # checks that its compiled updates follow eager torch's, whose run learns here.
    "learned": (LEARNED_DEFAULT, LEARN_FLAGS),
    "learned_rest": ([v for v in VARIANTS if v not in LEARNED_DEFAULT and v != "linen_nojit"], LEARN_FLAGS),
}
_pool = ThreadPoolExecutor(max_workers=2)
_runs = {}  # (kind, variant) -> Future of (CompletedProcess, its working directory, its JSON path)


def _run_in(cwd: Path, variant: str, flags):
    out = cwd / "out" / "result.json"
    return run_script(variant, *flags, "--json-out", str(out), cwd=cwd), cwd, out


# Tests whose cost is all in processes they start and then only read (a sweep, gpu-check, a tool): such a test is
# marked @in_background(work), where work(directory, **the test's parameters) starts those processes and returns what
# the test reads. The work joins the background runs' queue, and the test runs last, taking work's result from its
# `background` fixture: the main process never waits on a process that could have run beside it.
def in_background(work):
    def mark(test):
        test.background_work = work
        return test

    return mark


def background_work(item):
    return getattr(getattr(item, "function", None), "background_work", None)


_work = {}  # test node id -> Future of what its work returned


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: background_work(item) is not None)  # stable: the rest keep their order


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    used = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    base = Path(tempfile.mkdtemp(prefix="benchback-runs-"))
    session.config.add_cleanup(lambda: shutil.rmtree(base, ignore_errors=True))
    session.config.add_cleanup(lambda: _pool.shutdown(cancel_futures=True))
    for kind, (variants, flags) in BACKGROUND_RUNS.items():
        if kind in used:
            for v in variants:
                cwd = base / f"{kind}-{v}"
                cwd.mkdir()
                _runs[kind, v] = _pool.submit(_run_in, cwd, v, flags)
    for i, item in enumerate(session.items):
        if work := background_work(item):
            directory = base / f"work-{i}"
            directory.mkdir()
            params = item.callspec.params if hasattr(item, "callspec") else {}
            _work[item.nodeid] = _pool.submit(work, directory, **params)


@pytest.fixture
def few_resamples(monkeypatch):
    """The reports' bootstraps at a tenth of their resamples (rliable's 200, not 2,000; the ratios' 1,000, not 10,000):
    for a test of made-up records whose verdicts and bounds are far from the edges, where the resamples are most of its
    time. Never for a test that checks a committed report's numbers, which were made with the full counts."""
    from report import learning, timing

    monkeypatch.setattr(learning, "RLIABLE_REPS", 200)
    monkeypatch.setattr(learning, "CURVE_REPS", 100)
    monkeypatch.setattr(timing, "BOOTSTRAP", {**timing.BOOTSTRAP, "n_resamples": 1_000})


@pytest.fixture
def background(request):
    """What the test's @in_background work returned (waiting for it, if it has not finished)."""
    return _work[request.node.nodeid].result()


@pytest.fixture(scope="session")
def smoke():
    """smoke(variant) -> (CompletedProcess, its working directory, its JSON path)."""
    return lambda variant: _runs["smoke", variant].result()


@pytest.fixture(scope="session")
def craftax():
    """craftax(variant) -> the same, for the smoke config on Craftax-Classic-Symbolic-v1 (CRAFTAX_DEFAULT's)."""
    return lambda variant: _runs["craftax", variant].result()


@pytest.fixture(scope="session")
def craftax_rest():
    """The same for the other variants (a test that names this fixture starts their runs)."""
    return lambda variant: _runs["craftax_rest", variant].result()


@pytest.fixture(scope="session")
def learned():
    """learned(variant) -> the same, for a run of the default config (LEARNED_DEFAULT's)."""
    return lambda variant: _runs["learned", variant].result()


@pytest.fixture(scope="session")
def learned_rest():
    """The same for torch_compile (a test that names this fixture starts its run)."""
    return lambda variant: _runs["learned_rest", variant].result()


from bench.compiler_caches import reset_torch_compile
from bench.sync_traps import HostSync, trapped_host_reads  # noqa: F401  (the traps gpu-check uses; HostSync for the tests)


@pytest.fixture
def trap_host_reads():
    """trap(torch_too=False, scalar_reads=True) -> the list of host reads trapped in timed iterations
    (bench/sync_traps.py says what is trapped); the traps come off when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda **kwargs: stack.enter_context(trapped_host_reads(**kwargs))
