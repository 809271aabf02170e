"""Write the seed corpus of ``fuzz_input.py`` (``fuzz/corpus/input/gen-*``).

There is no real server to capture a person's questions from in both eras, and
the harness's input is a byte script, so the seeds are chosen: inputs drawn from
a fixed random stream, each kept when it plays a conversation no kept seed
played yet (its era, what the client offers, which hooks were asked, and
whether a round went out again, a question was refused as malformed or a hook's
failure was sent). The same stream always gives the same seeds.

    .venv/bin/python fuzz/input_seeds.py
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import fuzz_input

CORPUS = Path(__file__).resolve().parent / "corpus" / "input"
MAX_SEEDS = 40


class _Watched(fuzz_input._Script):
    def __init__(self, r: fuzz_input.Reader) -> None:
        super().__init__(r)
        self.seen: set[str] = set()

    def drain(self) -> None:
        for message in self.session.path.outgoing:
            kind = type(message).__name__
            code = getattr(message, "code", None)
            params = getattr(message, "params", None) or {}
            if "inputResponses" in params:
                kind = "round-again"
            self.seen.add(f"{kind}{code or ''}")
        for ask in self.session.input.actions:
            mode = getattr(ask.request, "mode", "")
            self.seen.add(f"ask-{ask.hook}-{mode}")
        super().drain()


def signature(data: bytes) -> tuple[object, ...]:
    script = _Watched(fuzz_input.Reader(data))
    script.run()
    offer = script.offer
    offered = (offer.elicit_form, offer.elicit_url, offer.roots is not None, offer.roots_hook, offer.sampling)
    return (script.modern, offered, tuple(sorted(script.seen)))


def main() -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    for old in CORPUS.glob("gen-*"):
        old.unlink()
    rng = random.Random(28)
    kept: set[tuple[object, ...]] = set()
    for _ in range(20_000):
        if len(kept) >= MAX_SEEDS:
            break
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(8, 700)))
        sig = signature(data)
        if not sig[2] or sig in kept or not any(s.startswith(("ask", "round")) for s in sig[2]):
            continue
        kept.add(sig)
        (CORPUS / f"gen-{len(kept):02d}").write_bytes(data)
    print(f"wrote {len(kept)} seeds to {CORPUS}", file=sys.stderr)


if __name__ == "__main__":
    main()
