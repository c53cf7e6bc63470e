"""The demo's Prometheus: scrapes the exporter every second and evaluates the project's alert rules.

Used in a checkout (the repository's `alerts/` package is importable). Any Prometheus 2.40+ serves the demo,
so the first that is there wins: a `prometheus` on PATH, the Prometheus 3 the test suite built into the cache,
the distribution's package (Debian's `prometheus`, installed when running as root with apt), and only as the
last resort a build from the pinned Go module (`scripts/build-peers.sh`, minutes). It also
scrapes the engine itself (job "vllm"), as a user's dashboards on vLLM's own names would. The rules are
rendered from the same source as the shipped ones, with demo thresholds: short `for` durations and a TTFT
threshold a CPU burst of the tiny model crosses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from exporter.demo.vllm_env import Progress, cache_dir, free_port

if TYPE_CHECKING:
    from alerts.thresholds import Thresholds

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "build-peers.sh"


def available() -> bool:
    """A checkout: the rule sources and the script that builds Prometheus are there."""
    try:
        import alerts.formats  # noqa: F401 - the repository's rule sources
    except ImportError:
        return False
    return BUILD.is_file()


MINIMUM = (2, 40)
_VERSION = re.compile(r"prometheus, version (\d+)\.(\d+)")


def version(path: str) -> tuple[int, int] | None:
    """`prometheus --version`'s major and minor, None when it does not run or say."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20, check=False)
    except OSError:
        return None
    m = _VERSION.search(done.stdout + done.stderr)
    return (int(m[1]), int(m[2])) if m else None


def _usable(path: str | None) -> bool:
    found = version(path) if path else None
    return found is not None and found >= MINIMUM


def _debian_package(progress: Progress) -> str | None:
    """Debian's (or Ubuntu's) prometheus package, installed with apt-get when running as root."""
    if shutil.which("apt-get") is None or shutil.which("apt-cache") is None or os.geteuid() != 0:
        return None
    policy = subprocess.run(["apt-cache", "policy", "prometheus"], capture_output=True, text=True, check=False)
    if "Candidate:" not in policy.stdout or "Candidate: (none)" in policy.stdout:
        return None
    progress("installing the distribution's prometheus package (apt-get install prometheus)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "--no-install-recommends", "prometheus"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    path = shutil.which("prometheus") or "/usr/bin/prometheus"
    return path if done.returncode == 0 and _usable(path) else None


def binary(progress: Progress) -> str | None:
    """A Prometheus 2.40+: on PATH, cached, from the distribution, else built; None (said why) when none is."""
    on_path = shutil.which("prometheus")
    if on_path is not None and _usable(on_path):
        progress(f"using {on_path} (Prometheus {'.'.join(map(str, version(on_path) or ()))})")
        return on_path
    path = cache_dir() / "bin" / "prometheus"
    if path.is_file():
        return str(path)  # any cached 3.x will do; the build script would wait on another build's lock
    packaged = _debian_package(progress)
    if packaged is not None:
        return packaged
    progress("building Prometheus 3 from its pinned Go module (first run only, a few minutes; needs Go 1.26+ "
             "or the Go module proxy to fetch it)")  # fmt: skip
    done = subprocess.run(["bash", str(BUILD), "prometheus"], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not path.is_file():
        tail = " ".join(done.stderr.strip().splitlines()[-3:])
        progress(f"Prometheus could not be built ({BUILD.relative_to(ROOT)} prometheus: {tail}); "
                 "alerts are not evaluated")  # fmt: skip
        return None
    return str(path)


@dataclass
class DemoPrometheus:
    process: subprocess.Popen[bytes]
    url: str
    thresholds: Thresholds | None = None  # the demo's, which the rules were rendered with
    started: float = 0.0

    def firing(self) -> list[str]:
        """Names (with namespace/model when present) of the alerts firing now."""
        try:
            with urllib.request.urlopen(self.url + "/api/v1/alerts", timeout=5) as response:
                data = json.loads(response.read())
        except OSError:
            return []
        out = []
        for alert in data.get("data", {}).get("alerts", []):
            if alert.get("state") == "firing":
                labels = alert.get("labels", {})
                where = ",".join(f"{k}={labels[k]}" for k in ("namespace", "model", "pod") if k in labels)
                out.append(f"{labels.get('alertname')}{{{where}}}")
        return sorted(out)

    def query(self, expr: str) -> list[tuple[dict[str, str], str]]:
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                data = json.loads(response.read())
        except OSError:
            return []
        return [(r["metric"], r["value"][1]) for r in data.get("data", {}).get("result", [])]

    def wait_scraped(self, job: str, timeout: float = 30.0) -> bool:
        """True once the exporter was scraped twice: rate() then has a baseline before the burst."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(float(v) >= 2 for _, v in self.query(f'count_over_time(up{{job="{job}"}}[1m])')):
                return True
            time.sleep(0.5)
        return False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start(prometheus: str, exporter_address: str, engine_address: str, workdir: Path) -> DemoPrometheus:
    from alerts import formats
    from alerts.thresholds import DEFAULT

    demo = replace(
        DEFAULT,
        ttft_p99_seconds=0.2,
        ttft_for="3s",
        latency_window="1m",
        queue_waiting=1,
        queue_for="2s",
        metric_missing_for="3s",
        engine_down_for="3s",
        evaluation_interval="1s",
    )
    (workdir / "rules.yaml").write_text(formats.rule_file(demo))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(workdir / "rules.yaml")],
        "scrape_configs": [
            {"job_name": demo.exporter_job, "static_configs": [{"targets": [exporter_address]}]},
            {"job_name": "vllm", "static_configs": [{"targets": [engine_address]}]},
        ],
    }
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = (workdir / "prometheus.log").open("wb")
    cmd = [
        prometheus,
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    server = DemoPrometheus(process, f"http://127.0.0.1:{port}", demo, time.time())
    for _ in range(100):
        try:
            with urllib.request.urlopen(server.url + "/-/ready", timeout=1):
                pass
        except OSError:
            time.sleep(0.2)
            continue
        if server.wait_scraped(demo.exporter_job):
            return server
        break
    server.stop()
    raise RuntimeError(f"Prometheus did not start or scrape the exporter; see {workdir / 'prometheus.log'}")
