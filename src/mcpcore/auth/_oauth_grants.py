"""The OAuth flow's assertion grants: workload identity and enterprise sign-in.

``AssertionGrants`` follows discovery when the client's grant is
``"jwt_bearer"`` (N3) or ``"enterprise"`` (N2). No browser is involved. It
asks the host for an assertion (``ProvideAssertion``, answered with
``receive_identity``), anew for every grant: a platform's workload token
rotates, and an identity assertion expires.

* ``jwt_bearer`` (N3, RFC 7523): the workload token is presented at the
  authorization server's token endpoint,
  ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=…``.
* ``enterprise`` (N2, the ID-JAG flow): the person's identity assertion is
  exchanged at the identity provider's token endpoint (RFC 8693,
  ``grant_type=urn:ietf:params:oauth:grant-type:token-exchange``,
  ``requested_token_type=urn:ietf:params:oauth:token-type:id-jag``,
  ``audience`` = the authorization server's issuer, ``resource`` = the MCP
  server, ``subject_token`` = the assertion), and the ID-JAG that comes back
  is presented at the authorization server as a JWT bearer grant, with the
  pre-registered client's authentication. The ID-JAG goes nowhere else.

A refusal fails the flow with a ``TokenError`` whose message and ``step``
name the request that failed (``"token_exchange"``, ``"jwt_bearer"``); no
assertion, ID-JAG or token is ever in it, and the grant is not tried again
until the host signs in again (O74).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Final
from urllib.parse import quote, urlencode

from ..base._errors import InvalidValue
from ._oauth_errors import MalformedResponse, OAuthError, TokenError
from ._oauth_rules import _FORM, _JSON, _no_query, _opt_str, _parse_json_object, canonical_resource
from ._oauth_types import ProvideAssertion, Purpose, _Exchange, _Phase

if TYPE_CHECKING:
    from ._oauth_base import FlowBase

__all__ = ["AssertionGrants"]

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
_SUBJECT_TYPES: Final = {
    "id_token": "urn:ietf:params:oauth:token-type:id_token",
    "saml2": "urn:ietf:params:oauth:token-type:saml2",
}
_MAX_ASSERTION: Final = 64 * 1024


class AssertionGrants:
    """The ``jwt_bearer`` and ``enterprise`` grants (see the module docstring)."""

    __slots__ = ("flow",)

    def __init__(self, flow: FlowBase) -> None:
        self.flow = flow

    def start(self, now: float) -> None:
        """Discovery is done and the client known: ask the host for the assertion."""
        flow = self.flow
        run = flow._need_run()
        meta = flow._need_metadata()
        flow._phase = _Phase.ASSERTING
        run.assertion_id += 1
        flow._emit(
            ProvideAssertion(
                request_id=run.assertion_id,
                kind="identity" if flow.config.grant == "enterprise" else "workload",
                audience=meta.issuer,
                resource=self.resource(),
            )
        )

    def resource(self) -> str:
        flow = self.flow
        return flow._resource or canonical_resource(flow.config.server_url)

    def receive_identity(self, request_id: int, assertion: str, now: float) -> None:
        """The host's answer to ``ProvideAssertion(request_id)``."""
        flow = self.flow
        run = flow._run
        if run is None or flow._phase is not _Phase.ASSERTING or request_id != run.assertion_id:
            return
        if not isinstance(assertion, str):
            raise InvalidValue("the assertion must be a str")
        assertion = assertion.strip()
        if (
            not assertion
            or len(assertion) > _MAX_ASSERTION
            or not all("!" <= ch <= "~" for ch in assertion)
        ):
            raise InvalidValue("the assertion must be one token of visible ASCII characters")
        flow._remember(assertion)
        if flow.config.grant == "enterprise":
            self.exchange(assertion)
        else:
            self.jwt_bearer(assertion, now)

    def exchange(self, subject_token: str) -> None:
        """N2, step 1 (RFC 8693): the identity assertion for an ID-JAG at the IdP."""
        flow = self.flow
        run = flow._need_run()
        meta = flow._need_metadata()
        idp = flow.config.identity_provider
        assert idp is not None
        params = [
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG),
            ("audience", meta.issuer),
            ("resource", self.resource()),
            ("subject_token", subject_token),
            ("subject_token_type", _SUBJECT_TYPES[idp.subject_token_type]),
        ]
        if run.scope:
            params.append(("scope", run.scope))
        headers = [(b"content-type", _FORM), (b"accept", _JSON)]
        if idp.client_id is not None and idp.client_secret:
            raw = quote(idp.client_id, safe="") + ":" + quote(idp.client_secret, safe="")
            headers.append((b"authorization", b"Basic " + base64.b64encode(raw.encode("ascii"))))
        if idp.client_id is not None:
            params.append(("client_id", idp.client_id))
        flow._phase = _Phase.CLIENT_GRANT
        flow._send(
            Purpose.TOKEN_EXCHANGE,
            "POST",
            idp.token_endpoint,
            headers,
            urlencode(params).encode("ascii"),
        )

    def on_exchange(self, ex: _Exchange, now: float) -> None:
        """The identity provider's answer: an ID-JAG, presented next (step 2)."""
        flow = self.flow
        where = f"token exchange at the identity provider {_no_query(ex.url)!r}"
        if 300 <= ex.status < 400:
            flow._fail(flow._redirect(f"the {where}", ex.status))  # O62
            return
        if ex.status >= 500 or ex.status == 429:
            flow._fail(flow._transient(f"the {where}", ex))  # O8: try again later
            return
        if ex.status != 200:
            code, description = flow._oauth_error(ex.body)
            shown = f": {code}" if code else ""
            detail = f" ({description})" if description else ""
            flow._grant_refused(
                TokenError(
                    f"{where} failed with HTTP {ex.status}{shown}{detail}",
                    error=code,
                    status=ex.status,
                    step="token_exchange",
                )
            )
            return
        try:
            doc = _parse_json_object(bytes(ex.body), f"the {where}'s answer")
            jag = doc.get("access_token")
            if not isinstance(jag, str) or not jag or not all("!" <= c <= "~" for c in jag):
                raise MalformedResponse(f"the {where} gave no ID-JAG in 'access_token'")
            issued = _opt_str(doc, "issued_token_type", f"the {where}'s answer")
            if issued is not None and issued != ID_JAG:
                raise MalformedResponse(
                    f"the {where} issued a {issued[:80]!r}, not an ID-JAG ({ID_JAG})"
                )
        except OAuthError as error:
            flow._grant_refused(TokenError(str(error), status=ex.status, step="token_exchange"))
            return
        flow._remember(jag)
        self.jwt_bearer(jag, now)

    def jwt_bearer(self, assertion: str, now: float) -> None:
        """N2 step 2, N3 (RFC 7523): the assertion at the authorization server."""
        flow = self.flow
        run = flow._need_run()
        meta = flow._need_metadata()
        client = run.client
        assert client is not None
        flow._phase = _Phase.CLIENT_GRANT
        flow._requested_scope = run.scope
        params = [("grant_type", JWT_BEARER), ("assertion", assertion)]
        if run.scope:
            params.append(("scope", run.scope))
        params.append(("resource", self.resource()))
        flow.token_requests.request(
            Purpose.TOKEN_JWT_BEARER, meta.token_endpoint, params, client, now
        )
