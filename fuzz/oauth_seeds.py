"""Write the seed corpus of the OAuth harnesses: ``fuzz/corpus/oauth_*/hand-*``.

There is no OAuth server to capture from in ``capture_corpus.py``, so the
seeds are written by hand, in each harness's input format (``raw_input``):
documents shaped like those real authorization servers publish (Keycloak,
Auth0, Okta, Microsoft Entra, Google, the MCP SDKs' demo servers), moved to
the harnesses' host names so that they are accepted and the flow goes on, plus
a few that must be refused. No seed spells ``SECRET`` (that would switch the
secret checks off for it); the tokens, secrets and codes in them are checked
as the secrets they are. ``found-*`` files (inputs a fuzzer found) are
never touched.

    .venv/bin/python fuzz/oauth_seeds.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import _fuzzlib  # noqa: F401 - sets sys.path
import fuzz_oauth_callback
import fuzz_oauth_challenge
import fuzz_oauth_metadata
import fuzz_oauth_register
import fuzz_oauth_token
from _oauthfuzz import AS, AS_T, FIRST_STATE, ORIGIN, S

CORPUS = Path(__file__).resolve().parent / "corpus"


def _j(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode()


def _asm(issuer: str, style: str) -> dict[str, Any]:
    """Authorization-server metadata shaped like a real server's."""
    doc: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register",
        "code_challenge_methods_supported": ["S256"],
        "response_types_supported": ["code"],
    }
    if style == "keycloak":
        doc.update(
            {
                "introspection_endpoint": issuer + "/token/introspect",
                "userinfo_endpoint": issuer + "/userinfo",
                "end_session_endpoint": issuer + "/logout",
                "jwks_uri": issuer + "/certs",
                "grant_types_supported": [
                    "authorization_code",
                    "implicit",
                    "refresh_token",
                    "password",
                    "client_credentials",
                    "urn:ietf:params:oauth:grant-type:device_code",
                ],
                "response_types_supported": ["code", "none", "id_token", "token", "code token"],
                "token_endpoint_auth_methods_supported": [
                    "private_key_jwt",
                    "client_secret_basic",
                    "client_secret_post",
                    "tls_client_auth",
                    "client_secret_jwt",
                ],
                "code_challenge_methods_supported": ["plain", "S256"],
                "scopes_supported": ["openid", "offline_access", "profile", "email", "mcp"],
                "authorization_response_iss_parameter_supported": True,
                "tls_client_certificate_bound_access_tokens": True,
            }
        )
    elif style == "auth0":
        doc.update(
            {
                "jwks_uri": issuer + "/.well-known/jwks.json",
                "scopes_supported": ["openid", "profile", "offline_access", "email"],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "client_secret_post",
                ],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["HS256", "RS256", "PS256"],
                "request_parameter_supported": False,
            }
        )
    elif style == "okta":
        doc.update(
            {
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "client_secret_post",
                    "client_secret_jwt",
                    "private_key_jwt",
                    "none",
                ],
                "revocation_endpoint": issuer + "/revoke",
                "scopes_supported": ["okta.users.read", "offline_access", "device_sso"],
                "dpop_signing_alg_values_supported": ["RS256", "ES256"],
                "client_id_metadata_document_supported": True,
            }
        )
    elif style == "sdk":
        doc.update(
            {
                "token_endpoint_auth_methods_supported": ["client_secret_post", "none"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "scopes_supported": ["user"],
                "revocation_endpoint": issuer + "/revoke",
                "revocation_endpoint_auth_methods_supported": ["client_secret_post"],
            }
        )
    return doc


def metadata_seeds() -> dict[str, bytes]:
    m = fuzz_oauth_metadata
    prm = {
        "resource": S,
        "authorization_servers": [AS],
        "scopes_supported": ["mcp", "offline_access"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Example MCP server",
        "resource_documentation": ORIGIN + "/docs",
    }
    out = {
        "hand-prm-path": m.raw_input(_j(prm), step=0),
        "hand-prm-challenge-url": m.raw_input(_j({**prm, "resource": ORIGIN + "/"}), step=1),
        "hand-prm-root-two-servers": m.raw_input(
            _j({**prm, "authorization_servers": [AS_T, "https://evil.example/x"]}), step=2
        ),
        "hand-prm-wrong-resource": m.raw_input(_j({**prm, "resource": "https://evil.example/mcp"})),
        "hand-prm-step-up": m.raw_input(_j(prm), step=9, flags=2),
        "hand-prm-refresh": m.raw_input(_j(prm), step=7),
        "hand-asm-path-issuer": m.raw_input(_j(_asm(AS_T, "keycloak")), step=4),
        "hand-asm-oidc-fallback": m.raw_input(_j(_asm(AS, "auth0")), step=5),
        "hand-asm-okta": m.raw_input(_j(_asm(AS, "okta")), step=3, variant=2, flags=2),
        "hand-asm-sdk": m.raw_input(_j(_asm(AS, "sdk")), step=3),
        "hand-asm-no-s256": m.raw_input(
            _j({**_asm(AS, "auth0"), "code_challenge_methods_supported": ["plain"]}), step=3
        ),
        "hand-asm-other-issuer": m.raw_input(_j(_asm("https://evil.example", "sdk")), step=3),
        "hand-asm-refresh": m.raw_input(_j(_asm(AS, "keycloak")), step=8),
        "hand-legacy-asm": m.raw_input(_j(_asm(ORIGIN, "sdk")), step=6, variant=8),
    }
    return out


def register_seeds() -> dict[str, bytes]:
    r = fuzz_oauth_register
    sdk = {
        "client_id": "7d9d1a9e-4b0e-4c57-9a2a-2f1f0c8f1d3e",
        "client_secret": "cs_5b7e0c1d9f2a4e6b8c3d1f0a9e7b6c5d",
        "client_id_issued_at": 1700000000,
        "client_secret_expires_at": 0,
        "redirect_uris": ["http://127.0.0.1:53682/callback"],
        "token_endpoint_auth_method": "client_secret_post",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "client_name": "mcpcore",
    }
    public = {"client_id": "public-client", "token_endpoint_auth_method": "none"}
    return {
        "hand-register-sdk-post": r.raw_input(_j(sdk), methods=6),
        "hand-register-basic": r.raw_input(
            _j({**sdk, "token_endpoint_auth_method": "client_secret_basic"}), methods=3
        ),
        "hand-register-public": r.raw_input(_j(public), methods=0, flags=4),
        "hand-register-echo-refused": r.raw_input(_j(sdk), methods=2, token_kind=0),
        "hand-register-again": r.raw_input(_j(public), methods=0, flags=2),
        "hand-register-unusable-jwt": r.raw_input(
            _j({**public, "token_endpoint_auth_method": "private_key_jwt"}), methods=5
        ),
        "hand-register-no-secret": r.raw_input(
            _j({**public, "token_endpoint_auth_method": "client_secret_basic"}), methods=1
        ),
    }


def token_seeds() -> dict[str, bytes]:
    t = fuzz_oauth_token
    full = {
        "access_token": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJlLXNlZWQ",
        "token_type": "Bearer",
        "expires_in": 3599,
        "refresh_token": "8xLOxBtZp8-rotated-refresh-token",
        "scope": "mcp offline_access",
        "id_token": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
    }
    lean = {
        "access_token": "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "token_type": "bearer",
        "expires_in": "3600",
    }
    out = {}
    for step, name in enumerate(fuzz_oauth_token.STEPS):
        out[f"hand-token-{name}"] = t.raw_input(_j(full if step % 2 else lean), step=step)
    out["hand-token-refresh-keeps-old"] = t.raw_input(_j(lean), step=3)
    out["hand-token-dpop"] = t.raw_input(_j({**full, "token_type": "DPoP"}), step=0)
    return out


def challenge_seeds() -> dict[str, bytes]:
    c = fuzz_oauth_challenge
    rm = (ORIGIN + "/meta/prm").encode()
    return {
        "hand-challenge-sdk": c.raw_input(
            b'Bearer error="invalid_token", error_description="Authentication required", '
            b'resource_metadata="' + rm + b'"'
        ),
        "hand-challenge-scope": c.raw_input(b'Bearer realm="mcp", scope="mcp:read mcp:write"'),
        "hand-challenge-insufficient": c.raw_input(
            b'Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="'
            + rm
            + b'"',
            flags=6,
        ),
        "hand-challenge-several": c.raw_input(
            b'Basic realm="x"', b"Negotiate abc==, Bearer scope=mcp", b'Bearer scope="other"'
        ),
        "hand-challenge-bare": c.raw_input(b"Bearer"),
        "hand-challenge-malformed-then-good": c.raw_input(
            b'Bearer scope="unterminated', b'Bearer scope="ok"'
        ),
    }


def callback_seeds() -> dict[str, bytes]:
    cb = fuzz_oauth_callback
    ok = f"code=SplxlOBeZQQYbYS6WxSbIA&state={FIRST_STATE}"
    return {
        "hand-callback-ok": cb.raw_input(ok),
        "hand-callback-iss": cb.raw_input(
            ok + "&iss=" + AS.replace(":", "%3A").replace("/", "%2F"), flags=2
        ),
        "hand-callback-denied": cb.raw_input(
            f"error=access_denied&error_description=The+user+denied&state={FIRST_STATE}"
        ),
        "hand-callback-wrong-state": cb.raw_input(f"code=c&state={FIRST_STATE}x"),
        "hand-callback-duplicate-state": cb.raw_input(ok + f"&state={FIRST_STATE}"),
        "hand-callback-whole-url": cb.raw_input(
            "http://127.0.0.1:53682/callback?" + ok + "#frag", flags=32
        ),
        "hand-callback-twice": cb.raw_input(ok, flags=8),
    }


def main() -> None:
    for target, seeds in (
        ("oauth_metadata", metadata_seeds()),
        ("oauth_register", register_seeds()),
        ("oauth_token", token_seeds()),
        ("oauth_challenge", challenge_seeds()),
        ("oauth_callback", callback_seeds()),
    ):
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("hand-*"):
            old.unlink()
        for name, data in seeds.items():
            (folder / name).write_bytes(data)
        print(f"{target}: {len(seeds)} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
