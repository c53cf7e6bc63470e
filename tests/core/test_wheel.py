"""The wheel a user installs: the exporter's run time, without the repository's tooling, working outside it.

Built from a copy of what the image build copies (pyproject.toml, setup.py, README.md, exporter/), installed
into a fresh venv in a temporary folder, and run from there: `serve` answers /metrics, `check` is there,
`render --out DIR` writes what the source checkout renders for the same options, `demo` says it belongs to a
source checkout. The third-party run-time libraries come from this venv's site-packages through a path entry
(no index to download from in the test), never the project itself.
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

from exporter.bundle import ecosystem
from exporter.bundle import render as bundle
from exporter.demo.vllm_env import free_port
from tests.engines.engine_servers import engine_server, recorded

ROOT = Path(__file__).resolve().parents[2]
TOOLING = ("exporter/demo/", "exporter/bundle/docs.py", "exporter/bundle/__main__.py")


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
                   "exporter/engines/data/vllm_releases.json", "exporter/catalogue/renames.py",
                   "exporter/bundle/render.py", "exporter/bundle/shipped.py", "exporter/bundle/write.py",
                   "exporter/bundle/perses.py",
                   "exporter/bundle/data/grafana-alert-rules.json",
                   "exporter/bundle/data/dashboards/llm-inference-overview.json"):  # fmt: skip
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


def test_demo_names_the_source_checkout_check_is_there(installed: Path, tmp_path: Path) -> None:
    assert run(installed, "--version", cwd=tmp_path).stdout.strip() == "llm-exporter 0.1.0"
    done = run(installed, "demo", cwd=tmp_path)
    assert done.returncode == 2
    assert "llm-exporter demo: a tool of the source checkout" in done.stderr
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


@pytest.mark.parametrize(
    "options",
    [
        (),
        (
            "--runbook-url",
            "https://runbooks.example.com/llm.md",
            "--cluster-label",
            "cluster",
            "--datasource-uid",
            "abc",
            "--perses",
        ),
    ],
)
def test_the_installed_render_writes_what_the_checkout_renders(installed: Path, tmp_path: Path,
                                                               options: tuple[str, ...]) -> None:  # fmt: skip
    out = tmp_path / "alerts"
    done = run(installed, "render", "--out", str(out), *options, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    pairs = [o for o in options if o != "--perses"]
    value = dict(zip(pairs[::2], pairs[1::2], strict=True))
    expected = bundle.out_files(
        bundle.ROOT,
        value.get("--runbook-url"),
        value.get("--cluster-label"),
        value.get("--datasource-uid"),
        with_perses="--perses" in options,
    )
    assert done.stdout.splitlines() == [f"wrote {out / name}" for name in expected]
    assert {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == expected
    # from the shipped files: the sources (rules as code, grafanalib's dashboards) are not there to render from
    spec = "import importlib.util as u; print([u.find_spec(m) for m in ('alerts', 'dashboards')])"
    done = subprocess.run(
        [installed / "python", "-I", "-c", spec],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=True,
    )  # fmt: skip
    assert done.stdout == "[None, None]\n"


def test_the_installed_render_writes_the_slo_objects_of_the_checkout(installed: Path, tmp_path: Path) -> None:
    out = tmp_path / "slo"
    done = run(installed, "render", "--slo", "--out", str(out), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    expected = ecosystem.slo_out(ecosystem.slo_files(bundle.ROOT))
    assert {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == expected
    assert {"sloth-vllm.yaml", "pyrra-vllm.yaml", "README.md"} <= set(expected)


def test_the_installed_render_needs_a_checkout_to_regenerate(installed: Path, tmp_path: Path) -> None:
    for args in ((), ("--check",)):
        done = run(installed, "render", *args, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            "llm-exporter render: error: regenerating the repository's files (and --check) needs a source checkout: "
            "run it in a clone or name one with --root CHECKOUT; the installed exporter writes its alert files with "
            "--out DIR\n"
        )
    done = run(installed, "render", "--root", str(tmp_path), "--check", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr.startswith("llm-exporter render: error: --root must be a source checkout")
        and "\n" not in (done.stderr[:-1])
    )
