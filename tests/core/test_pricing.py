"""The configured GPU prices: `cost.gpu_hour_prices` validated with errors naming the key, and exported by the
cluster role as `llm_gpu_price_per_second{name, currency}` (price per GPU-hour over 3600)."""

from __future__ import annotations

import pytest

from exporter import config
from exporter.exposition import render
from exporter.pricing import build_price_collectors, price_families

PRICES = """
cost:
  currency: EUR
  gpu_hour_prices:
    NVIDIA H100 80GB HBM3: 3.6
    NVIDIA L4: 0.9
    NVIDIA A100-SXM4-80GB: 2
"""


def test_the_prices_are_exported_per_second_in_their_currency() -> None:
    cost = config.parse(PRICES).cost
    assert cost.gpu_hour_prices == {"NVIDIA H100 80GB HBM3": 3.6, "NVIDIA L4": 0.9, "NVIDIA A100-SXM4-80GB": 2.0}
    (collector,) = build_price_collectors(cost)
    assert collector.name == "prices"
    assert render(collector.collect()) == (
        "# HELP llm_gpu_price_per_second The configured price of one GPU of this model (the name NVML reports, "
        "as llm_gpu_info's name) per second held, in the configured currency: cost.gpu_hour_prices over 3600. "
        "Absent for a model without a configured price; no price is shipped.\n"
        "# TYPE llm_gpu_price_per_second gauge\n"
        'llm_gpu_price_per_second{name="NVIDIA A100-SXM4-80GB",currency="EUR"} 0.0005555555555555556\n'
        'llm_gpu_price_per_second{name="NVIDIA H100 80GB HBM3",currency="EUR"} 0.001\n'
        'llm_gpu_price_per_second{name="NVIDIA L4",currency="EUR"} 0.00025\n'
    )


def test_no_price_is_shipped() -> None:
    assert config.Config().cost.gpu_hour_prices == {}
    assert build_price_collectors(config.Config().cost) == []
    assert render(price_families(config.parse("cost: {currency: USD}").cost)) == ""


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        (
            "cost: {currency: USD, gpu_hour_prices: {NVIDIA L4: cheap}}",
            ["cost.gpu_hour_prices.NVIDIA L4: expected float, got str 'cheap'"],
        ),
        (
            "cost: {currency: USD, gpu_hour_prices: {NVIDIA L4: -1, NVIDIA T4: .nan, NVIDIA A10: 0}}",
            [
                "cost.gpu_hour_prices.NVIDIA L4: must be a positive price per GPU-hour, got -1.0",
                "cost.gpu_hour_prices.NVIDIA T4: must be a positive price per GPU-hour, got nan",
                "cost.gpu_hour_prices.NVIDIA A10: must be a positive price per GPU-hour, got 0.0",
            ],
        ),
        ("cost: {gpu_hour_prices: {NVIDIA L4: 0.7}}", ["cost.currency: required with gpu_hour_prices (e.g. USD)"]),
        ("cost: {currency: USD, gpu_hour_prices: {1: 0.7}}", ["cost.gpu_hour_prices.1: keys must be strings"]),
        ("cost: {currency: USD, gpu_hour_prices: [0.7]}", ["cost.gpu_hour_prices: expected a mapping, got list [0.7]"]),
        ("cost: {currency: 7}", ["cost.currency: expected str, got int 7"]),
        ("cost: {price: 1}", ["cost.price: unknown key (known: currency, gpu_hour_prices)"]),
    ],
)
def test_a_bad_price_is_an_error_naming_its_key(text: str, errors: list[str]) -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse(text)
    assert info.value.errors == errors
