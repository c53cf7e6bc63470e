"""Every command ends with an answer, never a traceback: a reader that goes away (`| head`), an output closed
from the start, and `mappings` given an engine by position or a release its table lacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from exporter import cli

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures"


def closed_reader(*args: str) -> subprocess.CompletedProcess[str]:
    """The command with its output piped to a reader that closed the pipe before the first write."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `head` does once it has its lines: long before Python has started
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return subprocess.CompletedProcess(proc.args, proc.wait(timeout=120), "", err)


@pytest.mark.parametrize(
    "args",
    [
        ("mappings",),
        ("check", "-v", "--against", "vllm==0.10.1", str(CORPUS / "check_corpus")),
        ("audit", "-v", "-f", str(CORPUS / "audit_corpus" / "gke-vllm-gemma")),
    ],
)
def test_a_reader_that_goes_away_ends_the_command_with_1_and_no_traceback(args: tuple[str, ...]) -> None:
    done = closed_reader(*args)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr


def test_an_output_closed_from_the_start_is_said_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "mappings"],
        preexec_fn=lambda: os.close(1),  # `llm-exporter mappings >&-`
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, "llm-exporter: standard output is closed: nothing written\n")


@pytest.mark.parametrize("args", [("mappings",), ("check", "--against", "vllm==0.10.1", str(CORPUS / "check_corpus"))])
def test_a_full_disk_under_the_output_is_said(args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:  # every write fails with ENOSPC, as on a full disk
        done = subprocess.run(
            [sys.executable, "-m", "exporter", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
    assert (done.returncode, done.stderr) == (1, "llm-exporter: cannot write the output: No space left on device\n")


def mappings(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["mappings", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_engine_may_be_given_by_position(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = mappings(capsys, "vllm", "--version", "0.9.2")
    assert code == 0
    assert out.splitlines()[0].split() == ["0.9.2", "llm_requests_running", "vllm:num_requests_running"]
    assert mappings(capsys, "sglang", "--version", "0.5.3") == mappings(
        capsys, "--engine", "sglang", "--version", "0.5.3"
    )


def test_an_unknown_engine_or_two_engines_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert mappings(capsys, "vlm") == (
        2,
        "",
        "llm-exporter mappings: no engine 'vlm'; one of vllm, sglang, tgi, trtllm, llamacpp, lmdeploy\n",
    )
    assert mappings(capsys, "vllm", "--engine", "tgi") == (
        2,
        "",
        "llm-exporter mappings: two engines given (vllm, --engine tgi)\n",
    )


def test_a_release_the_table_lacks_is_an_error_listing_the_nearest_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = mappings(capsys, "--engine", "vllm", "--version", "9.9.9")
    assert (code, out) == (2, "")
    head = (
        "llm-exporter mappings: vLLM has no release '9.9.9' in this exporter's table (an engine answering it is "
        "mapped as 0.34.0); known releases, nearest first: 0.34.0, 0.33.0, 0.32.0, "
    )
    assert err.startswith(head) and err.endswith(", 0.5.1, 0.5.0.post1, 0.5.0\n"), err
    code, _, err = mappings(capsys, "vllm", "--version", "0.10")
    assert code == 2
    assert err.startswith(
        "llm-exporter mappings: vLLM has no release '0.10' in this exporter's table (an engine answering it is "
        "mapped as 0.9.2); known releases, nearest first: 0.10.0, 0.10.1, 0.10.1.1, 0.10.2, 0.9.2, 0.9.1, "
        "0.9.0.1, 0.9.0, 0.11.0, "
    ), err


def test_a_name_that_is_no_version_lists_the_releases_newest_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert mappings(capsys, "trtllm", "--version", "banana") == (
        2,
        "",
        "llm-exporter mappings: TensorRT-LLM has no release 'banana'; known releases, newest first: "
        "1.4.0rc1, 1.4.0rc0, 1.2.1, 1.2.0, 1.1.0\n",
    )


@pytest.mark.parametrize("written", ["0.9.2", "v0.9.2", "0.9.2+cu128"])
def test_a_release_is_found_as_engines_spell_it(capsys: pytest.CaptureFixture[str], written: str) -> None:
    code, out, _ = mappings(capsys, "--version", written)
    assert code == 0 and {line.split()[0] for line in out.splitlines()} == {"0.9.2"}
