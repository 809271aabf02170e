"""``mcpcore call`` asking the person at the terminal (Q6).

When a server asks something in the middle of a call, the CLI's ``elicit`` hook
runs here, on the client's hook thread. On a terminal (stdin and stderr both
one, and no ``--no-input``) it asks a form's fields one by one, each with its
type, an enum's choices and its default, and asks again until the answer
fits; a URL question shows the site a browser would open
(``Elicitation.target``, the core's one rule), then the URL, and asks for
consent, never opening it. The first question, ``[y]es, [n]o, [c]ancel``, is
asked again until the answer is one of those: only ``n`` declines (Enter, a
typo or a field's answer typed too early never does), and after five tries it
cancels. Without a terminal, or with ``--no-input``, every question is declined, and
the person is told so on stderr. Every server text shown is escaped (X1).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from mcpcore import Elicitation, ElicitResult

from ._term import one_line, show

__all__ = ["TerminalAsker"]

# How many times one field is asked before the question is cancelled.
_MAX_TRIES = 5


class _Cancelled(Exception):
    pass


class TerminalAsker:
    """The CLI's ``elicit`` hook: asks at the terminal, or declines."""

    def __init__(
        self,
        stdin: TextIO,
        stderr: TextIO,
        *,
        interactive: bool,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.stdin = stdin
        self.stderr = stderr
        self.interactive = interactive
        self.redact = redact
        # One question at a time; ``asking`` tells the progress line to keep quiet.
        self._lock = threading.Lock()
        self.asking = threading.Event()

    def __call__(self, question: Elicitation) -> ElicitResult:
        server = one_line(question.server)
        if not self.interactive:
            self._say(
                f"mcpcore: server {server!r} asked a question; declined (no terminal, or "
                "--no-input)"
            )
            return ElicitResult.decline()
        with self._lock:
            self.asking.set()
            try:
                self._say("\r\x1b[K")
                self._say(f"Server {server!r} asks: {show(question.message)}")
                if question.mode == "url":
                    return self._consent(question)
                return self._form(question)
            except _Cancelled:
                self._say("Cancelled.")
                return ElicitResult.cancel()
            finally:
                self.asking.clear()

    # --- asking -----------------------------------------------------------------------

    def _consent(self, question: Elicitation) -> ElicitResult:
        link = question.url or ""
        # The site a browser would open, by the core's one rule (not a host read
        # off the text: "https://evil.example#@accounts.example.com" is evil.example).
        target = question.target
        if target is None:  # the core refuses such a question; never shown as a site
            self._say("Its link does not lead to an http(s) site: declined.")
            return ElicitResult.decline()
        self._say(f"It wants you to visit a page on {one_line(target.origin)}:")
        if target.has_userinfo:
            self._say(
                f"  (the link has a user name before an '@': the site is "
                f"{one_line(target.host)}, not the name written before it)"
            )
        if "xn--" in target.host:
            self._say("  (an international name, shown as the browser resolves it)")
        self._say(f"  {one_line(link)}")
        self._say("mcpcore does not open it; open it yourself if you agree.")
        if self._choose("Go there? [y]es, [n]o, [c]ancel: "):
            return ElicitResult.accept()
        return ElicitResult.decline()

    def _form(self, question: Elicitation) -> ElicitResult:
        if not self._choose("Answer it? [y]es, [n]o, [c]ancel: "):
            return ElicitResult.decline()
        required = question.schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        content: dict[str, Any] = {}
        for name, spec in question.fields.items():
            value = self._field(name, spec if isinstance(spec, Mapping) else {}, name in needed)
            if value is not _SKIP:
                content[name] = value
        return ElicitResult.accept(content)

    def _choose(self, prompt: str) -> bool:
        """True for yes, False for no; cancel raises. Anything else (Enter, a typo, a
        field's answer typed before the question) asks again: only ``n`` declines."""
        for _ in range(_MAX_TRIES):
            answer = self._read(prompt).lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False
            if answer in ("c", "cancel"):
                raise _Cancelled
            self._say("    answer y (yes), n (no) or c (cancel)")
        raise _Cancelled

    def _field(self, name: str, spec: Mapping[str, Any], required: bool) -> object:
        kind = spec.get("type") if isinstance(spec.get("type"), str) else "string"
        choices = _choices(spec)
        shown = [str(kind) if choices is None else "one of " + ", ".join(map(_shown, choices))]
        if "default" in spec:
            shown.append(f"default {_shown(spec['default'])}")
        elif not required:
            shown.append("empty to skip")
        title = spec.get("title") or spec.get("description")
        label = f"{one_line(name)}" + (f" - {one_line(str(title))}" if title else "")
        prompt = f"  {label} ({'; '.join(shown)}): "
        for _ in range(_MAX_TRIES):
            text = self._read(prompt)
            if text == "":
                if "default" in spec:
                    return spec["default"]
                if not required:
                    return _SKIP
                self._say("    an answer is needed")
                continue
            value = _parse(str(kind), text, choices)
            if value is not _SKIP:
                return value
            self._say(f"    that is not {'one of the choices' if choices else 'a ' + str(kind)}")
        raise _Cancelled

    # --- the terminal --------------------------------------------------------------

    def _read(self, prompt: str) -> str:
        self.stderr.write(self.redact(prompt))
        self.stderr.flush()
        line = self.stdin.readline()
        if not line:  # end of input (Ctrl-D): nobody is there to answer
            raise _Cancelled
        return line.strip()

    def _say(self, text: str) -> None:
        self.stderr.write(self.redact(text) + ("" if text.startswith("\r") else "\n"))
        self.stderr.flush()


class _Skip:
    pass


_SKIP = _Skip()


def _choices(spec: Mapping[str, Any]) -> list[object] | None:
    enum = spec.get("enum")
    if isinstance(enum, list):
        return enum
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list):
        return [o.get("const") for o in options if isinstance(o, Mapping) and "const" in o]
    return None


def _shown(value: object) -> str:
    return one_line(value if isinstance(value, str) else repr(value))


def _parse(kind: str, text: str, choices: list[object] | None) -> object:
    """The typed value of one answer, or ``_SKIP`` when it does not fit."""
    if choices is not None:
        for choice in choices:
            if text == (choice if isinstance(choice, str) else repr(choice)):
                return choice
        return _SKIP
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true"):
            return True
        if lowered in ("n", "no", "false"):
            return False
        return _SKIP
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            return _SKIP
    return text
