; grizzly-py runtime: the SHARED window state of parallel tumbling windows (window_state="shared").
;
; Unlike runtime/*.ll this file is not linked into every module: the shared-state lowering
; (grizzly_py/codegen/shared_window.py) appends it to its kernel units only, so the other
; variants' IR does not change.
;
; All workers update one state: a ring of window slots, each holding one concurrent
; open-addressing hash table (Grizzly section 5.1: window aggregates in a ring buffer, per-thread
; window pointers, a trigger counter per window).
;
; Ring (allocated and resized by the engine, engine/shared_kernel.py), i64 words:
;   header (8 words): 0 slots R (a power of two), 1 open slots (atomic), 2 the most open slots
;                     allowed before a worker stops (R / 2), 3 table capacity for new windows,
;                     4..7 reserved
;   R slots of 8 words (64 bytes) each, from byte 64:
;     0 status: 0 free, 1 busy (a worker is opening it), 2 open
;     1 window start
;     2 entries, 3 capacity, 4 size (atomic): a %gz.ht table header (runtime/hashtable.ll)
;     5 fill limit: a worker that makes size exceed it stops (the engine grows the table)
;     6 trigger counter: workers inside the window now (each worker's current window)
;     7 emit claim: 0, or 1 once a trigger took the window (it is emitted exactly once)
; A window's home slot is its number (start / size) mod R; collisions probe linearly. Slots are
; claimed with a compare-and-swap on the status and never freed while workers run (only the
; engine's trigger frees them, between tasks), so a window is placed once.
;
; Table entries are laid out as in hashtable.ll: tag (0 empty, 1 busy, else hash | 1<<63), key
; words, aggregates. An insert claims an empty entry with a compare-and-swap of its tag (0 -> 1),
; writes the key, lets the caller initialize the aggregates, and publishes the tag with a release
; store; a reader that meets a busy tag waits for it. Aggregates are then updated with atomic
; instructions by the generated code. Tables never grow while workers insert: a worker that fills
; one past its limit stops, and the engine grows it once every task has returned.

declare ptr @calloc(i64, i64)
declare i32 @sched_yield()

; Wait until the word at %p is no longer %busy (another worker is between a claim and its
; publication, a few instructions): spin, then yield the CPU (there may be more workers than
; cores). Returns the new value (acquire).
define linkonce_odr i64 @gz_sh_wait(ptr %p, i64 %busy) noinline {
entry:
  br label %loop
loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %spin ], [ 0, %yield ]
  %v = load atomic i64, ptr %p acquire, align 8
  %still = icmp eq i64 %v, %busy
  br i1 %still, label %again, label %done
again:
  %n.next = add i64 %n, 1
  %long = icmp ugt i64 %n.next, 64
  br i1 %long, label %yield, label %spin
spin:
  br label %loop
yield:
  %ignored = call i32 @sched_yield()
  br label %loop
done:
  ret i64 %v
}

; Find the entry of (hash, key) in a shared table or claim an empty one for it.
; %view = { ptr entries, i64 capacity - 1 } (the worker's copy of the slot's table header).
; Returns the entry; *%claimed (i1) is true when this call claimed it: its tag is then busy (1)
; and its key words are written, and the caller must initialize its aggregates and publish it
; (store atomic release of the tag). Returns null when the probe went once round the table.
define linkonce_odr ptr @gz_sht_upsert(ptr %view, i64 %hash, ptr %key, i64 %key_words, i64 %entry_size, ptr %claimed) alwaysinline {
entry:
  %tag = or i64 %hash, -9223372036854775808
  %entries = load ptr, ptr %view
  %mask.p = getelementptr inbounds { ptr, i64 }, ptr %view, i32 0, i32 1
  %mask = load i64, ptr %mask.p
  %pos0 = and i64 %hash, %mask
  br label %probe
probe:
  %pos = phi i64 [ %pos0, %entry ], [ %pos.next, %mismatch ]
  %n = phi i64 [ 0, %entry ], [ %n.next, %mismatch ]
  %off = mul i64 %pos, %entry_size
  %e = getelementptr inbounds i8, ptr %entries, i64 %off
  %etag0 = load atomic i64, ptr %e acquire, align 8
  br label %examine
examine:
  %etag = phi i64 [ %etag0, %probe ], [ %waited, %busy ], [ %seen, %lost ]
  %same_tag = icmp eq i64 %etag, %tag
  br i1 %same_tag, label %compare, label %not_same, !prof !21
not_same:
  %empty = icmp eq i64 %etag, 0
  br i1 %empty, label %claim, label %not_empty
not_empty:
  %is_busy = icmp eq i64 %etag, 1
  br i1 %is_busy, label %busy, label %mismatch, !prof !20
busy:
  %waited = call i64 @gz_sh_wait(ptr %e, i64 1)
  br label %examine
claim:
  %cx = cmpxchg ptr %e, i64 0, i64 1 acquire monotonic, align 8
  %won = extractvalue { i64, i1 } %cx, 1
  %seen = extractvalue { i64, i1 } %cx, 0
  br i1 %won, label %claimed.entry, label %lost, !prof !21
lost:
  br label %examine
claimed.entry:
  %dkey = getelementptr inbounds i8, ptr %e, i64 8
  %key_bytes = shl i64 %key_words, 3
  call void @llvm.memcpy.p0.p0.i64(ptr %dkey, ptr %key, i64 %key_bytes, i1 false)
  store i1 true, ptr %claimed
  ret ptr %e
compare:
  %ekey = getelementptr inbounds i8, ptr %e, i64 8
  br label %cmp.loop
cmp.loop:
  %w = phi i64 [ 0, %compare ], [ %w.next, %cmp.next ]
  %at_end = icmp eq i64 %w, %key_words
  br i1 %at_end, label %found, label %cmp.body
cmp.body:
  %a.p = getelementptr inbounds i64, ptr %ekey, i64 %w
  %a = load i64, ptr %a.p
  %b.p = getelementptr inbounds i64, ptr %key, i64 %w
  %b = load i64, ptr %b.p
  %eq = icmp eq i64 %a, %b
  %w.next = add i64 %w, 1
  br i1 %eq, label %cmp.next, label %mismatch
cmp.next:
  br label %cmp.loop
found:
  store i1 false, ptr %claimed
  ret ptr %e
mismatch:
  %pos.inc = add i64 %pos, 1
  %pos.next = and i64 %pos.inc, %mask
  %n.next = add i64 %n, 1
  %round = icmp ugt i64 %n.next, %mask
  br i1 %round, label %full, label %probe, !prof !20
full:
  ret ptr null
}

; Leave the worker's current window (*%cur, or none when null): its trigger counter drops by
; one, with release order, so that whoever sees the counter at zero sees this worker's updates.
define linkonce_odr void @gz_sring_leave(ptr %cur) alwaysinline {
entry:
  %slot = load ptr, ptr %cur
  %none = icmp eq ptr %slot, null
  br i1 %none, label %done, label %leave
leave:
  %users.p = getelementptr inbounds i64, ptr %slot, i64 6
  %old = atomicrmw sub ptr %users.p, i64 1 release, align 8
  store ptr null, ptr %cur
  br label %done
done:
  ret void
}

; Enter the window that starts at %start (%num = start / size): leave the worker's current
; window (*%cur), find the window's slot in the ring or claim a free one and open its table
; (capacity from the ring header, zeroed), count the worker in, and make it the current window.
; Returns the slot, or null with *%rc = 1 when the ring is too full (the kernel stops before the
; record and the engine grows the ring) or 2 when out of memory.
define linkonce_odr ptr @gz_sring_enter(ptr %ring, i64 %start, i64 %num, i64 %entry_size, ptr %cur, ptr %rc) noinline {
entry:
  call void @gz_sring_leave(ptr %cur)
  %slots = load i64, ptr %ring
  %mask = sub i64 %slots, 1
  %home = and i64 %num, %mask
  %open.p = getelementptr inbounds i64, ptr %ring, i64 1
  %limit.p = getelementptr inbounds i64, ptr %ring, i64 2
  %tcap.p = getelementptr inbounds i64, ptr %ring, i64 3
  br label %probe
probe:
  %pos = phi i64 [ %home, %entry ], [ %pos.next, %next ]
  %n = phi i64 [ 0, %entry ], [ %n.next, %next ]
  %off = shl i64 %pos, 6
  %off1 = add i64 %off, 64
  %slot = getelementptr inbounds i8, ptr %ring, i64 %off1
  %st0 = load atomic i64, ptr %slot acquire, align 8
  br label %examine
examine:
  %st = phi i64 [ %st0, %probe ], [ %waited, %busy ], [ %seen, %lost ]
  %is_open = icmp eq i64 %st, 2
  br i1 %is_open, label %check, label %not_open, !prof !21
check:
  %start.p = getelementptr inbounds i64, ptr %slot, i64 1
  %s = load i64, ptr %start.p
  %hit = icmp eq i64 %s, %start
  br i1 %hit, label %enter, label %next, !prof !21
not_open:
  %is_free = icmp eq i64 %st, 0
  br i1 %is_free, label %try_claim, label %busy
busy:
  %waited = call i64 @gz_sh_wait(ptr %slot, i64 1)
  br label %examine
try_claim:
  ; at most half the slots open (a few more while several workers race): keeps probes short
  %open = load atomic i64, ptr %open.p monotonic, align 8
  %limit = load i64, ptr %limit.p
  %too_many = icmp sge i64 %open, %limit
  br i1 %too_many, label %ring_full, label %claim, !prof !20
claim:
  %cx = cmpxchg ptr %slot, i64 0, i64 1 acquire monotonic, align 8
  %won = extractvalue { i64, i1 } %cx, 1
  %seen = extractvalue { i64, i1 } %cx, 0
  br i1 %won, label %opening, label %lost
lost:
  br label %examine
opening:
  %open.old = atomicrmw add ptr %open.p, i64 1 monotonic, align 8
  %tcap = load i64, ptr %tcap.p
  %entries = call ptr @calloc(i64 %tcap, i64 %entry_size)
  %oom = icmp eq ptr %entries, null
  br i1 %oom, label %undo, label %publish, !prof !20
undo:
  %open.back = atomicrmw sub ptr %open.p, i64 1 monotonic, align 8
  store atomic i64 0, ptr %slot release, align 8
  store i64 2, ptr %rc
  ret ptr null
publish:
  %s.start = getelementptr inbounds i64, ptr %slot, i64 1
  store i64 %start, ptr %s.start
  %s.entries = getelementptr inbounds i64, ptr %slot, i64 2
  store ptr %entries, ptr %s.entries
  %s.cap = getelementptr inbounds i64, ptr %slot, i64 3
  store i64 %tcap, ptr %s.cap
  %s.size = getelementptr inbounds i64, ptr %slot, i64 4
  store atomic i64 0, ptr %s.size monotonic, align 8
  %s.limit = getelementptr inbounds i64, ptr %slot, i64 5
  %half = lshr i64 %tcap, 1
  store atomic i64 %half, ptr %s.limit monotonic, align 8
  %s.users = getelementptr inbounds i64, ptr %slot, i64 6
  store atomic i64 0, ptr %s.users monotonic, align 8
  %s.claim = getelementptr inbounds i64, ptr %slot, i64 7
  store atomic i64 0, ptr %s.claim monotonic, align 8
  store atomic i64 2, ptr %slot release, align 8
  br label %enter
enter:
  %users.p = getelementptr inbounds i64, ptr %slot, i64 6
  %users.old = atomicrmw add ptr %users.p, i64 1 acquire, align 8
  store ptr %slot, ptr %cur
  ret ptr %slot
next:
  %pos.inc = add i64 %pos, 1
  %pos.next = and i64 %pos.inc, %mask
  %n.next = add i64 %n, 1
  %round = icmp ugt i64 %n.next, %mask
  br i1 %round, label %ring_full, label %probe
ring_full:
  store i64 1, ptr %rc
  ret ptr null
}

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

!20 = !{!"branch_weights", i32 1, i32 1000}
!21 = !{!"branch_weights", i32 1000, i32 1}
