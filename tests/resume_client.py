"""Resume a paused call in a process of its own (Q4), for tests/test_input_peers.py.

    python tests/resume_client.py DRIVER URL OTHER_URL ANSWER < continuation.json

Reads a ``Continuation`` as JSON on stdin, opens a NEW client of ``URL`` on
``DRIVER`` (``anyio-asyncio``, ``anyio-trio`` or ``threaded``; it takes URL
questions: ``elicit_url=True``) and resumes it,
answering every question with ``ANSWER`` (``accept``, ``decline`` or
``cancel``); then tries the same continuation a second time on that client, and
once on a client of ``OTHER_URL``. Prints one JSON object on stdout:
``{"text": <the call's text>, "again": <error>, "other": <error>}``, where an
error is ``"<ExceptionClass>: <message>"``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio

import mcpcore_anyio
import mcpcore_threaded
from mcpcore import Continuation, ElicitResult

ANSWERS: dict[str, Callable[[], ElicitResult]] = {
    "accept": ElicitResult.accept,
    "decline": ElicitResult.decline,
    "cancel": ElicitResult.cancel,
}


def refusal(attempt: Callable[[], Any]) -> str:
    try:
        attempt()
    except Exception as exc:  # the test reads which error it was
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def run_threaded(
    url: str, other: str, continuation: Continuation, answers: Mapping[str, ElicitResult]
) -> dict[str, str]:
    with mcpcore_threaded.McpClient("later", {"url": url}, protocol="modern", elicit_url=True) as client:
        assert client.ready(20).ok
        text = client.resume(continuation, answers).text
        again = refusal(lambda: client.resume(continuation, answers))
    with mcpcore_threaded.McpClient("elsewhere", {"url": other}, protocol="modern", elicit_url=True) as client:
        assert client.ready(20).ok
        elsewhere = refusal(lambda: client.resume(continuation, answers))
    return {"text": text, "again": again, "other": elsewhere}


async def run_anyio(
    url: str, other: str, continuation: Continuation, answers: Mapping[str, ElicitResult]
) -> dict[str, str]:
    async def refused(client: mcpcore_anyio.McpClient) -> str:
        try:
            await client.resume(continuation, answers)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return "no error"

    async with mcpcore_anyio.McpClient("later", {"url": url}, protocol="modern", elicit_url=True) as client:
        assert (await client.ready(20)).ok
        text = (await client.resume(continuation, answers)).text
        again = await refused(client)
    async with mcpcore_anyio.McpClient("elsewhere", {"url": other}, protocol="modern", elicit_url=True) as client:
        assert (await client.ready(20)).ok
        elsewhere = await refused(client)
    return {"text": text, "again": again, "other": elsewhere}


def main() -> None:
    driver, url, other, answer = sys.argv[1:5]
    continuation = Continuation.from_json(sys.stdin.read())
    answers = {key: ANSWERS[answer]() for key in continuation.input_requests}
    if driver == "threaded":
        out = run_threaded(url, other, continuation, answers)
    else:
        backend = "trio" if driver == "anyio-trio" else "asyncio"
        out = anyio.run(run_anyio, url, other, continuation, answers, backend=backend)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
