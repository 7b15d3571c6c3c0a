"""Configuration files: rule thresholds (package defaults, overridden by the user's YAML)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from perfkit.errors import ConfigError

Thresholds = dict[str, dict[str, Any]]


def default_thresholds() -> Thresholds:
    """The thresholds shipped with the package (analyzers/thresholds.yaml)."""
    text = resources.files("perfkit.analyzers").joinpath("thresholds.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def load_thresholds(path: Path | None = None) -> Thresholds:
    """Package defaults, with any value in the YAML file at `path` replacing the default.

    Raises:
        ConfigError: unreadable YAML, or a rule or key the defaults do not have (a typo would
            otherwise be ignored silently), or a value of a different type.
    """
    th = default_thresholds()
    if path is None:
        return th
    try:
        user = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read thresholds: {exc}") from None
    if not isinstance(user, dict):
        raise ConfigError(f"{path}: thresholds must be a mapping of rule id to settings")
    for rule, values in user.items():
        if rule not in th:
            raise ConfigError(f"{path}: unknown rule {rule!r} (known: {', '.join(sorted(th))})")
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: {rule}: expected a mapping of settings")
        for key, value in values.items():
            if key not in th[rule]:
                raise ConfigError(f"{path}: {rule}: unknown setting {key!r} (known: {', '.join(th[rule])})")
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConfigError(f"{path}: {rule}.{key}: expected a number, got {value!r}")
            th[rule][key] = value
    return th
