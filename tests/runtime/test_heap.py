"""roomy_heap: inside a Dask worker (MALLOC_TRIM_THRESHOLD_ set, so glibc maps every array
over 128 KiB on its own), large arrays come from the heap while the block runs, and the
worker's settings are back after it.  Run in a child process started the way Dask's nanny
starts a worker, so this process's heap is left alone."""

import ctypes
import ctypes.util
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import ctypes, ctypes.util
    import numpy as np
    from laddu_dask.runtime.heap import roomy_heap

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                   "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallinfo2.restype = MallInfo2

    def mapped(mib):  # the arrays glibc mapped on their own while one of mib MiB is held
        before = libc.mallinfo2().hblks
        a = np.ones(mib << 17)
        out = libc.mallinfo2().hblks - before
        del a
        return out

    outside = mapped(2)
    with roomy_heap():
        inside = mapped(4)
    after = mapped(8)
    print(outside, inside, after)
""")


def _glibc_mallinfo2() -> bool:
    name = ctypes.util.find_library("c")
    return bool(name) and hasattr(ctypes.CDLL(name), "mallinfo2")


@pytest.mark.skipif(not _glibc_mallinfo2(), reason="needs glibc's mallinfo2 (Linux, glibc >= 2.33)")
@pytest.mark.parametrize("trim", ["65536", None])
def test_large_arrays_come_from_the_heap_inside_the_block_only(trim):
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    if trim is not None:
        env["MALLOC_TRIM_THRESHOLD_"] = trim  # as Dask's nanny starts a worker
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    outside, inside, after = map(int, out.stdout.split())
    if trim is not None:
        assert (outside, inside, after) == (1, 0, 1)  # mapped, from the heap, mapped again
    else:  # no worker setting: glibc's own dynamic threshold, untouched (each array here is
        # larger than the one freed before it, so each is mapped)
        assert (outside, inside, after) == (1, 1, 1)
