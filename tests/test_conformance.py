"""The official MCP conformance suite (``@modelcontextprotocol/conformance``) in client mode.

Each scenario runs on its own (never in the suite's parallel mode: ``sse-retry``
measures reconnect timing), with ``tests/conformance/client.py`` on the anyio
driver. In-scope scenarios must pass with at least one real check; the rest of
the core set is listed in ``tests/conformance/expected-failures.yaml`` and the
suite's baseline check fails when one of them starts passing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from peers import ROOT, conformance_alpha_command, conformance_command, require_peers

pytestmark = pytest.mark.realpeer

CLIENT = ROOT / "tests" / "conformance" / "client.py"
BASELINE = ROOT / "tests" / "conformance" / "expected-failures.yaml"
# The core set of 0.1.16: the three MCP scenarios and every auth/* one.
AUTH_CORE = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
]
IN_SCOPE = [
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",  # Q1: the elicit hook with elicit_defaults
    *AUTH_CORE,
]
# 0.1.16's "draft" auth scenarios and the client-credentials extensions (A5).
AUTH_MORE = [
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/cross-app-access-complete-flow",  # N2: 0.1.16's name for the ID-JAG flow
]
# 0.2.0-alpha.12: the auth scenarios scored for 2025-11-25 (14) ...
AUTH_2025_11_25 = AUTH_CORE[:14]
# ... and for 2026-07-28 (those 14 and 11 introduced in 2026-07-28).
AUTH_2026_07_28 = [
    *AUTH_2025_11_25,
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
]
# Run at the suite's default revision: the 2025-03-26 back-compat pair and the
# client-credentials extensions.
AUTH_ALPHA_DEFAULT = [
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
]
# 0.2.0-alpha.12's other authorization extensions, at the suite's default revision:
# DPoP (N1), enterprise-managed authorization (N2) and workload identity (N3).
AUTH_EXTENSIONS = [
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/enterprise-managed-authorization",
    "auth/wif-jwt-bearer",
]
# 0.2.0-alpha.12: every 2026-07-28 client scenario that is neither auth/* nor an
# extension, run at that revision (E1-E6, M1-M57), and the handshake-era three.
MODERN = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
]

# 0.2.0-alpha.12: the skills extension's client scenarios (SEP-2640, N4), at the
# suite's default revision; the conformance client lists and loads skills in them.
SKILLS = [
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
]


def _expected_failures() -> list[str]:
    lines = BASELINE.read_text().splitlines()
    return [line.strip()[2:] for line in lines if line.strip().startswith("- ")]


def _run(scenario: str, out: Path) -> subprocess.CompletedProcess[str]:
    require_peers()
    command = f"{sys.executable} {CLIENT}"
    return subprocess.run(
        conformance_command(
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            "--expected-failures",
            str(BASELINE),
            "-o",
            str(out),
        ),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def _run_alpha(scenario: str, out: Path, *spec: str) -> subprocess.CompletedProcess[str]:
    command = f"{sys.executable} {CLIENT}"
    return subprocess.run(
        conformance_alpha_command(
            "client", "--command", command, "--scenario", scenario, *spec, "-o", str(out)
        ),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def _passed_with_real_checks(result: subprocess.CompletedProcess[str], out: Path) -> None:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    checks = _checks(out)
    statuses = [c["status"] for c in checks]
    assert "SUCCESS" in statuses, checks  # a client that does nothing "passes" 0/0
    assert "FAILURE" not in statuses and "WARNING" not in statuses, checks


def _checks(out: Path) -> list[dict[str, object]]:
    files = list(out.rglob("checks.json"))
    assert len(files) == 1, files
    data = json.loads(files[0].read_text())
    return data if isinstance(data, list) else data["checks"]


@pytest.mark.parametrize("scenario", IN_SCOPE)
def test_in_scope_scenario_passes(scenario: str, tmp_path: Path) -> None:
    """P1, P3, K1, H4: the in-scope scenarios pass, with real checks behind the pass."""
    result = _run(scenario, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    checks = _checks(tmp_path)
    statuses = [c["status"] for c in checks]
    assert "SUCCESS" in statuses, checks  # a client that does nothing "passes" 0/0
    assert "FAILURE" not in statuses and "WARNING" not in statuses, checks


@pytest.mark.parametrize("scenario", MODERN)
def test_M1_M18_E1_alpha_2026_07_28_scenario_passes(scenario: str, tmp_path: Path) -> None:
    """E1-E6: conformance 0.2.0-alpha.12 at 2026-07-28, no failure, no warning."""
    _passed_with_real_checks(
        _run_alpha(scenario, tmp_path, "--spec-version", "2026-07-28"), tmp_path
    )


@pytest.mark.parametrize("scenario", IN_SCOPE)
def test_M8_alpha_handshake_era_scenario_passes(scenario: str, tmp_path: Path) -> None:
    """M8, P1, H4: the handshake-era scenarios on the alpha suite too (found by the fallback)."""
    _passed_with_real_checks(_run_alpha(scenario, tmp_path), tmp_path)


@pytest.mark.parametrize("scenario", AUTH_MORE)
def test_A2_A5_draft_and_client_credentials_scenarios_pass(scenario: str, tmp_path: Path) -> None:
    """O9, O21, O71, O72: 0.1.16's draft auth scenarios and the client-credentials
    extensions (a secret with Basic, a private_key_jwt assertion) pass too."""
    _passed_with_real_checks(_run(scenario, tmp_path), tmp_path)


@pytest.mark.parametrize("scenario", AUTH_2026_07_28)
def test_A1_A2_alpha_auth_scenario_passes_at_2026_07_28(scenario: str, tmp_path: Path) -> None:
    """A1, A2: the 25 auth scenarios scored for 2026-07-28 (the first 401 answers
    server/discover), no failure, no warning.

    O70: the person's step is the authorize hook; the conformance client's headless hook
    fetches the URL without following redirects and returns the Location, and that is
    enough.
    """
    _passed_with_real_checks(
        _run_alpha(scenario, tmp_path, "--spec-version", "2026-07-28"), tmp_path
    )


@pytest.mark.parametrize("scenario", AUTH_2025_11_25)
def test_A1_A2_alpha_auth_scenario_passes_at_2025_11_25(scenario: str, tmp_path: Path) -> None:
    """A1, A2: the 14 auth scenarios scored for 2025-11-25 on the alpha suite."""
    _passed_with_real_checks(
        _run_alpha(scenario, tmp_path, "--spec-version", "2025-11-25"), tmp_path
    )


@pytest.mark.parametrize("scenario", AUTH_ALPHA_DEFAULT)
def test_A5_O16_alpha_backcompat_and_client_credentials_pass(scenario: str, tmp_path: Path) -> None:
    """O16, O71, O72: the 2025-03-26 back-compat pair and client credentials on alpha."""
    _passed_with_real_checks(_run_alpha(scenario, tmp_path), tmp_path)


@pytest.mark.parametrize("scenario", AUTH_EXTENSIONS)
def test_N1_N2_N3_alpha_auth_extension_scenario_passes(scenario: str, tmp_path: Path) -> None:
    """N1, N2, N3, N5: DPoP (with and without nonces), enterprise-managed
    authorization and workload identity pass on alpha, each with real checks
    (the scenario's own: the proofs, the token exchange, the verified assertion)."""
    _passed_with_real_checks(_run_alpha(scenario, tmp_path), tmp_path)
    passed = {c["id"] for c in _checks(tmp_path) if c["status"] == "SUCCESS"}
    own = {
        "auth/dpop": {"sep-1932-client-token-request-proof", "sep-1932-client-fresh-proof"},
        "auth/dpop-nonce": {"sep-1932-client-as-nonce", "sep-1932-client-rs-nonce"},
        "auth/enterprise-managed-authorization": {
            "complete-flow-token-exchange",
            "complete-flow-jwt-bearer",
        },
        "auth/wif-jwt-bearer": {"wif-assertion-verified"},
    }[scenario]
    assert own <= passed, passed


@pytest.mark.parametrize("scenario", SKILLS)
def test_N4_N5_alpha_skills_scenario_passes_with_a_check(scenario: str, tmp_path: Path) -> None:
    """N4, N5: each skills scenario passes with its check passed, not 0/0: the
    listing reads no file; a SKILL.md whose digest, size or frontmatter differs
    from its entry is refused and the skill's other files never read."""
    _passed_with_real_checks(_run_alpha(scenario, tmp_path), tmp_path)


def test_N5_a_pass_with_zero_checks_fails(tmp_path: Path) -> None:
    """N5: the guard every scenario above goes through refuses a run that passed
    with no check behind it (the suite's "Passed: 0/0"), and one with a failure."""
    ok = subprocess.CompletedProcess[str]([], 0, "", "")
    (tmp_path / "checks.json").write_text("[]")
    with pytest.raises(AssertionError):
        _passed_with_real_checks(ok, tmp_path)
    checks = [{"id": "x", "status": "SUCCESS"}, {"id": "y", "status": "FAILURE"}]
    (tmp_path / "checks.json").write_text(json.dumps(checks))
    with pytest.raises(AssertionError):
        _passed_with_real_checks(ok, tmp_path)
    (tmp_path / "checks.json").write_text(json.dumps(checks[:1]))
    _passed_with_real_checks(ok, tmp_path)


def test_N4_every_alpha_skills_scenario_is_run() -> None:
    """N4: 0.2.0-alpha.12's client scenarios of the skills extension are all above."""
    alpha = _listed(conformance_alpha_command("list", "--client"))
    assert sorted(name for name, _ in alpha if name.startswith("sep-2640-")) == sorted(SKILLS)


@pytest.mark.parametrize("scenario", _expected_failures())
def test_out_of_scope_scenario_matches_the_baseline(scenario: str, tmp_path: Path) -> None:
    """Out of scope (OAuth, elicitation): failing as the baseline says, and no more."""
    result = _run(scenario, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Expected failures (in baseline)" in result.stdout


def test_every_core_scenario_is_accounted_for() -> None:
    """A scenario added to the suite's core set shows up here instead of going unrun."""
    require_peers()
    listing = subprocess.run(
        conformance_command("list", "--client"), capture_output=True, text=True, timeout=60
    ).stdout
    core = [
        line.strip()[2:].split(" [")[0]
        for line in listing.splitlines()
        if line.strip().startswith("- ") and "[draft]" not in line and "[extension]" not in line
    ]
    assert sorted(core) == sorted(IN_SCOPE + _expected_failures())


def _listed(command: list[str]) -> list[tuple[str, str]]:
    """(scenario, its bracketed tags) for each client scenario a suite lists."""
    listing = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    found = []
    for line in listing.splitlines():
        if line.strip().startswith("- "):
            name, _, tags = line.strip()[2:].partition(" [")
            found.append((name, tags))
    return found


def test_Q1_Q4_every_alpha_scenario_and_every_elicitation_scenario_is_run() -> None:
    """0.2.0-alpha.12 lists no client scenario outside an extension that is not run
    above, and every scenario about questions for the person (elicitation, the
    input_required rounds of SEP-2322) of either suite is among the ones that must pass."""
    alpha = _listed(conformance_alpha_command("list", "--client"))
    run_on_alpha = {*IN_SCOPE, *MODERN, *AUTH_2026_07_28, *AUTH_2025_11_25, *AUTH_ALPHA_DEFAULT}
    unrun = [name for name, tags in alpha if "extension" not in tags and name not in run_on_alpha]
    assert unrun == []
    stable = _listed(conformance_command("list", "--client"))
    asking = {name for name, _ in [*alpha, *stable] if "elicitation" in name or "sep-2322" in name}
    assert asking == {"elicitation-sep1034-client-defaults", "sep-2322-client-request-state"}
    assert "elicitation-sep1034-client-defaults" in IN_SCOPE  # both suites, handshake era
    assert "sep-2322-client-request-state" in MODERN  # alpha, at 2026-07-28
    # N5: every authorization scenario of alpha is run, the extensions too.
    run_auth = {*run_on_alpha, *AUTH_EXTENSIONS}
    assert [name for name, _ in alpha if name.startswith("auth/") and name not in run_auth] == []
    # N5: and every other scenario of alpha too, the skills extension's included.
    assert [name for name, _ in alpha if name not in {*run_auth, *SKILLS}] == []
    assert not [line for line in _expected_failures() if "elicitation" in line or "2322" in line]
