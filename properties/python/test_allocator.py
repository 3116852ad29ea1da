"""Importing normcheck sets the allocator as the CLI's main does (issue 47, src/core/allocator.hpp):
a 4 MiB block comes from the heap, not from its own mmap, so the oracle's per-case vectors are reused
instead of page-faulted in again (3.2 ms against 1.1 ms per 8 x 4096 reference call, measured)."""
import subprocess
import sys

import pytest

PROBE = r"""
import ctypes, sys
libc = ctypes.CDLL("libc.so.6")
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
if sys.argv[1] == "import":
    import normcheck  # noqa: F401
before = libc.mallinfo2().hblks
block = libc.malloc(4 << 20)
print(libc.mallinfo2().hblks - before)
libc.free(ctypes.c_void_p(block))
"""


def mmapped_blocks_of_a_4mib_malloc(mode):
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_importing_normcheck_keeps_large_blocks_on_the_heap_as_the_cli_does():
    if mmapped_blocks_of_a_4mib_malloc("bare") != 1:
        pytest.skip("this libc does not mmap a 4 MiB block by default: nothing to tell apart")
    assert mmapped_blocks_of_a_4mib_malloc("import") == 0
