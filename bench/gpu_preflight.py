"""gpu-check's preflight: what must hold before any variant runs on a GPU. Each item is one row: ok, FAIL: reason, or
"skipped: needs a GPU" (on a machine without a GPU every item is skipped, never ok).

- the NVIDIA driver that nvidia-smi reports is new enough for the CUDA that torch and JAX's CUDA plugin were built for;
- a C compiler and Python.h where torch sees a GPU: Triton (torch.compile's GPU backend) compiles a launcher at run time;
- each framework really sees the GPU: JAX's CUDA plugin falls back to the CPU with no more than a warning when it cannot
  start (a driver too old, the plugin missing).

    python bench/gpu_preflight.py          # the rows alone
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from typing import Optional

SKIPPED = "skipped: needs a GPU"
# The oldest Linux driver (its major version) that runs every release of a CUDA major version, by minor version
# compatibility: NVIDIA's CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding Driver Versions" (the minimum
# driver for minor version compatibility), as the CUDA Compatibility guide's "Minor Version Compatibility" table gives it.
DRIVER_FOR_CUDA = {13: 580, 12: 525, 11: 450}


def leading_int(version: Optional[str]) -> Optional[int]:
    """'580.65.06' -> 580, '13.0' -> 13; None for None or text that does not start with a number."""
    head = (version or "").strip().split(".")[0]
    return int(head) if head.isdigit() else None


def driver_check(driver: Optional[str], cuda: dict, gpu: bool) -> str:
    """The driver nvidia-smi reports, against the CUDA each framework was built for ({"torch": "13.0", "jax": None})."""
    if not gpu:
        return SKIPPED
    if driver is None:
        return "FAIL: nvidia-smi reported no driver version, so the driver cannot be checked against the CUDA builds"
    have = leading_int(driver)
    if have is None:
        return f"FAIL: cannot read the driver version nvidia-smi reports: {driver!r}"
    builds = {name: version for name, version in cuda.items() if version}
    if not builds:
        return f"FAIL: driver {driver}, but neither torch nor jax is a CUDA build (requirements-gpu.txt installs both)"
    problems = []
    for name, version in builds.items():
        need = DRIVER_FOR_CUDA.get(leading_int(version))
        if need is None:
            problems.append(f"no minimum driver known for {name}'s CUDA {version} (add it to DRIVER_FOR_CUDA)")
        elif have < need:
            problems.append(f"{name}'s CUDA {version} needs a driver >= {need}")
    if problems:
        return f"FAIL: driver {driver}: " + "; ".join(problems)
    return f"ok: driver {driver} runs " + ", ".join(f"{name}'s CUDA {version}" for name, version in builds.items())


def compiler_check(torch_gpu: bool, compiler: Optional[str], python_h: Optional[str]) -> str:
    """Triton builds its launcher with a C compiler against Python.h, at run time: only where torch sees a GPU."""
    if not torch_gpu:
        return SKIPPED
    missing = [what for what, found in (("C compiler ($CC, gcc or clang)", compiler), ("Python.h", python_h)) if not found]
    if missing:
        return f"FAIL: no {' and no '.join(missing)}: Triton would stop at its first kernel ('Failed to find C compiler')"
    return f"ok: {compiler}, {python_h}"


def torch_check(gpu: bool, found: dict) -> str:
    if not gpu:
        return SKIPPED
    if found.get("torch_gpu"):
        return f"ok: torch {found['torch']} with CUDA {found['torch_cuda']}"
    build = f"a CUDA {found['torch_cuda']} build" if found.get("torch_cuda") else "a CPU build"
    why = found.get("torch_error") or found.get("warning") or ""
    return f"FAIL: torch ({build}) sees no GPU though one is present" + (f": {why}" if why else "")


def jax_check(gpu: bool, found: dict) -> str:
    if not gpu:
        return SKIPPED
    if found.get("jax_platform") == "gpu":
        return f"ok: jax {found['jax']} on gpu, CUDA {found['jax_cuda']}"
    why = found.get("jax_error") or found.get("warning") or ""
    return (
        f"FAIL: JAX's platform is {found.get('jax_platform')}: its CUDA plugin fell back to the CPU "
        "(a driver too old for it, or jax[cuda13] not installed)" + (f": {why}" if why else "")
    )


def checks(driver: Optional[str], found: dict, compiler: Optional[str], python_h: Optional[str]) -> tuple[list, bool]:
    """The preflight's rows [(item, result)] from what was found, and whether a GPU is present."""
    gpu = bool(driver or found.get("torch_gpu") or found.get("jax_platform") == "gpu")
    cuda = {"torch": found.get("torch_cuda"), "jax": found.get("jax_cuda")}
    rows = [
        ("NVIDIA driver for the CUDA builds", driver_check(driver, cuda, gpu)),
        ("C compiler and Python.h (Triton)", compiler_check(bool(found.get("torch_gpu")), compiler, python_h)),
        ("torch sees the GPU", torch_check(gpu, found)),
        ("JAX's platform is gpu", jax_check(gpu, found)),
    ]
    if "probe_error" in found:  # torch or jax does not even import: nothing else can run
        rows.append(("torch and jax start", f"FAIL: {found['probe_error']}"))
    return rows, gpu


def nvidia_driver() -> Optional[str]:
    """The driver version nvidia-smi reports (for the first GPU); None without nvidia-smi or without a GPU."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split()
    return lines[0] if out.returncode == 0 and lines else None


def find_compiler() -> Optional[str]:
    """The C compiler Triton would use, if it exists: $CC, else gcc, else clang (triton/runtime/build.py; not cc)."""
    if os.environ.get("CC") is not None:
        return shutil.which((shlex.split(os.environ["CC"]) or [""])[0])
    return shutil.which("gcc") or shutil.which("clang")


def find_python_h() -> Optional[str]:
    """Python.h in this interpreter's include directory, where Triton's build looks for it (sysconfig)."""
    path = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return path if os.path.exists(path) else None


def cuda_text(version: Optional[int]) -> Optional[str]:
    """CUDA's integer version as text: 13000 -> '13.0', 12040 -> '12.4'."""
    return f"{version // 1000}.{version % 1000 // 10}" if version else None


def probe() -> dict:
    """What torch and JAX see, run in a process of its own (--probe): starting their GPU support is not undone."""
    found = {}
    try:
        import torch

        found.update(torch=torch.__version__, torch_cuda=torch.version.cuda, torch_gpu=torch.cuda.is_available())
    except Exception as e:  # a broken install: the row says so
        found["torch_error"] = f"{type(e).__name__}: {e}"
    try:
        import jax
        from jax._src.lib import cuda_versions  # the CUDA plugin's version queries (None without one), as the scripts use

        build = getattr(cuda_versions, "cuda_runtime_build_version", None) if cuda_versions else None
        found.update(jax=jax.__version__, jax_cuda=cuda_text(build() if build else None), jax_platform=jax.default_backend())
    except Exception as e:
        found["jax_error"] = f"{type(e).__name__}: {e}"
    return found


def run_probe() -> dict:
    """probe() in a child process; with the last line of its warnings that names CUDA, a GPU or the driver."""
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}  # a probe must not take 75% of the GPU's memory
    try:
        proc = subprocess.run([sys.executable, __file__, "--probe"], capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return {"probe_error": "importing torch and jax took over 600 s", "warning": None}
    try:
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
        found = {"probe_error": f"importing torch and jax failed (exit code {proc.returncode}): {tail}"}
    warnings = [line.strip() for line in proc.stderr.splitlines() if re.search(r"cuda|gpu|driver", line, re.IGNORECASE)]
    found["warning"] = warnings[-1][:300] if warnings else None
    return found


def preflight() -> tuple[list, bool]:
    return checks(nvidia_driver(), run_probe(), find_compiler(), find_python_h())


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--probe"]:
        print(json.dumps(probe()))
        return 0
    rows, _ = preflight()
    for item, result in rows:
        print(f"{item}: {result}")
    return 1 if any(result.startswith("FAIL") for _, result in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
