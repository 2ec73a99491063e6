"""Sign-in throttling: failed attempts counted per user name and per client address.

Without it a password (or the team token) can be guessed at the speed of bcrypt. The `limits`
library keeps moving windows in process memory: one `serve` process holds the web app, and a
restart forgetting the counts only restarts the window. Only failures count, and a name or
address over its limit is refused *before* any password check, so the right password does not
get through after 30 wrong ones and a flood costs no bcrypt work.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from limits import RateLimitItemPerSecond, storage, strategies

from service.config import WebSettings


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: int = 0


class SignInLimits:
    def __init__(self, web: WebSettings) -> None:
        window = web.login_window_s
        self._per_name = RateLimitItemPerSecond(web.login_failures_per_name, window)
        self._per_address = RateLimitItemPerSecond(web.login_failures_per_address, window)
        self._limiter = strategies.MovingWindowRateLimiter(storage.MemoryStorage())

    def _keys(self, name: str, address: str):
        # names are case-folded: "Alice" and "alice" are one target for a guesser
        return ((self._per_name, "name", name.strip().casefold()[:64]),
                (self._per_address, "address", address))

    def check(self, name: str, address: str) -> Verdict:
        """May this name, from this address, try a password now?"""
        wait = 0.0
        for item, *key in self._keys(name, address):
            if not self._limiter.test(item, *key):
                reset = self._limiter.get_window_stats(item, *key).reset_time
                wait = max(wait, reset - time.time())
        return Verdict(True) if wait <= 0 else Verdict(False, max(1, math.ceil(wait)))

    def failed(self, name: str, address: str) -> None:
        for item, *key in self._keys(name, address):
            self._limiter.hit(item, *key)
