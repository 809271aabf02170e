"""Signing in: OAuth's phases, the flow that composes them, and the layer.

This folder owns OAuth's values (``_oauth_errors``, ``_oauth_rules``,
``_oauth_types``), DPoP's proofs and nonces (``_oauth_dpop``), the state
its phases share (``_oauth_base``), its phases — discovery, registration,
authorization, tokens, the assertion grants (``_oauth_grants``) — the flow
that composes them (``_oauth``), the token store (``_store``), the host hooks (``_hooks``) and the
authorization layer that sits in front of a server's requests
(``_authorizing``).

Bottom to top: errors < rules < types < dpop < base < the phases < the flow; types <
store < hooks < layer. A phase never imports the flow or another phase (it
acts through the ``FlowBase`` it is given); the hooks never import the layer.
It imports only ``wire`` and ``base``. Everything here is private: import
public names from ``mcpcore``.
"""
