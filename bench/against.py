"""`--against CHECKOUT`: this checkout's variants over the same variants of another checkout
(`prev_<label>`), measured alternately in one invocation."""

from __future__ import annotations

from typing import Any

PREVIOUS = "prev_"
"""The label prefix of `--against`'s variants (another checkout's code)."""


def previous(labels: tuple[str, ...]) -> tuple[str, ...]:
    """The labels of `--against`'s variants, in the same order."""
    return tuple(PREVIOUS + label for label in labels)


def against_previous(
    variants: dict[str, dict[str, Any]], checkout: str | None
) -> dict[str, Any] | None:
    """This checkout over `--against`'s, per variant both ran: wall, CPU and peak RSS (medians;
    below 1 means this checkout is cheaper)."""
    pairs = {
        label: (entry, variants[PREVIOUS + label])
        for label, entry in variants.items()
        if PREVIOUS + label in variants
    }
    if not pairs:
        return None

    def over(a: Any, b: Any) -> float | None:
        return round(a / b, 3) if a and b else None

    return {
        "checkout": checkout,
        "ratios": {
            label: {
                "seconds": over(ours["seconds"], prev["seconds"]),
                "cpu_seconds": over(ours["cpu_seconds"], prev["cpu_seconds"]),
                "peak_rss_mb": over(ours["peak_rss_mb"], prev["peak_rss_mb"]),
            }
            for label, (ours, prev) in pairs.items()
        },
    }


def against_lines(against: dict[str, Any] | None) -> list[str]:
    """The printed block: per variant, this checkout over the other for wall, CPU, peak RSS."""
    if not against:
        return []
    lines = [f"this checkout / {against['checkout']} (wall, CPU, peak RSS):"]
    for label, r in against["ratios"].items():
        cells = [f"{r[k]:.2f}x" if r[k] is not None else "-" for k in r]
        lines.append(f"  {label:<15} " + " ".join(f"{cell:>7}" for cell in cells))
    return lines
