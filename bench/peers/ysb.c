/*
 * Hand-written YSB in C: the ceiling peer for grizzly-py.
 *
 * Query: keep rows with event_type == view, key by campaign_id, 10 s tumbling event-time
 * windows on event_time (int64 ms), count rows per (window, key).
 *
 * Streaming, single-threaded: the caller feeds one Arrow RecordBatch at a time (pointers to the
 * int64 event_time values, the int32 dictionary indices of event_type, the int64 campaign_id
 * values) into persistent state. The watermark is the largest event time seen (monotonous
 * timestamps, as Flink's default); a window [s, s+W) is emitted once the watermark reaches s+W,
 * and a view whose window was already emitted is dropped as late. finish() emits the rest.
 * Emitted rows go to a growable output buffer the caller copies out at the end.
 *
 * Two variants share that protocol:
 *   ysb_hash_*  open-addressing hash table keyed by (window_start, campaign_id), linear probing,
 *               doubling at load factor 1/2; rows are filtered branch-free into a selection block
 *               first, then upserted.
 *   ysb_dense_* keys 0..n_keys-1 index a per-window count array; one window is open at a time
 *               (exact for in-order input, late rows are dropped as in the hash variant);
 *               the filter is branch-free (count += type == view).
 *
 * Build: gcc -O3 -march=native -shared -fPIC -o libysb.so ysb.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 1024
#define EMPTY INT64_MIN
#define COLD __attribute__((noinline, cold))

/* ---- shared: output buffer and counters ------------------------------------------------- */

typedef struct {
    int64_t window_ms;
    int64_t wm;          /* hash variant's watermark (see ysb_hash_process) */
    int64_t rows_in;     /* rows fed */
    int64_t selected;    /* views counted into emitted windows */
    int64_t late;        /* views dropped because their window was already emitted */
    int64_t bad_keys;    /* dense variant: views with keys outside 0..n_keys-1 (an error) */
    int64_t n_out, cap_out;
    int64_t *out_ws, *out_key, *out_count;
    int oom;
} ysb_common;

static void common_init(ysb_common *c, int64_t window_ms) {
    memset(c, 0, sizeof *c);
    c->window_ms = window_ms;
    c->wm = INT64_MIN;
}

static void emit(ysb_common *c, int64_t ws, int64_t key, int64_t count) {
    if (c->n_out == c->cap_out) {
        int64_t cap = c->cap_out ? 2 * c->cap_out : 1 << 14;
        int64_t *a = realloc(c->out_ws, cap * sizeof *a);
        if (a) c->out_ws = a;
        int64_t *b = realloc(c->out_key, cap * sizeof *b);
        if (b) c->out_key = b;
        int64_t *d = realloc(c->out_count, cap * sizeof *d);
        if (d) c->out_count = d;
        if (!a || !b || !d) { c->oom = 1; return; }
        c->cap_out = cap;
    }
    c->out_ws[c->n_out] = ws;
    c->out_key[c->n_out] = key;
    c->out_count[c->n_out] = count;
    c->n_out++;
    c->selected += count;
}

static inline int64_t window_start(int64_t t, int64_t w) {
    int64_t r = t % w;
    return t - (r < 0 ? r + w : r);
}

/* Result rows emitted so far, or -1 after an allocation failure. */
int64_t ysb_n_out(ysb_common *c) { return c->oom ? -1 : c->n_out; }

/* Copy the emitted rows into caller arrays of ysb_n_out() elements. */
void ysb_copy_out(ysb_common *c, int64_t *ws, int64_t *key, int64_t *count) {
    memcpy(ws, c->out_ws, c->n_out * sizeof *ws);
    memcpy(key, c->out_key, c->n_out * sizeof *key);
    memcpy(count, c->out_count, c->n_out * sizeof *count);
}

/* stats[0..4] = rows_in, selected, late, bad_keys, n_out */
void ysb_stats(ysb_common *c, int64_t *stats) {
    stats[0] = c->rows_in;
    stats[1] = c->selected;
    stats[2] = c->late;
    stats[3] = c->bad_keys;
    stats[4] = c->n_out;
}

static void common_free(ysb_common *c) {
    free(c->out_ws);
    free(c->out_key);
    free(c->out_count);
}

/* ---- hash variant ----------------------------------------------------------------------- */

typedef struct { int64_t ws, key, count; } entry;

typedef struct {
    ysb_common c;          /* first member: a ysb_hash* is a ysb_common* */
    entry *tab;
    int64_t cap, size;
    int shift;             /* 64 - log2(cap) */
    int64_t next_fire;     /* smallest end among open windows, INT64_MAX if none */
    int64_t cur_ws;        /* window start of the last row, caches the division */
} ysb_hash;

static inline uint64_t hash2(int64_t ws, int64_t key) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull ^ (uint64_t)ws * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return h * 0xBF58476D1CE4E5B9ull;
}

static int table_alloc(ysb_hash *s, int64_t cap) {
    entry *t = malloc(cap * sizeof *t);
    if (!t) return -1;
    for (int64_t i = 0; i < cap; i++) t[i].ws = EMPTY;
    s->tab = t;
    s->cap = cap;
    s->size = 0;
    s->shift = 64 - __builtin_ctzll((uint64_t)cap);
    return 0;
}

/* Insert a (ws, key) that is not in the table, with a count; no growth check. */
static inline void place(ysb_hash *s, int64_t ws, int64_t key, int64_t count) {
    uint64_t mask = s->cap - 1, h = hash2(ws, key) >> s->shift;
    while (s->tab[h].ws != EMPTY) h = (h + 1) & mask;
    s->tab[h].ws = ws;
    s->tab[h].key = key;
    s->tab[h].count = count;
    s->size++;
}

static COLD int rehash(ysb_hash *s, int64_t new_cap) {
    entry *old = s->tab;
    int64_t old_cap = s->cap;
    if (table_alloc(s, new_cap)) { s->tab = old; return -1; }
    for (int64_t i = 0; i < old_cap; i++)
        if (old[i].ws != EMPTY) place(s, old[i].ws, old[i].key, old[i].count);
    free(old);
    return 0;
}

static inline void upsert(ysb_hash *s, int64_t ws, int64_t key) {
    uint64_t mask = s->cap - 1, h = hash2(ws, key) >> s->shift;
    for (;;) {
        entry *e = &s->tab[h];
        if (e->ws == ws && e->key == key) { e->count++; return; }
        if (e->ws == EMPTY) break;
        h = (h + 1) & mask;
    }
    s->tab[h].ws = ws;
    s->tab[h].key = key;
    s->tab[h].count = 1;
    if (ws + s->c.window_ms < s->next_fire) s->next_fire = ws + s->c.window_ms;
    if (++s->size * 2 > s->cap && rehash(s, s->cap * 2)) s->c.oom = 1;
}

/* Emit every window whose end is <= limit; keep the others (rebuilt in place). */
static COLD void fire(ysb_hash *s, int64_t limit) {
    const int64_t W = s->c.window_ms;
    int64_t kept = 0, next = INT64_MAX;
    for (int64_t i = 0; i < s->cap; i++) {
        entry *e = &s->tab[i];
        if (e->ws == EMPTY) continue;
        if (e->ws + W <= limit) {
            emit(&s->c, e->ws, e->key, e->count);
            e->ws = EMPTY;
        } else {
            kept++;
            if (e->ws + W < next) next = e->ws + W;
        }
    }
    s->next_fire = next;
    if (kept) {               /* removals broke probe chains: reinsert the survivors */
        if (rehash(s, s->cap)) s->c.oom = 1;
    } else {
        s->size = 0;
    }
}

ysb_hash *ysb_hash_new(int64_t window_ms, int64_t capacity_hint) {
    ysb_hash *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    common_init(&s->c, window_ms);
    int64_t cap = 1024;
    while (cap < 2 * capacity_hint) cap *= 2;
    if (table_alloc(s, cap)) { free(s); return NULL; }
    s->next_fire = INT64_MAX;
    s->cur_ws = INT64_MIN;   /* no window yet: the first row takes the slow path */
    return s;
}

/* Feed one batch; returns the number of result rows emitted so far (-1: out of memory). */
int64_t ysb_hash_process(ysb_hash *s, const int64_t *ts, const int32_t *type, int32_t view,
                         const int64_t *key, int64_t n) {
    const int64_t W = s->c.window_ms;
    int64_t sel_ws[BLOCK], sel_key[BLOCK];
    int64_t wm = s->c.wm, cws = s->cur_ws, late = 0;
    for (int64_t b = 0; b < n; b += BLOCK) {
        const int64_t m = n - b < BLOCK ? n - b : BLOCK;
        int64_t k = 0;
        for (int64_t i = 0; i < m; i++) {           /* branch-free selection */
            const int64_t t = ts[b + i];
            if (__builtin_expect((uint64_t)t - (uint64_t)cws >= (uint64_t)W, 0)) {
                /* Another window. The watermark is only advanced here, to the first event
                   time of the newest window: rows inside that window stay below its end, so
                   the exact maximum changes neither which windows fire nor which rows are
                   late (every older window ends at or before cws <= wm). */
                const int64_t ws = window_start(t, W);
                if (ws + W <= wm) {                  /* its window was emitted: late */
                    late += type[b + i] == view;
                    continue;
                }
                cws = ws;                            /* never moves back: older ones are late */
                wm = t > wm ? t : wm;
            }
            sel_ws[k] = cws;
            sel_key[k] = key[b + i];
            k += type[b + i] == view;
        }
        for (int64_t j = 0; j < k; j++) upsert(s, sel_ws[j], sel_key[j]);
        if (wm >= s->next_fire) fire(s, wm);
    }
    s->c.wm = wm;
    s->cur_ws = cws;
    s->c.late += late;
    s->c.rows_in += n;
    return ysb_n_out(&s->c);
}

int64_t ysb_hash_finish(ysb_hash *s) {
    fire(s, INT64_MAX);
    return ysb_n_out(&s->c);
}

void ysb_hash_free(ysb_hash *s) {
    if (!s) return;
    common_free(&s->c);
    free(s->tab);
    free(s);
}

/* ---- dense variant ---------------------------------------------------------------------- */

typedef struct {
    ysb_common c;          /* first member: a ysb_dense* is a ysb_common* */
    int64_t n_keys;
    int64_t *counts;       /* counts of the open window, indexed by key */
    int64_t cur_ws;        /* start of the open window */
    int open;
} ysb_dense;

static void dense_emit(ysb_dense *s) {
    for (int64_t k = 0; k < s->n_keys; k++)
        if (s->counts[k]) emit(&s->c, s->cur_ws, k, s->counts[k]);
    s->c.bad_keys += s->counts[s->n_keys];
    memset(s->counts, 0, (s->n_keys + 1) * sizeof *s->counts);
}

/* Event time t is past the open window (or none is open): emit it, open t's window.
   Kept out of line so that the per-row loop keeps its pointers in registers. */
static COLD int64_t dense_advance(ysb_dense *s, int64_t cws, int64_t t) {
    if (s->open) { s->cur_ws = cws; dense_emit(s); }
    s->open = 1;
    return window_start(t, s->c.window_ms);
}

ysb_dense *ysb_dense_new(int64_t window_ms, int64_t n_keys) {
    ysb_dense *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    common_init(&s->c, window_ms);
    s->n_keys = n_keys;
    s->cur_ws = INT64_MIN;   /* no window open yet */
    s->counts = calloc(n_keys + 1, sizeof *s->counts);
    if (!s->counts) { free(s); return NULL; }
    return s;
}

int64_t ysb_dense_process(ysb_dense *s, const int64_t *ts, const int32_t *type, int32_t view,
                          const int64_t *key, int64_t n) {
    const int64_t W = s->c.window_ms;
    const uint64_t nk = (uint64_t)s->n_keys;
    int64_t *counts = s->counts;            /* n_keys + 1 slots: the last counts bad keys */
    int64_t cws = s->cur_ws, late = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = ts[i];
        if (__builtin_expect((uint64_t)t - (uint64_t)cws >= (uint64_t)W, 0)) {
            if (!s->open || t >= cws + W) {      /* outside the open window, later: closes it */
                cws = dense_advance(s, cws, t);
            } else {                             /* earlier: its window was already emitted */
                late += type[i] == view;
                continue;
            }
        }
        const uint64_t k = (uint64_t)key[i];
        counts[k < nk ? k : nk] += type[i] == view;
    }
    s->cur_ws = cws;
    s->c.late += late;
    s->c.rows_in += n;
    return ysb_n_out(&s->c);
}

int64_t ysb_dense_finish(ysb_dense *s) {
    if (s->open) dense_emit(s);
    s->open = 0;
    return ysb_n_out(&s->c);
}

void ysb_dense_free(ysb_dense *s) {
    if (!s) return;
    common_free(&s->c);
    free(s->counts);
    free(s);
}
