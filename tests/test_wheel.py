"""The wheel built from the repository installs one top-level name, ``coordspec``, and its
``coordspec`` command checks the reference from outside the clone.

The wheel goes into a fresh virtualenv with its base dependencies only (pip fetches them as
a user's pip would): no extra (kio, kazoo, …) is needed to check the reference.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=600, cwd=cwd
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_the_wheel_installs_coordspec_alone_and_checks_the_reference(tmp_path):
    # Built from a copy: setuptools leaves build/ beside the sources, and a stale build/
    # would carry deleted modules into the next wheel.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for top in ("reference", "broker", "conformance"):
        shutil.copytree(ROOT / top, source / top, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source)
    (wheel,) = wheels.glob("coordspec-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {top for top in tops if not top.startswith("coordspec-")} == {"coordspec"}

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", wheel)
    assert not (site / "kio").exists()
    out = _run(venv / "bin" / "coordspec", "conform", "--target", "reference", cwd=tmp_path)
    assert " 0 failed, " in out and " 0 errors, " in out, out[-2000:]
    assert str(site / "coordspec") in _run(
        python, "-c", "import coordspec.reference.group as g; print(g.__file__)", cwd=tmp_path
    )
