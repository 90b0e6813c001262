/*
 * The memory-bandwidth ceiling of YSB: a loop that only streams the three columns the query
 * reads (event_time, event_type codes, campaign_id) and folds them into a checksum, on one or
 * several threads (OpenMP, one contiguous slice of each batch per thread, as ysb_omp.c cuts
 * them). It computes no window and no count: no engine can read the same input faster, so
 * grizzly-py's rate over this one is the share of the bandwidth it reaches (issue 31's target:
 * >= 0.7 on one and on two threads).
 *
 * Build: gcc -O3 -march=native -fopenmp -shared -fPIC -o libysb_stream.so ysb_stream.c
 */
#include <stdint.h>

int64_t ysb_stream_read(const int64_t *ts, const int32_t *type, const int64_t *key, int64_t n, int threads) {
    int64_t sum = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : sum)
    for (int64_t i = 0; i < n; i++)
        sum += ts[i] ^ (int64_t)type[i] ^ key[i];
    return sum;
}
