"""Theoretical peak memory bandwidth from NVML's maximum memory clock and bus width."""

from __future__ import annotations


def peak_bytes_per_second(max_memory_clock_mhz: int, bus_width_bits: int) -> float:
    """clock × 2 transfers per clock (double data rate) × bus width in bytes.

    NVML reports the memory clock such that this matches the spec sheets: H100 SXM 2619 MHz × 5120 bit →
    3.35 TB/s, A100 80GB 1593 MHz × 5120 bit → 2.04 TB/s, T4 5001 MHz × 256 bit → 320 GB/s.
    """
    if max_memory_clock_mhz <= 0 or bus_width_bits <= 0:
        raise ValueError(f"not a memory configuration: {max_memory_clock_mhz} MHz, {bus_width_bits} bit")
    return max_memory_clock_mhz * 1e6 * 2 * bus_width_bits / 8
