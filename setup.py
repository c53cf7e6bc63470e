"""The wheel holds the exporter's run time; the repository's tooling modules stay out of it.

Everything else about the package is in pyproject.toml. Left out of the wheel (and so of the image): the demo
(a local vLLM, run from a clone), the metrics-doc generator and `python -m exporter.bundle`, which write the
committed docs and generated files of a source checkout. `llm-exporter check` ships: users run it on their
own dashboards; so does `llm-exporter render --out DIR`, which writes the alert files (their runbook links,
cluster label and Grafana data source set) from the rendering shipped in exporter/bundle/data/. An editable
install (`pip install -e`) still sees every module.
"""

from __future__ import annotations

from typing import Any

from setuptools import setup  # type: ignore[import-untyped]
from setuptools.command.build_py import build_py  # type: ignore[import-untyped]

TOOLING_PACKAGES = ("exporter.demo",)
TOOLING_MODULES = {("exporter.bundle", "docs"), ("exporter.bundle", "__main__")}


class RuntimeOnly(build_py):  # type: ignore[misc]
    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        if package.startswith(TOOLING_PACKAGES):
            return []
        modules: list[tuple[str, str, str]] = super().find_package_modules(package, package_dir)
        return [m for m in modules if (m[0], m[1]) not in TOOLING_MODULES]

    def find_data_files(self, package: str, src_dir: str) -> Any:
        return [] if package.startswith(TOOLING_PACKAGES) else super().find_data_files(package, src_dir)


setup(cmdclass={"build_py": RuntimeOnly})
