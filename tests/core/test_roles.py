"""The collector table: each role's collectors, what turns them on, and the `--collector.<name>` flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from exporter import cli, config, roles
from exporter.collect import Collector, CollectorSet

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""
EVERYTHING = config.parse(
    "engines: {kubernetes_discovery: {enabled: true, node_name: node-a}}\n"
    "cluster: {watchdog: {enabled: true, prometheus: {url: 'http://prometheus:9090'}}}\n"
)


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    """A kubeconfig of an API server nobody answers at: the collectors are built, never started."""
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return str(path)


def names(role: str, cfg: config.Config, flags: dict[str, bool] | None = None) -> list[str]:
    return [entry.name for entry in roles.resolve(role, cfg, flags)[1]]


def built(role: str, cfg: config.Config, kubeconfig: str | None, flags: dict[str, bool] | None = None) -> list[str]:
    collectors: list[Collector] = roles.build_collectors(role, cfg, kubeconfig, flags)
    try:
        return [c.name for c in collectors]
    finally:
        CollectorSet(collectors).close()


def test_every_role_runs_its_rows_in_table_order_by_its_config_switches() -> None:
    assert names("node", config.Config()) == ["engines", "gateways", "gpu"]
    assert names("node", EVERYTHING) == ["engine_discovery", "engines", "gateways", "replica_first_token", "gpu"]
    assert names("node", config.parse("gpu: {enabled: false}")) == ["engines", "gateways"]
    assert names("cluster", config.Config()) == ["cluster", "routes", "replicas", "audit", "prices"]
    assert names("cluster", EVERYTHING) == ["cluster", "routes", "replicas", "audit", "watchdog", "prices"]
    off = config.parse("cluster: {routes: {enabled: false}, replicas: {enabled: false}, audit: {enabled: false}}")
    assert names("cluster", off) == ["cluster", "prices"]


def test_the_table_names_each_collector_once_and_every_switch_is_a_config_key() -> None:
    assert len(roles.BY_NAME) == len(roles.TABLE)
    for entry in roles.TABLE:
        assert entry.role in roles.ROLES and entry.help
        assert all(roles.BY_NAME[n].role == entry.role for n in entry.needs)
        if entry.enabled_by is not None:
            roles._get(config.Config(), entry.enabled_by)  # raises AttributeError for a switch that is not one


def test_the_built_collectors_are_the_rows_and_share_their_sources(
    kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODE_NAME", "node-a")
    assert built("node", EVERYTHING, kubeconfig) == [
        "engine_discovery",
        "engines",
        "gateways",
        "replica_first_token",
        "gpu",
        "gpu_pods",
    ]
    assert built("cluster", EVERYTHING, kubeconfig) == ["cluster", "routes", "replicas", "audit", "watchdog"]
    assert built("cluster", EVERYTHING, kubeconfig, {"replicas": False, "watchdog": False}) == [
        "cluster", "routes", "audit",
    ]  # fmt: skip
    # without a kubeconfig the cluster collector alone says so; the others add no second failure
    missing = str(Path(kubeconfig).with_name("missing"))
    assert built("cluster", EVERYTHING, missing) == ["cluster"]


def test_flags_override_the_config_switches_either_way() -> None:
    assert names("node", config.Config(), {"gpu": False, "engines": False, "gateways": False}) == []
    assert names("cluster", config.Config(), {"routes": False, "audit": False}) == ["cluster", "replicas", "prices"]
    off = config.parse("cluster: {routes: {enabled: false}}")
    assert names("cluster", off, {"routes": True}) == ["cluster", "routes", "replicas", "audit", "prices"]
    cfg, _ = roles.resolve("node", config.parse("gpu: {enabled: false}"), {"gpu": True})
    assert cfg.gpu.enabled == "true"  # the switch turned on, as `gpu.enabled: true` would
    cfg, _ = roles.resolve("node", config.Config(), {"gpu": True})
    assert cfg.gpu.enabled == "auto"  # a switch already on is left as it is
    # turning off one of two rows of one switch leaves the other on
    assert names("node", EVERYTHING, {"replica_first_token": False}) == [
        "engine_discovery", "engines", "gateways", "gpu",
    ]  # fmt: skip


def test_a_row_turned_on_brings_its_switch_and_a_row_without_its_needs_is_off() -> None:
    assert names("node", config.Config(), {"replica_first_token": True}) == [
        "engine_discovery", "engines", "gateways", "replica_first_token", "gpu",
    ]  # fmt: skip
    assert names("node", EVERYTHING, {"engine_discovery": False}) == ["engines", "gateways", "gpu"]
    with pytest.raises(ValueError, match=r"--collector\.replica_first_token: needs the engine_discovery collector"):
        roles.resolve("node", EVERYTHING, {"engine_discovery": False, "replica_first_token": True})


def test_a_switch_turned_on_by_a_flag_gets_its_sections_checks() -> None:
    with pytest.raises(config.ConfigError) as err:
        roles.resolve("cluster", config.Config(), {"watchdog": True})
    assert err.value.errors == [
        "--collector.watchdog (cluster.watchdog.enabled: true): "
        "cluster.watchdog.prometheus.url: required when the watchdog is enabled"
    ]


def test_unknown_names_and_other_roles_collectors_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"--collector\.cpu: unknown collector \(known: engine_discovery, engines,"):
        roles.resolve("node", config.Config(), {"cpu": True})
    with pytest.raises(ValueError, match=r"--collector\.gpu: a collector of the node role, not of --role cluster"):
        roles.resolve("cluster", config.Config(), {"gpu": False})
    with pytest.raises(ValueError, match="unknown role 'edge'"):
        roles.resolve("edge", config.Config())


def test_serve_parses_one_flag_pair_per_row_and_the_last_flag_wins() -> None:
    args = cli.parser("serve").parse_args(
        ["serve", "--no-collector.gpu", "--collector.routes", "--collector.gpu", "--no-collector.audit"]
    )
    assert args.collectors == {"gpu": True, "routes": True, "audit": False}
    assert cli.parser("serve").parse_args(["serve"]).collectors == {}
    for entry in roles.TABLE:
        on = cli.parser("serve").parse_args(["serve", f"--collector.{entry.name}"])
        off = cli.parser("serve").parse_args(["serve", f"--no-collector.{entry.name}"])
        assert (on.collectors, off.collectors) == ({entry.name: True}, {entry.name: False})


def serve(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "serve", "--listen", "127.0.0.1:0", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (("--collector.cpu",), "llm-exporter: --collector.cpu: unknown collector (known: engine_discovery,"),
        (("--no-collector.nvml",), "llm-exporter: --collector.nvml: unknown collector"),
        (("--role", "cluster", "--collector.gpu"), "--collector.gpu: a collector of the node role"),
        (("--role", "cluster", "--collector.watchdog"), "prometheus.url: required when the watchdog is enabled"),
    ],
)
def test_serve_exits_2_naming_the_bad_collector_flag(flags: tuple[str, ...], error: str) -> None:
    done = serve(*flags)
    assert done.returncode == 2 and error in done.stderr, done.stderr
