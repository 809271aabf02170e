"""The OAuth flow's discovery phase: where the authorization server is, and what it offers.

``Discovery`` asks for the protected resource's metadata (the challenge's URL,
then the well-known ones, O5-O9), picks the authorization server (O10), asks
for that server's metadata (O11-O15, O17), or takes the 2025-03-26 path when
the resource publishes none (O16). It hands on to ``OAuthFlow.after_metadata``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..base._escape import excerpt
from ._oauth_errors import (
    AuthServerMetadataNotFound,
    InvalidMetadata,
    IssuerMismatch,
    MalformedResponse,
    OAuthError,
    PkceNotSupported,
    ResourceMismatch,
)
from ._oauth_rules import (
    _ASM_WELL_KNOWN,
    _JSON,
    _SHOWN,
    _absolute,
    _no_query,
    _opt_str,
    _origin,
    _parse_json_object,
    _str_list,
    asm_candidates,
    canonical_resource,
    issuers_match,
    prm_candidates,
    resource_matches,
)
from ._oauth_types import (
    DeleteTokens,
    Purpose,
    _Exchange,
    _Metadata,
    _Phase,
)

if TYPE_CHECKING:
    from ._oauth_base import FlowBase

__all__ = ["Discovery"]


class Discovery:
    """Protected-resource and authorization-server metadata (O5-O17)."""

    __slots__ = ("flow",)

    def __init__(self, flow: FlowBase) -> None:
        self.flow = flow

    def begin(self, resource_metadata: str | None, now: float) -> None:
        """Ask for the protected resource's metadata: the challenge's URL first (O5, O6)."""
        flow = self.flow
        run = flow._need_run()
        if resource_metadata is not None:
            refused = flow._refused(resource_metadata, "resource metadata URL")
            if refused is not None:
                # O5: not followed; well-known discovery runs, and if it finds
                # nothing the refusal is the flow's error (not the legacy path).
                resource_metadata = None
                run.prm_problem = refused
        run.prm_urls = prm_candidates(flow.config.server_url, resource_metadata)
        flow._phase = _Phase.DISCOVER_PRM
        self.next_prm(now)

    def headers(self, with_version: bool) -> list[tuple[bytes, bytes]]:
        flow = self.flow
        headers = [(b"accept", _JSON)]  # O18
        if with_version:
            headers.append((b"mcp-protocol-version", flow.protocol_version.encode("ascii")))
        return headers

    def next_prm(self, now: float) -> None:
        flow = self.flow
        run = flow._need_run()
        if run.prm_index < len(run.prm_urls):
            url = run.prm_urls[run.prm_index]
            run.prm_index += 1
            flow._send(Purpose.PRM, "GET", url, self.headers(True), None)
            return
        if run.prm_problem is not None:
            flow._fail(run.prm_problem)
            return
        # O16: every candidate missed: the 2025-03-26 path.
        flow._phase = _Phase.LEGACY_ASM
        url = _origin(flow.config.server_url) + _ASM_WELL_KNOWN
        flow._send(Purpose.LEGACY_ASM, "GET", url, self.headers(True), None)

    def on_prm(self, ex: _Exchange, now: float) -> None:
        flow = self.flow
        run = flow._need_run()
        if 300 <= ex.status < 500 and ex.status != 429:
            self.next_prm(now)  # O8: a miss
            return
        if ex.status != 200:
            flow._fail(flow._transient("protected resource metadata", ex))
            return
        try:
            doc = _parse_json_object(bytes(ex.body), "the protected resource metadata")
            resource = doc.get("resource")
            if not isinstance(resource, str):
                raise MalformedResponse("the protected resource metadata has no 'resource'")
            if not resource_matches(flow.config.server_url, resource):
                raise ResourceMismatch(
                    f"the protected resource metadata at {_no_query(ex.url)!r} is for "
                    f"{excerpt(_no_query(resource), _SHOWN)!r}, not "
                    f"{_no_query(flow.config.server_url)!r} (O9)"
                )
            servers = _str_list(doc, "authorization_servers", "the protected resource metadata")
            usable = tuple(s for s in servers or () if _absolute(s))
            if not usable:
                raise InvalidMetadata(
                    "the protected resource metadata names no authorization server"
                )
            scopes = _str_list(doc, "scopes_supported", "the protected resource metadata")
        except OAuthError as error:
            run.prm_problem = run.prm_problem or error
            self.next_prm(now)  # O9: discard this candidate, try the next
            return
        flow._resource = resource  # O49: verbatim
        flow._prm_scopes = scopes or ()
        issuer = usable[0]
        pre = flow.config.preregistered
        if pre is not None and pre.issuer in usable:
            issuer = pre.issuer  # O10
        self.choose_issuer(issuer, now)

    def choose_issuer(self, issuer: str, now: float) -> None:
        flow = self.flow
        run = flow._need_run()
        run.expected_issuer = issuer
        refused = flow._refused(issuer, "authorization server")
        if refused is not None:
            flow._fail(refused)
            return
        tokens = flow._tokens
        if tokens is not None and not issuers_match(issuer, tokens.issuer):
            # O29: another AS now; its predecessor's tokens are of no use here.
            flow._emit(DeleteTokens(key=flow._key(tokens.issuer), only_if=tokens))
            flow._tokens = None
            flow._requested_scope = None
        if flow._metadata is not None and issuers_match(issuer, flow._metadata.issuer):
            flow.after_metadata(now)
            return
        flow._metadata = None
        run.asm_urls = asm_candidates(issuer, flow.protocol_version)
        flow._phase = _Phase.DISCOVER_ASM
        self.next_asm(now)

    def next_asm(self, now: float) -> None:
        flow = self.flow
        run = flow._need_run()
        if run.asm_index < len(run.asm_urls):
            url = run.asm_urls[run.asm_index]
            run.asm_index += 1
            flow._send(Purpose.ASM, "GET", url, self.headers(False), None)
            return
        flow._fail(
            run.asm_problem
            or AuthServerMetadataNotFound(
                f"no authorization server metadata found for "
                f"{excerpt(_no_query(run.expected_issuer or ''), _SHOWN)!r} (O11, O17)"
            )
        )

    def on_asm(self, ex: _Exchange, now: float) -> None:
        flow = self.flow
        run = flow._need_run()
        if 300 <= ex.status < 500 and ex.status != 429:
            self.next_asm(now)
            return
        if ex.status != 200:
            flow._fail(flow._transient("authorization server metadata", ex))
            return
        expected = run.expected_issuer or ""
        try:
            doc = _parse_json_object(bytes(ex.body), "the authorization server metadata")
            issuer = doc.get("issuer")
            if not isinstance(issuer, str) or not issuers_match(expected, issuer):
                shown = issuer if isinstance(issuer, str) else "<none>"
                raise IssuerMismatch(
                    f"the authorization server metadata at {_no_query(ex.url)!r} names issuer "
                    f"{excerpt(shown, _SHOWN)!r}, expected {excerpt(expected, _SHOWN)!r} (O12)",
                    expected=expected,
                    got=excerpt(shown, _SHOWN),
                )
        except OAuthError as error:
            run.asm_problem = run.asm_problem or error
            self.next_asm(now)  # O12: discard it entirely
            return
        try:
            flow._metadata = self.read_metadata(doc, issuer)
        except OAuthError as error:
            flow._fail(error)
            return
        flow.after_metadata(now)

    def on_legacy_asm(self, ex: _Exchange, now: float) -> None:
        flow = self.flow
        origin = _origin(flow.config.server_url)
        flow._resource = canonical_resource(flow.config.server_url)  # O49 without PRM
        flow._prm_scopes = ()
        if 300 <= ex.status < 500 and ex.status != 429:
            # O16: no metadata: default endpoints on the server's origin.
            flow._metadata = _Metadata(
                issuer=origin,
                authorization_endpoint=origin + "/authorize",
                token_endpoint=origin + "/token",
                registration_endpoint=origin + "/register",
                scopes_supported=(),
                auth_methods=None,
                cimd=False,
                iss_supported=False,
                legacy_defaults=True,
            )
        elif ex.status != 200:
            flow._fail(flow._transient("authorization server metadata", ex))
            return
        else:
            try:
                doc = _parse_json_object(bytes(ex.body), "the authorization server metadata")
                issuer = doc.get("issuer")
                # O16: no RFC 8414 §3.3 check on the legacy path; the issuer is recorded.
                recorded = issuer if isinstance(issuer, str) and issuer else origin
                flow._metadata = self.read_metadata(doc, recorded)
            except OAuthError as error:
                flow._fail(error)
                return
        flow._need_run().expected_issuer = flow._metadata.issuer
        tokens = flow._tokens
        if tokens is not None and tokens.issuer != flow._metadata.issuer:
            flow._emit(DeleteTokens(key=flow._key(tokens.issuer), only_if=tokens))
            flow._tokens = None
        flow.after_metadata(now)

    def read_metadata(self, doc: Mapping[str, Any], issuer: str) -> _Metadata:
        flow = self.flow
        what = "the authorization server metadata"
        code_grant = flow.config.grant == "authorization_code"
        authz = _opt_str(doc, "authorization_endpoint", what)
        token = _opt_str(doc, "token_endpoint", what)
        registration = _opt_str(doc, "registration_endpoint", what)
        if token is None or (code_grant and authz is None):
            raise InvalidMetadata(f"{what} lacks an authorization or token endpoint (O14)")
        for name, url in (
            ("authorization", authz),
            ("token", token),
            ("registration", registration),
        ):
            if url is None:
                continue
            if not _absolute(url):
                raise InvalidMetadata(
                    f"{what}: the {name} endpoint {excerpt(_no_query(url), _SHOWN)!r} is not an "
                    "absolute https URL (O14, O63)"
                )
            refused = flow._refused(url, f"{name} endpoint")
            if refused is not None:
                raise refused
        methods = _str_list(doc, "code_challenge_methods_supported", what)
        if code_grant and "S256" not in (methods or ()):
            raise PkceNotSupported(
                f"the authorization server {excerpt(issuer, _SHOWN)!r} does not offer PKCE "
                "S256; refusing to authorize without it (O15)"
            )
        cimd = doc.get("client_id_metadata_document_supported") is True
        iss_supported = doc.get("authorization_response_iss_parameter_supported") is True
        return _Metadata(
            issuer=issuer,
            authorization_endpoint=authz,
            token_endpoint=token,
            registration_endpoint=registration,
            scopes_supported=_str_list(doc, "scopes_supported", what) or (),
            auth_methods=_str_list(doc, "token_endpoint_auth_methods_supported", what),
            cimd=cimd,
            iss_supported=iss_supported,
            dpop_algs=tuple(_str_list(doc, "dpop_signing_alg_values_supported", what) or ()),
        )
