"""The Perses server with its web UI (scripts/build-perses-ui.sh) serving a generated dashboard against a real
Prometheus, and Debian's headless Chromium looking at it: the dashboard as a person sees it."""

from __future__ import annotations

import html
import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from exporter.demo.vllm_env import free_port
from tests.bundle.servers import process, wait_http
from tests.peers import perses_ui

PROJECT = "llm"
CHROMIUM = "/usr/bin/chromium"


@contextmanager
def perses(workdir: Path) -> Iterator[str]:
    """`perses` on a free loopback port with a file database in `workdir` and the built plugins; yields its URL."""
    server, plugins = perses_ui()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "archives").mkdir(exist_ok=True)
    config = {
        "database": {"file": {"folder": str(workdir / "db"), "extension": "json"}},
        "plugin": {"path": str(plugins), "archive_paths": [str(workdir / "archives")]},
    }
    (workdir / "perses.yaml").write_text(yaml.safe_dump(config))
    address = f"127.0.0.1:{free_port()}"
    args = [str(server), "--config", str(workdir / "perses.yaml"), "--web.listen-address", address]
    with process(args, workdir / "perses.log") as proc:
        wait_http(f"http://{address}/api/v1/plugins", proc=proc)
        yield f"http://{address}"


def _post(url: str, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def scrape_interval(prometheus_url: str) -> str:
    """The Prometheus's global scrape interval as its loaded configuration says it ("1s", "15s", "1m")."""
    with urllib.request.urlopen(f"{prometheus_url}/api/v1/status/config", timeout=10) as response:
        loaded = yaml.safe_load(json.load(response)["data"]["yaml"])
    return str(loaded["global"]["scrape_interval"])


def datasource(prometheus_url: str, interval: str) -> dict[str, Any]:
    """The default Prometheus datasource, proxied to `prometheus_url`, scraping every `interval`.

    Perses takes a datasource's scrapeInterval (1m when unset) as every query's minimum step, and evaluates a
    query at the end of the time range floored to its step, the instant queries of a table too: without the
    Prometheus's own interval, a panel reads the world up to a minute ago, and the Diagnosis row of the demo,
    whose verdict is seconds old when it holds, is empty until the next minute."""
    proxy = {"kind": "HTTPProxy", "spec": {"url": prometheus_url}}
    spec = {"proxy": proxy, "scrapeInterval": interval}
    return {
        "kind": "GlobalDatasource",
        "metadata": {"name": "prometheus"},
        "spec": {"default": True, "plugin": {"kind": "PrometheusDatasource", "spec": spec}},
    }


def add_prometheus(perses_url: str, prometheus_url: str) -> None:
    """Project llm, and a default Prometheus datasource that the Perses server proxies to `prometheus_url`,
    with that Prometheus's scrape interval."""
    _post(f"{perses_url}/api/v1/projects", {"kind": "Project", "metadata": {"name": PROJECT}})
    _post(f"{perses_url}/api/v1/globaldatasources", datasource(prometheus_url, scrape_interval(prometheus_url)))


def publish(perses_url: str, dashboard: dict[str, Any], name: str, start: str = "2m") -> str:
    """Store `dashboard` (a generated `Dashboard`) as `name` in project llm; returns its page URL, showing the
    last `start` (a Perses duration)."""
    doc = dict(dashboard) | {"metadata": {"name": name, "project": PROJECT}}
    _post(f"{perses_url}/api/v1/projects/{PROJECT}/dashboards", doc)
    return f"{perses_url}/projects/{PROJECT}/dashboards/{name}?start={start}"


def _chromium(url: str, *args: str, budget_ms: int = 30000) -> subprocess.CompletedProcess[str]:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--virtual-time-budget={budget_ms}",
        *args,
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


def screenshot(url: str, path: Path, width: int = 1600, height: int = 9000) -> None:
    """A PNG of the page at `url`, `width` x `height` CSS pixels, once its queries had time to answer."""
    _chromium(url, f"--screenshot={path}", f"--window-size={width},{height}")


def dom(url: str, width: int = 1600, height: int = 9000) -> str:
    """The page's DOM after its queries had time to answer."""
    return _chromium(url, "--dump-dom", f"--window-size={width},{height}").stdout


# one panel in the rendered DOM: its header's "toggle panel TITLE view mode" button, then its <figure> body
_PANEL = re.compile(r'aria-label="toggle panel (.*?) view mode".*?<figure[^>]*>(.*?)</figure>', re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def panel_states(page: str) -> dict[str, str]:
    """Each panel's title -> "data", "no data" (Perses' empty-panel text, or a chart whose legend lists no
    series) or the error text the panel shows in place of its chart (an alert: a failed query, a plugin that
    did not load)."""
    states = {}
    for match in _PANEL.finditer(page):
        title, body = html.unescape(match.group(1)), match.group(2)
        if "MuiAlert" in body or "Error" in body:
            text = html.unescape(_TAG.sub(" ", body))
            states[title] = "error: " + " ".join(text.split())[:300]
        elif ">No data<" in body or ("_echarts_instance_" in body and "<td" not in body):
            # a time series chart draws its "No data" on the canvas: its legend table then has no series
            states[title] = "no data"
        else:
            states[title] = "data"
    return states


def panel_texts(page: str) -> dict[str, str]:
    """Each panel's title -> the text its body shows (a table's header and cells), whitespace collapsed."""
    return {
        html.unescape(m.group(1)): " ".join(html.unescape(_TAG.sub(" ", m.group(2))).split())
        for m in _PANEL.finditer(page)
    }


def rows(dashboard: dict[str, Any]) -> list[tuple[str, dict[str, Any], int]]:
    """Each row of `dashboard` as (title, the dashboard with that row alone, the page height in CSS pixels
    that shows it whole): Perses' grid is 24 columns wide and 30 px per height unit plus margins."""
    out = []
    for layout in dashboard["spec"]["layouts"]:
        alone = dict(dashboard) | {"spec": dict(dashboard["spec"]) | {"layouts": [layout]}}
        bottom = max(item["y"] + item["height"] for item in layout["spec"]["items"])
        out.append((layout["spec"]["display"]["title"], alone, 230 + bottom * 40))
    return out
