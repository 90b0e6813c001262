; grizzly-py runtime: growable vectors of i64 words for holistic aggregates (median, mode,
; count_distinct, top_k), which keep every value of a (window, key) until the window fires.
;
; Linked into every compiled module. A vector is %gz.vec = { ptr data, i64 length, i64 capacity },
; stored inside the hash-table entry (zeroed = empty). Floats are stored as order-preserving
; keys (see gz_f64_key), so one integer sort serves every type: numbers ascending, -0.0 equal
; to 0.0, every NaN one value after +inf.

%gz.vec = type { ptr, i64, i64 }

declare void @qsort(ptr, i64, i64, ptr)

; Append %x; 1 when out of memory. A full vector doubles its capacity (at least 8 words).
define linkonce_odr i32 @gz_vec_push(ptr %v, i64 %x) alwaysinline {
entry:
  %rc = call i32 @gz_vec_push_growing(ptr %v, i64 %x, i64 1)
  ret i32 %rc
}

; Append %x to a holistic aggregate's value vector: as gz_vec_push, but a vector of 32 to 127
; words grows x4 (8, 16, 32, 128, then x2), so that a group of 100 values is copied into 4
; allocations, not 5: realloc and its copies were a third of a median window's time (perf,
; streambox median-per-key). Groups of up to 32 values (most of count_distinct's in Nexmark)
; grow as before; the largest waste is 4x a group of 33 values' words (2x elsewhere).
define linkonce_odr i32 @gz_vec_push_value(ptr %v, i64 %x) alwaysinline {
entry:
  %rc = call i32 @gz_vec_push_growing(ptr %v, i64 %x, i64 2)
  ret i32 %rc
}

; Append %x; a full vector's capacity grows by 2^%young_shift from 32 to 127 words, else by 2.
define linkonce_odr i32 @gz_vec_push_growing(ptr %v, i64 %x, i64 %young_shift) alwaysinline {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %cap.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 2
  %cap = load i64, ptr %cap.p
  %full = icmp eq i64 %len, %cap
  br i1 %full, label %grow, label %store
grow:
  %from32 = sub i64 %cap, 32
  %young = icmp ult i64 %from32, 96
  %shift = select i1 %young, i64 %young_shift, i64 1
  %target = shl i64 %cap, %shift
  %need = add i64 %len, 1
  %rc = call i32 @gz_vec_grow(ptr %v, i64 %need, i64 %target)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %store
oom:
  ret i32 1
store:
  %data = load ptr, ptr %v
  %slot = getelementptr inbounds i64, ptr %data, i64 %len
  store i64 %x, ptr %slot
  %len.new = add i64 %len, 1
  store i64 %len.new, ptr %len.p
  ret i32 0
}

; Make room for %more words; 1 when out of memory. The capacity at least doubles.
define linkonce_odr i32 @gz_vec_reserve(ptr %v, i64 %more) noinline {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %cap.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 2
  %cap = load i64, ptr %cap.p
  %need = add i64 %len, %more
  %enough = icmp ule i64 %need, %cap
  br i1 %enough, label %ok, label %grow
grow:
  %doubled = shl i64 %cap, 1
  %rc = call i32 @gz_vec_grow(ptr %v, i64 %need, i64 %doubled)
  ret i32 %rc
ok:
  ret i32 0
}

; Reallocate to a capacity of max(%target, %need, 8) words; 1 when out of memory.
define linkonce_odr i32 @gz_vec_grow(ptr %v, i64 %need, i64 %target) noinline {
entry:
  %cap.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 2
  %at_least = call i64 @llvm.umax.i64(i64 %target, i64 %need)
  %new_cap = call i64 @llvm.umax.i64(i64 %at_least, i64 8)
  %bytes = shl i64 %new_cap, 3
  %data = load ptr, ptr %v
  %moved = call ptr @realloc(ptr %data, i64 %bytes)
  %oom = icmp eq ptr %moved, null
  br i1 %oom, label %fail, label %done
fail:
  ret i32 1
done:
  store ptr %moved, ptr %v
  store i64 %new_cap, ptr %cap.p
  ret i32 0
}

; Append every word of %src to %dst; 1 when out of memory.
define linkonce_odr i32 @gz_vec_extend(ptr %dst, ptr %src) {
entry:
  %slen.p = getelementptr inbounds %gz.vec, ptr %src, i32 0, i32 1
  %slen = load i64, ptr %slen.p
  %rc = call i32 @gz_vec_reserve(ptr %dst, i64 %slen)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %copy
oom:
  ret i32 1
copy:
  %ddata = load ptr, ptr %dst
  %dlen.p = getelementptr inbounds %gz.vec, ptr %dst, i32 0, i32 1
  %dlen = load i64, ptr %dlen.p
  %at = getelementptr inbounds i64, ptr %ddata, i64 %dlen
  %sdata = load ptr, ptr %src
  %bytes = shl i64 %slen, 3
  call void @llvm.memmove.p0.p0.i64(ptr %at, ptr %sdata, i64 %bytes, i1 false)
  %dlen.new = add i64 %dlen, %slen
  store i64 %dlen.new, ptr %dlen.p
  ret i32 0
}

define linkonce_odr void @gz_vec_free(ptr %v) {
entry:
  %data = load ptr, ptr %v
  call void @free(ptr %data)
  call void @llvm.memset.p0.i64(ptr %v, i8 0, i64 24, i1 false)
  ret void
}

; The bytes a vector's data holds (8 per word of capacity; 0 for an empty or inline vector).
define linkonce_odr i64 @gz_vec_bytes(ptr %v) {
entry:
  %cap.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 2
  %cap = load i64, ptr %cap.p
  %bytes = shl i64 %cap, 3
  ret i64 %bytes
}

define linkonce_odr i32 @gz_cmp_i64(ptr %a, ptr %b) {
entry:
  %x = load i64, ptr %a
  %y = load i64, ptr %b
  %gt = icmp sgt i64 %x, %y
  %lt = icmp slt i64 %x, %y
  %g = zext i1 %gt to i32
  %l = zext i1 %lt to i32
  %r = sub i32 %g, %l
  ret i32 %r
}

; Whether data[0, len) is ascending (values that arrived in order, as sort grouping delivers
; them with the key, need no sort or selection); an unsorted array leaves at its first descent.
define linkonce_odr i1 @gz_is_ascending(ptr %data, i64 %len) {
entry:
  %some = icmp ugt i64 %len, 1
  br i1 %some, label %check, label %yes
check:
  %i = phi i64 [ 1, %entry ], [ %i.next, %next ]
  %prev.i = sub i64 %i, 1
  %prev.p = getelementptr inbounds i64, ptr %data, i64 %prev.i
  %prev = load i64, ptr %prev.p
  %cur.p = getelementptr inbounds i64, ptr %data, i64 %i
  %cur = load i64, ptr %cur.p
  %descent = icmp sgt i64 %prev, %cur
  br i1 %descent, label %no, label %next
next:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %len
  br i1 %more, label %check, label %yes
yes:
  ret i1 true
no:
  ret i1 false
}

define linkonce_odr void @gz_vec_sort(ptr %v) {
entry:
  %data = load ptr, ptr %v
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %sorted = call i1 @gz_is_ascending(ptr %data, i64 %len)
  br i1 %sorted, label %done, label %sort
sort:
  call void @qsort(ptr %data, i64 %len, i64 8, ptr @gz_cmp_i64)
  br label %done
done:
  ret void
}

; The order-preserving key of a double (-0.0 as 0.0, every NaN the same, above +inf) ...
define linkonce_odr i64 @gz_f64_key(double %x) alwaysinline {
entry:
  %zero = fcmp oeq double %x, 0.0
  %z = select i1 %zero, double 0.0, double %x
  %bits = bitcast double %z to i64
  %nan = fcmp uno double %x, 0.0
  %b = select i1 %nan, i64 9221120237041090560, i64 %bits
  %neg = icmp slt i64 %b, 0
  %flipped = xor i64 %b, 9223372036854775807
  %key = select i1 %neg, i64 %flipped, i64 %b
  ret i64 %key
}

; ... and back.
define linkonce_odr double @gz_f64_of_key(i64 %key) alwaysinline {
entry:
  %neg = icmp slt i64 %key, 0
  %flipped = xor i64 %key, 9223372036854775807
  %bits = select i1 %neg, i64 %flipped, i64 %key
  %x = bitcast i64 %bits to double
  ret double %x
}

define linkonce_odr double @gz_key_value(i64 %key, i1 %is_float) alwaysinline {
entry:
  br i1 %is_float, label %float, label %int
float:
  %f = call double @gz_f64_of_key(i64 %key)
  ret double %f
int:
  %i = sitofp i64 %key to double
  ret double %i
}

; Rearranges data[0, len) so that data[k] holds the value a full sort would put there, with
; values <= it before and >= it after: quickselect, O(len) on average where a sort is
; O(len log len), with the median of data[lo], data[k] and data[hi] as pivot. Each pass is a
; branch-free Lomuto partition (every value is swapped with the boundary's, which moves on when
; the value is below the pivot): the groups a window fires hold tens to thousands of values in
; no order, where Hoare's scans mispredicted about every other compare (2x the time). A pass
; also counts the pivot's copies: when there are any and k lies above the pivot, a second
; branch-free pass gathers them, so that many equal values (all equal, few distinct) end the
; search instead of shrinking the range by one value per pass. Values that are already
; ascending (gz_is_ascending) are left as they are.
define linkonce_odr void @gz_select_kth(ptr %data, i64 %len, i64 %k) {
entry:
  %sorted = call i1 @gz_is_ascending(ptr %data, i64 %len)
  br i1 %sorted, label %done, label %start
start:
  %hi0 = sub i64 %len, 1
  br label %range
range:
  %lo = phi i64 [ 0, %start ], [ %lo, %left ], [ %above, %right.plain ], [ %eq.end, %right.past ]
  %hi = phi i64 [ %hi0, %start ], [ %below, %left ], [ %hi, %right.plain ], [ %hi, %right.past ]
  %open = icmp slt i64 %lo, %hi
  br i1 %open, label %pivot, label %done
pivot:
  %a.p = getelementptr inbounds i64, ptr %data, i64 %lo
  %a = load i64, ptr %a.p
  %b.p = getelementptr inbounds i64, ptr %data, i64 %k
  %b = load i64, ptr %b.p
  %z.p = getelementptr inbounds i64, ptr %data, i64 %hi
  %z = load i64, ptr %z.p
  ; median of three: max(min(a, b), min(max(a, b), z)), moved to data[hi]
  %ab.lt = icmp slt i64 %a, %b
  %ab.min = select i1 %ab.lt, i64 %a, i64 %b
  %ab.max = select i1 %ab.lt, i64 %b, i64 %a
  %mz.lt = icmp slt i64 %ab.max, %z
  %mz.min = select i1 %mz.lt, i64 %ab.max, i64 %z
  %p.lt = icmp slt i64 %ab.min, %mz.min
  %p = select i1 %p.lt, i64 %mz.min, i64 %ab.min
  %p.is.b = icmp eq i64 %p, %b
  %p.is.a = icmp eq i64 %p, %a
  %a.or.z = select i1 %p.is.a, ptr %a.p, ptr %z.p
  %p.p = select i1 %p.is.b, ptr %b.p, ptr %a.or.z
  store i64 %z, ptr %p.p
  store i64 %p, ptr %z.p
  br label %part
part:
  ; [lo, j) < p <= [j, i)
  %i = phi i64 [ %lo, %pivot ], [ %i.next, %part ]
  %j = phi i64 [ %lo, %pivot ], [ %j.next, %part ]
  %eq = phi i64 [ 0, %pivot ], [ %eq.next, %part ]
  %x.p = getelementptr inbounds i64, ptr %data, i64 %i
  %x = load i64, ptr %x.p
  %y.p = getelementptr inbounds i64, ptr %data, i64 %j
  %y = load i64, ptr %y.p
  store i64 %y, ptr %x.p
  store i64 %x, ptr %y.p
  %lt = icmp slt i64 %x, %p
  %lt.w = zext i1 %lt to i64
  %j.next = add i64 %j, %lt.w
  %same = icmp eq i64 %x, %p
  %same.w = zext i1 %same to i64
  %eq.next = add i64 %eq, %same.w
  %i.next = add i64 %i, 1
  %part.more = icmp slt i64 %i.next, %hi
  br i1 %part.more, label %part, label %placed
placed:
  ; the pivot goes to its place: [lo, j) < p = data[j] <= (j, hi]
  %q.p = getelementptr inbounds i64, ptr %data, i64 %j.next
  %q = load i64, ptr %q.p
  store i64 %q, ptr %z.p
  store i64 %p, ptr %q.p
  %below = sub i64 %j.next, 1
  %above = add i64 %j.next, 1
  %is.left = icmp slt i64 %k, %j.next
  br i1 %is.left, label %left, label %not.left
left:
  br label %range
not.left:
  %is.here = icmp eq i64 %k, %j.next
  br i1 %is.here, label %done, label %right
right:
  %copies = icmp ne i64 %eq, 0
  br i1 %copies, label %gather, label %right.plain
right.plain:
  br label %range
gather:
  ; the copies of p in (j, hi] move next to it: [j, e) = p < [e, hi]
  %gi = phi i64 [ %above, %right ], [ %gi.next, %gather ]
  %ge = phi i64 [ %above, %right ], [ %ge.next, %gather ]
  %gx.p = getelementptr inbounds i64, ptr %data, i64 %gi
  %gx = load i64, ptr %gx.p
  %gy.p = getelementptr inbounds i64, ptr %data, i64 %ge
  %gy = load i64, ptr %gy.p
  store i64 %gy, ptr %gx.p
  store i64 %gx, ptr %gy.p
  %g.same = icmp eq i64 %gx, %p
  %g.same.w = zext i1 %g.same to i64
  %ge.next = add i64 %ge, %g.same.w
  %gi.next = add i64 %gi, 1
  %g.more = icmp sle i64 %gi.next, %hi
  br i1 %g.more, label %gather, label %gathered
gathered:
  %eq.end = add i64 %ge.next, 0
  %in.copies = icmp slt i64 %k, %eq.end
  br i1 %in.copies, label %done, label %right.past
right.past:
  br label %range
done:
  ret void
}

; The largest of data[from, to) (to > from).
define linkonce_odr i64 @gz_max_of(ptr %data, i64 %from, i64 %to) {
entry:
  %first.p = getelementptr inbounds i64, ptr %data, i64 %from
  %first = load i64, ptr %first.p
  %start = add i64 %from, 1
  br label %loop
loop:
  %i = phi i64 [ %start, %entry ], [ %i.next, %body ]
  %m = phi i64 [ %first, %entry ], [ %m.next, %body ]
  %more = icmp slt i64 %i, %to
  br i1 %more, label %body, label %done
body:
  %p = getelementptr inbounds i64, ptr %data, i64 %i
  %x = load i64, ptr %p
  %gt = icmp sgt i64 %x, %m
  %m.next = select i1 %gt, i64 %x, i64 %m
  %i.next = add i64 %i, 1
  br label %loop
done:
  ret i64 %m
}

; numpy.median of the vector's values (reorders them: gz_select_kth): the middle value, or the
; mean of the two middle values; NaN when a value is NaN; 0 for an empty vector (the caller
; emits null).
define linkonce_odr double @gz_vec_median(ptr %v, i1 %is_float) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %empty = icmp eq i64 %len, 0
  br i1 %empty, label %none, label %some
none:
  ret double 0.0
some:
  %data = load ptr, ptr %v
  %half = lshr i64 %len, 1
  call void @gz_select_kth(ptr %data, i64 %len, i64 %half)
  ; the NaN key is the largest: a NaN, if any, is among data[half, len)
  %top = call i64 @gz_max_of(ptr %data, i64 %half, i64 %len)
  %top.nan = icmp eq i64 %top, 9221120237041090560
  %has.nan = and i1 %is_float, %top.nan
  br i1 %has.nan, label %nan, label %middle
nan:
  ret double 0x7FF8000000000000
middle:
  %hi.p = getelementptr inbounds i64, ptr %data, i64 %half
  %hi = load i64, ptr %hi.p
  %hi.v = call double @gz_key_value(i64 %hi, i1 %is_float)
  %odd.bit = and i64 %len, 1
  %odd = icmp eq i64 %odd.bit, 1
  br i1 %odd, label %one, label %two
one:
  ret double %hi.v
two:
  ; the lower middle value: the largest of data[0, half), all <= data[half]
  %lo = call i64 @gz_max_of(ptr %data, i64 0, i64 %half)
  %lo.v = call double @gz_key_value(i64 %lo, i1 %is_float)
  %mean = call double @gz_middle_mean(double %lo.v, double %hi.v)
  ret double %mean
}

; The median of an even count: the mean of the two middle values %lo <= %hi, as numpy's, except
; that two finite values whose sum overflows (1e308 and 1e308) are halved first (no inf).
define linkonce_odr double @gz_middle_mean(double %lo.v, double %hi.v) alwaysinline {
entry:
  %sum = fadd double %lo.v, %hi.v
  %mean = fmul double %sum, 5.000000e-01
  %mean.z = fsub double %mean, %mean
  %mean.nf = fcmp uno double %mean.z, 0.0
  %mean.num = fcmp ord double %mean, 0.0
  %mean.inf = and i1 %mean.nf, %mean.num
  %lo.z = fsub double %lo.v, %lo.v
  %hi.z = fsub double %hi.v, %hi.v
  %both.z = fadd double %lo.z, %hi.z
  %both.fin = fcmp oeq double %both.z, 0.0
  %over = and i1 %mean.inf, %both.fin
  %lo.h = fmul double %lo.v, 5.000000e-01
  %hi.h = fmul double %hi.v, 5.000000e-01
  %halves = fadd double %lo.h, %hi.h
  %out = select i1 %over, double %halves, double %mean
  ret double %out
}

; The most frequent value (ties: the smallest), as a key (0 when empty), without sorting: mode's
; finish, for every group a window fires. qsort's comparator call per comparison made it the
; firing's largest cost (5x a median's selection). The vector is left as it is:
; - values in ascending order (sort grouping keeps them so) are counted run by run;
; - others through a scratch open-addressing table of 2^k >= 2 * length [key, count] slots (a
;   count of 0 marks a free slot), on the stack up to 1,024 slots (16 KiB), else malloc'd
;   and freed before it returns; the best (count, smallest key) is kept as counts grow, so the
;   table is never scanned. qsort and a run count only when a heap table cannot be allocated.
define linkonce_odr i64 @gz_vec_mode(ptr %v) {
entry:
  %stack = alloca [2048 x i64], align 16
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %empty = icmp eq i64 %len, 0
  br i1 %empty, label %none, label %some
none:
  ret i64 0
some:
  %data = load ptr, ptr %v
  %ascending = call i1 @gz_is_ascending(ptr %data, i64 %len)
  br i1 %ascending, label %runs, label %hashed
sorted:
  call void @gz_vec_sort(ptr %v)
  br label %runs
runs:
  %best = call i64 @gz_mode_of_runs(ptr %data, i64 %len)
  ret i64 %best
hashed:
  ; 2^bits >= 2 * len slots (len < 2^(64 - ctlz)), at most half of them used
  %lz = call i64 @llvm.ctlz.i64(i64 %len, i1 true)
  %bits = sub i64 65, %lz
  %slots = shl i64 1, %bits
  %mask = sub i64 %slots, 1
  %shift = sub i64 64, %bits
  %bytes = shl i64 %slots, 4
  %fits = icmp ule i64 %slots, 1024
  br i1 %fits, label %fill, label %heap
heap:
  %heap.table = call ptr @realloc(ptr null, i64 %bytes)
  %oom = icmp eq ptr %heap.table, null
  br i1 %oom, label %sorted, label %fill
fill:
  %table = phi ptr [ %stack, %hashed ], [ %heap.table, %heap ]
  ; the counts, one word after each key: zeroed (every slot free)
  %counts = getelementptr inbounds i64, ptr %table, i64 %slots
  %count.bytes = shl i64 %slots, 3
  call void @llvm.memset.p0.i64(ptr %counts, i8 0, i64 %count.bytes, i1 false)
  br label %h.loop
h.loop:
  %k = phi i64 [ 0, %fill ], [ %k.next, %h.counted ]
  %best.key = phi i64 [ 0, %fill ], [ %best.key.next, %h.counted ]
  %best.count = phi i64 [ 0, %fill ], [ %best.count.next, %h.counted ]
  %hdone = icmp uge i64 %k, %len
  br i1 %hdone, label %h.exit, label %h.load
h.load:
  %hx.p = getelementptr inbounds i64, ptr %data, i64 %k
  %hx = load i64, ptr %hx.p
  ; Fibonacci hashing: the top bits of the product spread small integers and float keys
  %mixed = mul i64 %hx, -7046029254386353131
  %slot0 = lshr i64 %mixed, %shift
  br label %h.probe
h.probe:
  %s = phi i64 [ %slot0, %h.load ], [ %s.next, %h.taken ]
  %cp = getelementptr inbounds i64, ptr %counts, i64 %s
  %c = load i64, ptr %cp
  %vacant = icmp eq i64 %c, 0
  br i1 %vacant, label %h.insert, label %h.compare
h.compare:
  %kp = getelementptr inbounds i64, ptr %table, i64 %s
  %kv = load i64, ptr %kp
  %hit = icmp eq i64 %kv, %hx
  br i1 %hit, label %h.counted, label %h.taken
h.taken:
  %s.inc = add i64 %s, 1
  %s.next = and i64 %s.inc, %mask
  br label %h.probe
h.insert:
  %ip = getelementptr inbounds i64, ptr %table, i64 %s
  store i64 %hx, ptr %ip
  br label %h.counted
h.counted:
  %c.old = phi i64 [ %c, %h.compare ], [ 0, %h.insert ]
  %slot.p = phi ptr [ %cp, %h.compare ], [ %cp, %h.insert ]
  %c.new = add i64 %c.old, 1
  store i64 %c.new, ptr %slot.p
  ; the best so far: the larger count, or the smaller key of an equal count
  %more = icmp ugt i64 %c.new, %best.count
  %tie = icmp eq i64 %c.new, %best.count
  %smaller = icmp slt i64 %hx, %best.key
  %tie.win = and i1 %tie, %smaller
  %better = or i1 %more, %tie.win
  %best.key.next = select i1 %better, i64 %hx, i64 %best.key
  %best.count.next = select i1 %better, i64 %c.new, i64 %best.count
  %k.next = add i64 %k, 1
  br label %h.loop
h.exit:
  %on.heap = icmp ne ptr %table, %stack
  br i1 %on.heap, label %release, label %found
release:
  call void @free(ptr %table)
  br label %found
found:
  ret i64 %best.key
}

; The most frequent value of ascending data[0, len) (len > 0; ties: the first, the smallest).
define linkonce_odr i64 @gz_mode_of_runs(ptr %data, i64 %len) {
entry:
  %first = load i64, ptr %data
  br label %loop
loop:
  %i = phi i64 [ 1, %entry ], [ %i.next, %step ]
  %run.value = phi i64 [ %first, %entry ], [ %run.value.next, %step ]
  %run.count = phi i64 [ 1, %entry ], [ %run.count.next, %step ]
  %best.value = phi i64 [ %first, %entry ], [ %best.value.next, %step ]
  %best.count = phi i64 [ 1, %entry ], [ %best.count.next, %step ]
  %done = icmp uge i64 %i, %len
  br i1 %done, label %exit, label %step
step:
  %p = getelementptr inbounds i64, ptr %data, i64 %i
  %x = load i64, ptr %p
  %same = icmp eq i64 %x, %run.value
  %inc = add i64 %run.count, 1
  %run.count.next = select i1 %same, i64 %inc, i64 1
  %run.value.next = select i1 %same, i64 %run.value, i64 %x
  %better = icmp ugt i64 %run.count.next, %best.count
  %best.value.next = select i1 %better, i64 %run.value.next, i64 %best.value
  %best.count.next = select i1 %better, i64 %run.count.next, i64 %best.count
  %i.next = add i64 %i, 1
  br label %loop
exit:
  ret i64 %best.value
}

; How many distinct values, without sorting: count_distinct's finish, for every group a window
; fires (most hold a handful of values, a hot key thousands). qsort's comparator call per
; comparison made it the firing's largest cost. The vector is left as it is (its values are all
; that matters to anyone reading it later: snapshots, string release, Spark partials):
; - values in ascending order (sort grouping keeps them so) are counted in one pass, which the
;   other paths start with: it stops at the first descent;
; - up to 32 values: each counts unless a value before it is equal (at most 496 compares, all in
;   the cache lines the vector already has);
; - more: one pass through a scratch open-addressing set of 2^k >= 2 * length words (-1 marks a
;   free slot, so the value -1 itself is tracked apart): on the stack up to 1,024 slots (8 KiB:
;   no malloc and free per group), else malloc'd and freed before it returns; qsort and a run
;   count only when a heap table cannot be allocated.
define linkonce_odr i64 @gz_vec_distinct(ptr %v) {
entry:
  %stack = alloca [1024 x i64], align 16
  %data = load ptr, ptr %v
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %empty = icmp eq i64 %len, 0
  br i1 %empty, label %zero, label %start
zero:
  ret i64 0
start:
  %first = load i64, ptr %data
  br label %run
run:
  %i = phi i64 [ 1, %start ], [ %i.next, %run.step ]
  %prev = phi i64 [ %first, %start ], [ %x, %run.step ]
  %count = phi i64 [ 1, %start ], [ %count.next, %run.step ]
  %done = icmp uge i64 %i, %len
  br i1 %done, label %run.exit, label %run.load
run.load:
  %p = getelementptr inbounds i64, ptr %data, i64 %i
  %x = load i64, ptr %p
  %descent = icmp sgt i64 %prev, %x
  br i1 %descent, label %unordered, label %run.step
run.step:
  %new = icmp ne i64 %x, %prev
  %add = zext i1 %new to i64
  %count.next = add i64 %count, %add
  %i.next = add i64 %i, 1
  br label %run
run.exit:
  ret i64 %count
unordered:
  %small = icmp ule i64 %len, 32
  br i1 %small, label %pairs, label %hashed
pairs:
  ; the ascending prefix [0, %i) holds %count distinct values; go on from there
  %pi = phi i64 [ %i, %unordered ], [ %pi.next, %pairs.next ]
  %pcount = phi i64 [ %count, %unordered ], [ %pcount.next, %pairs.next ]
  %pdone = icmp uge i64 %pi, %len
  br i1 %pdone, label %pairs.exit, label %pairs.body
pairs.body:
  %px.p = getelementptr inbounds i64, ptr %data, i64 %pi
  %px = load i64, ptr %px.p
  br label %pairs.scan
pairs.scan:
  %j = phi i64 [ 0, %pairs.body ], [ %j.next, %pairs.differ ]
  %jend = icmp uge i64 %j, %pi
  br i1 %jend, label %pairs.next, label %pairs.cmp
pairs.cmp:
  %jx.p = getelementptr inbounds i64, ptr %data, i64 %j
  %jx = load i64, ptr %jx.p
  %same = icmp eq i64 %jx, %px
  br i1 %same, label %pairs.next, label %pairs.differ
pairs.differ:
  %j.next = add i64 %j, 1
  br label %pairs.scan
pairs.next:
  %padd = phi i64 [ 1, %pairs.scan ], [ 0, %pairs.cmp ]
  %pcount.next = add i64 %pcount, %padd
  %pi.next = add i64 %pi, 1
  br label %pairs
pairs.exit:
  ret i64 %pcount
hashed:
  ; 2^bits >= 2 * len slots (len < 2^(64 - ctlz)), at most half of them used
  %lz = call i64 @llvm.ctlz.i64(i64 %len, i1 true)
  %bits = sub i64 65, %lz
  %slots = shl i64 1, %bits
  %mask = sub i64 %slots, 1
  %shift = sub i64 64, %bits
  %bytes = shl i64 %slots, 3
  %fits = icmp ule i64 %slots, 1024
  br i1 %fits, label %fill, label %heap
heap:
  %heap.table = call ptr @realloc(ptr null, i64 %bytes)
  %oom = icmp eq ptr %heap.table, null
  br i1 %oom, label %sorted, label %fill
sorted:
  call void @gz_vec_sort(ptr %v)
  br label %start
fill:
  %table = phi ptr [ %stack, %hashed ], [ %heap.table, %heap ]
  call void @llvm.memset.p0.i64(ptr %table, i8 -1, i64 %bytes, i1 false)
  br label %h.loop
h.loop:
  %k = phi i64 [ 0, %fill ], [ %k.next, %h.next ]
  %n = phi i64 [ 0, %fill ], [ %n.next, %h.next ]
  %minus1 = phi i1 [ false, %fill ], [ %minus1.next, %h.next ]
  %hdone = icmp uge i64 %k, %len
  br i1 %hdone, label %h.exit, label %h.load
h.load:
  %hx.p = getelementptr inbounds i64, ptr %data, i64 %k
  %hx = load i64, ptr %hx.p
  %is.free = icmp eq i64 %hx, -1
  br i1 %is.free, label %h.next, label %h.hash
h.hash:
  ; Fibonacci hashing: the top bits of the product spread interned ids and small integers
  %mixed = mul i64 %hx, -7046029254386353131
  %slot0 = lshr i64 %mixed, %shift
  br label %h.probe
h.probe:
  %s = phi i64 [ %slot0, %h.hash ], [ %s.next, %h.taken ]
  %sp = getelementptr inbounds i64, ptr %table, i64 %s
  %sv = load i64, ptr %sp
  %hit = icmp eq i64 %sv, %hx
  br i1 %hit, label %h.next, label %h.free
h.free:
  %vacant = icmp eq i64 %sv, -1
  br i1 %vacant, label %h.insert, label %h.taken
h.taken:
  %s.inc = add i64 %s, 1
  %s.next = and i64 %s.inc, %mask
  br label %h.probe
h.insert:
  store i64 %hx, ptr %sp
  %n.inserted = add i64 %n, 1
  br label %h.next
h.next:
  %n.next = phi i64 [ %n, %h.load ], [ %n, %h.probe ], [ %n.inserted, %h.insert ]
  %minus1.next = phi i1 [ true, %h.load ], [ %minus1, %h.probe ], [ %minus1, %h.insert ]
  %k.next = add i64 %k, 1
  br label %h.loop
h.exit:
  %on.heap = icmp ne ptr %table, %stack
  br i1 %on.heap, label %release, label %counted
release:
  call void @free(ptr %table)
  br label %counted
counted:
  %m1 = zext i1 %minus1 to i64
  %total = add i64 %n, %m1
  ret i64 %total
}

; top_k: append the min(%k, length) largest values of %v, largest first (selects them with
; gz_select_kth and sorts only those), to the output
; vector %out (Python owns its struct, the data is malloc'd here), as doubles when %is_float, else
; as i64; %pair gets {index of the first appended word, how many} ({.., -1} when out of memory).
define linkonce_odr void @gz_vec_top_k(ptr %v, ptr %out, i64 %k, i1 %is_float, ptr %pair) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %n = call i64 @llvm.umin.i64(i64 %len, i64 %k)
  %olen.p = getelementptr inbounds %gz.vec, ptr %out, i32 0, i32 1
  %start = load i64, ptr %olen.p
  store i64 %start, ptr %pair
  %count.p = getelementptr inbounds i64, ptr %pair, i64 1
  %rc = call i32 @gz_vec_reserve(ptr %out, i64 %n)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %sort
oom:
  store i64 -1, ptr %count.p
  ret void
sort:
  %data = load ptr, ptr %v
  %cut = sub i64 %len, %n
  %some = icmp ugt i64 %n, 0
  br i1 %some, label %select, label %copy.start
select:
  ; data[cut, len) become the n largest values, then ascending
  call void @gz_select_kth(ptr %data, i64 %len, i64 %cut)
  %tail = getelementptr inbounds i64, ptr %data, i64 %cut
  call void @qsort(ptr %tail, i64 %n, i64 8, ptr @gz_cmp_i64)
  br label %copy.start
copy.start:
  %odata = load ptr, ptr %out
  %dst = getelementptr inbounds i64, ptr %odata, i64 %start
  br label %loop
loop:
  %i = phi i64 [ 0, %copy.start ], [ %i.next, %copy ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %copy, label %done
copy:
  %from.rev = add i64 %i, 1
  %from = sub i64 %len, %from.rev
  %src.p = getelementptr inbounds i64, ptr %data, i64 %from
  %key = load i64, ptr %src.p
  %f = call double @gz_f64_of_key(i64 %key)
  %fbits = bitcast double %f to i64
  %word = select i1 %is_float, i64 %fbits, i64 %key
  %dst.p = getelementptr inbounds i64, ptr %dst, i64 %i
  store i64 %word, ptr %dst.p
  %i.next = add i64 %i, 1
  br label %loop
done:
  %olen.new = add i64 %start, %n
  store i64 %olen.new, ptr %olen.p
  store i64 %n, ptr %count.p
  ret void
}

declare i64 @llvm.umax.i64(i64, i64)
declare i64 @llvm.umin.i64(i64, i64)

; A value bag: a multiset of keys kept as a vector of [key, count] pairs in ascending key order
; (length counts words), the state of a running aggregate's min, max and count_distinct, which a
; retraction must be able to undo (Flink's MinWithRetractAggFunction keeps a value -> count map
; the same way). Add %delta (1: an input, -1: a retraction) to the count of %key: a new key's pair
; goes in at its place, a pair whose count reaches 0 leaves, a retraction of a key the bag lacks
; changes nothing. Binary search, then one memmove of the pairs after it. 1 when out of memory.
define linkonce_odr i32 @gz_bag_add(ptr %v, i64 %key, i64 %delta) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %n = lshr i64 %len, 1
  %data = load ptr, ptr %v
  br label %search
search:
  %lo = phi i64 [ 0, %entry ], [ %lo.next, %step ]
  %hi = phi i64 [ %n, %entry ], [ %hi.next, %step ]
  %more = icmp ult i64 %lo, %hi
  br i1 %more, label %step, label %found
step:
  %span = sub i64 %hi, %lo
  %half = lshr i64 %span, 1
  %mid = add i64 %lo, %half
  %mid.w = shl i64 %mid, 1
  %mid.p = getelementptr inbounds i64, ptr %data, i64 %mid.w
  %mid.k = load i64, ptr %mid.p
  %below = icmp slt i64 %mid.k, %key
  %mid1 = add i64 %mid, 1
  %lo.next = select i1 %below, i64 %mid1, i64 %lo
  %hi.next = select i1 %below, i64 %hi, i64 %mid
  br label %search
found:
  %at.w = shl i64 %lo, 1
  %inside = icmp ult i64 %lo, %n
  br i1 %inside, label %check, label %absent
check:
  %at = getelementptr inbounds i64, ptr %data, i64 %at.w
  %k = load i64, ptr %at
  %same = icmp eq i64 %k, %key
  br i1 %same, label %present, label %absent
present:
  %c.p = getelementptr inbounds i64, ptr %at, i64 1
  %c = load i64, ptr %c.p
  %c1 = add i64 %c, %delta
  %gone = icmp sle i64 %c1, 0
  br i1 %gone, label %remove, label %count
count:
  store i64 %c1, ptr %c.p
  ret i32 0
remove:
  %after.w = add i64 %at.w, 2
  %after = getelementptr inbounds i64, ptr %data, i64 %after.w
  %tail.w = sub i64 %len, %after.w
  %tail.b = shl i64 %tail.w, 3
  call void @llvm.memmove.p0.p0.i64(ptr %at, ptr %after, i64 %tail.b, i1 false)
  %len.less = sub i64 %len, 2
  store i64 %len.less, ptr %len.p
  ret i32 0
absent:
  %adds = icmp sgt i64 %delta, 0
  br i1 %adds, label %grow, label %unchanged
unchanged:
  ret i32 0
grow:
  %rc = call i32 @gz_vec_reserve(ptr %v, i64 2)
  %oom = icmp ne i32 %rc, 0
  br i1 %oom, label %fail, label %insert
fail:
  ret i32 1
insert:
  %data2 = load ptr, ptr %v
  %to = getelementptr inbounds i64, ptr %data2, i64 %at.w
  %to.next = getelementptr inbounds i64, ptr %to, i64 2
  %rest.w = sub i64 %len, %at.w
  %rest.b = shl i64 %rest.w, 3
  call void @llvm.memmove.p0.p0.i64(ptr %to.next, ptr %to, i64 %rest.b, i1 false)
  store i64 %key, ptr %to
  %to.c = getelementptr inbounds i64, ptr %to, i64 1
  store i64 %delta, ptr %to.c
  %len.more = add i64 %len, 2
  store i64 %len.more, ptr %len.p
  ret i32 0
}

; A value bag of strings: entries [order key, id, count] in ascending (order key, id) order
; (length counts words), the order key being the string's first 8 bytes (big-endian, sign bit
; flipped: engine/string_order.py) and the id its interned id. As gz_bag_add, for 3-word entries.
define linkonce_odr i32 @gz_bag2_add(ptr %v, i64 %k0, i64 %k1, i64 %delta) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %n = udiv i64 %len, 3
  %data = load ptr, ptr %v
  br label %search
search:
  %lo = phi i64 [ 0, %entry ], [ %lo.next, %step ]
  %hi = phi i64 [ %n, %entry ], [ %hi.next, %step ]
  %more = icmp ult i64 %lo, %hi
  br i1 %more, label %step, label %found
step:
  %span = sub i64 %hi, %lo
  %half = lshr i64 %span, 1
  %mid = add i64 %lo, %half
  %mid.w = mul i64 %mid, 3
  %mid.p = getelementptr inbounds i64, ptr %data, i64 %mid.w
  %mid.k0 = load i64, ptr %mid.p
  %mid.p1 = getelementptr inbounds i64, ptr %mid.p, i64 1
  %mid.k1 = load i64, ptr %mid.p1
  %lt0 = icmp slt i64 %mid.k0, %k0
  %eq0 = icmp eq i64 %mid.k0, %k0
  %lt1 = icmp slt i64 %mid.k1, %k1
  %tie = and i1 %eq0, %lt1
  %below = or i1 %lt0, %tie
  %mid1 = add i64 %mid, 1
  %lo.next = select i1 %below, i64 %mid1, i64 %lo
  %hi.next = select i1 %below, i64 %hi, i64 %mid
  br label %search
found:
  %at.w = mul i64 %lo, 3
  %inside = icmp ult i64 %lo, %n
  br i1 %inside, label %check, label %absent
check:
  %at = getelementptr inbounds i64, ptr %data, i64 %at.w
  %a0 = load i64, ptr %at
  %at1 = getelementptr inbounds i64, ptr %at, i64 1
  %a1 = load i64, ptr %at1
  %same0 = icmp eq i64 %a0, %k0
  %same1 = icmp eq i64 %a1, %k1
  %same = and i1 %same0, %same1
  br i1 %same, label %present, label %absent
present:
  %c.p = getelementptr inbounds i64, ptr %at, i64 2
  %c = load i64, ptr %c.p
  %c1 = add i64 %c, %delta
  %gone = icmp sle i64 %c1, 0
  br i1 %gone, label %remove, label %count
count:
  store i64 %c1, ptr %c.p
  ret i32 0
remove:
  %after.w = add i64 %at.w, 3
  %after = getelementptr inbounds i64, ptr %data, i64 %after.w
  %tail.w = sub i64 %len, %after.w
  %tail.b = shl i64 %tail.w, 3
  call void @llvm.memmove.p0.p0.i64(ptr %at, ptr %after, i64 %tail.b, i1 false)
  %len.less = sub i64 %len, 3
  store i64 %len.less, ptr %len.p
  ret i32 0
absent:
  %adds = icmp sgt i64 %delta, 0
  br i1 %adds, label %grow, label %unchanged
unchanged:
  ret i32 0
grow:
  %rc = call i32 @gz_vec_reserve(ptr %v, i64 3)
  %oom = icmp ne i32 %rc, 0
  br i1 %oom, label %fail, label %insert
fail:
  ret i32 1
insert:
  %data2 = load ptr, ptr %v
  %to = getelementptr inbounds i64, ptr %data2, i64 %at.w
  %to.next = getelementptr inbounds i64, ptr %to, i64 3
  %rest.w = sub i64 %len, %at.w
  %rest.b = shl i64 %rest.w, 3
  call void @llvm.memmove.p0.p0.i64(ptr %to.next, ptr %to, i64 %rest.b, i1 false)
  store i64 %k0, ptr %to
  %to.1 = getelementptr inbounds i64, ptr %to, i64 1
  store i64 %k1, ptr %to.1
  %to.2 = getelementptr inbounds i64, ptr %to, i64 2
  store i64 %delta, ptr %to.2
  %len.more = add i64 %len, 3
  store i64 %len.more, ptr %len.p
  ret i32 0
}

; The candidates for the smallest (%high false) or largest string of a gz_bag2_add bag: the ids
; of the entries that share the first (last) entry's order key, appended to the output vector
; %out; %pair gets {index of the first appended word, how many} ({.., -1} when out of memory).
; The engine picks the result among them by their strings (most often there is one).
define linkonce_odr void @gz_bag2_ties(ptr %v, i1 %high, ptr %out, ptr %pair) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %n = udiv i64 %len, 3
  %olen.p = getelementptr inbounds %gz.vec, ptr %out, i32 0, i32 1
  %start = load i64, ptr %olen.p
  store i64 %start, ptr %pair
  %count.p = getelementptr inbounds i64, ptr %pair, i64 1
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %none, label %edge
none:
  store i64 0, ptr %count.p
  ret void
edge:
  %data = load ptr, ptr %v
  %last = sub i64 %n, 1
  %first = select i1 %high, i64 %last, i64 0
  %step = select i1 %high, i64 -1, i64 1
  %first.w = mul i64 %first, 3
  %first.p = getelementptr inbounds i64, ptr %data, i64 %first.w
  %key = load i64, ptr %first.p
  br label %count
count:
  %i = phi i64 [ 1, %edge ], [ %i.next, %same ]
  %seen = icmp eq i64 %i, %n
  br i1 %seen, label %counted, label %next
next:
  %off = mul i64 %i, %step
  %e = add i64 %first, %off
  %e.w = mul i64 %e, 3
  %e.p = getelementptr inbounds i64, ptr %data, i64 %e.w
  %e.k = load i64, ptr %e.p
  %eq = icmp eq i64 %e.k, %key
  br i1 %eq, label %same, label %counted
same:
  %i.next = add i64 %i, 1
  br label %count
counted:
  %ties = phi i64 [ %i, %count ], [ %i, %next ]
  %rc = call i32 @gz_vec_reserve(ptr %out, i64 %ties)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %copy.start
oom:
  store i64 -1, ptr %count.p
  ret void
copy.start:
  %odata = load ptr, ptr %out
  %dst = getelementptr inbounds i64, ptr %odata, i64 %start
  br label %copy
copy:
  %t = phi i64 [ 0, %copy.start ], [ %t.next, %copy.body ]
  %left = icmp ult i64 %t, %ties
  br i1 %left, label %copy.body, label %done
copy.body:
  %toff = mul i64 %t, %step
  %te = add i64 %first, %toff
  %te.w = mul i64 %te, 3
  %te.w1 = add i64 %te.w, 1
  %id.p = getelementptr inbounds i64, ptr %data, i64 %te.w1
  %id = load i64, ptr %id.p
  %dst.p = getelementptr inbounds i64, ptr %dst, i64 %t
  store i64 %id, ptr %dst.p
  %t.next = add i64 %t, 1
  br label %copy
done:
  %olen.new = add i64 %start, %ties
  store i64 %olen.new, ptr %olen.p
  store i64 %ties, ptr %count.p
  ret void
}

; The median of a gz_bag_add bag (numpy.median of its values with their counts, as gz_vec_median
; of the same values): one pass sums the counts, a second walks them to the middle value(s).
; NaN when a value is NaN (the NaN key, the largest, is then the last pair); 0 for an empty bag
; (the caller emits null).
define linkonce_odr double @gz_bag_median(ptr %v, i1 %is_float) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %empty = icmp eq i64 %len, 0
  br i1 %empty, label %none, label %some
none:
  ret double 0.0
some:
  %data = load ptr, ptr %v
  %last.w = sub i64 %len, 2
  %last.p = getelementptr inbounds i64, ptr %data, i64 %last.w
  %last = load i64, ptr %last.p
  %last.nan = icmp eq i64 %last, 9221120237041090560
  %has.nan = and i1 %is_float, %last.nan
  br i1 %has.nan, label %nan, label %sum
nan:
  ret double 0x7FF8000000000000
sum:
  %s.w = phi i64 [ 1, %some ], [ %s.w.next, %sum.step ]
  %total = phi i64 [ 0, %some ], [ %total.next, %sum.step ]
  %s.more = icmp ult i64 %s.w, %len
  br i1 %s.more, label %sum.step, label %middle
sum.step:
  %s.p = getelementptr inbounds i64, ptr %data, i64 %s.w
  %s.c = load i64, ptr %s.p
  %total.next = add i64 %total, %s.c
  %s.w.next = add i64 %s.w, 2
  br label %sum
middle:
  ; the values at positions (total - 1) / 2 (lo) and total / 2 (hi) of the sorted multiset
  %total.less = sub i64 %total, 1
  %lo.at = lshr i64 %total.less, 1
  %hi.at = lshr i64 %total, 1
  br label %walk
walk:
  %w = phi i64 [ 0, %middle ], [ %w.next, %walk.on ]
  %seen = phi i64 [ 0, %middle ], [ %upto, %walk.on ]
  %c.w = add i64 %w, 1
  %c.p = getelementptr inbounds i64, ptr %data, i64 %c.w
  %c = load i64, ptr %c.p
  %upto = add i64 %seen, %c
  %past.lo = icmp ugt i64 %upto, %lo.at
  %w.next = add i64 %w, 2
  br i1 %past.lo, label %found, label %walk.on
walk.on:
  br label %walk
found:
  ; hi is this pair's value too, unless lo is its last copy and the count is even: the next pair's
  %lo.p = getelementptr inbounds i64, ptr %data, i64 %w
  %lo = load i64, ptr %lo.p
  %same = icmp ugt i64 %upto, %hi.at
  %hi.w = select i1 %same, i64 %w, i64 %w.next
  %hi.p = getelementptr inbounds i64, ptr %data, i64 %hi.w
  %hi = load i64, ptr %hi.p
  %hi.v = call double @gz_key_value(i64 %hi, i1 %is_float)
  %odd.bit = and i64 %total, 1
  %odd = icmp eq i64 %odd.bit, 1
  br i1 %odd, label %one, label %two
one:
  ret double %hi.v
two:
  %lo.v = call double @gz_key_value(i64 %lo, i1 %is_float)
  %mean = call double @gz_middle_mean(double %lo.v, double %hi.v)
  ret double %mean
}

; The mode of a gz_bag_add bag: the value with the largest count, the smallest of equally
; frequent ones (the first in key order, as gz_vec_mode), as a key; 0 for an empty bag.
define linkonce_odr i64 @gz_bag_mode(ptr %v) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %data = load ptr, ptr %v
  br label %loop
loop:
  %w = phi i64 [ 0, %entry ], [ %w.next, %step ]
  %best = phi i64 [ 0, %entry ], [ %best.next, %step ]
  %best.c = phi i64 [ 0, %entry ], [ %best.c.next, %step ]
  %more = icmp ult i64 %w, %len
  br i1 %more, label %step, label %done
step:
  %k.p = getelementptr inbounds i64, ptr %data, i64 %w
  %k = load i64, ptr %k.p
  %c.p = getelementptr inbounds i64, ptr %k.p, i64 1
  %c = load i64, ptr %c.p
  %better = icmp sgt i64 %c, %best.c
  %best.next = select i1 %better, i64 %k, i64 %best
  %best.c.next = select i1 %better, i64 %c, i64 %best.c
  %w.next = add i64 %w, 2
  br label %loop
done:
  ret i64 %best
}

; top_k of a gz_bag_add bag: append its min(%k, count) largest values, largest first, each as
; many times as the bag holds it, to the output vector %out (as doubles when %is_float, else
; as i64), as gz_vec_top_k does; %pair gets {index of the first appended word, how many}
; ({.., -1} when out of memory). Reads only the pairs it appends from: O(min(k, count)).
define linkonce_odr void @gz_bag_top_k(ptr %v, ptr %out, i64 %k, i1 %is_float, ptr %pair) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %data = load ptr, ptr %v
  %olen.p = getelementptr inbounds %gz.vec, ptr %out, i32 0, i32 1
  %start = load i64, ptr %olen.p
  store i64 %start, ptr %pair
  %count.p = getelementptr inbounds i64, ptr %pair, i64 1
  br label %size
size:
  ; n: how many values to append (the counts of the last pairs, up to k)
  %s.w = phi i64 [ %len, %entry ], [ %s.w.less, %size.step ]
  %n = phi i64 [ 0, %entry ], [ %n.next, %size.step ]
  %s.pairs = icmp ugt i64 %s.w, 0
  %s.short = icmp ult i64 %n, %k
  %s.more = and i1 %s.pairs, %s.short
  br i1 %s.more, label %size.step, label %sized
size.step:
  %s.w.less = sub i64 %s.w, 2
  %s.c.w = add i64 %s.w.less, 1
  %s.c.p = getelementptr inbounds i64, ptr %data, i64 %s.c.w
  %s.c = load i64, ptr %s.c.p
  %s.left = sub i64 %k, %n
  %s.take = call i64 @llvm.umin.i64(i64 %s.c, i64 %s.left)
  %n.next = add i64 %n, %s.take
  br label %size
sized:
  %rc = call i32 @gz_vec_reserve(ptr %out, i64 %n)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %copy.start
oom:
  store i64 -1, ptr %count.p
  ret void
copy.start:
  %odata = load ptr, ptr %out
  %dst = getelementptr inbounds i64, ptr %odata, i64 %start
  br label %pairs
pairs:
  ; from the last pair down: each value min(count, n - written) times
  %p.w = phi i64 [ %len, %copy.start ], [ %p.w.less, %copied ]
  %written = phi i64 [ 0, %copy.start ], [ %written.pair, %copied ]
  %p.more = icmp ult i64 %written, %n
  br i1 %p.more, label %pair.start, label %done
pair.start:
  %p.w.less = sub i64 %p.w, 2
  %p.k.p = getelementptr inbounds i64, ptr %data, i64 %p.w.less
  %p.k = load i64, ptr %p.k.p
  %p.c.p = getelementptr inbounds i64, ptr %p.k.p, i64 1
  %p.c = load i64, ptr %p.c.p
  %p.left = sub i64 %n, %written
  %p.take = call i64 @llvm.umin.i64(i64 %p.c, i64 %p.left)
  %f = call double @gz_f64_of_key(i64 %p.k)
  %fbits = bitcast double %f to i64
  %word = select i1 %is_float, i64 %fbits, i64 %p.k
  %written.pair = add i64 %written, %p.take
  br label %copy
copy:
  %i = phi i64 [ %written, %pair.start ], [ %i.next, %copy.body ]
  %c.more = icmp ult i64 %i, %written.pair
  br i1 %c.more, label %copy.body, label %copied
copy.body:
  %dst.p = getelementptr inbounds i64, ptr %dst, i64 %i
  store i64 %word, ptr %dst.p
  %i.next = add i64 %i, 1
  br label %copy
copied:
  br label %pairs
done:
  %olen.new = add i64 %start, %n
  store i64 %olen.new, ptr %olen.p
  store i64 %n, ptr %count.p
  ret void
}

; The candidates for the mode of a gz_bag2_add bag of strings: the ids of the entries with the
; largest count that share the smallest order key among such entries, appended to the output
; vector %out; %pair gets {index of the first appended word, how many} ({.., -1} when out of
; memory; {.., 0} for an empty bag). The engine picks the smallest of their strings (ties of
; the mode go to the smallest string; most often there is one candidate).
define linkonce_odr void @gz_bag2_mode_ties(ptr %v, ptr %out, ptr %pair) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %data = load ptr, ptr %v
  %olen.p = getelementptr inbounds %gz.vec, ptr %out, i32 0, i32 1
  %start = load i64, ptr %olen.p
  store i64 %start, ptr %pair
  %count.p = getelementptr inbounds i64, ptr %pair, i64 1
  %empty = icmp eq i64 %len, 0
  br i1 %empty, label %none, label %best
none:
  store i64 0, ptr %count.p
  ret void
best:
  ; the largest count and the first entry that has it
  %b.w = phi i64 [ 0, %entry ], [ %b.w.next, %best.step ]
  %top = phi i64 [ 0, %entry ], [ %top.next, %best.step ]
  %top.w = phi i64 [ 0, %entry ], [ %top.w.next, %best.step ]
  %b.more = icmp ult i64 %b.w, %len
  br i1 %b.more, label %best.step, label %span.start
best.step:
  %b.c.w = add i64 %b.w, 2
  %b.c.p = getelementptr inbounds i64, ptr %data, i64 %b.c.w
  %b.c = load i64, ptr %b.c.p
  %better = icmp sgt i64 %b.c, %top
  %top.next = select i1 %better, i64 %b.c, i64 %top
  %top.w.next = select i1 %better, i64 %b.w, i64 %top.w
  %b.w.next = add i64 %b.w, 3
  br label %best
span.start:
  ; the entries from there that share its order key (adjacent: the bag is in order key order)
  %key.p = getelementptr inbounds i64, ptr %data, i64 %top.w
  %key = load i64, ptr %key.p
  br label %span
span:
  %e.w = phi i64 [ %top.w, %span.start ], [ %e.w.next, %span.step ]
  %e.in = icmp ult i64 %e.w, %len
  br i1 %e.in, label %span.key, label %spanned
span.key:
  %e.k.p = getelementptr inbounds i64, ptr %data, i64 %e.w
  %e.k = load i64, ptr %e.k.p
  %e.same = icmp eq i64 %e.k, %key
  br i1 %e.same, label %span.step, label %spanned
span.step:
  %e.w.next = add i64 %e.w, 3
  br label %span
spanned:
  %end.w = phi i64 [ %e.w, %span ], [ %e.w, %span.key ]
  %span.words = sub i64 %end.w, %top.w
  %span.n = udiv i64 %span.words, 3
  %rc = call i32 @gz_vec_reserve(ptr %out, i64 %span.n)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %oom, label %copy.start
oom:
  store i64 -1, ptr %count.p
  ret void
copy.start:
  %odata = load ptr, ptr %out
  %dst = getelementptr inbounds i64, ptr %odata, i64 %start
  br label %copy
copy:
  ; of those, the ids of the entries with the largest count
  %t.w = phi i64 [ %top.w, %copy.start ], [ %t.w.next, %copy.next ]
  %t = phi i64 [ 0, %copy.start ], [ %t.next, %copy.next ]
  %t.more = icmp ult i64 %t.w, %end.w
  br i1 %t.more, label %copy.body, label %done
copy.body:
  %t.id.w = add i64 %t.w, 1
  %t.id.p = getelementptr inbounds i64, ptr %data, i64 %t.id.w
  %t.id = load i64, ptr %t.id.p
  %t.c.p = getelementptr inbounds i64, ptr %t.id.p, i64 1
  %t.c = load i64, ptr %t.c.p
  %t.top = icmp eq i64 %t.c, %top
  %dst.p = getelementptr inbounds i64, ptr %dst, i64 %t
  store i64 %t.id, ptr %dst.p
  %t.add = zext i1 %t.top to i64
  %t.next = add i64 %t, %t.add
  br label %copy.next
copy.next:
  %t.w.next = add i64 %t.w, 3
  br label %copy
done:
  %olen.new = add i64 %start, %t
  store i64 %olen.new, ptr %olen.p
  store i64 %t, ptr %count.p
  ret void
}

; A sequence of a running aggregate's first/last over an updating input: entries [event time,
; arrival position, value] in ascending (event time, arrival) order (length counts words), so
; first is the first entry and last the last one. Insert a new entry at its place: binary search
; (records arriving in event-time order append), then one memmove. 1 when out of memory.
define linkonce_odr i32 @gz_seq_insert(ptr %v, i64 %ts, i64 %pos, i64 %x) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %n = udiv i64 %len, 3
  %data = load ptr, ptr %v
  br label %search
search:
  %lo = phi i64 [ 0, %entry ], [ %lo.next, %step ]
  %hi = phi i64 [ %n, %entry ], [ %hi.next, %step ]
  %more = icmp ult i64 %lo, %hi
  br i1 %more, label %step, label %found
step:
  %span = sub i64 %hi, %lo
  %half = lshr i64 %span, 1
  %mid = add i64 %lo, %half
  %mid.w = mul i64 %mid, 3
  %mid.p = getelementptr inbounds i64, ptr %data, i64 %mid.w
  %mid.ts = load i64, ptr %mid.p
  %mid.p1 = getelementptr inbounds i64, ptr %mid.p, i64 1
  %mid.pos = load i64, ptr %mid.p1
  %lt0 = icmp slt i64 %mid.ts, %ts
  %eq0 = icmp eq i64 %mid.ts, %ts
  %lt1 = icmp slt i64 %mid.pos, %pos
  %tie = and i1 %eq0, %lt1
  %below = or i1 %lt0, %tie
  %mid1 = add i64 %mid, 1
  %lo.next = select i1 %below, i64 %mid1, i64 %lo
  %hi.next = select i1 %below, i64 %hi, i64 %mid
  br label %search
found:
  %at.w = mul i64 %lo, 3
  %rc = call i32 @gz_vec_reserve(ptr %v, i64 3)
  %oom = icmp ne i32 %rc, 0
  br i1 %oom, label %fail, label %insert
fail:
  ret i32 1
insert:
  %data2 = load ptr, ptr %v
  %to = getelementptr inbounds i64, ptr %data2, i64 %at.w
  %to.next = getelementptr inbounds i64, ptr %to, i64 3
  %rest.w = sub i64 %len, %at.w
  %rest.b = shl i64 %rest.w, 3
  call void @llvm.memmove.p0.p0.i64(ptr %to.next, ptr %to, i64 %rest.b, i1 false)
  store i64 %ts, ptr %to
  %to.1 = getelementptr inbounds i64, ptr %to, i64 1
  store i64 %pos, ptr %to.1
  %to.2 = getelementptr inbounds i64, ptr %to, i64 2
  store i64 %x, ptr %to.2
  %len.more = add i64 %len, 3
  store i64 %len.more, ptr %len.p
  ret i32 0
}

; A retraction of %x from a gz_seq_insert sequence: its earliest entry whose value word is %x
; leaves (Flink's FirstValueWithRetractAggFunction takes a value's oldest occurrence out); a
; value the sequence lacks changes nothing. A linear scan from the front, then one memmove.
define linkonce_odr void @gz_seq_remove(ptr %v, i64 %x) {
entry:
  %len.p = getelementptr inbounds %gz.vec, ptr %v, i32 0, i32 1
  %len = load i64, ptr %len.p
  %data = load ptr, ptr %v
  br label %scan
scan:
  %w = phi i64 [ 0, %entry ], [ %w.next, %next ]
  %left = icmp ult i64 %w, %len
  br i1 %left, label %look, label %absent
look:
  %w2 = add i64 %w, 2
  %x.p = getelementptr inbounds i64, ptr %data, i64 %w2
  %y = load i64, ptr %x.p
  %same = icmp eq i64 %y, %x
  br i1 %same, label %remove, label %next
next:
  %w.next = add i64 %w, 3
  br label %scan
absent:
  ret void
remove:
  %at = getelementptr inbounds i64, ptr %data, i64 %w
  %after.w = add i64 %w, 3
  %after = getelementptr inbounds i64, ptr %data, i64 %after.w
  %tail.w = sub i64 %len, %after.w
  %tail.b = shl i64 %tail.w, 3
  call void @llvm.memmove.p0.p0.i64(ptr %at, ptr %after, i64 %tail.b, i1 false)
  %len.less = sub i64 %len, 3
  store i64 %len.less, ptr %len.p
  ret void
}
