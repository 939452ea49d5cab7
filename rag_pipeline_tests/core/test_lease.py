"""The lease of an object-store data directory (lib/core/lease.py) on moto's S3 server on 127.0.0.1:
taken by one run of many, waited for, renewed, taken over once expired, released."""

import json
import os
import threading
import time

import pytest

from rag_pipeline.lib.core import StorageError, location
from rag_pipeline.lib.core.lease import LEASE, Lease, LeaseLost
from rag_pipeline.lib.core.process import this_host
from rag_pipeline_tests.support.runs import until


def test_one_run_holds_the_lease_another_is_told_who_until_it_is_released(s3):
    root = location(s3)
    first, second = Lease(root, "run-a"), Lease(root, "run-b")
    assert first.try_take() is None
    holder = second.try_take()
    assert (holder.run_id, holder.host, holder.pid) == ("run-a", this_host(), os.getpid())
    assert holder.expires > time.time() and first.taken_over is None
    first.release()
    assert not (root / LEASE).exists()
    assert second.try_take() is None and second.taken_over is None
    assert json.loads((root / LEASE).read_text())["run_id"] == "run-b"
    second.release()


def test_of_runs_taking_a_free_lease_at_once_exactly_one_gets_it(s3):
    leases = [Lease(location(s3), f"run-{n}") for n in range(6)]
    start, outcomes = threading.Barrier(len(leases)), {}

    def take(lease: Lease) -> None:
        start.wait()
        outcomes[lease.run_id] = lease.try_take()

    threads = [threading.Thread(target=take, args=(lease,)) for lease in leases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [run for run, holder in outcomes.items() if holder is None]
    assert len(winners) == 1
    assert {holder.run_id for holder in outcomes.values() if holder is not None} == set(winners)


def test_a_waiting_run_hears_the_holder_once_and_takes_the_lease_when_it_is_released(s3):
    root = location(s3)
    first, second = Lease(root, "run-a"), Lease(root, "run-b", poll_s=0.1)
    first.take()
    heard = []
    waiter = threading.Thread(target=second.take, args=(heard.append,))
    waiter.start()
    until(lambda: heard, every_s=0.05)
    time.sleep(0.5)  # several looks at the lease, one line
    assert waiter.is_alive() and [h.run_id for h in heard] == ["run-a"]
    first.release()
    waiter.join()
    assert json.loads((root / LEASE).read_text())["run_id"] == "run-b"
    second.release()
    assert not (root / LEASE).exists()


def test_a_renewed_lease_outlives_its_ttl(s3):
    root = location(s3)
    holder = Lease(root, "run-a", ttl_s=2.0)
    holder.take()
    time.sleep(3.0)  # past the first expiry: renewed every 0.5 s meanwhile
    assert Lease(root, "run-b").try_take().run_id == "run-a"
    holder.check()
    holder.release()


def test_an_expired_lease_is_taken_over_and_its_holder_learns_it_lost_it(s3):
    root = location(s3)
    stalled = Lease(root, "run-a", ttl_s=0.5)
    assert stalled.try_take() is None  # taken, never renewed: as by a process killed with -9
    time.sleep(0.6)
    successor = Lease(root, "run-b")
    assert successor.try_take() is None
    assert successor.taken_over.run_id == "run-a"
    # the stalled holder comes back: its renewal's compare-and-swap fails, and it knows by whom
    stalled.keep()
    until(lambda: stalled.lost is not None, every_s=0.05)
    with pytest.raises(LeaseLost, match="this run's lease was taken over by run run-b"):
        stalled.check()
    stalled.release()  # does not delete the successor's lease
    assert json.loads((root / LEASE).read_text())["run_id"] == "run-b"
    successor.release()


def test_an_unreadable_lease_counts_as_expired(s3):
    root = location(s3)
    (root / LEASE).fs.open_output_stream((root / LEASE).key).close()  # an empty object
    lease = Lease(root, "run-a")
    assert lease.try_take() is None and lease.taken_over.run_id == "(unreadable lease)"
    lease.release()


def test_a_store_that_cannot_be_reached_is_one_line_naming_the_settings(s3, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(StorageError, match=r"lease.json: object store error via endpoint http://127.0.0.1:9"):
        Lease(location(s3), "run-a").try_take()
