"""A sweep's records, for bench/plan.py: whether a run's record is done, the failure record of a run that failed, and
the check made before a sweep that a CPU model other than this machine's has no records in its directory (its --envs:
env_cost.bad_env)."""

import json
import os
import platform
import tempfile
import time
from pathlib import Path


def record_status(path: str) -> str:
    """ok | failed | corrupt | missing: only ok and (without --retry-failed) failed count as done."""
    if not os.path.exists(path):
        return "missing"
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return "corrupt"
    return str(record.get("status", "corrupt")) if isinstance(record, dict) else "corrupt"


def write_failure(path, reason, code, duration, limit, stderr_file, *command):
    """The failure record in place of a run's result, its fields read from the run's command."""
    try:
        with open(stderr_file, errors="replace") as f:
            tail = f.read()[-4000:]
    except OSError:
        tail = ""
    value = dict(zip(command, command[1:]))  # each flag's value
    record = {
        "schema_version": 1,
        "status": "failed",
        "reason": reason,
        "exit_code": int(code),
        "experiment": value["--exp-name"],
        "variant": Path(command[1]).stem.removeprefix("ppo_"),
        "env_id": value["--env-id"],
        "hidden": [int(h) for h in value["--hidden"].split(",")],
        "seed": int(value["--seed"]),
        "duration": int(duration),
        "timeout_s": int(limit),
        "command": list(command),
        "stderr_tail": tail,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, path)


def cpu_model() -> str:
    """This machine's CPU model as the scripts' cpu_info() names it (tests/test_benchmark.py holds the two the same)."""
    cpuinfo = Path("/proc/cpuinfo")
    first = cpuinfo.read_text().split("\n\n")[0] if cpuinfo.exists() else ""
    info = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
    model = info.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in info:
        model += f" (family {info['cpu family']}, model {info.get('model')})"
    return model


def other_cpu(out: str) -> str:
    """A record in `out` timed on a CPU model other than this machine's, named with both models, or ''."""
    here = cpu_model()
    for path in Path(out).rglob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        model = (record.get("cpu") or {}).get("model") if isinstance(record, dict) and record.get("device") == "cpu" else None
        if model not in (None, here):
            return f"{path.name} was timed on {model}, and this machine is {here}"
    return ""
