"""Which of the mypyc-compiled modules this interpreter imports compiled, and which are stale.

setup.py compiles the modules that pyproject.toml lists (``[tool.magnetar.mypyc]``); an
editable install leaves each extension module beside its source, and Python imports the
extension in preference to the ``.py``. An extension older than its source is stale: the tests
would run the code from before the edit. ``make setup`` rebuilds on such an edit; a bare
``pytest`` after an edit does not, so the test session refuses to start (tests/conftest.py).

Reads pyproject.toml and where the import system finds each module (importing their parent
packages, as finding a submodule does).
"""

from __future__ import annotations

import importlib.util
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOT = Path("services/src")


@dataclass(frozen=True)
class CompiledModules:
    compiled: list[str]  # imported from an extension module
    pure: list[str]  # imported from their .py source
    stale: list[str]  # an extension older than its source, or of a module not listed


def listed_sources() -> list[Path]:
    """The sources setup.py compiles, relative to the repository root."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        config = tomllib.load(handle)
    return [Path(name) for name in config["tool"]["magnetar"]["mypyc"]["modules"]]


def module_name(source: Path) -> str:
    return ".".join(source.relative_to(SOURCE_ROOT).with_suffix("").parts)


def compiled_modules() -> CompiledModules:
    compiled: list[str] = []
    pure: list[str] = []
    stale: list[str] = []
    for source in listed_sources():
        name = module_name(source)
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        if origin is None or origin.suffix != ".so":
            pure.append(name)
            continue
        compiled.append(name)
        python = origin.parent / f"{origin.name.split('.')[0]}.py"
        if python.exists() and python.stat().st_mtime > origin.stat().st_mtime:
            stale.append(name)
    # An extension left from a module since taken off the list still shadows its source.
    listed = {ROOT / source.parent / source.stem for source in listed_sources()}
    for built in (ROOT / SOURCE_ROOT).rglob("*.so"):
        stem = built.parent / built.name.split(".")[0]
        if stem not in listed and built.name.split(".")[0] != "_compiled__mypyc":
            stale.append(str(built.relative_to(ROOT / SOURCE_ROOT)))
    return CompiledModules(compiled, pure, stale)
