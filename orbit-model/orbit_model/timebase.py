"""Scenario epoch and integer-nanosecond time offsets.

Time in satpage is an int64 number of nanoseconds from the scenario epoch (a UTC
instant).  This module turns an epoch plus offsets into what the libraries
need: the (whole, fraction) UTC Julian dates that sgp4 takes, and the Skyfield
``Time`` whose UT1 gives the Earth rotation angle.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

import numpy as np
from skyfield.api import Timescale, load

__all__ = ["parse_epoch", "timescale", "skyfield_times", "utc_jd", "NS_PER_S", "NS_PER_DAY"]

NS_PER_S = 1_000_000_000
NS_PER_DAY = 86_400 * NS_PER_S
_JD_UNIX_EPOCH = 2440587.5


@cache
def timescale() -> Timescale:
    """Skyfield's timescale from its built-in files (no network)."""
    return load.timescale(builtin=True)


def parse_epoch(value: str | dt.datetime | dt.date) -> dt.datetime:
    """A timezone-aware UTC datetime from an ISO 8601 string, a datetime or a date.

    Naive datetimes and strings without an offset are taken as UTC.
    ``ValueError`` quotes the value when it does not parse.
    """
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"start time {value!r} is not an ISO 8601 date-time "
                "(example: 2022-09-14T00:00:00Z)"
            ) from None
    else:
        raise ValueError(f"start time {value!r} is not an ISO 8601 string or datetime")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


def utc_jd(epoch: dt.datetime, t_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """UTC Julian dates split as sgp4 wants them: ``(whole, fraction)`` in days.

    ``whole`` is the epoch's Julian date at the preceding midnight (x.5), the
    same for every time; ``fraction`` carries the rest, so that 1 ns stays
    representable over days. Leap seconds inside the window are ignored (UTC
    offsets are counted as uniform seconds), as sgp4's own ``jday`` does.
    """
    epoch = parse_epoch(epoch)
    t_ns = np.asarray(t_ns, dtype=np.int64)
    midnight = epoch.replace(hour=0, minute=0, second=0, microsecond=0)
    whole = _JD_UNIX_EPOCH + (midnight - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).days
    since_midnight_ns = int((epoch - midnight) / dt.timedelta(microseconds=1)) * 1000
    fraction = (t_ns + since_midnight_ns) / NS_PER_DAY
    return np.full(t_ns.shape, float(whole)), fraction


def skyfield_times(epoch: dt.datetime, t_ns: np.ndarray):
    """A Skyfield ``Time`` array for ``epoch + t_ns`` (UTC, leap seconds handled by Skyfield)."""
    epoch = parse_epoch(epoch)
    t_ns = np.asarray(t_ns, dtype=np.int64)
    seconds = epoch.second + epoch.microsecond * 1e-6 + t_ns / NS_PER_S
    return timescale().utc(epoch.year, epoch.month, epoch.day, epoch.hour, epoch.minute, seconds)
