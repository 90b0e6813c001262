; grizzly-py runtime: the window directory, one hash table per open window (Grizzly section 4.2).
;
; Linked into every compiled module. The directory header lives in the pipeline's state block:
;   %gz.dir = { ptr slots, i64 length, i64 capacity }
; Each slot is { i64 window_start, %gz.ht table }: 32 bytes. Records of one window go to its
; table, so a window's keys share cache-resident state and firing a window drops its table
; whole. Windows are few (those not yet complete), so the directory is searched linearly, and
; only when a record belongs to another window than the one before it.

%gz.dir = type { ptr, i64, i64 }
%gz.slot = type { i64, %gz.ht }

declare ptr @realloc(ptr, i64)

; The table of window %ws, created empty if the directory has none. Null when out of memory.
; The returned pointer stays valid until the next call (the directory may move when it grows).
define linkonce_odr ptr @gz_win_table(ptr %dir, i64 %ws) noinline {
entry:
  %slots.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 0
  %slots = load ptr, ptr %slots.p
  %len.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 1
  %len = load i64, ptr %len.p
  br label %search
search:
  %i = phi i64 [ 0, %entry ], [ %i.next, %next ]
  %done = icmp eq i64 %i, %len
  br i1 %done, label %append, label %check
check:
  %slot = getelementptr inbounds %gz.slot, ptr %slots, i64 %i
  %sws = load i64, ptr %slot
  %hit = icmp eq i64 %sws, %ws
  %i.next = add i64 %i, 1
  br i1 %hit, label %found, label %next
next:
  br label %search
found:
  %table = getelementptr inbounds %gz.slot, ptr %slot, i32 0, i32 1
  ret ptr %table
append:
  %cap.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 2
  %cap = load i64, ptr %cap.p
  %full = icmp eq i64 %len, %cap
  br i1 %full, label %grow, label %place
grow:
  %doubled = shl i64 %cap, 1
  %was_empty = icmp eq i64 %cap, 0
  %new_cap = select i1 %was_empty, i64 8, i64 %doubled
  %bytes = mul i64 %new_cap, 32
  %moved = call ptr @realloc(ptr %slots, i64 %bytes)
  %oom = icmp eq ptr %moved, null
  br i1 %oom, label %fail, label %grown
fail:
  ret ptr null
grown:
  store ptr %moved, ptr %slots.p
  store i64 %new_cap, ptr %cap.p
  br label %place
place:
  %base = load ptr, ptr %slots.p
  %new = getelementptr inbounds %gz.slot, ptr %base, i64 %len
  store i64 %ws, ptr %new
  %new.table = getelementptr inbounds %gz.slot, ptr %new, i32 0, i32 1
  call void @llvm.memset.p0.i64(ptr %new.table, i8 0, i64 24, i1 false)
  %len.new = add i64 %len, 1
  store i64 %len.new, ptr %len.p
  ret ptr %new.table
}

; Remove slot %i (its table must already be freed), keeping the others in order.
define linkonce_odr void @gz_win_remove(ptr %dir, i64 %i) {
entry:
  %slots.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 0
  %slots = load ptr, ptr %slots.p
  %len.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 1
  %len = load i64, ptr %len.p
  %dst = getelementptr inbounds %gz.slot, ptr %slots, i64 %i
  %i1 = add i64 %i, 1
  %src = getelementptr inbounds %gz.slot, ptr %slots, i64 %i1
  %rest = sub i64 %len, %i1
  %bytes = mul i64 %rest, 32
  call void @llvm.memmove.p0.p0.i64(ptr %dst, ptr %src, i64 %bytes, i1 false)
  %len.new = sub i64 %len, 1
  store i64 %len.new, ptr %len.p
  ret void
}

; Free every table and the directory itself.
define linkonce_odr void @gz_win_free(ptr %dir) {
entry:
  %slots.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 0
  %slots = load ptr, ptr %slots.p
  %len.p = getelementptr inbounds %gz.dir, ptr %dir, i32 0, i32 1
  %len = load i64, ptr %len.p
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %body ]
  %done = icmp eq i64 %i, %len
  br i1 %done, label %exit, label %body
body:
  %table = getelementptr inbounds %gz.slot, ptr %slots, i64 %i, i32 1
  call void @gz_ht_free(ptr %table)
  %i.next = add i64 %i, 1
  br label %loop
exit:
  call void @free(ptr %slots)
  call void @llvm.memset.p0.i64(ptr %dir, i8 0, i64 24, i1 false)
  ret void
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
