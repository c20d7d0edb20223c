"""Bearer tokens that bind a request to an owner: HS256 JWTs (PyJWT) signed with the server secret.

Claims: ``sub`` (the user), ``tenant``, ``store`` (which of the served repositories; ``default``),
``admin`` (sees every owner of its store: a console, an operator), ``iat``/``exp``, ``iss``
``sessiontree``. The service trusts nothing else about who is asking.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import attrs
import jwt

from sessiontree.owners import Owner

__all__ = [
    "MIN_SECRET_BYTES",
    "SECRET_ENV",
    "Grant",
    "TokenError",
    "issue_token",
    "read_secret",
    "verify_token",
]

SECRET_ENV = "SESSIONTREE_SECRET"
MIN_SECRET_BYTES = 32
_ISSUER = "sessiontree"
_ALGORITHM = "HS256"


class TokenError(Exception):
    """A token that is missing, malformed, badly signed or expired (the service answers 401)."""


@attrs.frozen
class Grant:
    """What a verified token allows: one store, as one owner (or, for an admin, as any)."""

    owner: Owner
    store: str = "default"
    admin: bool = False


def read_secret(secret_file: str | None = None) -> bytes | None:
    """The signing secret: ``secret_file``'s content (stripped), else ``$SESSIONTREE_SECRET``; ``None``
    when neither is set. Shorter than :data:`MIN_SECRET_BYTES` raises :class:`ValueError`."""
    if secret_file is not None:
        secret = Path(secret_file).read_bytes().strip()
    elif value := os.environ.get(SECRET_ENV):
        secret = value.encode()
    else:
        return None
    if len(secret) < MIN_SECRET_BYTES:
        where = secret_file or f"${SECRET_ENV}"
        raise ValueError(f"The secret in {where} has {len(secret)} bytes; use at least {MIN_SECRET_BYTES}")
    return secret


def issue_token(
    secret: bytes, *, tenant: str, user: str, ttl_seconds: float, store: str = "default", admin: bool = False
) -> str:
    """A signed token for ``tenant``/``user`` valid ``ttl_seconds`` from now."""
    Owner(tenant, user)  # the same non-empty rule as a stored owner
    now = int(time.time())
    claims = {
        "iss": _ISSUER,
        "sub": user,
        "tenant": tenant,
        "store": store,
        "admin": admin,
        "iat": now,
        "exp": now + int(ttl_seconds),
    }
    return jwt.encode(claims, secret, algorithm=_ALGORITHM)


def verify_token(secret: bytes, token: str) -> Grant:
    """The grant a token carries; :class:`TokenError` naming why it is refused."""
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[_ALGORITHM],
            issuer=_ISSUER,
            options={"require": ["exp", "iat", "iss", "sub"]},
        )
    except jwt.ExpiredSignatureError:
        raise TokenError("The token has expired; issue a new one with `sessiontree token issue`") from None
    except jwt.InvalidTokenError as error:
        raise TokenError(f"The token is not valid: {error}") from None
    tenant, user, store, admin = (
        claims.get("tenant"),
        claims.get("sub"),
        claims.get("store", "default"),
        claims.get("admin", False),
    )
    if not (isinstance(tenant, str) and tenant and isinstance(user, str) and user):
        raise TokenError("The token names no tenant and user")
    if not isinstance(store, str) or not isinstance(admin, bool):
        raise TokenError("The token's store or admin claim is malformed")
    return Grant(Owner(tenant, user), store, admin)
