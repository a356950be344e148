"""Token buckets for ICMP errors (RFC 1812 4.3.2.8, RFC 4443 2.4(f)), one
per (ToR, VRF, source address) so that one sender cannot spend what
another's traceroute needs, in bounded memory.

The CoPP meters in the data plane bound what reaches the controller per
class; these bound what it sends back to each sender.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

# Per sender: enough for traceroute (3 probes a hop; 16 at once by default
# in Linux's) and mtr (1/s a hop); Linux answers 1/s with a burst of 6 per peer.
ERROR_RATE = 10.0  # tokens (errors) per second
ERROR_BURST = 20.0
BUCKETS_MAX = 4096  # senders tracked at once (the least recently used go)


@dataclass
class TokenBucket:
    rate: float  # tokens per second
    burst: float  # most tokens held
    tokens: float
    at: float  # when ``tokens`` was counted

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def full(self, now: float) -> bool:
        """Whether it would be full by ``now``: then it holds nothing a
        fresh bucket does not, and can go."""
        return self.tokens + (now - self.at) * self.rate >= self.burst


class RateLimiter:
    """One token bucket per key, at most ``max_buckets`` of them: a bucket
    that has filled up again is dropped (a fresh one is the same), and when
    too many senders are active at once the least recently used goes."""

    def __init__(
        self, rate: float = ERROR_RATE, burst: float = ERROR_BURST, max_buckets: int = BUCKETS_MAX
    ) -> None:
        if rate <= 0 or burst < 1 or max_buckets < 1:
            raise ValueError("rate must be positive, burst at least 1, max_buckets at least 1")
        self.rate = rate
        self.burst = burst
        self.max_buckets = max_buckets
        self._buckets: OrderedDict[Hashable, TokenBucket] = OrderedDict()

    def allow(self, key: Hashable, now: float) -> bool:
        """Take a token from ``key``'s bucket; False when it has none."""
        self._evict_idle(now)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.rate, self.burst, self.burst, now)
            self._buckets[key] = bucket
            if len(self._buckets) > self.max_buckets:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)

    def _evict_idle(self, now: float) -> None:
        # The least recently used first: a few a call keeps the cost flat.
        for _ in range(2):
            if not self._buckets:
                return
            key, oldest = next(iter(self._buckets.items()))
            if not oldest.full(now):
                return
            del self._buckets[key]

    def __len__(self) -> int:
        return len(self._buckets)
