from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.engines import parser
from tests.engines.engine_servers import recorded


def test_labels_with_escapes_and_spacing() -> None:
    assert parser.parse_labels('a="1", b="x\\"y\\\\z\\n",c=""') == (("a", "1"), ("b", 'x"y\\z\n'), ("c", ""))


def test_only_wanted_samples_are_parsed_and_typed_families_recorded() -> None:
    body = (
        '# HELP vllm:x X.\n# TYPE vllm:x gauge\nvllm:x{model_name="m"} 2.5\n'
        '# TYPE python_gc_objects_collected_total counter\npython_gc_objects_collected_total{generation="0"} 7\n'
        'vllm:y_bucket{le="+Inf"} 3\nvllm:z NaN\n'
    )
    result = parser.parse(body, {"vllm:x", "vllm:y_bucket", "vllm:z"}, "vllm:")
    assert result.families == {"vllm:x"}
    assert result.samples["vllm:x"] == [((("model_name", "m"),), 2.5)]
    assert result.samples["vllm:y_bucket"] == [((("le", "+Inf"),), 3.0)]
    assert math.isnan(result.samples["vllm:z"][0][1])
    assert "python_gc_objects_collected_total" not in result.samples


@pytest.mark.parametrize(
    "body",
    [
        "<html><body>Bad gateway</body></html>\n",
        "garbage\n",
        'vllm:x{model_name="m" 1\n',
        'vllm:x{model_name="m"}\n',
        "vllm:x one\n",
    ],
)
def test_garbage_is_a_parse_error(body: str) -> None:
    with pytest.raises(parser.ParseError):
        parser.parse(body, {"vllm:x"}, "vllm:")


def test_agrees_with_prometheus_client_on_a_real_body() -> None:
    body = recorded("0.32.0")
    peer: dict[str, list[tuple[tuple[tuple[str, str], ...], float]]] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            peer.setdefault(sample.name, []).append((tuple(sorted(sample.labels.items())), sample.value))
    wanted = {name for name in peer if name.startswith("vllm:")}
    ours = parser.parse(body, wanted, "vllm:").samples
    assert set(ours) == wanted
    for name in wanted:
        assert sorted((tuple(sorted(labels)), value) for labels, value in ours[name]) == sorted(peer[name]), name
