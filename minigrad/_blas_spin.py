"""Ask numpy's BLAS for idle threads that spin briefly, before numpy loads it (see threads.py).

OpenBLAS's idle threads spin for 2^N cycles before they sleep (N = 28 by default, about 0.1 s),
which slows down a process that shares the cores. The variable must be in the environment
before the library loads, so the `minigrad` package imports this module first; it changes
nothing when numpy is loaded already or the variable is set.
"""

import os
import sys

# With N = 4, beside a process that kept one core busy, 20 rounds of a (1024, 64) x (64, 256)
# float32 product, a tanh over (1024, 256) and a (256, 1024) x (1024, 64) product on 2 threads
# took 38-41 ms (median of 30) where the default took 55-82 ms; on 1 thread 34 ms. The GPT step
# beside a busy process: benchmarks/threads.py.
BLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "4")

if "numpy" not in sys.modules:
    os.environ.setdefault(*BLAS_SPIN)
