"""The real LiteLLM proxy (PyPI `litellm`, pinned with its closure in litellm-requirements.txt) in its own
cached venv, started on the CPU in front of an OpenAI-compatible engine, with its Prometheus callback on.

No database: tenants are end users (the request's `user` field), which the proxy labels only with
`enable_end_user_cost_tracking_prometheus_only`. The master key is the one credential: the proxy refuses to
start without one, and asks for it on /metrics.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from exporter.demo.vllm_env import free_port

VERSION = "1.110.2"
REQUIREMENTS = Path(__file__).with_name("litellm-requirements.txt")
MASTER_KEY = "sk-e2e-" + hashlib.sha256(b"llm-inference-exporter gateway e2e").hexdigest()[:32]


def cache_dir() -> Path:
    return Path(os.environ.get("LLM_EXPORTER_CACHE", Path.home() / ".cache" / "llm-inference-exporter"))


def ensure_venv() -> Path:
    """The `litellm` entry point of the cached venv (created on first use from the pinned closure)."""
    venv = cache_dir() / f"litellm-{VERSION}"
    stamp = venv / ".complete"
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if not (stamp.exists() and stamp.read_text() == want):
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", "-r", str(REQUIREMENTS)], check=True, timeout=1800)
        stamp.write_text(want)
    return venv / "bin" / "litellm"


@dataclass
class Proxy:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()


def config(engine_url: str, model: str) -> str:
    return f"""model_list:
  - model_name: {model}
    litellm_params:
      model: openai/{model}
      api_base: {engine_url}/v1
      api_key: none
litellm_settings:
  callbacks: ["prometheus"]
  enable_end_user_cost_tracking_prometheus_only: true
general_settings:
  master_key: {MASTER_KEY}
"""


def start(engine_url: str, model: str, workdir: Path) -> Proxy:
    binary = ensure_venv()
    path = workdir / "litellm.yaml"
    path.write_text(config(engine_url, model))
    port = free_port()
    log = workdir / "litellm.log"
    # the model price map is read from the package, not fetched from GitHub at start-up
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_DOCS": "True"}
    args = [str(binary), "--config", str(path), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    process = subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, cwd=workdir)
    proxy = Proxy(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"litellm exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(proxy.url + "/health/liveliness", timeout=2) as response:
                if response.status == 200:
                    return proxy
        except OSError:
            pass
        time.sleep(0.5)
    proxy.stop()
    raise RuntimeError(f"litellm not live within 180 s: {log.read_text()[-2000:]}")
