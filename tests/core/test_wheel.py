"""The wheel a user installs: the exporter's run time, without the repository's tooling, working outside it.

Built from a copy of what the image build copies (pyproject.toml, setup.py, README.md, exporter/), installed
into a fresh venv in a temporary folder, and run from there: `serve` answers /metrics, `check` is there,
`render` and `demo` say they belong to a source checkout. The third-party run-time libraries come from this
venv's site-packages through a path entry (no index to download from in the test), never the project itself.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.demo.vllm_env import free_port
from tests.engines.engine_servers import engine_server, recorded

ROOT = Path(__file__).resolve().parents[2]
TOOLING = ("exporter/demo/", "exporter/bundle/render.py", "exporter/bundle/docs.py", "exporter/bundle/__main__.py")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "exporter", src / "exporter", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (built,) = out.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """bin/ of a fresh venv holding the wheel."""
    env = tmp_path_factory.mktemp("venv")
    venv.create(env, with_pip=True)
    subprocess.run(
        [env / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (site,) = (env / "lib").glob("python3*/site-packages")
    (site / "zz_runtime_libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield env / "bin"


def test_the_wheel_holds_the_runtime_and_not_the_tooling(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for module in ("exporter/server.py", "exporter/collect.py", "exporter/check/cli.py", "exporter/py.typed",
                   "exporter/engines/data/vllm_releases.json", "exporter/catalogue/renames.py"):  # fmt: skip
        assert module in names
    assert [n for n in names if n.startswith(TOOLING)] == []
    assert {n.split("/")[0] for n in names} == {"exporter", wheel.name.split("-")[0] + "-0.1.0.dist-info"}


def run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(bin_dir / "llm-exporter"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


def test_the_installed_exporter_imports_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [installed / "python", "-c", "import exporter, exporter.server; print(exporter.__file__)"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=True,
    )  # fmt: skip
    assert done.stdout.startswith(str(installed.parent))


def test_render_and_demo_name_the_source_checkout_check_is_there(installed: Path, tmp_path: Path) -> None:
    assert run(installed, "--version", cwd=tmp_path).stdout.strip() == "llm-exporter 0.1.0"
    for tool in ("render", "demo"):
        done = run(installed, tool, cwd=tmp_path)
        assert done.returncode == 2
        assert f"llm-exporter {tool}: a tool of the source checkout" in done.stderr
    done = run(installed, "check", "--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "--prometheus" in done.stdout


def test_the_installed_exporter_serves(installed: Path, tmp_path: Path) -> None:
    with engine_server("ok", recorded("0.32.0")) as engine:
        config = tmp_path / "c.yaml"
        config.write_text(f"engines: {{targets: [{{url: '{engine.url}', labels: {{namespace: d, pod: v}}}}]}}\n"
                          "gpu: {enabled: 'false'}\n")  # fmt: skip
        port = free_port()
        proc = subprocess.Popen(
            [installed / "llm-exporter", "serve", "--config", str(config), "--web.listen-address", f"127.0.0.1:{port}"],
            cwd=tmp_path, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            text = ""
            for _ in range(100):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                        text = response.read().decode()
                    break
                except OSError:
                    time.sleep(0.1)
            assert 'llm_engine_up{namespace="d",pod="v",engine="vllm"} 1' in text
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
        assert proc.returncode == 0
