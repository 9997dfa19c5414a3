"""The README's promises: exactly two set-up commands, and a Python example that runs."""

from __future__ import annotations

import re
from pathlib import Path

from coordspec.reference.errors import ErrorCode

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_two_set_up_commands_that_exist():
    (block,) = re.findall(r"## Set-up.*?```sh\n(.*?)```", README, flags=re.DOTALL)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["./dev run", "./dev test"]
    assert (Path(__file__).resolve().parent.parent / "dev").stat().st_mode & 0o111


def test_the_python_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["effects"][0].response.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert namespace["coordinator"].next_deadline_ms() is not None
