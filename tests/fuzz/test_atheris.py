"""Bounded runs of the atheris harnesses in fuzz/: a crash (any exception but the contract's) fails the test.

Each run fuzzes a copy of the harness's seed corpus (libFuzzer adds the inputs it finds to the first corpus
directory) for at most RUNS inputs or SECONDS seconds, whichever comes first. Longer campaigns: fuzz/README.md.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"
RUNS = 20000
SECONDS = 10


def _run(harness: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        str(harness),
        *args,
        f"-atheris_runs={RUNS}",
        f"-max_total_time={SECONDS}",
        "-timeout=10",  # one input running for longer is a hang, reported as a crash
        "-seed=1",
        f"-artifact_prefix={work}/",
        "-print_final_stats=1",
    ]
    return subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=SECONDS + 90, check=False)


def _report(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit status {proc.returncode}\n{(proc.stdout + proc.stderr)[-4000:]}"


@pytest.mark.parametrize(
    ("harness", "corpus"),
    [("fuzz_parser.py", "parser"), ("fuzz_config.py", "config"), ("fuzz_manifests.py", "manifests")],
)
def test_harness_finds_no_crash(harness: str, corpus: str, tmp_path: Path) -> None:
    seeds = tmp_path / "corpus"
    shutil.copytree(FUZZ / "corpus" / corpus, seeds)
    proc = _run(FUZZ / harness, tmp_path, str(seeds), f"-dict={FUZZ / (corpus + '.dict')}")
    assert proc.returncode == 0, _report(proc)
    assert "Done " in proc.stderr, _report(proc)  # it fuzzed: not an early exit that happened to return 0
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*")), _report(proc)


def test_a_crashing_harness_fails(tmp_path: Path) -> None:
    """The check above is only worth something if a crash makes the run exit non-zero: verify that."""
    broken = tmp_path / "fuzz_broken.py"
    broken.write_text(
        "import sys\nimport atheris\n\n\n"
        "def TestOneInput(data):\n"
        "    if len(data) > 2:\n"
        "        raise KeyError('a leak')\n\n\n"
        "atheris.Setup(sys.argv, TestOneInput)\natheris.Fuzz()\n"
    )
    proc = _run(broken, tmp_path)
    assert proc.returncode != 0, _report(proc)
    assert "KeyError: 'a leak'" in proc.stdout + proc.stderr
    assert list(tmp_path.glob("crash-*"))
