; grizzly-py runtime: an open-addressing hash table of aggregates by key, with growth.
; Each open window has its own table (see windows.ll), so together they key by (window, key).
;
; Linked into every compiled module. Generated code calls these functions with constant
; key_words / entry_size arguments, so after inlining LLVM specializes the probe loop.
;
; Table header (%gz.ht): { ptr entries, i64 capacity (power of two), i64 size }
; Entry (entry_size bytes, 8-byte aligned):
;   word 0        tag: 0 = empty, else hash | 1<<63
;                 (generated code may put key null flags in bits 48..62 of the hash it passes)
;   words 1..K    key words
;   words K+1..   aggregate state, zero-initialized on insert
; Linear probing; the table grows (x2) when it would become more than half full. An entry array
; of 16 MiB or more (beyond what the TLB maps with 4 KiB pages) is advised to use transparent
; huge pages (gz_advise_huge): probes then stop missing the TLB and faulting each page in.
; A zeroed header is an empty table (the first insert allocates it); the engine frees the
; entries with libc free. Allocation failures return null/1 so the kernel can report them.

%gz.ht = type { ptr, i64, i64 }

declare ptr @calloc(i64, i64)
declare void @free(ptr)
declare i32 @madvise(ptr, i64, i32)

; calloc for a table's entries, advised huge pages where it is large (gz_advise_huge). The
; pointer stays calloc's, so free releases it.
define linkonce_odr ptr @gz_calloc_table(i64 %n, i64 %size) {
entry:
  %p = call ptr @calloc(i64 %n, i64 %size)
  %ok = icmp ne ptr %p, null
  br i1 %ok, label %advise, label %done
advise:
  %bytes = mul i64 %n, %size
  call void @gz_advise_huge(ptr %p, i64 %bytes)
  br label %done
done:
  ret ptr %p
}

define linkonce_odr void @gz_ht_free(ptr %ht) {
entry:
  %entries.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 0
  %entries = load ptr, ptr %entries.p
  call void @free(ptr %entries)
  call void @llvm.memset.p0.i64(ptr %ht, i8 0, i64 24, i1 false)
  ret void
}

; Re-insert every live entry (tag > 1) of the table into a fresh array of new_capacity entries.
; Used to grow the table. Returns 0, or 1 when out of memory
; (the table is then unchanged).
define linkonce_odr i32 @gz_ht_rehash(ptr %ht, i64 %new_capacity, i64 %entry_size) noinline {
entry:
  %entries.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 0
  %old = load ptr, ptr %entries.p
  %cap.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 1
  %old_cap = load i64, ptr %cap.p
  %size.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 2
  %new = call ptr @gz_calloc_table(i64 %new_capacity, i64 %entry_size)
  %fail = icmp eq ptr %new, null
  br i1 %fail, label %oom, label %scan
oom:
  ret i32 1
scan:
  %mask = sub i64 %new_capacity, 1
  %nonempty = icmp ugt i64 %old_cap, 0
  br i1 %nonempty, label %loop, label %done
loop:
  %i = phi i64 [ 0, %scan ], [ %i.next, %next ]
  %live = phi i64 [ 0, %scan ], [ %live.next, %next ]
  %off = mul i64 %i, %entry_size
  %src = getelementptr inbounds i8, ptr %old, i64 %off
  %tag = load i64, ptr %src
  %is_live = icmp ugt i64 %tag, 1
  br i1 %is_live, label %probe, label %next
probe:
  %pos0 = and i64 %tag, %mask
  br label %probe.loop
probe.loop:
  %pos = phi i64 [ %pos0, %probe ], [ %pos.next, %probe.loop ]
  %doff = mul i64 %pos, %entry_size
  %dst = getelementptr inbounds i8, ptr %new, i64 %doff
  %dtag = load i64, ptr %dst
  %free_slot = icmp eq i64 %dtag, 0
  %pos.inc = add i64 %pos, 1
  %pos.next = and i64 %pos.inc, %mask
  br i1 %free_slot, label %copy, label %probe.loop
copy:
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %src, i64 %entry_size, i1 false)
  br label %next
next:
  %copied = phi i64 [ 0, %loop ], [ 1, %copy ]
  %live.next = add i64 %live, %copied
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %old_cap
  br i1 %more, label %loop, label %done
done:
  %live.final = phi i64 [ 0, %scan ], [ %live.next, %next ]
  call void @free(ptr %old)
  store ptr %new, ptr %entries.p
  store i64 %new_capacity, ptr %cap.p
  store i64 %live.final, ptr %size.p
  ret i32 0
}

; Find the entry of (hash, key) or insert a zeroed one. Returns null only when growing fails.
; %view is the caller's copy of { entries, capacity - 1 } (a local, kept in registers after
; inlining, so entry updates do not force header reloads); it is refreshed when the table grows.
; An empty table (no entries yet) gets its first 1024 entries on the first insert. The table
; grows (x2) after an insert leaves it more than half full; the new entry is then found again.
define linkonce_odr ptr @gz_ht_upsert(ptr %ht, ptr %view, i64 %hash, ptr %key, i64 %key_words, i64 %entry_size) alwaysinline {
entry:
  %tag = or i64 %hash, -9223372036854775808
  %view.mask.p = getelementptr inbounds { ptr, i64 }, ptr %view, i32 0, i32 1
  br label %start
start:
  %entries = load ptr, ptr %view
  %mask = load i64, ptr %view.mask.p
  %no_table = icmp eq ptr %entries, null
  br i1 %no_table, label %grow, label %probe.start, !prof !0
probe.start:
  %pos0 = and i64 %hash, %mask
  br label %probe
probe:
  %pos = phi i64 [ %pos0, %probe.start ], [ %pos.next, %mismatch ]
  %off = mul i64 %pos, %entry_size
  %e = getelementptr inbounds i8, ptr %entries, i64 %off
  %etag = load i64, ptr %e
  %same_tag = icmp eq i64 %etag, %tag
  br i1 %same_tag, label %compare, label %not_same, !prof !1
not_same:
  %empty = icmp eq i64 %etag, 0
  br i1 %empty, label %insert, label %mismatch
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
  ret ptr %e
mismatch:
  %pos.inc = add i64 %pos, 1
  %pos.next = and i64 %pos.inc, %mask
  br label %probe
insert:
  store i64 %tag, ptr %e
  %dkey = getelementptr inbounds i8, ptr %e, i64 8
  %key_bytes = shl i64 %key_words, 3
  call void @llvm.memcpy.p0.p0.i64(ptr %dkey, ptr %key, i64 %key_bytes, i1 false)
  %size.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 2
  %size = load i64, ptr %size.p
  %size.new = add i64 %size, 1
  store i64 %size.new, ptr %size.p
  %size2 = shl i64 %size.new, 1
  %cap = add i64 %mask, 1
  %full = icmp ugt i64 %size2, %cap
  br i1 %full, label %grow, label %found.new, !prof !0
found.new:
  ret ptr %e
grow:
  %cap.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 1
  %cap.now = load i64, ptr %cap.p
  %doubled = shl i64 %cap.now, 1
  %was_empty = icmp eq i64 %cap.now, 0
  %new_cap = select i1 %was_empty, i64 1024, i64 %doubled
  %rc = call i32 @gz_ht_rehash(ptr %ht, i64 %new_cap, i64 %entry_size)
  %grow_failed = icmp ne i32 %rc, 0
  br i1 %grow_failed, label %oom, label %refresh
refresh:
  call void @gz_ht_view(ptr %ht, ptr %view)
  br label %start
oom:
  ret ptr null
}

; The entry of %key, or null when the table holds none (a probe that inserts nothing: the
; stream side of a lookup join).
define linkonce_odr ptr @gz_ht_find(ptr %view, i64 %hash, ptr %key, i64 %key_words, i64 %entry_size) alwaysinline {
entry:
  %tag = or i64 %hash, -9223372036854775808
  %entries = load ptr, ptr %view
  %mask.p = getelementptr inbounds { ptr, i64 }, ptr %view, i32 0, i32 1
  %mask = load i64, ptr %mask.p
  %no_table = icmp eq ptr %entries, null
  br i1 %no_table, label %absent, label %probe.start
probe.start:
  %pos0 = and i64 %hash, %mask
  br label %probe
probe:
  %pos = phi i64 [ %pos0, %probe.start ], [ %pos.next, %mismatch ]
  %off = mul i64 %pos, %entry_size
  %e = getelementptr inbounds i8, ptr %entries, i64 %off
  %etag = load i64, ptr %e
  %same_tag = icmp eq i64 %etag, %tag
  br i1 %same_tag, label %compare, label %not_same
not_same:
  %empty = icmp eq i64 %etag, 0
  br i1 %empty, label %absent, label %mismatch
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
  ret ptr %e
mismatch:
  %pos.inc = add i64 %pos, 1
  %pos.next = and i64 %pos.inc, %mask
  br label %probe
absent:
  ret ptr null
}

; Copy { entries, capacity - 1 } of the table header into %view.
define linkonce_odr void @gz_ht_view(ptr %ht, ptr %view) alwaysinline {
entry:
  %entries.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 0
  %entries = load ptr, ptr %entries.p
  store ptr %entries, ptr %view
  %cap.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 1
  %cap = load i64, ptr %cap.p
  %mask = sub i64 %cap, 1
  %mask.p = getelementptr inbounds { ptr, i64 }, ptr %view, i32 0, i32 1
  store i64 %mask, ptr %mask.p
  ret void
}

; Entry i of the table, or null past the end (used by the generated emit loops).
define linkonce_odr ptr @gz_ht_entry(ptr %ht, i64 %i, i64 %entry_size) alwaysinline {
entry:
  %entries.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 0
  %entries = load ptr, ptr %entries.p
  %off = mul i64 %i, %entry_size
  %e = getelementptr inbounds i8, ptr %entries, i64 %off
  ret ptr %e
}

define linkonce_odr i64 @gz_ht_capacity(ptr %ht) alwaysinline {
entry:
  %cap.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 1
  %cap = load i64, ptr %cap.p
  ret i64 %cap
}

; 64-bit mixing of one more key word into a running hash (splitmix64 style).
define linkonce_odr i64 @gz_hash_mix(i64 %h, i64 %w) alwaysinline {
entry:
  %x = xor i64 %h, %w
  %m = mul i64 %x, -4658895280553007687
  %s = lshr i64 %m, 31
  %r = xor i64 %m, %s
  ret i64 %r
}

define linkonce_odr i64 @gz_hash_finish(i64 %h) alwaysinline {
entry:
  %s1 = lshr i64 %h, 29
  %x1 = xor i64 %h, %s1
  %m = mul i64 %x1, -7723592293110705685
  %s2 = lshr i64 %m, 32
  %r = xor i64 %m, %s2
  ret i64 %r
}

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

!0 = !{!"branch_weights", i32 1, i32 1000}
!1 = !{!"branch_weights", i32 1000, i32 1}

; Ask the kernel for transparent huge pages (Linux's MADV_HUGEPAGE, 14, which THP's "madvise"
; mode needs) over the whole 4 KiB pages of a fresh allocation of at least 16 MiB: a table of
; tens of MiB probed at random misses the TLB on almost every probe with 4 KiB pages and faults
; each page in on its first write (state-size at 10M keys: docs/benchmarks.md, "High-cardinality
; grouping"; a 48 MiB table touched at random: 115 -> 45 ms, "Skew and selectivity"). Only a
; hint: where THP is off, or on systems without this advice, madvise fails and nothing changes. Smaller
; tables stay on 4 KiB pages: the L2 TLB maps ~8 MiB of them, and a huge page faulted in (zeroed,
; perhaps compacted for) cost more than it saved on a 6 MiB table (state-size at 100K keys).
define linkonce_odr void @gz_advise_huge(ptr %p, i64 %bytes) {
entry:
  %big = icmp uge i64 %bytes, 16777216
  br i1 %big, label %advise, label %done
advise:
  %addr = ptrtoint ptr %p to i64
  %up = add i64 %addr, 4095
  %start = and i64 %up, -4096
  %end = add i64 %addr, %bytes
  %end.down = and i64 %end, -4096
  %len = sub i64 %end.down, %start
  %start.p = inttoptr i64 %start to ptr
  %rc = call i32 @madvise(ptr %start.p, i64 %len, i32 14)
  br label %done
done:
  ret void
}
