"""Cost per request from a dated price table that users can override."""

from __future__ import annotations

import fnmatch
import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ctxtap.analysis.parsing.models import Usage

DEFAULT_TABLE = Path(__file__).with_name("prices.toml")


@dataclass(frozen=True)
class Price:
    match: str
    input: float
    output: float
    cache_read: float | None = None
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    source: str = "default"

    def per_token(self, field: str) -> float:
        value = getattr(self, field)
        return (self.input if value is None else value) / 1_000_000


class PriceTable:
    def __init__(self, prices: list[Price], as_of: str, digest: str) -> None:
        self.prices = prices
        self.as_of = as_of
        self.digest = digest  # part of the analysis cache key

    @classmethod
    def load(cls, override: Path | None = None) -> PriceTable:
        prices: list[Price] = []
        digest = hashlib.sha256()
        dates: list[str] = []
        for path, source in ((override, "user"), (DEFAULT_TABLE, "default")):
            if path is None:
                continue
            raw = Path(path).read_bytes()
            digest.update(raw)
            data = tomllib.loads(raw.decode())
            dates.append(f"{source} {data.get('as_of', 'undated')}")
            for entry in data.get("model", []):
                prices.append(Price(
                    match=entry["match"], input=float(entry["input"]), output=float(entry["output"]),
                    cache_read=entry.get("cache_read"), cache_write_5m=entry.get("cache_write_5m"),
                    cache_write_1h=entry.get("cache_write_1h"), source=source,
                ))
        return cls(prices, ", ".join(dates), digest.hexdigest()[:16])

    def find(self, model: str | None) -> Price | None:
        if not model:
            return None
        name = model.lower().split("/")[-1]
        for price in self.prices:
            if fnmatch.fnmatchcase(name, price.match.lower()):
                return price
        return None

    def cost(self, model: str | None, usage: Usage, write_ttl: str | None = None) -> float | None:
        """USD for one request, or None when usage or the model's price is unknown.

        Writes are priced by the TTL split the provider reports; without one, at `write_ttl` (the
        request's own breakpoints: "1h" when all were 1-hour), else as 5-minute writes."""
        price = self.find(model)
        if price is None or usage.output.value is None:
            return None
        read = usage.cache_read.value or 0
        write = usage.cache_write.value or 0
        w5 = usage.cache_write_5m.value
        w1 = usage.cache_write_1h.value
        if usage.input_uncached.value is not None:
            uncached = usage.input_uncached.value
        elif usage.input_total.value is not None:
            uncached = max(0, usage.input_total.value - read - write)
        else:
            return None
        if w5 is None and w1 is None:
            w5, w1 = (0, write) if write_ttl == "1h" else (write, 0)
        w5 = w5 or 0
        w1 = w1 or 0
        return (
            uncached * price.per_token("input")
            + read * price.per_token("cache_read")
            + w5 * price.per_token("cache_write_5m")
            + w1 * price.per_token("cache_write_1h")
            + usage.output.value * price.per_token("output")
        )
