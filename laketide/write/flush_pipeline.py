"""A one-shot primary-key write (the last ``write()`` before ``prepare_commit``): each bucket is flushed as soon
as its rows are in, on a worker thread, while the main thread moves on to the next bucket.

Once the split has passed a (partition, bucket) group, no more rows come for that bucket before the commit, so its
level-0 run can be written now instead of at ``prepare_commit``: the copy of its rows out of the input (the split's
``take``), the key-value layout, the merge and the Parquet encoding all run on the worker (pyarrow and numpy
release the GIL), overlapped with the other buckets'. The files are the ones ``prepare_commit`` would write: each
bucket's rows in arrival order, the same sequence numbers, one run per bucket per flush.

Bounded as the serial path is (write/write_budget.py): at most one flush in flight per core, and buffered plus
in-flight bytes stay within ``write-buffer-size``: when they would not, the main thread first waits for in-flight
flushes to end, one at a time, until they would (where a large bucket's runs are cut does not depend on timing:
only idle buffers' bytes decide), then flushes the biggest buffers itself. Groups larger than a piece are buffered
piece by piece on the main thread; their last piece and the flush go to the worker.

Paimon: a batch job's writer flushes at ``prepareCommit`` only; this is laketide's own use of the second core.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

import pyarrow as pa

from laketide.write.bucketing import GroupRows
from laketide.write.write_budget import BufferedWriter, flush_biggest, is_buffered

__all__ = ["write_groups_flushing"]


class _Writer(Protocol):
    def write(self, rows: pa.Table) -> None: ...


def _bytes_of(group: GroupRows, rows: int, source_bytes: dict[int, int]) -> int:
    """Estimated Arrow bytes of ``rows`` rows of ``group`` (before they are copied); ``source_bytes`` caches each
    source's ``nbytes`` (a walk over all its buffers; the groups of one write share their source)."""
    n = int(group.source.num_rows)
    if not n:
        return 0
    total = source_bytes.get(id(group.source))
    if total is None:
        total = source_bytes[id(group.source)] = int(group.source.nbytes)
    return total * rows // n


def write_groups_flushing(
    groups: Sequence[GroupRows],
    *,
    writer_of: Callable[[GroupRows], _Writer],
    buffered: Callable[[], list[BufferedWriter]],
    budget: int,
    max_rows: int | None,
    workers: int,
) -> None:
    """Write every group through ``writer_of(group)`` and flush each writer once its group is in.

    ``buffered()`` lists every buffered writer (of this and earlier writes); ``max_rows`` is the piece size of
    write_budget.piece_rows (None: one piece per group). Returns when every flush is done; the first failure is
    raised after all flushes in flight have finished (their files stay in their writers, for ``abort``).
    """
    in_flight: dict[Future[None], tuple[_Writer, int]] = {}
    source_bytes: dict[int, int] = {}  # the groups' sources are alive for the whole call: ids stay theirs
    failures: list[BaseException] = []

    def collect(done: Iterable[Future[None]]) -> None:
        for f in done:
            in_flight.pop(f, None)
            error = f.exception()
            if error is not None:
                failures.append(error)

    def wait_for(*, all_of: bool) -> None:
        if in_flight:
            done, _ = wait(list(in_flight), return_when="ALL_COMPLETED" if all_of else FIRST_COMPLETED)
            collect(done)
        if failures:
            raise failures[0]

    def bound() -> None:
        while True:
            busy = {id(w) for w, _ in in_flight.values()}
            writers = [w for w in buffered() if id(w) not in busy]
            in_flight_bytes = sum(b for _, b in in_flight.values())
            if not in_flight or sum(w.buffered_bytes for w in writers) + in_flight_bytes < budget:
                break
            # In-flight rows free their memory when done: wait for them rather than cut runs, one at a time so the
            # other cores keep flushing (a done flush leaves no bytes behind: what is flushed below is the same as
            # after waiting for all of them).
            wait_for(all_of=False)
        flush_biggest(writers, budget)

    def finish(writer: _Writer, group: GroupRows, start: int) -> None:
        writer.write(group.take(start))
        if is_buffered(writer):
            writer.flush()

    # One group (or one core): nothing to overlap, so no thread hop.
    threaded = len(groups) > 1 and workers > 1
    with (ThreadPoolExecutor(max_workers=workers, thread_name_prefix="laketide-flush") if threaded
          else nullcontext()) as pool:
        submit = pool.submit if pool is not None else _run_now
        try:
            for group in groups:
                writer = writer_of(group)
                if any(w is writer for w, _ in in_flight.values()):  # two groups, one writer: keep their order
                    wait_for(all_of=True)
                n = group.num_rows
                step = n if max_rows is None else max(1, max_rows)
                last = ((n - 1) // step) * step if n else 0
                for start in range(0, last, step):  # pieces before the last: buffered here, bounded after each
                    writer.write(group.take(start, start + step))
                    bound()
                while len(in_flight) >= max(1, workers):
                    wait_for(all_of=False)
                own = writer.buffered_bytes if is_buffered(writer) else 0
                pending = own + _bytes_of(group, n - last, source_bytes)
                in_flight[submit(finish, writer, group, last)] = (writer, pending)
                bound()
            wait_for(all_of=True)
        except BaseException:
            for f in in_flight:
                f.cancel()  # not started yet: never will
            wait(list(in_flight))
            raise


def _run_now(fn: Callable[..., None], *args: object) -> Future[None]:
    """``fn(*args)`` on this thread, its outcome as a done future (what the pool's submit returns)."""
    done: Future[None] = Future()
    try:
        fn(*args)
    except BaseException as e:  # noqa: BLE001 - handed over through the future, raised by the caller
        done.set_exception(e)
    else:
        done.set_result(None)
    return done
