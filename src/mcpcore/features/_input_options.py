"""What a host offers a server that wants input from a person (Q1, Q3), apart
from the input desk that acts on it (``_input``).

Every session reads ``InputOptions`` to declare its client capabilities
(``client_capabilities``: only what a hook or a list was given for). The
engine tells an input hook's attempt from a sign-in hook's by its number
(``INPUT_ATTEMPTS_FROM``). A call's ``on_input`` is checked here too
(``check_on_input``, Q4), before any desk is made. Kept apart so that a
session nobody asks anything never loads ``_input`` (B5: ``import
mcpcore_anyio`` does not load it; the session makes its input desk when a
question first comes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_type_hints

from ..base._record import record

__all__ = [
    "INPUT_ATTEMPTS_FROM",
    "URL_ELICITATION_REQUIRED",
    "InputOptions",
    "check_on_input",
    "client_capabilities",
]

# Attempt numbers of input hooks start here; sign-in hooks count up from 1.
INPUT_ATTEMPTS_FROM = 1 << 32

URL_ELICITATION_REQUIRED = -32042


@record(frozen=True, slots=True)
class InputOptions:
    """What this client offers a server that wants input from a person.

    ``roots``: the host's roots given as a list (declared as ``roots``);
    ``roots_hook``: a ``roots`` hook answers instead; ``sampling``: a ``sample``
    hook was given (declared as ``sampling``, Q3).
    ``elicit_form``: the host gave an ``elicit`` hook (declared as
    ``elicitation.form``); ``elicit_url``: the hook takes URL questions too
    (``elicitation.url``); ``apply_defaults``: fill an accepted form's missing
    fields from the schema's defaults (declared as ``applyDefaults``);
    ``timeout``: how long one hook attempt may take, in seconds (the call's own
    deadline holds too).
    """

    elicit_form: bool = False
    elicit_url: bool = False
    apply_defaults: bool = False
    timeout: float = 600.0
    roots: tuple[Mapping[str, Any], ...] | None = None
    roots_hook: bool = False
    sampling: bool = False

    @property
    def offered(self) -> bool:
        """The host offers anything at all (else E4's answers apply)."""
        return self.elicit_form or self.roots is not None or self.roots_hook or self.sampling


def client_capabilities(options: InputOptions) -> dict[str, Any]:
    """The client capabilities to declare: only what a hook (or a list) was given for."""
    declared: dict[str, Any] = {}
    if options.elicit_form:
        form: dict[str, Any] = {"applyDefaults": True} if options.apply_defaults else {}
        elicitation: dict[str, Any] = {"form": form}
        if options.elicit_url:
            elicitation["url"] = {}
        declared["elicitation"] = elicitation
    if options.roots is not None or options.roots_hook:
        declared["roots"] = {"listChanged": True}
    if options.sampling:
        declared["sampling"] = {}
    return declared


def check_on_input(on_input: object) -> None:
    """Q4: ``on_input`` is ``"hook"`` or ``"return"`` (``InvalidValue`` otherwise)."""
    if on_input not in ("hook", "return"):
        from ..base._errors import InvalidValue
        from ..base._escape import excerpt

        raise InvalidValue(f"on_input is 'hook' or 'return', not {excerpt(repr(on_input), 40)}")


# The public class shows under its public name; its annotations are resolved here
# first, where their names are in scope (get_type_hints would look in mcpcore).
InputOptions.__annotations__ = get_type_hints(InputOptions)
InputOptions.__module__ = "mcpcore"
