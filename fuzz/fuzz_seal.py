"""Fuzz sealed continuations and task handles read back (U2, issue 44).

``Continuation.from_json(text, key=...)`` and ``TaskHandle.from_json(text, key=...)``
read what a host kept anywhere (a file, a shared store): the text may come from
someone without the key. The input is either raw text (byte 0 even) read with no
key, the key, or the key behind a newer one (rotation); or (byte 0 odd) a valid
continuation or handle built from the bytes, sealed with the key, then damaged:
a byte flipped, inserted or cut at an input-chosen place.

Invariants:

* only ``InvalidValue`` escapes (``SealBroken`` is one); no other exception;
* no error's text holds a key, nor anything of the content (the secret in the
  call's arguments, the task id);
* a text read back round-trips: ``from_json(obj.to_json())`` gives ``obj`` again
  with the same seal, and a text read with the key, sealed again with it, reads
  back with the key;
* a sealed text reads back with the key and with ``[newer, key]``, never with
  another key alone;
* a damaged sealed text is refused (``InvalidValue``) unless its parsed canonical
  form is the original's (e.g. the case of a ``\\u001f`` escape's hex): a change
  to any value, key or the seal is never resumed.
"""

from __future__ import annotations

import sys
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore import Continuation, InvalidValue, SealBroken, TaskHandle
from mcpcore.base._seal import canonical_bytes

KEY = b"k3y-" + SECRET.encode()
NEWER = "n3wer-" + SECRET
OTHER = b"other-key-0123456789"
_KEY_TEXTS = (KEY.decode(), NEWER, OTHER.decode(), SECRET)
_KINDS = (Continuation, TaskHandle)


def _check_error(exc: BaseException, content: str) -> None:
    text = f"{exc} {exc!r}"
    for secret in _KEY_TEXTS:
        assert secret not in text, f"an error names a key or the secret: {text!r}"
    if len(content) >= 6:  # short content (a 'name') may be in the fixed words
        assert content not in text, f"an error names the content: {text!r}"


def _read(kind: Any, text: str | bytes, key: Any) -> Any:
    """``kind.from_json(text, key=key)``, or the ``InvalidValue`` it raised."""
    try:
        return kind.from_json(text, key=key)
    except InvalidValue as exc:
        _check_error(exc, "")
        return exc
    except Exception as exc:
        _fuzzlib.raise_unexpected(f"{kind.__name__}.from_json", exc)
        raise


def _round_trips(obj: Any) -> None:
    kind = type(obj)
    again = _read(kind, obj.to_json(), None)
    assert not isinstance(again, InvalidValue), f"to_json() does not read back: {again}"
    assert again == obj and again.seal == obj.seal, "to_json() read back differs"
    sealed = obj.to_json(key=KEY)
    back = _read(kind, sealed, KEY)
    assert not isinstance(back, InvalidValue), f"a text sealed with the key is refused: {back}"
    assert back == obj


def _raw(r: Reader) -> None:
    kind = r.choice(_KINDS)
    key = r.choice((None, KEY, [NEWER, KEY], OTHER))
    text: str | bytes = r.rest()
    if r.data[0] & 2:
        text = text.decode("utf-8", "replace")
    got = _read(kind, text, key)
    if isinstance(got, InvalidValue):
        return
    assert isinstance(got, kind)
    if key is not None:
        assert got.seal, "a text read with a key verified without a seal"
    _round_trips(got)


def _build(r: Reader) -> Any:
    if r.flag():
        task_id = r.text(40) or "t"
        return TaskHandle(task_id=task_id, server=r.text(12), tool=r.text(12), endpoint=r.text(32))
    tool = r.text(12)
    params: dict[str, Any] = {"name": tool, "arguments": {"secret": SECRET, "x": r.json_value()}}
    return Continuation(
        endpoint=r.text(32),
        tool=tool,
        params=params,
        request_state=r.text(20) if r.flag() else None,
        input_requests={r.key(): r.json_value() for _ in range(r.u8() % 3)},
        rounds=1 + r.u8() % 4,
        task_id=(r.text(12) or None) if r.flag() else None,
        pause=r.text(12),
    )


def _damaged(r: Reader) -> None:
    obj = _build(r)
    _round_trips(obj)
    kind = type(obj)
    sealed = obj.to_json(key=KEY)
    for key in (KEY, [NEWER, KEY], [KEY, NEWER]):
        assert _read(kind, sealed, key) == obj, "a sealed text is refused with its key"
    refused = _read(kind, sealed, OTHER)
    assert isinstance(refused, SealBroken), "a sealed text verified under another key"
    _check_error(refused, SECRET)
    data = bytearray(sealed.encode("utf-8"))
    for _ in range(1 + r.u8() % 3):
        at = r.u16() % (len(data) + 1)
        how = r.u8() % 4
        if how <= 1 and at < len(data):
            data[at] ^= r.u8() or 0x20  # a byte flipped
        elif how == 2:
            data[at:at] = r.chunk(4) or b" "
        else:
            del data[at : at + 1 + r.u8() % 8]
    damaged = bytes(data)
    got = _read(kind, damaged, KEY)
    if isinstance(got, InvalidValue):
        _check_error(got, SECRET)
        return
    # Read with the key: the canonical form must be the original's, seal included.
    assert canonical_bytes(got._body()) == canonical_bytes(obj._body()), (
        f"a damaged sealed text was accepted: {damaged!r}"
    )
    assert got == obj and got.seal == obj.sealed(KEY).seal


def fuzz_one_input(data: bytes) -> None:
    if not data:
        return
    r = Reader(data)
    if r.u8() & 1:
        _damaged(r)
    else:
        _raw(r)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
