/*
 * Hand-written YSB in C with OpenMP: the multi-core ceiling peer for grizzly-py's parallel engine.
 *
 * The same query and streaming protocol as ysb.c (included below), parallelized the way
 * grizzly-py's thread-local variant is: each batch is cut into one contiguous slice per thread,
 * each thread runs the single-threaded hash or dense code of ysb.c on its own state, and a
 * window's per-thread partial counts are summed when the run ends (ysb_omp_merge). Each thread
 * advances its own watermark over its slices; on YSB's in-order data that fires the same
 * windows and drops nothing.
 *
 * Build: gcc -O3 -march=native -fopenmp -shared -fPIC -o libysb_omp.so ysb_omp.c
 */
#include <omp.h>
#include "ysb.c"

/* Feed one batch to `threads` states (variant 0: hash, 1: dense); the minimum return code of
   the threads (negative: out of memory). */
int64_t ysb_omp_process(void **states, int threads, int variant, const int64_t *ts, const int32_t *type,
                        int32_t view, const int64_t *key, int64_t n) {
    int64_t rc = 0;
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(min : rc)
    for (int t = 0; t < threads; t++) {
        const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
        int64_t r = variant ? ysb_dense_process(states[t], ts + lo, type + lo, view, key + lo, hi - lo)
                            : ysb_hash_process(states[t], ts + lo, type + lo, view, key + lo, hi - lo);
        if (r < rc) rc = r;
    }
    return rc;
}

int64_t ysb_omp_finish(void **states, int threads, int variant) {
    int64_t rc = 0;
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(min : rc)
    for (int t = 0; t < threads; t++) {
        int64_t r = variant ? ysb_dense_finish(states[t]) : ysb_hash_finish(states[t]);
        if (r < rc) rc = r;
    }
    return rc;
}

/* Sum the threads' emitted partial counts per (window, key) into one state's buffers by a
   hash table over all of them; the result lands in `out` (a fresh ysb_hash used as a table). */
int64_t ysb_omp_merge(void **states, int threads, ysb_hash *out) {
    for (int t = 0; t < threads; t++) {
        ysb_common *c = states[t];
        for (int64_t i = 0; i < c->n_out; i++) {
            uint64_t mask = out->cap - 1, h = hash2(c->out_ws[i], c->out_key[i]) >> out->shift;
            for (;;) {
                entry *e = &out->tab[h];
                if (e->ws == c->out_ws[i] && e->key == c->out_key[i]) { e->count += c->out_count[i]; break; }
                if (e->ws == EMPTY) {
                    e->ws = c->out_ws[i]; e->key = c->out_key[i]; e->count = c->out_count[i];
                    if (++out->size * 2 > out->cap && rehash(out, out->cap * 2)) return -1;
                    break;
                }
                h = (h + 1) & mask;
            }
        }
    }
    fire(out, INT64_MAX);
    return ysb_n_out(&out->c);
}
