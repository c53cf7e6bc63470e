"""Metric stability, enforced: the committed stable list matches the catalogue, a STABLE metric's name, type
and labels never change except through a rename with one minor release of grace, and during that release
the exporter really serves both names (then only the new one)."""

from __future__ import annotations

import dataclasses
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as _parse_openmetrics

import exporter
from exporter import deprecations
from exporter.catalogue import ALL, BY_NAME, engine, renames
from exporter.catalogue.renames import Rename, version_tuple
from exporter.catalogue.spec import MetricSpec, MetricType, Stability
from exporter.collect import CollectorSet
from exporter.exposition import Family
from tests.core.serving import serving
from tests.stable import stable_list

CURRENT = stable_list.PATH.read_text()


def specs_with(metric: str, **changes: object) -> list[MetricSpec]:
    return [dataclasses.replace(s, **changes) if s.name == metric else s for s in ALL]  # type: ignore[arg-type]


def test_the_stable_list_is_current_and_no_stable_metric_changed() -> None:
    text, errors = stable_list.generate(CURRENT)
    assert errors == []
    assert text == CURRENT, "tests/stable/stable-metrics.yaml is out of date: run `make generate`"


def test_the_stable_list_holds_the_stable_metrics_only() -> None:
    listed = {e.name for e in stable_list.load(CURRENT)}
    assert listed == {s.name for s in ALL if s.stability is Stability.STABLE}
    assert "llm_requests_waiting" in listed
    assert "llm_exporter_collector_timeouts_total" not in listed  # new this season: experimental


@pytest.mark.parametrize(
    ("name", "changes", "error"),
    [
        ("llm_requests_waiting", {"name": "llm_requests_queued"}, "llm_requests_waiting: a STABLE metric disappeared"),
        ("llm_gpu_up", {"labels": ("gpu", "uuid")}, "llm_gpu_up: labels changed from ['node', 'gpu', 'uuid']"),
        ("llm_engine_info", {"type": MetricType.COUNTER}, "llm_engine_info: type changed from gauge to counter"),
        ("llm_engine_up", {"stability": Stability.EXPERIMENTAL}, "llm_engine_up: STABLE metrics cannot go back"),
    ],
)
def test_a_change_to_a_stable_metric_is_refused(name: str, changes: dict[str, object], error: str) -> None:
    _, errors = stable_list.generate(CURRENT, specs_with(name, **changes))
    assert len(errors) == 1
    assert errors[0].startswith(error)


def test_experimental_metrics_change_freely_and_promotion_adds_them() -> None:
    name = "llm_exporter_collector_timeouts_total"
    _, errors = stable_list.generate(CURRENT, specs_with(name, labels=("collector", "reason")))
    assert errors == []
    text, errors = stable_list.generate(CURRENT, specs_with(name, stability=Stability.STABLE))
    assert errors == []
    assert name in {e.name for e in stable_list.load(text)}


WAITING = BY_NAME["llm_requests_waiting"]
QUEUED = dataclasses.replace(WAITING, name="llm_requests_queued")
RENAME = Rename(old=WAITING.name, new=QUEUED, since="0.2.0", removed_in="0.3.0")
RENAMED = [QUEUED if s is WAITING else s for s in ALL]


def test_the_deprecation_path_in_the_stable_list() -> None:
    # 0.2.0: the rename; both names are listed, the old one marked deprecated
    grace, errors = stable_list.generate(CURRENT, RENAMED, [RENAME], "0.2.0")
    assert errors == []
    entries = {e.name: e for e in stable_list.load(grace)}
    assert entries["llm_requests_waiting"].deprecated.startswith("renamed to llm_requests_queued in 0.2.0")
    assert entries["llm_requests_waiting"].removed_in == "0.3.0"
    assert entries["llm_requests_queued"].labels == entries["llm_requests_waiting"].labels
    # dropping the old name before 0.3.0 is refused; from 0.3.0 it goes
    _, errors = stable_list.generate(grace, RENAMED, [], "0.2.1")
    assert errors == ["llm_requests_waiting: deprecated until 0.3.0; it must be served until then"]
    after, errors = stable_list.generate(grace, RENAMED, [RENAME], "0.3.0")
    assert errors == []
    assert "llm_requests_waiting" not in {e.name for e in stable_list.load(after)}
    assert "llm_requests_queued" in {e.name for e in stable_list.load(after)}


def test_rename_entries_are_checked() -> None:
    names = {s.name for s in RENAMED}
    assert renames.errors((RENAME,), names, "0.2.0") == []
    assert renames.errors((RENAME,), names, "0.3.0") == [
        "llm_requests_waiting: no longer served from 0.3.0; delete this rename"
    ]
    long = dataclasses.replace(RENAME, removed_in="0.4.0")
    assert renames.errors((long,), names, "0.2.0") == [
        "llm_requests_waiting: removed_in 0.4.0 must be the minor release after 0.2.0"
    ]
    assert renames.errors((RENAME,), {s.name for s in ALL} | {"llm_requests_queued"}, "0.2.0") == [
        "llm_requests_waiting: renamed to llm_requests_queued but still a catalogue entry"
    ]


def test_the_catalogue_renames_are_valid_for_this_release() -> None:
    assert renames.errors(renames.RENAMES, set(BY_NAME), exporter.__version__) == []


@pytest.mark.parametrize(("version", "parsed"), [("0.2.0", (0, 2, 0)), ("1.10", (1, 10)), ("0.3.0rc1", (0, 3, 0))])
def test_version_tuple(version: str, parsed: tuple[int, ...]) -> None:
    assert version_tuple(version) == parsed


class Engines:
    name = "engines"

    def collect(self) -> list[Family]:
        family = Family(engine.ENGINE_UP)
        family.add(("ns", "p", "vllm"), 1)
        return [family]


@pytest.fixture
def renamed_engine_up(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The catalogue as it would be had llm_engine_up been renamed from llm_engine_ok in 0.2.0."""
    rename = Rename(old="llm_engine_ok", new=engine.ENGINE_UP, since="0.2.0", removed_in="0.3.0")
    monkeypatch.setattr(renames, "RENAMES", (rename,))
    yield


def scrape(port: int, accept: str = "") -> str:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=10) as response:
        text: str = response.read().decode()
        return text


@pytest.mark.usefixtures("renamed_engine_up")
def test_the_exporter_serves_the_old_name_for_one_minor_release_then_drops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with serving(CollectorSet([Engines()])) as port:
        monkeypatch.setattr(exporter, "__version__", "0.2.0")
        text = scrape(port)
        assert 'llm_engine_up{namespace="ns",pod="p",engine="vllm"} 1' in text
        assert 'llm_engine_ok{namespace="ns",pod="p",engine="vllm"} 1' in text
        assert "# HELP llm_engine_ok 1 when the last scrape of this engine target succeeded, else 0. DEPRECATED: " \
               "renamed to llm_engine_up in 0.2.0; this name is removed in 0.3.0.\n" in text  # fmt: skip
        om = {f.name: f for f in _parse_openmetrics(scrape(port, "application/openmetrics-text"))}  # type: ignore[no-untyped-call]
        assert "DEPRECATED" in om["llm_engine_ok"].documentation
        assert om["llm_engine_ok"].samples[0].value == om["llm_engine_up"].samples[0].value == 1
        monkeypatch.setattr(exporter, "__version__", "0.3.0")
        text = scrape(port)
        assert "llm_engine_up{" in text
        assert "llm_engine_ok" not in text


def test_with_old_names_leaves_families_alone_without_renames() -> None:
    family = Family(engine.ENGINE_UP)
    assert deprecations.with_old_names([family], "0.2.0", ()) == [family]


def test_the_metric_reference_lists_the_old_name_during_its_grace_release() -> None:
    from exporter.bundle import docs

    names = [s.name for s in docs.served(RENAMED, (RENAME,), "0.2.0")]
    assert names[names.index("llm_requests_queued") + 1] == "llm_requests_waiting"
    assert docs.served(RENAMED, (RENAME,), "0.2.0")[names.index("llm_requests_waiting")].deprecated
    assert "llm_requests_waiting" not in [s.name for s in docs.served(RENAMED, (RENAME,), "0.3.0")]
