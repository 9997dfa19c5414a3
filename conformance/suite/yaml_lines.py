"""Read a YAML file into plain Python values and remember the line of every value.

Scenario files are YAML because they read as transcripts: one step per list item,
comments where a human wants them, no quoting of ``$m1`` or ``foo-0``. TOML (tomllib, no
dependency) was the alternative: its steps would be ``[[steps]]`` tables with every
string quoted, inline tables must fit on one line, and tomllib reports no positions, so
errors could not name a line. PyYAML's node tree carries positions, so a validation
error names the line a value sits on. A
value's line is the line of its mapping key (``member_id: ...``) or of its list item.
"""

from __future__ import annotations

from pathlib import Path

import yaml

Path_ = tuple[str | int, ...]


class YamlError(ValueError):
    """The file is not YAML we can read; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def read(path: Path) -> tuple[object, dict[Path_, int]]:
    """The document's value, and the line of each value by its path of keys and indexes."""
    text = path.read_text(encoding="utf-8")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlError(
            mark.line + 1 if mark else 1, f"not valid YAML: {exc.problem or exc}"
        ) from None
    finally:
        loader.dispose()
    if node is None:
        raise YamlError(1, "the file is empty")
    lines: dict[Path_, int] = {}
    return _value(node, (), lines, yaml.SafeLoader("")), lines


def _value(
    node: yaml.Node, path: Path_, lines: dict[Path_, int], constructor: yaml.SafeLoader
) -> object:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        result: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlError(key_node.start_mark.line + 1, "a mapping key must be a plain value")
            key = constructor.construct_object(key_node)
            if isinstance(key, bool) or key is None:
                # YAML 1.1 reads yes/no/on/off/null as booleans or null: never a field name here.
                key = key_node.value
            if key in result:
                raise YamlError(key_node.start_mark.line + 1, f"duplicate key {key!r}")
            lines[(*path, key)] = key_node.start_mark.line + 1
            result[key] = _value(value_node, (*path, key), lines, constructor)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_value(item, (*path, i), lines, constructor) for i, item in enumerate(node.value)]
    return constructor.construct_object(node)
