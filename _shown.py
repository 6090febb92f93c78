"""A journal's spec as a message may show it: without a URL's password."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ("shown_spec",)


def shown_spec(spec: str) -> str:
    """``spec`` as a message may show it: a ``postgresql://`` URL without its password,
    whether in the URL's user part or a ``password=`` / ``sslpassword=`` parameter; any
    other URL (one no journal takes, ``mysql://ana:pw@db/runs``) without its user part's."""
    parts = urlsplit(spec)
    if "://" not in spec:
        return spec
    if parts.scheme not in ("postgresql", "postgres"):
        if parts.password is None:
            return spec
        user = f"{parts.username}@" if parts.username else ""
        return urlunsplit(parts._replace(netloc=f"{user}{parts.netloc.rpartition('@')[2]}"))
    kept = [p for p in parts.query.split("&") if p.partition("=")[0].lower() not in _SECRETS]
    if parts.password is None and len(kept) == len(parts.query.split("&")):
        return spec
    host = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}{host}", query="&".join(kept)))


_SECRETS = ("password", "sslpassword")  # libpq's connection parameters that hold one
