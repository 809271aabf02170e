"""Signing in: OAuth's phases, the flow that composes them, and the layer.

This folder owns OAuth's values (``_oauth_types``, ``_oauth_base``), its
phases — discovery, registration, authorization, tokens — the flow that
composes them (``_oauth``), the authorization layer that sits in front of a
server's requests (``_authorizing``) and the host hooks it calls (``_hooks``).

It imports only ``wire`` and ``base``. Everything here is private: import
public names from ``mcpcore``.
"""
