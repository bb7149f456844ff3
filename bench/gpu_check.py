"""The first command for a GPU owner: every variant, a few iterations, every check on.

    bash benchmark.sh --preset gpu-check      # or: python bench/gpu_check.py

Runs each variant script's train() in this process (CartPole-v1, size s, 3 short iterations, with
--cuda as a user would) and checks that:
- it runs where it should: on the GPU in every framework it imports when any framework sees a GPU,
  else on the CPU (a framework without the GPU is an error the script names);
- nothing compiles after iteration 0;
- no host sync happens in a timed iteration: jax's transfer guard is on in the scripts, the traps of
  bench/sync_traps.py fail any host read of a JAX array or a torch tensor there, and on a GPU the
  torch scripts run with --sync-debug (torch.cuda.set_sync_debug_mode("error")).
Prints one table, and exits 1 if any check fails (2 on bad input).
"""

import argparse
import importlib.util
import os
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from load_script import load  # noqa: E402
from sync_traps import HostSync, trapped_host_reads  # noqa: E402
from variants import scripts  # noqa: E402

VARIANTS = {v.name: v for v in scripts()}  # the ppo_*.py scripts (bench/variants.py)
# Short but whole iterations: rollout, GAE, epochs of minibatch updates.
SHORT = dict(
    env_id="CartPole-v1",
    hidden="64,64",
    num_envs=32,
    num_steps=32,
    num_minibatches=4,
    update_epochs=2,
    total_timesteps=3 * 32 * 32,
    tensorboard=False,
    quiet=True,
)


def gpu_visible() -> dict:
    """Which frameworks see a GPU."""
    import jax

    try:
        jax_gpu = bool(jax.devices("gpu"))
    except RuntimeError:
        jax_gpu = False
    seen = {"jax": jax_gpu}
    if importlib.util.find_spec("torch"):
        import torch

        seen["torch"] = torch.cuda.is_available()
    return seen


def check(variant: str, expect_gpu: bool) -> dict:
    """One variant's row of the table."""
    row = {"variant": variant, "devices": "-", "compiles after 0": "-", "host syncs": "-", "result": "ok"}
    try:
        module = load(VARIANTS[variant].script, f"benchback_{variant}")
        is_torch = VARIANTS[variant].framework == "torch"
        # Trapping torch's scalar reads would make dynamo trace around them: compiled variants go without it.
        with trapped_host_reads(torch_too=is_torch, scalar_reads=is_torch and not VARIANTS[variant].compiles) as trapped:
            extra = {"sync_debug": True} if is_torch else {}  # CUDA's own trap, on a GPU
            record = module.train(module.Args(**SHORT, cuda=True, **extra))
    except HostSync as e:
        row.update({"host syncs": "trapped", "result": f"FAIL: {e}"})
        return row
    except Exception as e:  # a usage error (a framework without the GPU) or a crash: name it
        row["result"] = f"FAIL: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        traceback.print_exc(file=sys.stderr)
        return row
    devices = record["devices"]
    on_gpu = all(not d.startswith(("cpu", "TFRT_CPU")) for d in devices.values())
    row.update(
        {
            "devices": ", ".join(f"{k} {v}" for k, v in devices.items()),
            "compiles after 0": record["compiles_after_first_iteration"],
            "host syncs": len(trapped),
        }
    )
    problems = []
    if on_gpu != expect_gpu:
        problems.append("on the CPU though a GPU is visible" if expect_gpu else "on a GPU no framework reported")
    if record["compiles_after_first_iteration"]:
        problems.append("compiled after iteration 0")
    if trapped:
        problems.append("host syncs in a timed iteration")
    if problems:
        row["result"] = "FAIL: " + "; ".join(problems)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from " + ",".join(VARIANTS))
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        print(
            f"error: unknown variant(s) {', '.join(unknown) or '(none given)'}; valid: {', '.join(VARIANTS)}", file=sys.stderr
        )
        return 2
    os.environ.setdefault("TORCH_COMPILE_FORCE_DISABLE_CACHES", "1")
    seen = gpu_visible()
    expect_gpu = any(seen.values())
    print(
        f"gpu-check: GPU visible to {', '.join(k for k, v in seen.items() if v) or 'no framework'}; "
        f"expecting every run on the {'GPU' if expect_gpu else 'CPU'}",
        flush=True,
    )
    rows = []
    for variant in variants:
        print(f"  {variant} ...", flush=True)
        rows.append(check(variant, expect_gpu))
    header = list(rows[0])
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in header) + " |")
    failed = [r["variant"] for r in rows if r["result"] != "ok"]
    print(
        f"gpu-check: {len(rows) - len(failed)} of {len(rows)} variants pass"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
