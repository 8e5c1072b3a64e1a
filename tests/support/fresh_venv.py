"""A throwaway virtualenv with this checkout installed, as a user's ``pip install`` makes it (for the tests that
install the package: the WSGI-only install and the docs' one project)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Left out of the new virtualenv's environment. Bytecode is written inside the throwaway virtualenv: its processes
#: (migrate, check, servers) each compiled Django again without it, several seconds apiece; not in the suite's
#: shared PYTHONPYCACHEPREFIX either.
UNSET = ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")


def run(*cmd: str | Path, cwd: Path, env: dict[str, str], ok: bool = True) -> subprocess.CompletedProcess[str]:
    """``cmd`` in ``cwd``; with ``ok``, an assertion that it succeeded, with its output."""
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    if ok:
        assert done.returncode == 0, f"{cmd}:\n{done.stdout}\n{done.stderr}"
    return done


def fresh_venv(tmp: Path, *requirements: str | Path) -> tuple[Path, dict[str, str]]:
    """A virtualenv under ``tmp`` with ``requirements`` installed (``ROOT`` for the package itself, with
    ``[extras]`` appended as a string): its python and the environment to run it in."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is in the dev extra"
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    venv = tmp / "venv"
    run(uv, "venv", "-q", "--python", sys.executable, venv, cwd=tmp, env=env)
    python = venv / "bin" / "python"
    run(uv, "pip", "install", "-q", "--python", python, *requirements, cwd=tmp, env=env)
    return python, env
