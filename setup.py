"""Build hook: compile the hot, pure modules that pyproject.toml lists with mypyc.

Everything else about the package is declared in pyproject.toml; this file only adds the
extension modules. ``[tool.magnetar.mypyc] modules`` names the sources to compile; they stay
the source of truth (the extension is built from them, the tests are the same), and the build
type-checks them with the project's mypy settings. One shared library holds the compiled code
(``magnetar._compiled__mypyc``), one small extension per module imports it.

An editable install (``make setup``) leaves each extension beside its source, where it is
imported in preference to the ``.py``: ``make setup`` rebuilds when a listed source changes.
``MAGNETAR_PURE_PYTHON=1`` at install time builds no extension and removes those an earlier
editable install left, so the interpreter runs the sources. docs/architecture.md, "Compiled
modules".
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

ROOT = Path(__file__).parent
# Commands that only describe the package: pip runs them before the build, and they need no
# extension (mypyc would type-check and generate C for nothing).
METADATA_COMMANDS = {"egg_info", "dist_info", "sdist", "--name", "--version"}


def compiled_sources() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        config = tomllib.load(handle)
    sources: list[str] = config["tool"]["magnetar"]["mypyc"]["modules"]
    return sources


def pure_python() -> bool:
    return os.environ.get("MAGNETAR_PURE_PYTHON", "") not in ("", "0")


def builds_code() -> bool:
    return not METADATA_COMMANDS.intersection(sys.argv[1:])


def extensions_in_tree(sources: list[str]) -> list[Path]:
    """The extensions an editable install left beside the sources (and the shared library)."""
    found = [*(ROOT / "services/src/magnetar").glob("_compiled__mypyc.*.so")]
    for source in sources:
        path = ROOT / source
        found += path.parent.glob(f"{path.stem}.*.so")
    return found


def remove_extensions(keep: list[Path]) -> None:
    """Delete the in-tree extensions but ``keep``: one of a module no longer listed (or any, for
    a pure build) would still be imported in place of its source. (The package has no other
    extension modules of its own.)"""
    for built in (ROOT / "services/src").rglob("*.so"):
        if built not in keep:
            built.unlink()


class BuildExtension(build_ext):
    """setuptools' build_ext, then every in-place extension dated now.

    A build that found nothing to recompile (an edit that left the generated C unchanged)
    keeps the extensions' old times; dated now, they are newer than the sources they were just
    checked against, which is what the test session's staleness check reads."""

    def run(self) -> None:
        try:
            super().run()
        except (CCompilerError, ExecError, PlatformError) as exc:
            raise SystemExit(
                f"compiling the modules of [tool.magnetar.mypyc] failed: {exc}. Install a C "
                "compiler and the Python headers (Debian: gcc, python3.11-dev), or install "
                "with MAGNETAR_PURE_PYTHON=1 to run them as plain Python."
            ) from exc
        if self.inplace or getattr(self, "editable_mode", False):
            for built in extensions_in_tree(compiled_sources()):
                os.utime(built)


def ext_modules() -> list[Extension]:
    sources = compiled_sources()
    if pure_python():
        remove_extensions(keep=[])
        return []
    if not builds_code():
        return []
    remove_extensions(keep=extensions_in_tree(sources))
    from mypyc.build import mypycify

    # Imports outside the listed modules are followed for their types, silently (the lint
    # checks them); a library without stubs in the build environment is Any.
    options = ["--follow-imports=silent", "--ignore-missing-imports"]
    return mypycify([*sources, *options], opt_level="3", group_name="magnetar._compiled")


setup(ext_modules=ext_modules(), cmdclass={"build_ext": BuildExtension})
