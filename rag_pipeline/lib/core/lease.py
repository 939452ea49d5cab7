"""One run at a time on an object-store data directory, also between runs of separate Dagster
instances (which cannot see each other's runs): a lease, the object `lease.json` at the directory's
root, that names its holder (run id, host, pid) and its expiry, kept with S3's conditional writes:

- taken with `PutObject If-None-Match: *`: of two runs creating it, one succeeds;
- renewed by its holder every `ttl_s / 4` with `If-Match: <its ETag>` (a compare-and-swap, which
  fails once another run has taken the lease over);
- a lease whose expiry passed (its holder died, or could not reach the store for `ttl_s`) is taken
  over with `If-Match: <the ETag read>`, so of two waiters one wins;
- released at the end of the run with `DeleteObject If-Match: <its ETag>`.

The expiry is written by the holder's clock and read by the waiter's: the machines' clocks must
agree to well within `ttl_s` (NTP does). pyarrow's S3 filesystem has no conditional writes: boto3's
client does them, with the same AWS_* settings (`s3_client`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from botocore.exceptions import BotoCoreError, ClientError

from rag_pipeline.lib.core.objectstore import Location, StorageError, refused, s3_client
from rag_pipeline.lib.core.process import this_host

LEASE = "lease.json"
TTL_S = 60.0  # a holder killed without releasing keeps the data directory this long
POLL_S = 2.0  # how often a waiting run looks again
# no such object (also a write `If-Match` an object deleted meanwhile), a condition that failed, or a
# conditional request that raced another
MISSED = (404, 409, 412)


@dataclass(frozen=True)
class Holder:
    """Who holds a lease, and until when (Unix time)."""

    run_id: str
    host: str
    pid: int
    expires: float

    @classmethod
    def parse(cls, data: bytes) -> Holder:
        """The holder a lease object names; one that cannot be read has expired."""
        try:
            fields = json.loads(data)
            return cls(
                str(fields["run_id"]), str(fields["host"]), int(fields["pid"]), float(fields["expires"])
            )
        except (ValueError, TypeError, KeyError):
            return cls("(unreadable lease)", "?", 0, 0.0)

    def where(self) -> str:
        until = time.strftime("%H:%M:%S", time.gmtime(self.expires))
        return f"host {self.host}, pid {self.pid}, lease until {until} UTC"


class LeaseLost(StorageError):
    """The run's lease was taken over, or could not be renewed before it expired."""


class Lease:
    """The lease of the data directory `root` for the run `run_id` of this process."""

    def __init__(self, root: Location, run_id: str, ttl_s: float = TTL_S, poll_s: float = POLL_S):
        self.where = root / LEASE
        self.bucket, _, self.key = self.where.key.partition("/")
        self.run_id, self.ttl_s, self.poll_s = run_id, ttl_s, poll_s
        self.client = s3_client()
        self.etag: str | None = None
        self.taken_over: Holder | None = None  # the expired holder this lease was taken from
        self.lost: str | None = None  # why this run no longer holds it
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def _request(self, method: str, **options) -> dict | None:
        """One request on the lease object; None when there is none or its condition failed."""
        try:
            return getattr(self.client, method)(Bucket=self.bucket, Key=self.key, **options)
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in MISSED:
                return None
            raise refused(self.where, exc) from exc
        except BotoCoreError as exc:
            raise refused(self.where, exc) from exc

    def read(self) -> tuple[Holder, str] | None:
        """The holder now and the lease's ETag; None when nobody holds it."""
        response = self._request("get_object")
        return None if response is None else (Holder.parse(response["Body"].read()), response["ETag"])

    def _write(self, **condition: str) -> bool:
        """Write this run as the holder, `ttl_s` from now, if `condition` holds."""
        holder = Holder(self.run_id, this_host(), os.getpid(), time.time() + self.ttl_s)
        response = self._request("put_object", Body=json.dumps(asdict(holder)).encode(), **condition)
        if response is not None:
            self.etag = response["ETag"]
        return response is not None

    def try_take(self) -> Holder | None:
        """Take the lease if nobody holds it, or its holder's expiry passed: None once taken, else
        the holder."""
        while True:
            current = self.read()
            if current is None:
                if self._write(IfNoneMatch="*"):
                    return None
                continue  # another run created it first: see which
            holder, etag = current
            if holder.run_id != self.run_id and holder.expires > time.time():
                return holder
            if self._write(IfMatch=etag):  # this run's own (a write whose answer was lost), or expired
                self.taken_over = holder if holder.run_id != self.run_id else None
                return None
            # renewed, released or taken over meanwhile: look again

    def take(self, waiting: Callable[[Holder], None] | None = None) -> None:
        """Take the lease, waiting while another run holds it (`waiting` hears of each new holder),
        and `keep` it."""
        told = None
        while (holder := self.try_take()) is not None:
            if waiting is not None and holder.run_id != told:
                waiting(holder)
                told = holder.run_id
            time.sleep(self.poll_s)
        self.keep()

    def keep(self) -> None:
        """Renew the lease taken from a thread of this process, until `release`."""
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name="rag-lease", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        renewed = time.time()
        while not self._stop.wait(self.ttl_s / 4):
            started = time.time()
            try:
                if self._write(IfMatch=self.etag or ""):
                    renewed = started
                    continue
                current = self.read()
            except StorageError as exc:
                if time.time() - renewed < self.ttl_s:
                    continue  # the store may answer again before the lease expires
                self.lost = f"not renewed for {self.ttl_s:.0f} s ({exc})"
                return
            if current is not None and current[0].run_id == self.run_id:
                self.etag = current[1]  # this run's own write, whose answer was lost
                continue
            self.lost = (
                f"taken over by run {current[0].run_id} ({current[0].where()})" if current else "deleted"
            )
            return

    def check(self) -> None:
        """Raise `LeaseLost` once this run no longer holds the lease."""
        if self.lost:
            raise LeaseLost(f"{self.where}: this run's lease was {self.lost}; the run stops here")

    def release(self) -> None:
        """Stop renewing, and delete the lease unless another run holds it by now."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        if self.etag is not None and self.lost is None:
            self._request("delete_object", IfMatch=self.etag)
        self.etag = None
