/*
 * Hand-written selection in C (PipeFabric table 1): keep the rows with value < bound and copy
 * their three columns (event_time int64, key int64, value int32) to the output arrays.
 *
 * Branch-free: every row is written at the output position, which advances by the predicate
 * (the same code at every selectivity). Called once per Arrow RecordBatch through ctypes.
 *
 * Build: gcc -O3 -march=native -shared -fPIC -o libselection.so selection.c
 */
#include <stdint.h>

int64_t selection_process(const int64_t *ts, const int64_t *key, const int32_t *value, int64_t n,
                          int32_t bound, int64_t *out_ts, int64_t *out_key, int32_t *out_value) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        out_ts[k] = ts[i];
        out_key[k] = key[i];
        out_value[k] = value[i];
        k += value[i] < bound;
    }
    return k;
}
