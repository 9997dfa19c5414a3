"""Renders the group state machine (``coordspec.reference.group.transitions``) for spec/.

``dot_source()`` is the Graphviz text, ``outcomes_markdown()`` the per-state table of
request outcomes; ``render(directory)`` writes both, and the SVG when Graphviz is there.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

from coordspec.reference.group.transitions import OUTCOMES, TRANSITIONS, GroupState

DIAGRAM_NAME = "group-states"


def dot_source() -> str:
    edges: dict[tuple[GroupState, GroupState], list[str]] = defaultdict(list)
    for t in TRANSITIONS:
        edges[(t.source, t.target)].append(f"{t.cause} ({t.rule})")
    lines = [
        "digraph GroupStates {",
        '  rankdir=LR; node [shape=box, style=rounded, fontname="Helvetica"]; edge [fontname="Helvetica", fontsize=10];',
    ]
    for state in GroupState:
        lines.append(f'  "{state}";')
    for (source, target), causes in edges.items():
        label = "\\n".join(causes)
        lines.append(f'  "{source}" -> "{target}" [label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def outcomes_markdown() -> str:
    apis = sorted({api for api, _ in OUTCOMES})
    header = "| request | " + " | ".join(str(s) for s in GroupState) + " |"
    rule = "|" + "---|" * (len(GroupState) + 1)
    rows = []
    for api in apis:
        cells = []
        for state in GroupState:
            outcome = OUTCOMES.get((api, state))
            cells.append(
                "validation decides"
                if outcome is None
                else getattr(outcome, "name", str(outcome)).replace("_", "\\_")
            )
        rows.append(f"| {api} | " + " | ".join(cells) + " |")
    return "\n".join([header, rule, *rows]) + "\n"


class GraphvizMissing(RuntimeError):
    pass


def render(directory: Path) -> list[Path]:
    """Write the DOT source, the SVG and the outcome table into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    dot_path = directory / f"{DIAGRAM_NAME}.dot"
    dot_path.write_text(dot_source())
    table_path = directory / f"{DIAGRAM_NAME}-outcomes.md"
    table_path.write_text(outcomes_markdown())
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizMissing(
            "Graphviz's `dot` is not installed (Debian: apt-get install graphviz); wrote only the .dot source"
        )
    svg_path = directory / f"{DIAGRAM_NAME}.svg"
    subprocess.run(
        [dot, "-Tsvg", str(dot_path), "-o", str(svg_path)], check=True, capture_output=True
    )
    return [dot_path, svg_path, table_path]
