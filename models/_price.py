"""What a model's tokens cost: the user's own prices, per million tokens in US dollars.

No list of prices comes with regiment: providers change them, and a stale figure under a
money budget would let a run spend more than its limit. A ``Budget(usd=...)`` needs a
``Price`` on every model its team uses (a ``ConfigError`` at team start names one that has
none). Costs are kept in whole micro-dollars (``Usage.micro_usd``), each call's rounded up,
so a ledger adds them up exactly.
"""

from __future__ import annotations

import msgspec

from regiment._misuse import ConfigStruct
from regiment.errors import ConfigError
from regiment.models._messages import Usage

__all__ = ("Price",)

_PER_MILLION = 1_000_000
_MOST = 1e9  # dollars per million tokens: kept as whole pico-dollars per token, no overflow


class _BadPrice(ConfigError, ValueError):
    """A price out of range: ``Price: input must be ...``. Also a ``ValueError``, so that
    msgspec, decoding a team file's price, wraps it with the key path, and ``field`` and
    ``problem`` let the file's error name the key (``t.toml: prices.scripted.input: ...``),
    as ``regiment.hierarchy.InvalidValue`` does for the other types."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"Price: {field} {problem}")
        self.field = field
        self.problem = problem


class Price(ConfigStruct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A model's price in US dollars per million tokens (a team file's ``price`` table).

    Attributes:
        input: uncached input tokens.
        output: generated tokens (thinking included).
        cache_read: input tokens read from the prompt cache (``None``: as ``input``).
        cache_write: input tokens written to the prompt cache (``None``: as ``input``).
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name.startswith("cache"):
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= _MOST
            ):
                raise _BadPrice(
                    name,
                    "must be a number of US dollars per million tokens from 0 to 1e9 "
                    f"(Price(input=3.0, output=15.0)); got {value!r}",
                )

    def rates(self) -> tuple[int, int, int, int]:
        """Micro-dollars per million tokens (pico-dollars per token) of uncached input,
        output, cache reads and cache writes: whole numbers, so costs add up exactly."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        return (
            round(self.input * _PER_MILLION),
            round(self.output * _PER_MILLION),
            round(read * _PER_MILLION),
            round(write * _PER_MILLION),
        )


def micro_usd(rates: tuple[int, int, int, int], tokens: tuple[int, int, int, int]) -> int:
    """What ``tokens`` (uncached input, output, cache read, cache write) cost at ``rates``
    (:meth:`Price.rates`), in micro-dollars rounded up."""
    pico = sum(r * n for r, n in zip(rates, tokens, strict=True))
    return -(-pico // _PER_MILLION)


def reply_tokens(rates: tuple[int, int, int, int], micro: int, input_tokens: int = 0) -> int:
    """The most output tokens ``micro`` micro-dollars pay for at ``rates`` once a call's
    ``input_tokens`` are paid at the dearest input rate (0: not even the input)."""
    left = micro * _PER_MILLION - max(rates[0], rates[2], rates[3]) * input_tokens
    if left <= 0:
        return 0
    out = rates[1]
    return left // out if out else 1 << 40


def checked_price(price: object, owner: str) -> Price | None:
    """``price`` if it is a ``Price`` (or ``None``); else a ``ConfigError`` naming ``owner``."""
    if price is None or isinstance(price, Price):
        return price
    raise ConfigError(
        f"{owner}: price must be a Price(input=..., output=...) in US dollars per million "
        f"tokens; got {type(price).__name__} {price!r}"
    )


def priced(usage: Usage, price: Price) -> Usage:
    """``usage`` with its ``micro_usd`` worked out at ``price``."""
    tokens = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    )
    return msgspec.structs.replace(usage, micro_usd=micro_usd(price.rates(), tokens))


def least_cost(rates: tuple[int, int, int, int], input_tokens: int) -> int:
    """What a call with about ``input_tokens`` of input costs at ``rates`` at the least
    (its input at the dearest input rate, and one output token), in micro-dollars; >= 1."""
    dearest = max(rates[0], rates[2], rates[3])
    return max(1, -(-(dearest * input_tokens + rates[1]) // _PER_MILLION))


def usd_text(micro: int) -> str:
    """Micro-dollars as dollars: ``$0.001234``."""
    return f"${micro / _PER_MILLION:,.6f}"
