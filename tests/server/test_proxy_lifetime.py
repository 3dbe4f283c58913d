"""The proxy asks for the provider's 1-hour cache lifetime only together with the beta that names
it, as Claude Code does: the real ``ProxyApp`` in this process (its transformer's clock is the
test's, so a 10-minute pause takes no time) in front of the recording fake upstream over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import orjson
import pytest

from infinite_context_brain.core.transcript.live import LiveTransformer
from infinite_context_brain.server.proxy.app import LONG_CACHE_BETA, ProxyApp, with_beta

from ..helpers.paused import PAUSED, paused_request, ttls
from ..helpers.proxy_run import Upstream, fake_upstream

PORT = 8419
BETA = LONG_CACHE_BETA.decode()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with fake_upstream() as up:
        yield up


async def _send_paused(upstream: Upstream, headers: dict[str, str]) -> ProxyApp:
    now = [0.0]
    app = ProxyApp(
        upstream.url,
        LiveTransformer(clock=lambda: now[0]),
        port=PORT,
        timeout=10,
        max_body=32 << 20,
        key=b"k",
    )
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{PORT}") as client:
        for at, turns in PAUSED:
            now[0] = at
            reply = await client.post("/v1/messages", content=paused_request(turns), headers=headers)
            assert reply.status_code == 200
    await app.aclose()
    return app


async def test_the_1_hour_lifetime_goes_with_its_beta_added_to_the_clients(upstream: Upstream) -> None:
    headers = {
        "x-api-key": "sk-test",
        "anthropic-beta": "interleaved-thinking-2025-05-14",
        "content-type": "application/json",
    }
    app = await _send_paused(upstream, headers)
    sent = [(orjson.loads(body), seen) for path, body, seen in upstream.seen if path == "/v1/messages"]
    assert len(sent) == len(PAUSED)
    long = [set(ttls(orjson.dumps(body))) == {"1h"} for body, _h in sent]
    assert any(long) and not long[0]
    for (_body, seen), is_long in zip(sent, long, strict=True):
        betas = seen["anthropic-beta"].split(",")
        assert betas == (
            ["interleaved-thinking-2025-05-14", BETA] if is_long else ["interleaved-thinking-2025-05-14"]
        )
    assert app.status()["long_cache"] == sum(long)


async def test_a_client_that_sends_no_betas_gets_none(upstream: Upstream) -> None:
    await _send_paused(upstream, {"x-api-key": "sk-test", "content-type": "application/json"})
    assert any(set(ttls(body)) == {"1h"} for _p, body, _h in upstream.seen)
    assert all("anthropic-beta" not in seen for _p, _b, seen in upstream.seen)


def test_the_beta_is_added_once_and_other_headers_stay() -> None:
    headers = [(b"x-api-key", b"k"), (b"anthropic-beta", b"a-1, " + LONG_CACHE_BETA), (b"accept", b"*/*")]
    assert with_beta(headers, LONG_CACHE_BETA) == headers
    assert with_beta([(b"Anthropic-Beta", b"a-1")], LONG_CACHE_BETA) == [
        (b"Anthropic-Beta", b"a-1," + LONG_CACHE_BETA)
    ]
    assert with_beta([(b"anthropic-beta", b"")], LONG_CACHE_BETA) == [(b"anthropic-beta", LONG_CACHE_BETA)]
