"""Where the runs of a sweep execute: this process or local worker processes (:func:`local_runs`), or a Dask
distributed cluster (:func:`dask_runs`), through one function per run (:func:`execute`), so that the rows
are the same wherever they run."""

from __future__ import annotations

import asyncio
import importlib
import multiprocessing
import os
import signal
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from cbalab.experiments.errors import ExperimentError
from cbalab.experiments.provenance import data_read, imported_modules

#: How long to try to reach a Dask scheduler before the address counts as bad input (seconds): the one
#: deadline of the check that it answers as a scheduler, and of the client's connection after it.
CONNECT_TIMEOUT_S = 10.0


#: The transports a Dask scheduler address may name (distributed.comm); ``inproc`` is an in-process cluster.
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")


#: A run to do (grid index, key, parameters) and a finished one (…, outcome of :func:`execute`).
Todo = list[tuple[int, str, dict]]


Done = tuple[int, str, dict, dict]


def execute(module_name: str, params: dict) -> dict:
    """Run one grid point in whatever process this is; never raises for the run's own errors.

    Returns ``{"row": result columns or None, "error": "" or the error, "run_seconds": wall time, "modules":
    the cbalab modules this process has imported, "data": the data files it has read}``: the last two are what
    the run may have executed and read (experiments/provenance.py), which meta.json records.
    """
    start = time.perf_counter()
    try:
        module = importlib.import_module(module_name)
        row = module.run_one(dict(params))
        if not isinstance(row, dict):
            raise TypeError(f"run_one returned {type(row).__name__}, not a dict")
        if not row:
            raise ValueError("run_one returned no result column")
        clash = overwritten_parameter(params, row)
        if clash:
            raise ValueError(f"run_one changed the parameter column {clash!r}")
        error = ""
    except Exception as e:  # a failed run is a result of the sweep, recorded, not a crash of it
        row = None
        last = traceback.extract_tb(e.__traceback__)[-1]
        error = f"{type(e).__name__}: {e} ({Path(last.filename).name}:{last.lineno})"
    return {
        "row": row,
        "error": error,
        "run_seconds": time.perf_counter() - start,
        "modules": imported_modules(),
        "data": data_read(),
    }


def overwritten_parameter(params: dict, row: dict) -> str | None:
    """The first column of ``row`` that would overwrite a parameter (or runs.csv's own ``run_key``/``error``)."""
    clash = sorted(k for k in row if k in ("run_key", "error") or (k in params and row[k] != params[k]))
    return clash[0] if clash else None


def local_runs(module_name: str, todo: Todo, workers: int) -> Iterator[Done]:
    """Yield (index, key, params, outcome) as runs finish on ``workers`` local processes (1: this process)."""
    if workers <= 1:
        for index, key, params in todo:
            yield index, key, params, execute(module_name, params)
        return
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_ignore_sigint)
    try:
        pending: dict[Future, tuple[int, str, dict]] = {}
        queue = iter(todo)
        for item in queue:  # keep 2 runs per worker in flight: a Ctrl-C then cancels the rest at once
            pending[pool.submit(execute, module_name, item[2])] = item
            if len(pending) >= 2 * workers:
                break
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                index, key, params = pending.pop(fut)
                yield index, key, params, fut.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending[pool.submit(execute, module_name, nxt[2])] = nxt
    finally:  # on Ctrl-C: runs not started are cancelled, the workers end with the run they are in
        pool.shutdown(wait=False, cancel_futures=True)


def _ignore_sigint() -> None:
    """Worker processes leave Ctrl-C to the runner, which stops the sweep and keeps every finished run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def scheduler_address(address: str) -> str:
    """``address`` if it has the form of a Dask scheduler address, else ExperimentError naming ``--scheduler``.

    The form is ``SCHEME://HOST:PORT`` with SCHEME one of :data:`SCHEDULER_SCHEMES` and PORT in 1-65535, or
    ``HOST:PORT`` (tcp, as Dask reads it), or ``inproc://...`` (a cluster in this process).
    """
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in SCHEDULER_SCHEMES:
        raise ExperimentError(
            f"--scheduler: {scheme!r} is not a Dask transport ({', '.join(SCHEDULER_SCHEMES)}); "
            f"give tcp://HOST:PORT (got {address!r})"
        )
    if scheme == "inproc":
        if not rest:
            raise ExperimentError(f"--scheduler: an inproc address names its cluster (got {address!r})")
        return address
    host, colon, port = rest.rpartition(":")
    if not colon or not host.strip("[]") or "/" in rest:
        raise ExperimentError(f"--scheduler: must be tcp://HOST:PORT (got {address!r})")
    if not (port.isdigit() and 1 <= int(port) <= 65535):
        raise ExperimentError(f"--scheduler: the port must be a number from 1 to 65535 (got {address!r})")
    return address


def _identity(address: str, timeout: float) -> dict:
    """What the server at ``address`` says it is (Dask's ``identity`` call), within ``timeout`` seconds.

    Runs its own event loop in a thread, so it works inside a running loop (a notebook) too, and gives up at
    the deadline whatever the server does: accept and stay silent, or answer bytes that are no Dask message.
    """
    from distributed.comm import connect

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity"})
            return await comm.read()
        finally:
            comm.abort()

    async def bounded() -> Any:
        return await asyncio.wait_for(ask(), timeout)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cbalab-dask-probe")
    try:
        reply = pool.submit(asyncio.run, bounded()).result(timeout=timeout + 2.0)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return reply if isinstance(reply, dict) else {}


def dask_runs(module_name: str, todo: Todo, address: str) -> Iterator[Done]:
    """Check that ``address`` is a Dask scheduler (ExperimentError, exit 2, if not), connect, then run there."""
    from dask.distributed import Client

    scheduler_address(address)
    try:
        what = _identity(address, CONNECT_TIMEOUT_S).get("type")
    except (TimeoutError, OSError):  # silent, refused or unreachable until the deadline
        raise ExperimentError(
            f"--scheduler: no Dask scheduler answered at {address!r} within {CONNECT_TIMEOUT_S:g} s"
        ) from None
    except Exception as e:  # bytes that are no Dask message: a MemoryError or a decoding error, among others
        raise ExperimentError(
            f"--scheduler: {address!r} is not a Dask scheduler ({type(e).__name__}: {str(e)[:120]})"
        ) from None
    if what != "Scheduler":
        raise ExperimentError(
            f"--scheduler: {address!r} answers as {what or 'something else'}, not as a Dask scheduler"
        )
    try:
        client = Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError) as e:
        raise ExperimentError(f"--scheduler: cannot reach a Dask scheduler at {address!r}: {e}") from None
    return _dask_results(client, module_name, todo)


def _dask_results(client: Any, module_name: str, todo: Todo) -> Iterator[Done]:
    """Yield (index, key, params, outcome) as the runs finish on ``client``'s cluster."""
    from dask.distributed import as_completed

    try:
        items = {}
        futures = []
        for index, key, params in todo:
            fut = client.submit(execute, module_name, params, key=f"cbalab-{key}-{os.getpid()}", pure=False)
            items[fut.key] = (index, key, params)
            futures.append(fut)
        for fut in as_completed(futures):
            index, key, params = items[fut.key]
            yield index, key, params, fut.result()
    finally:
        client.close()
