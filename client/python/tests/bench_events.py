"""Events per second one subscriber receives: the SDK's EventStream beside the bare
generated stub, replaying the same stored events from one real odysseyd.

    ODYSSEYD=target/debug/odysseyd python tests/bench_events.py [turns]

Not a test (pytest collects test_*.py only): numbers, printed, for comparison.
"""

from __future__ import annotations

import asyncio
import sys
import time

from conftest import REPO, start_server
from odyssey.v1 import session_pb2
from odyssey_client import AsyncOdysseyClient, OdysseyClient


def main(turns: int) -> None:
    with start_server() as server, OdysseyClient(server.address, token=server.token) as client:
        client.wait_until_serving()
        client.install_bundle(REPO / "bundles" / "demo")
        session = client.create_session("demo", approval_policy="never")
        for _ in range(turns):
            client.run(session.id, "Give me a tour", timeout=60)
        last = client.get_session(session.id).last_sequence

        def helper() -> int:
            count = 0
            with client.events(session.id) as stream:
                for event in stream:
                    count += 1
                    if event.sequence == last:
                        return count
            return count

        def bare() -> int:
            count = 0
            request = session_pb2.SubscribeSessionRequest(session_id=session.id)
            call = client.sessions.SubscribeSession(request)
            for item in call:
                if item.HasField("event"):
                    count += 1
                    if item.event.sequence == last:
                        call.cancel()
                        return count
            return count

        async def asyncio_helper() -> int:
            count = 0
            async with AsyncOdysseyClient(server.address, token=server.token) as aclient:
                async with await aclient.events(session.id) as stream:
                    async for event in stream:
                        count += 1
                        if event.sequence == last:
                            return count
            return count

        for name, run in (
            ("bare stub", bare),
            ("EventStream", helper),
            ("AsyncEventStream", lambda: asyncio.run(asyncio_helper())),
        ):
            best = 0.0
            for _ in range(3):
                started = time.perf_counter()
                count = run()
                elapsed = time.perf_counter() - started
                best = max(best, count / elapsed)
            print(f"python {name:<17} {count} events  {best:>10.0f} events/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
