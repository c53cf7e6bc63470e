from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from exporter import config


def test_defaults_and_design_example() -> None:
    cfg = config.parse(
        """
engines:
  timeout_seconds: 3
  targets:
    - url: http://127.0.0.1:8000
      labels: {namespace: demo, pod: vllm-0}
  kubernetes_discovery: {enabled: false}
gpu: {enabled: auto}
"""
    )
    assert cfg.engines.targets[0].labels == {"namespace": "demo", "pod": "vllm-0"}
    assert cfg.engines.timeout_seconds == 3.0 and cfg.gpu.enabled == "auto"
    assert config.parse("") == config.Config()
    assert config.parse("gpu: {enabled: false}").gpu.enabled == "false"


def test_every_bad_key_is_reported_at_once() -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse(
            "engines:\n  timeout_seconds: fast\n  targets: [{urll: x}, {url: 'ftp://x', labels: {team: a}}]\n"
            "gpu: {enabled: maybe}\ncluster: {page_size: 0}\nextra: 1\n"
        )
    assert info.value.errors == [
        "engines.timeout_seconds: expected float, got str 'fast'",
        "engines.targets[0].urll: unknown key (known: basic_auth, engine, labels, url)",
        "engines.targets[0].url: required key missing",
        "engines.targets[1].url: 'ftp://x' is not an http(s) URL with a host",
        "engines.targets[1].labels.team: only 'namespace' and 'pod' are allowed",
        "gpu.enabled: must be one of auto, true, false, got 'maybe'",
        "cluster.page_size: must be positive",
        "extra: unknown key (known: cluster, cost, engines, gateways, gpu)",
    ]


def test_an_engine_behind_basic_auth_takes_url_userinfo_or_a_password_file() -> None:
    cfg = config.parse(
        "engines:\n  targets:\n    - url: http://user:pw@10.0.0.1:8000\n"
        "    - {url: 'http://10.0.0.2:8000', basic_auth: {username: user, password_file: /run/secrets/engine}}\n"
    )
    assert [t.basic_auth for t in cfg.engines.targets] == [
        config.BasicAuth(),
        config.BasicAuth(username="user", password_file="/run/secrets/engine"),
    ]
    with pytest.raises(config.ConfigError) as info:
        config.parse(
            "engines:\n  targets:\n"
            "    - {url: 'http://user:pw@10.0.0.1:8000', basic_auth: {username: u, password_file: /p}}\n"
            "    - {url: 'http://10.0.0.2:8000', basic_auth: {username: u}}\n"
        )
    assert info.value.errors == [
        "engines.targets[0].basic_auth: set either basic_auth or credentials in the url, not both",
        "engines.targets[1].basic_auth: username and password_file go together",
    ]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("ftp://user:hunter2@10.0.0.1", "ftp://user:***@10.0.0.1"),
        ("http://user:hunter2@[::1", "http://user:***@[::1"),  # unclosed IPv6 host: urlsplit cannot read it
        ("http://user:hun/ter2@10.0.0.1:8000", "http://user:***@10.0.0.1:8000"),  # a raw "/": host user, port hun
        ("http://user:hun#ter2@10.0.0.1", "http://user:***@10.0.0.1"),
        ("http://hunter2@", "http://***@"),  # a lone user part may be a token
        ("user:hunter2@10.0.0.1:8000", "user:***@10.0.0.1:8000"),  # no scheme
    ],
)
def test_a_malformed_url_is_named_without_its_password(url: str, shown: str) -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse(
            f"engines: {{targets: [{{url: '{url}'}}]}}\ncluster: {{watchdog: {{prometheus: {{url: '{url}'}}}}}}\n"
        )
    assert info.value.errors == [
        f"engines.targets[0].url: '{shown}' is not an http(s) URL with a host",
        f"cluster.watchdog.prometheus.url: '{shown}' is not an http(s) URL with a host",
    ]


def test_a_yaml_error_quoting_a_url_masks_its_password() -> None:
    with pytest.raises(config.ConfigError) as info:
        # PyYAML quotes the line, cut to the 75 characters before the fault: "... hunter2@10.0.0.1:8000, engine: [}]}"
        config.parse("engines: {targets: [{url: http://user:hunter2@10.0.0.1:8000, engine: [}]}\n")
    assert "not valid YAML" in info.value.errors[0] and "line 1, column" in info.value.errors[0]
    assert "hunter" not in info.value.errors[0] and "ter2" not in info.value.errors[0]


def test_the_documented_engine_basic_auth_is_a_valid_config() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    example = textwrap.dedent(doc.split("  ```yaml\n", 1)[1].split("```", 1)[0])
    (target,) = config.parse(example).engines.targets
    assert target.basic_auth == config.BasicAuth(username="scraper", password_file="/etc/llm-exporter/engine/password")


def test_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match="cannot read"):
        config.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("engines: [unclosed\n")
    with pytest.raises(config.ConfigError, match="not valid YAML"):
        config.load(bad)
    with pytest.raises(config.ConfigError, match="config: expected a mapping"):
        config.parse("- a list\n")


def test_intervals_must_be_finite_and_in_range() -> None:
    with pytest.raises(config.ConfigError) as err:
        config.parse("gpu: {pod_resources_refresh_seconds: .nan}\ncluster: {resync_seconds: -1}\n")
    assert err.value.errors == [
        "gpu.pod_resources_refresh_seconds: must be in (0, 3600]",
        "cluster.resync_seconds: must be in [0, 86400] (0: watches only)",
    ]


def test_an_ill_typed_label_list_item_is_one_error_not_a_crash() -> None:
    """Found by the config property test: a number among the watchdog's replica labels was read as a name."""
    with pytest.raises(config.ConfigError) as err:
        config.parse("cluster: {watchdog: {prometheus: {replica_labels: [1, replica, 'a-b']}}}\n")
    assert err.value.errors == [
        "cluster.watchdog.prometheus.replica_labels[0]: expected str, got int 1",
        "cluster.watchdog.prometheus.replica_labels: 'a-b' is not a label name",
    ]
