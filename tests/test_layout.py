"""A script shows its framework: the compile call its TOOLING names stands inside `train`, and from `train` to the
environment's step a reader follows at most four functions, the shared modules' counted (CleanRL's loop takes one,
PureJaxRL's three)."""

import ast
import inspect

import pytest

from benchback import gymnax_envs
from conftest import DECLARED, QUIET, ROOT, SCRIPTS, VARIANTS, load

MOST_CALLS = 4


def dotted(node) -> str:
    """`jax.jit` for the expression jax.jit, '' for anything but a chain of names."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := dotted(node.value)):
        return f"{base}.{node.attr}"
    return ""


def calls_in_train(source: str) -> set:
    """The dotted names train() calls, anywhere in its body (its nested functions and lambdas included)."""
    train = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "train")
    return {dotted(node.func) for node in ast.walk(train) if isinstance(node, ast.Call)} - {""}


COMPILED = [v for v in VARIANTS if DECLARED[v].compiles]


@pytest.mark.parametrize("variant", COMPILED)
def test_the_compile_call_stands_in_train(variant):
    source = (ROOT / SCRIPTS[variant]).read_text()
    assert DECLARED[variant].compiles in calls_in_train(source), f"{SCRIPTS[variant]}: train does not call it"


def test_a_compile_call_moved_out_of_train_is_found():
    """The check above can fail: the same call in a helper that train calls is not in train."""
    inside = "def train(args):\n    iterate = jax.jit(iteration)\n"
    outside = "def compiled(f):\n    return jax.jit(f)\n\n\ndef train(args):\n    iterate = compiled(iteration)\n"
    assert "jax.jit" in calls_in_train(inside) and "jax.jit" not in calls_in_train(outside)


SHARED = str(ROOT / "benchback")


def recorder(script: str, stepped):
    """(seen, step): step calls `stepped` (the environment's step), and on its first call puts in `seen` the functions
    on the stack from the script and the shared modules (benchback/), outermost first: from train to the one that calls
    it. python_scan stands in for lax.scan (linen_nojit): not counted."""
    seen = []

    def step(*args, **kwargs):
        if not seen:
            ours = lambda f: f.filename == script or f.filename.startswith(SHARED)
            stack = [f for f in inspect.stack(0) if ours(f) and f.function != "python_scan"]
            seen.append([f.function for f in reversed(stack)])
        return stepped(*args, **kwargs)

    return seen, step


# torch's by default; Linen's run (15 s on 2 cores) and the others with -m slow
@pytest.mark.parametrize("variant", [v if v == "torch" else pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS])
def test_at_most_four_calls_from_train_to_the_environment_step(variant, monkeypatch):
    """gymnax's env.step, in every script: vmapped in the rollout's scan (JAX), or in the step the torch scripts' envs
    jit (benchback/torch_envs.py). The functions between train and it, the shared modules' counted, are at most four."""
    module = load(variant)
    script, seen, make = str(ROOT / SCRIPTS[variant]), [], gymnax_envs.make

    def patched(env_id):
        env, params = make(env_id)
        found, env.step = recorder(script, env.step)
        seen.append(found)
        return env, params

    monkeypatch.setattr(gymnax_envs, "make", patched)
    args = module.Args(cuda=False, num_envs=4, num_steps=8, num_minibatches=2, update_epochs=1, total_timesteps=32, **QUIET)
    module.train(args)
    ((frames,),) = [found for found in seen if found]
    assert frames[0] == "train" and len(frames) - 1 <= MOST_CALLS, frames


OFFPOLICY_SCRIPTS = sorted(p.name for pattern in ("sac_*.py", "td3_*.py", "dqn_*.py") for p in ROOT.glob(pattern))


# sac_torch.py by default (JAX's path is PPO's, above), the others under the slow marker: 15-20 s each on 2 cores
@pytest.mark.parametrize(
    "script", [s if s == "sac_torch.py" else pytest.param(s, marks=pytest.mark.slow) for s in OFFPOLICY_SCRIPTS]
)
def test_at_most_four_calls_from_train_to_the_environment_step_in_sac(script, monkeypatch):
    """The same for the off-policy scripts (SAC's, TD3's, DQN's): JAX's step in the iteration's scan, torch's through
    the envs' interface."""
    module = load(script.removesuffix(".py"), script)
    seen, make = [], gymnax_envs.make

    def patched(env_id):
        env, params = make(env_id)
        found, env.step = recorder(str(ROOT / script), env.step)
        seen.append(found)
        return env, params

    monkeypatch.setattr(gymnax_envs, "make", patched)
    sizes = dict(num_envs=2, total_timesteps=300, learning_starts=100, steps_per_iteration=50, batch_size=16)
    env_id = "CartPole-v1" if script.startswith("dqn_") else "Pendulum-v1"  # DQN's actions are discrete
    module.train(module.Args(cuda=False, env_id=env_id, buffer_size=256, hidden="16,16", **sizes, **QUIET))
    ((frames,), *_) = [found for found in seen if found]
    assert frames[0] == "train" and len(frames) - 1 <= MOST_CALLS, frames
