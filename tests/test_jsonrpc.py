"""The JSON-RPC codec: P0 (one valid JSON-RPC 2.0 message per body), P5 (a malformed
message is a RemoteProtocolError, never another exception), X1 (errors do not echo input)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import (
    ErrorResponse,
    LocalProtocolError,
    Notification,
    RemoteProtocolError,
    Request,
    Result,
    decode_message,
    encode_message,
)
from mcpcore.wire._jsonrpc import decode_value

# --- well-formed messages -------------------------------------------------


def test_p0_decodes_each_kind() -> None:
    """P0: requests, notifications, results and errors decode to their types."""
    assert decode_message(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == Request(
        id=1, method="ping"
    )
    assert decode_message('{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}') == Request(
        id="a", method="m", params={"x": 1}
    )
    assert decode_message(b'{"jsonrpc":"2.0","method":"notifications/x"}') == Notification(
        method="notifications/x"
    )
    assert decode_message(b'{"jsonrpc":"2.0","id":7,"result":null}') == Result(id=7, result=None)
    assert decode_message(
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":[1]}}'
    ) == ErrorResponse(id=None, code=-32700, message="Parse error", data=[1])
    assert decode_message(
        b'{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":""}}'
    ) == ErrorResponse(id="x", code=1, message="")


def test_p0_params_null_is_absent_and_extra_members_ignored() -> None:
    """P0: ``"params": null`` means no params; unknown members are ignored."""
    msg = decode_message(b'{"jsonrpc":"2.0","method":"m","params":null,"extra":1}')
    assert msg == Notification(method="m")


def test_p0_utf8_and_escaped_surrogates() -> None:
    """P0: UTF-8 text decodes; an escaped lone surrogate survives a round trip."""
    msg = decode_message('{"jsonrpc":"2.0","id":1,"result":"héllo ☃ \\ud800"}'.encode())
    assert msg == Result(id=1, result="héllo ☃ \ud800")
    assert decode_message(encode_message(msg)) == msg


def test_p0_encode_is_compact_utf8() -> None:
    """P0: encoding is compact JSON with non-ASCII left as UTF-8."""
    data = encode_message(Request(id=1, method="tools/call", params={"name": "é"}))
    assert data == '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"é"}}'.encode()
    assert encode_message(Notification(method="n")) == b'{"jsonrpc":"2.0","method":"n"}'
    assert encode_message(Result(id="r", result={})) == b'{"jsonrpc":"2.0","id":"r","result":{}}'
    assert (
        encode_message(ErrorResponse(id=None, code=-32601, message="no"))
        == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}}'
    )
    assert (
        encode_message(ErrorResponse(id=2, code=1, message="m", data={"a": 1}))
        == b'{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m","data":{"a":1}}}'
    )


# --- malformed input: table-driven -----------------------------------------

MALFORMED: list[tuple[str, bytes | str, str]] = [
    ("invalid utf-8", b'{"jsonrpc":"2.0","method":"\xff"}', "UTF-8"),
    ("utf-16", '{"jsonrpc":"2.0","method":"m"}'.encode("utf-16"), "UTF-8"),
    ("invalid json", b'{"jsonrpc":', "invalid JSON"),
    ("empty", b"", "invalid JSON"),
    ("trailing garbage", b'{"jsonrpc":"2.0","method":"m"} x', "invalid JSON"),
    ("NaN", b'{"jsonrpc":"2.0","id":1,"result":NaN}', "NaN"),
    ("Infinity", b'{"jsonrpc":"2.0","id":1,"result":Infinity}', "Infinity"),
    ("-Infinity", b'{"jsonrpc":"2.0","id":1,"result":-Infinity}', "Infinity"),
    ("huge integer", b'{"jsonrpc":"2.0","id":1,"result":' + b"9" * 5000 + b"}", "number"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, "nested"),
    ("bom", b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"m"}', "invalid JSON"),
    ("not an object", b"42", "not an object"),
    ("string", b'"hello"', "not an object"),
    ("null", b"null", "not an object"),
    ("batch", b'[{"jsonrpc":"2.0","method":"m"}]', "batch"),
    ("empty batch", b"[]", "batch"),
    ("missing jsonrpc", b'{"method":"m"}', "jsonrpc"),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","method":"m"}', "2.0"),
    ("jsonrpc number", b'{"jsonrpc":2.0,"method":"m"}', "jsonrpc"),
    ("jsonrpc null", b'{"jsonrpc":null,"method":"m"}', "jsonrpc"),
    ("request null id", b'{"jsonrpc":"2.0","id":null,"method":"m"}', "null"),
    ("request bool id", b'{"jsonrpc":"2.0","id":true,"method":"m"}', "boolean"),
    ("request float id", b'{"jsonrpc":"2.0","id":1.5,"method":"m"}', "id"),
    ("request float-int id", b'{"jsonrpc":"2.0","id":1.0,"method":"m"}', "number"),
    ("request object id", b'{"jsonrpc":"2.0","id":{},"method":"m"}', "object"),
    ("request array id", b'{"jsonrpc":"2.0","id":[1],"method":"m"}', "array"),
    ("result null id", b'{"jsonrpc":"2.0","id":null,"result":1}', "null"),
    ("result bool id", b'{"jsonrpc":"2.0","id":false,"result":1}', "id"),
    ("result missing id", b'{"jsonrpc":"2.0","result":1}', "id"),
    ("error missing id", b'{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}', "id"),
    ("error bool id", b'{"jsonrpc":"2.0","id":true,"error":{"code":1,"message":"m"}}', "id"),
    ("both result and error", b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}', "both"),
    ("neither result nor error", b'{"jsonrpc":"2.0","id":1}', "neither"),
    ("missing method", b'{"jsonrpc":"2.0","params":{}}', "method"),
    ("method and result", b'{"jsonrpc":"2.0","id":1,"method":"m","result":1}', "method"),
    ("method not string", b'{"jsonrpc":"2.0","id":1,"method":5}', "method"),
    ("method null", b'{"jsonrpc":"2.0","method":null}', "method"),
    ("params array", b'{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}', "array"),
    ("params string", b'{"jsonrpc":"2.0","method":"m","params":"x"}', "params"),
    ("error not object", b'{"jsonrpc":"2.0","id":1,"error":"boom"}', "error must be an object"),
    ("error null", b'{"jsonrpc":"2.0","id":1,"error":null}', "object"),
    ("error code missing", b'{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}', "code"),
    ("error code float", b'{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"m"}}', "code"),
    ("error code bool", b'{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"m"}}', "boolean"),
    ("error code string", b'{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}', "code"),
    ("error message missing", b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}', "message"),
    ("error message int", b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}', "message"),
]


@pytest.mark.parametrize(
    ("data", "word"), [(d, w) for _, d, w in MALFORMED], ids=[n for n, _, _ in MALFORMED]
)
def test_p5_malformed_is_remote_protocol_error(data: bytes | str, word: str) -> None:
    """P0/P5: each malformed message raises RemoteProtocolError saying what was wrong."""
    with pytest.raises(RemoteProtocolError) as info:
        decode_message(data)
    assert word.lower() in str(info.value).lower()
    assert len(str(info.value)) < 300  # X1: never echoes the input wholesale


def test_p5_as_text_too() -> None:
    """P5: the same checks apply to text input."""
    with pytest.raises(RemoteProtocolError, match="batch"):
        decode_message("[1]")
    with pytest.raises(RemoteProtocolError, match="invalid JSON"):
        decode_message("{")


def test_x1_error_messages_excerpt_strings() -> None:
    """X1: a wrong jsonrpc string is shown as a short, escaped excerpt."""
    bad = "\x1b[31m" + "v" * 10_000
    with pytest.raises(RemoteProtocolError) as info:
        decode_message(json.dumps({"jsonrpc": bad, "method": "m"}))
    text = str(info.value)
    assert "\x1b" not in text
    assert len(text) < 200


def test_p5_decode_value_rejects_non_json_objects() -> None:
    """P5: decode_value describes unexpected Python types by name."""
    with pytest.raises(RemoteProtocolError, match="set"):
        decode_value({1, 2})
    with pytest.raises(RemoteProtocolError, match="boolean"):
        decode_value(True)
    with pytest.raises(RemoteProtocolError, match="number"):
        decode_value(1.5)


# --- properties -------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)
ids = st.integers() | st.text()
params = st.none() | st.dictionaries(st.text(), json_values, max_size=4)
methods = st.text()

messages = st.one_of(
    st.builds(Request, id=ids, method=methods, params=params),
    st.builds(Notification, method=methods, params=params),
    st.builds(Result, id=ids, result=json_values),
    st.builds(
        ErrorResponse,
        id=st.none() | ids,
        code=st.integers(),
        message=st.text(),
        data=json_values,
    ),
)


@given(st.binary() | st.text())
@settings(max_examples=500)
def test_p5_arbitrary_input_only_raises_remote_protocol_error(data: bytes | str) -> None:
    """P5: decode_message on any bytes or text raises nothing but RemoteProtocolError."""
    try:
        decode_message(data)
    except RemoteProtocolError:
        pass


envelopes = st.one_of(
    json_values,
    st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]),
        json_values | st.just("2.0"),
    ),
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0")},
        optional={
            "id": json_values,
            "method": json_values,
            "params": json_values,
            "result": json_values,
            "error": json_values
            | st.fixed_dictionaries(
                {}, optional={"code": json_values, "message": json_values, "data": json_values}
            ),
        },
    ),
)


@given(envelopes)
@settings(max_examples=300)
def test_p5_arbitrary_json_only_raises_remote_protocol_error(value: Any) -> None:
    """P5: any JSON value, as text and already parsed, decodes or raises RemoteProtocolError."""
    for decode, arg in ((decode_message, json.dumps(value)), (decode_value, value)):
        try:
            msg = decode(arg)
        except RemoteProtocolError:
            continue
        assert decode_message(encode_message(msg)) == msg


@given(messages)
@settings(max_examples=500)
def test_p0_round_trip(msg: Any) -> None:
    """P0: decode(encode(m)) == m for every valid message."""
    data = encode_message(msg)
    assert b"\n" not in data  # safe to frame for stdio (S1)
    assert decode_message(data) == msg
    assert decode_message(data.decode("utf-8")) == msg


# --- encoding errors ----------------------------------------------------------

UNENCODABLE: list[tuple[str, Any, str]] = [
    ("nan", Result(id=1, result=math.nan), "Out of range"),
    ("infinity", Result(id=1, result={"x": math.inf}), "Out of range"),
    ("set", Request(id=1, method="m", params={"s": {1, 2}}), "set"),
    ("tuple key", Notification(method="m", params={(1, 2): 1}), "keys"),  # type: ignore[dict-item]
    ("bytes", ErrorResponse(id=1, code=1, message="m", data=b"x"), "bytes"),
    ("bool id", Request(id=True, method="m"), "boolean"),
    ("float id", Result(id=1.0, result=1), "number"),  # type: ignore[arg-type]
    ("null result id", Result(id=None, result=1), "null"),  # type: ignore[arg-type]
    ("list error id", ErrorResponse(id=[1], code=1, message="m"), "array"),  # type: ignore[arg-type]
    ("method not str", Notification(method=1), "method"),  # type: ignore[arg-type]
    ("request method", Request(id=1, method=None), "method"),  # type: ignore[arg-type]
    ("params list", Request(id=1, method="m", params=[1]), "params"),  # type: ignore[arg-type]
    ("code float", ErrorResponse(id=1, code=1.5, message="m"), "code"),  # type: ignore[arg-type]
    ("code bool", ErrorResponse(id=1, code=False, message="m"), "code"),
    ("message none", ErrorResponse(id=1, code=1, message=None), "message"),  # type: ignore[arg-type]
    ("not a message", {"jsonrpc": "2.0"}, "not a JSON-RPC message"),
]


@pytest.mark.parametrize(
    ("msg", "word"), [(m, w) for _, m, w in UNENCODABLE], ids=[n for n, _, _ in UNENCODABLE]
)
def test_p0_unencodable_is_local_protocol_error(msg: Any, word: str) -> None:
    """P0: a message JSON cannot carry raises LocalProtocolError naming the problem."""
    with pytest.raises(LocalProtocolError, match=word):
        encode_message(msg)


def test_p0_encode_cycle_and_depth() -> None:
    """P0: cycles and absurd nesting are LocalProtocolError too."""
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(LocalProtocolError, match="Circular"):
        encode_message(Result(id=1, result=cycle))
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(LocalProtocolError, match="nested"):
        encode_message(Result(id=1, result=deep))


def test_p0_messages_are_frozen_keyword_only() -> None:
    """P0: messages are immutable values built by keyword."""
    msg = Request(id=1, method="m")
    with pytest.raises(AttributeError):
        msg.id = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Request(1, "m")  # type: ignore[call-arg]
