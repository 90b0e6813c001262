; grizzly-py runtime: dense placement of hash-table entries (the optimized variant's value-range
; speculation, Grizzly section 6.2.2) and the migrations between placements.
;
; A table in dense placement has the usual header and entry layout (hashtable.ll), and every
; entry carries its real tag (hash | 1<<63), but the entry of key word k sits at index k - lo
; (one key word, never null, lo <= k < lo + capacity). Code that reads a table entry by entry
; (triggers, merges, the engine's readers) cannot tell the placements apart; only lookups differ,
; and those belong to one kernel variant. Migrating a window directory between placements moves
; entries, so it runs only while no kernel uses that state block.

; Allocate the entries of an empty table in dense placement: %cap zeroed entries. Returns the
; entries, or null when out of memory. (The caller refreshes its view of the table: a view passed
; in here would escape, and the kernel could not keep it in registers.)
define linkonce_odr ptr @gz_ht_dense_alloc(ptr %ht, i64 %cap, i64 %entry_size) noinline {
entry:
  %new = call ptr @gz_calloc_table(i64 %cap, i64 %entry_size)
  %oom = icmp eq ptr %new, null
  br i1 %oom, label %fail, label %ok
fail:
  ret ptr null
ok:
  %entries.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 0
  store ptr %new, ptr %entries.p
  %cap.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 1
  store i64 %cap, ptr %cap.p
  %size.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 2
  store i64 0, ptr %size.p
  ret ptr %new
}

; Whether every live entry of the table has a non-null key word in [lo, lo + cap).
define linkonce_odr i1 @gz_ht_dense_fits(ptr %ht, i64 %lo, i64 %cap, i64 %entry_size) {
entry:
  %entries.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 0
  %entries = load ptr, ptr %entries.p
  %old_cap.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 1
  %old_cap = load i64, ptr %old_cap.p
  %empty = icmp eq i64 %old_cap, 0
  br i1 %empty, label %yes, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %next ]
  %off = mul i64 %i, %entry_size
  %e = getelementptr inbounds i8, ptr %entries, i64 %off
  %tag = load i64, ptr %e
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %check, label %next
check:
  ; key null flags ride in tag bits 48..62: a null key cannot be placed densely
  %nulls = and i64 %tag, 9223090561878065152
  %has_null = icmp ne i64 %nulls, 0
  %k.p = getelementptr inbounds i8, ptr %e, i64 8
  %k = load i64, ptr %k.p
  %d = sub i64 %k, %lo
  %outside = icmp uge i64 %d, %cap
  %bad = or i1 %has_null, %outside
  br i1 %bad, label %no, label %next
next:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %old_cap
  br i1 %more, label %loop, label %yes
yes:
  ret i1 true
no:
  ret i1 false
}

; Move the table's entries to dense placement (they must fit: gz_ht_dense_fits). 0, or 1 when
; out of memory (the table is then unchanged).
define linkonce_odr i32 @gz_ht_place_dense(ptr %ht, i64 %lo, i64 %cap, i64 %entry_size) {
entry:
  %entries.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 0
  %old = load ptr, ptr %entries.p
  %old_cap.p = getelementptr inbounds %gz.ht, ptr %ht, i32 0, i32 1
  %old_cap = load i64, ptr %old_cap.p
  %never = icmp eq i64 %old_cap, 0
  br i1 %never, label %done, label %alloc  ; an empty table is allocated by the first insert
alloc:
  %new = call ptr @gz_calloc_table(i64 %cap, i64 %entry_size)
  %oom = icmp eq ptr %new, null
  br i1 %oom, label %fail, label %loop
fail:
  ret i32 1
loop:
  %i = phi i64 [ 0, %alloc ], [ %i.next, %next ]
  %off = mul i64 %i, %entry_size
  %src = getelementptr inbounds i8, ptr %old, i64 %off
  %tag = load i64, ptr %src
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %copy, label %next
copy:
  %k.p = getelementptr inbounds i8, ptr %src, i64 8
  %k = load i64, ptr %k.p
  %d = sub i64 %k, %lo
  %doff = mul i64 %d, %entry_size
  %dst = getelementptr inbounds i8, ptr %new, i64 %doff
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %src, i64 %entry_size, i1 false)
  br label %next
next:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %old_cap
  br i1 %more, label %loop, label %swap
swap:
  call void @free(ptr %old)
  store ptr %new, ptr %entries.p
  store i64 %cap, ptr %old_cap.p
  br label %done
done:
  ret i32 0
}

; Every table of the window directory to dense placement for keys in [lo, lo + cap).
; 0: done; 2: some key does not fit (nothing moved); 1: out of memory (some tables may have
; moved: gz_dir_place_hashed repairs any mix of placements).
define linkonce_odr i32 @gz_dir_place_dense(ptr %dir, i64 %lo, i64 %cap, i64 %entry_size) {
entry:
  %slots.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 0
  %slots = load ptr, ptr %slots.p
  %len.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 1
  %len = load i64, ptr %len.p
  %none = icmp eq i64 %len, 0
  br i1 %none, label %ok, label %check
check:
  %i = phi i64 [ 0, %entry ], [ %i.next, %check.next ]
  %t = getelementptr inbounds %gz.slot, ptr %slots, i64 %i, i32 1
  %fits = call i1 @gz_ht_dense_fits(ptr %t, i64 %lo, i64 %cap, i64 %entry_size)
  br i1 %fits, label %check.next, label %misfit
check.next:
  %i.next = add i64 %i, 1
  %check.more = icmp ult i64 %i.next, %len
  br i1 %check.more, label %check, label %move
misfit:
  ret i32 2
move:
  %j = phi i64 [ 0, %check.next ], [ %j.next, %move.next ]
  %u = getelementptr inbounds %gz.slot, ptr %slots, i64 %j, i32 1
  %rc = call i32 @gz_ht_place_dense(ptr %u, i64 %lo, i64 %cap, i64 %entry_size)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %move.next
move.next:
  %j.next = add i64 %j, 1
  %move.more = icmp ult i64 %j.next, %len
  br i1 %move.more, label %move, label %ok
oom:
  ret i32 1
ok:
  ret i32 0
}

; Every table of the window directory to hashed placement (from either placement), with room
; for the generic upsert's load limit (at most half full). 0, or 1 when out of memory.
define linkonce_odr i32 @gz_dir_place_hashed(ptr %dir, i64 %entry_size) {
entry:
  %slots.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 0
  %slots = load ptr, ptr %slots.p
  %len.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 1
  %len = load i64, ptr %len.p
  %none = icmp eq i64 %len, 0
  br i1 %none, label %ok, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %next ]
  %t = getelementptr inbounds %gz.slot, ptr %slots, i64 %i, i32 1
  %cap = call i64 @gz_ht_capacity(ptr %t)
  %empty = icmp eq i64 %cap, 0
  br i1 %empty, label %next, label %rehash
rehash:
  %size.p = getelementptr inbounds %gz.ht, ptr %t, i32 0, i32 2
  %size = load i64, ptr %size.p
  %need = shl i64 %size, 1
  %want0 = call i64 @llvm.umax.i64(i64 %need, i64 1024)
  %want1 = sub i64 %want0, 1
  %lz = call i64 @llvm.ctlz.i64(i64 %want1, i1 false)
  %bits = sub i64 64, %lz
  %want = shl i64 1, %bits  ; the power of two >= max(2 * size, 1024)
  %rc = call i32 @gz_ht_rehash(ptr %t, i64 %want, i64 %entry_size)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %next
next:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %len
  br i1 %more, label %loop, label %ok
oom:
  ret i32 1
ok:
  ret i32 0
}

declare i64 @llvm.ctlz.i64(i64, i1)
; (llvm.umax.i64 is declared in vectors.ll: runtime files are linked as one module)
