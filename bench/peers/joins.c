/*
 * Hand-written C of two join workloads of the benchmark suite (bench/peers/joins.py says what
 * they compute), as a batch program over whole int64 columns (the caller makes each column
 * contiguous): windows are ts / size (floored), joins are hash joins on (window, key).
 *
 *   q7_highest: Nexmark Q7, the rows whose price is the maximum of their window. Windows are
 *               dense over the input's time range: one max per window in an array.
 *   q8_sellers: Nexmark Q8, the persons who opened auctions in the window they registered in,
 *               with the number of those auctions: an open-addressing table of the persons by
 *               (window, id), where each auction counts itself by (window, seller).
 *
 * Both write row numbers (and Q8 the counts) and return how many, or -1 when memory runs out.
 * Build: gcc -O3 -march=native -shared -fPIC -o libjoins.so joins.c
 */
#include <stdint.h>
#include <stdlib.h>

static inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return q - ((a % b != 0) & ((a < 0) != (b < 0)));
}

int64_t q7_highest(const int64_t *ts, const int64_t *price, int64_t n, int64_t size, int64_t *out) {
    if (n <= 0)
        return 0;
    int64_t *window = malloc((size_t)n * sizeof(int64_t));
    if (!window)
        return -1;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {
        int64_t w = floor_div(ts[i], size);
        window[i] = w;
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    int64_t n_windows = hi - lo + 1;
    int64_t *highest = malloc((size_t)n_windows * sizeof(int64_t));
    if (!highest) {
        free(window);
        return -1;
    }
    for (int64_t w = 0; w < n_windows; w++)
        highest[w] = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {
        int64_t *m = &highest[window[i] - lo];
        *m = price[i] > *m ? price[i] : *m;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {  /* branch-free: every row written, k advances on a match */
        out[k] = i;
        k += price[i] == highest[window[i] - lo];
    }
    free(highest);
    free(window);
    return k;
}

typedef struct {
    int64_t window, key, count, used;
} Entry;

static inline uint64_t hash2(int64_t a, int64_t b) {
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ULL ^ (uint64_t)b * 0xC2B2AE3D27D4EB4FULL;
    return h ^ (h >> 29);
}

/* the slot of (w, k): its entry, or the free slot where it would go */
static inline Entry *find(Entry *table, uint64_t mask, int64_t w, int64_t k) {
    uint64_t h = hash2(w, k) & mask;
    while (table[h].used && (table[h].window != w || table[h].key != k))
        h = (h + 1) & mask;
    return &table[h];
}

int64_t q8_sellers(const int64_t *person_ts, const int64_t *person_id, int64_t n_persons,
                   const int64_t *auction_ts, const int64_t *seller, int64_t n_auctions, int64_t size,
                   int64_t *out_row, int64_t *out_count) {
    /* the table holds the smaller side, the persons (2% of the events, auctions 6%) */
    uint64_t capacity = 16;
    while (capacity < 2 * (uint64_t)n_persons)
        capacity <<= 1;
    uint64_t mask = capacity - 1;
    Entry *table = calloc(capacity, sizeof(Entry));
    if (!table)
        return -1;
    for (int64_t i = 0; i < n_persons; i++) {
        int64_t w = floor_div(person_ts[i], size);
        Entry *e = find(table, mask, w, person_id[i]);
        e->window = w;
        e->key = person_id[i];
        e->used = 1;
    }
    for (int64_t j = 0; j < n_auctions; j++) {
        Entry *e = find(table, mask, floor_div(auction_ts[j], size), seller[j]);
        e->count += e->used;
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n_persons; i++) {
        Entry *e = find(table, mask, floor_div(person_ts[i], size), person_id[i]);
        out_row[m] = i;
        out_count[m] = e->count;
        m += e->count > 0;
    }
    free(table);
    return m;
}
