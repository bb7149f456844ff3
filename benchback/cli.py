"""A script's command line: its Args parsed by tyro (a bad flag in one line, exit code 2), train run, the record written
atomically, the run's last line; and the variant's name, from the script's file name."""

import contextlib
import io
import json
import os
import re
import sys
from typing import Optional, Sequence

import numpy as np
import tyro

from benchback import checks, record


def variant_of(script: str) -> str:
    """A script's variant name: its file name without the algorithm's prefix (ppo_jax_linen.py, sac_jax_linen.py ->
    jax_linen); the record says the algorithm where it is not PPO (record.random_steps_fields)."""
    return re.sub(r"^(ppo|sac|td3|dqn)_", "", os.path.basename(script)[: -len(".py")])


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
    except checks.UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json_out is not None:
        try:
            record.write_json_atomic(args.json_out, result)
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
