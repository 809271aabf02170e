"""The conformance-suite client: ``python tests/conformance/client.py URL``.

The official suite (``@modelcontextprotocol/conformance``) starts a mock
server per scenario and runs this with the scenario's name in
``MCP_CONFORMANCE_SCENARIO``. It drives the anyio driver as a host would:
connect, list, call the offered tools (with the arguments the scenario gives
in ``MCP_CONFORMANCE_CONTEXT`` when it gives any), close. Nothing in the
library depends on the scenario. Exit 0 once connected and every call was
made (a tool's own error is reported, as a host would); 1 if unavailable.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import anyio
import httpcore

from mcpcore import (
    AuthOptions,
    Elicitation,
    ElicitResult,
    IdentityProvider,
    McpError,
    PreRegisteredClient,
    ProvideAssertion,
    SkillMismatch,
)
from mcpcore_anyio import McpClient
from mcpcore_jwt import DpopKey, PrivateKeySigner, async_signer

CIMD_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"  # never listened on: the mocks redirect at once

# What each scenario's tools expect; other tools are called with no arguments.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "add_numbers": {"a": 5, "b": 3},
    "valid_tool": {"region": "us-west1"},
}


def _planned_calls(tools: Any) -> list[tuple[str, dict[str, Any]]]:
    """The calls a host makes: the context's, else every tool with known or no arguments."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    by_name = {tool.name: tool for tool in tools}
    given = context.get("toolCalls") if isinstance(context, dict) else None
    if isinstance(given, list):
        return [
            (by_name[c["name"]].id, c.get("arguments") or {})
            for c in given
            if isinstance(c, dict) and c.get("name") in by_name
        ]
    calls = []
    for tool in tools:
        arguments = ARGUMENTS.get(tool.name, {})
        if tool.name == "json_schema_echo" and "json_schema_2020_12_tool" in by_name:
            # the schema exactly as this client received it (E6)
            arguments = {"schema": by_name["json_schema_2020_12_tool"].parameters}
        calls.append((tool.id, arguments))
    return calls


async def authorize(url: str, redirect_uri: str) -> str:
    """The host hook a person would use, done headlessly: the mock authorization
    server redirects at once, so the callback URL is its Location header."""
    async with httpcore.AsyncConnectionPool() as http:
        response = await http.request("GET", url)
    for name, value in response.headers:
        if name.lower() == b"location":
            return value.decode("latin-1")
    raise RuntimeError(
        f"the authorization endpoint answered HTTP {response.status} without a redirect"
    )


async def elicit(question: Elicitation) -> ElicitResult:
    """The host's person, done headlessly: they accept each form as it stands, so
    the form's own defaults fill it (``elicit_defaults``)."""
    print(f"[elicit] {question.server}: {len(question.fields)} fields", file=sys.stderr)
    return ElicitResult.accept({})


def _auth_for(scenario: str) -> tuple[AuthOptions, dict[str, Any]]:
    """OAuth options as a host would configure them for this scenario's server."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    hooks: dict[str, Any] = {"authorize": authorize}
    if scenario.startswith("auth/client-credentials"):
        if "private_key_pem" in context:
            algorithm = context.get("signing_algorithm", "ES256")
            client = PreRegisteredClient(
                client_id=context["client_id"],
                auth_method="private_key_jwt",
                signing_alg=algorithm,
            )
            hooks["sign_assertion"] = async_signer(
                PrivateKeySigner(context["private_key_pem"], algorithm)
            )
        else:
            client = PreRegisteredClient(
                client_id=context["client_id"],
                client_secret=context["client_secret"],
                auth_method="client_secret_basic",
            )
        return AuthOptions(client=client, grant="client_credentials"), hooks
    if scenario.startswith("auth/dpop"):
        # N1: the authorization server lists ES256 in dpop_signing_alg_values_supported.
        options = AuthOptions(
            client_metadata_url=CIMD_URL,
            redirect_uri=REDIRECT_URI,
            dpop="auto",
            dpop_key=DpopKey.generate(),
        )
        return options, hooks
    if scenario == "auth/wif-jwt-bearer":
        # N3: the platform's workload token, from a hook (as a token file would be).
        async def workload_token(request: ProvideAssertion) -> str:
            return str(context["valid_jwt"])

        client = PreRegisteredClient(client_id=context["client_id"], auth_method="none")
        options = AuthOptions(client=client, grant="jwt_bearer", assertion=workload_token)
        return options, {}
    if scenario in ("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow"):
        # N2: the person's ID token from the enterprise IdP, exchanged there for an ID-JAG.
        async def identity(request: ProvideAssertion) -> str:
            return str(context["idp_id_token"])

        client = PreRegisteredClient(
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            auth_method="client_secret_basic",
        )
        idp = IdentityProvider(
            token_endpoint=context["idp_token_endpoint"], client_id=context["idp_client_id"]
        )
        options = AuthOptions(
            client=client, grant="enterprise", identity_provider=idp, assertion=identity
        )
        return options, {}
    if "client_id" in context and "client_secret" in context:
        client = PreRegisteredClient(
            client_id=context["client_id"], client_secret=context["client_secret"]
        )
        return AuthOptions(client=client, redirect_uri=REDIRECT_URI), hooks
    return AuthOptions(client_metadata_url=CIMD_URL, redirect_uri=REDIRECT_URI), hooks


# --- skills (SEP-2640, N4) ----------------------------------------------------------------

# The scenarios where the host's model asks for no skill: listing must read no file.
SKILLS_LISTED_ONLY = {"sep-2640-client-no-prefetch"}


async def use_skills(client: McpClient, scenario: str) -> None:
    """A host with skills: list them (no file read), then, as its model asks for
    each, load it: ``SKILL.md`` first, verified, and its other files only when
    that passed. A file that fails verification is dropped, the skill not loaded."""
    if not client.offers("skills"):
        return
    skills = await client.list_skills()
    print(f"[{scenario}] {len(skills)} skills listed", file=sys.stderr)
    if scenario in SKILLS_LISTED_ONLY:
        return
    for skill in skills:
        try:
            await client.read_skill_file(skill, "SKILL.md")
            for path in await client.list_skill_files(skill):
                if path != "SKILL.md":
                    await client.read_skill_file(skill, path)
        except SkillMismatch as exc:
            print(f"[{scenario}] skill not loaded: {exc}", file=sys.stderr)
            continue
        print(f"[{scenario}] skill {skill.name!r} loaded", file=sys.stderr)


async def run(url: str, scenario: str) -> int:
    auth, hooks = _auth_for(scenario)
    async with McpClient(
        "conformance",
        {"url": url},
        call_timeout=30.0,
        auth=auth,
        elicit=elicit,
        elicit_defaults=True,
        **hooks,
    ) as client:
        availability = await client.ready(30)
        if not availability.ok:
            print(f"unavailable: {availability.reason}", file=sys.stderr)
            return 1
        tools = client.tools
        print(
            f"[{scenario}] ready with {len(tools)} tools, protocol {client.protocol_version}",
            file=sys.stderr,
        )
        for tool_id, arguments in _planned_calls(tools):
            try:
                output = await client.call(tool_id, arguments)
            except McpError as exc:
                print(f"[{scenario}] {tool_id}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            print(f"[{scenario}] {tool_id}: {output.text[:200]!r}", file=sys.stderr)
        await use_skills(client, scenario)
    return 0


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: client.py URL", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    return anyio.run(run, sys.argv[1], scenario)


if __name__ == "__main__":
    sys.exit(main())
