"""The runtime: how minigrad's work meets the machine's cores, in one package.

    parallel.py   run_spans, the one place a kernel's pieces are split over threads (and the
                  large matrix products with them); the thread count and the thresholds
    threads.py    the one policy for minigrad's threads and BLAS's (set_num_threads: never two
                  pools on the same cores), `--threads` settings, and the tuner that picks one
                  by timing real steps (ThreadTuner)
    compiled.py   the compiled loop kernels' switch (numba, optional), their lazy compile and
                  disk cache, and over_rows, which splits their rows over run_spans's threads
"""
