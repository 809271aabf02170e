"""``mcpcore call`` asking the person at a terminal (Q6), through a pseudo-terminal.

The SDK server's ``confirm`` tool asks ``{"confirmed": boolean}``; ``visit``
asks the person to visit a URL. On a terminal the CLI asks the field (with
its type), asks again until the answer fits, and shows a URL with a consent
question, never opening it; without a terminal, or with ``--no-input``, it
declines. The server's texts reach the terminal escaped.
"""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from mcpcore import Elicitation
from mcpcore_cli._ask import TerminalAsker
from peers import Peer, modern_sdk_server

pytestmark = pytest.mark.realpeer

TIMEOUT = 30


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    with modern_sdk_server("dual") as running:
        yield running


class Terminal:
    """``mcpcore`` with stdin and stderr on a pseudo-terminal, stdout piped."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        env = dict(os.environ, COLUMNS="100")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcore_cli", *args],
            stdin=slave,
            stderr=slave,
            stdout=subprocess.PIPE,
            env=env,
        )
        os.close(slave)
        self.screen = ""

    def expect(self, text: str) -> None:
        """Wait until the terminal has shown ``text`` (after what was expected before)."""
        deadline = time.monotonic() + TIMEOUT
        while text not in self.screen:
            chunk = b""
            if time.monotonic() < deadline:
                ready, _, _ = select.select([self.master], [], [], 0.2)
                if not ready:
                    continue
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the program exited
                    chunk = b""
            if not chunk:
                screen = self.screen
                self.finish()  # never leave the child behind
                raise AssertionError(f"never shown: {text!r}; screen: {screen!r}")
            self.screen += chunk.decode("utf-8", "replace")
        self.screen = self.screen[self.screen.index(text) + len(text) :]

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self) -> tuple[int, str]:
        out = b""
        try:
            out, _ = self.proc.communicate(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
            if self.master >= 0:
                os.close(self.master)
                self.master = -1
        return self.proc.returncode, out.decode()


def test_Q6_a_form_is_asked_field_by_field_and_asked_again_until_it_fits(peer: Peer) -> None:
    term = Terminal("call", peer.url, "confirm", "action=deploy")
    term.expect("asks: Confirm deploy?")
    term.expect("Answer it? [y]es, [n]o, [c]ancel: ")
    term.type("y")
    term.expect("confirmed - Confirmed (boolean): ")
    term.type("perhaps")
    term.expect("that is not a boolean")
    term.expect("(boolean): ")
    term.type("yes")
    status, out = term.finish()
    assert status == 0 and out.strip() == "deploy: accept confirmed=True"


def test_Q6_the_person_may_decline_or_cancel(peer: Peer) -> None:
    for typed, action in (("n", "decline"), ("c", "cancel")):
        term = Terminal("call", peer.url, "confirm", "action=ship")
        term.expect("Answer it? [y]es, [n]o, [c]ancel: ")
        term.type(typed)
        status, out = term.finish()
        assert status == 0 and out.strip() == f"ship: {action}"


def test_Q6_a_url_is_shown_with_a_consent_question_and_never_opened() -> None:
    # The SDK server asks for a URL only in the handshake era, which the CLI cannot pin:
    # the CLI's asker is driven here with the question such a server sends.
    question = Elicitation(
        "srv",
        "srv/visit",
        "url",
        "Sign in\x1b[31m now",
        {},
        url="https://user:pw@auth.example.test/tracker?code=hush",
        elicitation_id="v1",
    )
    for typed, action in (("y", "accept"), ("n", "decline"), ("c", "cancel"), ("\nn", "decline")):
        screen = io.StringIO()
        asker = TerminalAsker(io.StringIO(typed + "\n"), screen, interactive=True)
        assert asker(question).action == action
        shown = screen.getvalue()
        assert "visit a page on https://auth.example.test:" in shown
        assert "https://user:pw@auth.example.test/tracker?code=hush" in shown
        assert "mcpcore does not open it" in shown
        assert "\x1b[31m" not in shown and "Sign in\\x1b[31m now" in shown  # escaped (X1)


def test_Q6_end_of_input_cancels_and_a_field_asked_too_often_cancels() -> None:
    form = Elicitation("srv", None, "form", "How many?", {"properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert TerminalAsker(io.StringIO(""), io.StringIO(), interactive=True)(form).action == "cancel"
    wrong = "y\n" + "x\n" * 10
    assert TerminalAsker(io.StringIO(wrong), io.StringIO(), interactive=True)(form).action == "cancel"
    ok = TerminalAsker(io.StringIO("y\nseven\n7\n"), io.StringIO(), interactive=True)(form)
    assert ok.action == "accept" and ok.content == {"n": 7}


def test_Q6_enum_choices_and_defaults_are_shown_and_used() -> None:
    form = Elicitation(
        "srv",
        None,
        "form",
        "Pick",
        {
            "properties": {
                "colour": {"type": "string", "enum": ["red", "green"], "default": "red"},
                "note": {"type": "string"},
            }
        },
    )
    screen = io.StringIO()
    answer = TerminalAsker(io.StringIO("y\nblue\ngreen\n\n"), screen, interactive=True)(form)
    assert answer.content == {"colour": "green"}
    shown = screen.getvalue()
    assert "colour (one of red, green; default red): " in shown
    assert "that is not one of the choices" in shown and "note (string; empty to skip): " in shown
    answer = TerminalAsker(io.StringIO("y\n\nhi\n"), io.StringIO(), interactive=True)(form)
    assert answer.content == {"colour": "red", "note": "hi"}


def test_Q6_with_no_input_or_no_terminal_questions_are_declined(peer: Peer) -> None:
    term = Terminal("call", peer.url, "confirm", "action=a", "--no-input")
    term.expect("declined (no terminal, or --no-input)")
    status, out = term.finish()
    assert status == 0 and out.strip() == "a: decline"
    piped = subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", "call", peer.url, "confirm", "action=b"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    assert piped.returncode == 0 and piped.stdout.strip() == "b: decline"
    assert "declined" in piped.stderr
