"""Meter bucket sizes that TCP can use (docs/controller.md, QoS policies).

A policer drops what overflows its bucket at once, without queueing it, so a
TCP sender meets it as bursts of loss. With too small a bucket the flow keeps
backing off and stays well below the policed rate: measured on BMv2 through a
p4vtep meter (Linux TCP, CUBIC, 15 s, first 3 s left out), a 62.5 kB bucket
gave 0.56 of 5 Mbit/s; 125 kB, 0.93; 256 KiB, 0.95 (the most a TCP payload can
be of a metered frame rate: 1448 of 1518 bytes). At 20 Mbit/s 62.5 kB already
gave 0.93: what TCP needs is close to a fixed number of bytes (its window's
overshoot), not a time at the rate. At high rates a bucket also has to cover
the rate over a few round trips. Hence the default, for the committed and the
peak bucket each:

    burst = max(BURST_FLOOR_BYTES, rate x BURST_SECONDS)

and a warning for a configured bucket under TCP_MIN_BURST_BYTES, or under
one round trip of its rate (BURST_WARN_SECONDS).
"""

from __future__ import annotations

from .fabric import QosPolicy

BURST_FLOOR_BYTES = 256 * 1024  # 0.95 of 5 and 20 Mbit/s measured with it
BURST_SECONDS = 0.010  # 10 ms of the rate: a few data-centre round trips
TCP_MIN_BURST_BYTES = 128 * 1024  # below this, 0.56 of the rate was measured (62.5 kB)
BURST_WARN_SECONDS = 0.001  # below one round trip's worth of the rate


def default_burst(rate: int) -> int:
    """The bucket for ``rate`` bytes/s when the policy gives none."""
    return max(BURST_FLOOR_BYTES, round(rate * BURST_SECONDS))


def burst_warnings(policy: QosPolicy) -> list[str]:
    """What in a policy's buckets is too small for TCP at its rates."""
    warnings = []
    for direction in ("tx", "rx"):
        rates = getattr(policy, direction)
        if rates is None:
            continue
        for name, burst, rate in (
            ("cburst", rates.cburst, rates.cir),
            ("pburst", rates.pburst, rates.pir),
        ):
            floor = max(TCP_MIN_BURST_BYTES, round(rate * BURST_WARN_SECONDS))
            if 0 < burst < floor:
                warnings.append(
                    f"qos {policy.name}: {direction}.{name} {burst} B is below {floor} B: TCP "
                    f"through this policer may stay well below {rate} B/s; leave it out for "
                    f"the default ({default_burst(rate)} B)"
                )
    return warnings
