; grizzly-py runtime: key/pointer arrays (KPA) for sort-based grouping (StreamBox-HBM).
;
; Linked into every compiled module. A window pane's records are fixed-size rows of %rw i64
; words whose first %kw words are the sort key (generated code: the key null mask, then the key
; words, then the aggregate inputs). The fused kernel appends a row per record
; (gz_kpa_append); after each batch the new rows are sorted into a run (gz_kpa_seal: stable
; LSD radix sort, bytes of the key words, each word as a signed integer, word 0 most
; significant); when a window fires, its panes' runs are gathered and merged pairwise into one
; sorted array (gz_kpa_window), which generated code reduces run by run (equal keys adjacent).
;
; A pane lives in the table slot of the window directory (windows.ll), 3 words:
;   { ptr pane, i64 0, i64 rows }   (rows mirrors the pane's length: an upper bound on the
;                                     number of groups, read by the engine to size outputs)
; The pane object (8 words, calloc'ed on the first append):
;   { ptr rows, i64 length, i64 capacity, i64 sealed, %gz.vec runs (ends of the sorted runs),
;     ptr scratch (the radix sort's buffer, reused from batch to batch) }
; Allocation failures return null / 1 / -1 so the kernel can report them; nothing is lost: a
; failed seal leaves the rows unsealed and the next seal sorts them again.

%gz.kpa = type { ptr, i64, i64, i64, ptr, i64, i64, i64 }

; Room for one more row in the pane of slot table %hdr: its address, or null when out of memory.
define linkonce_odr ptr @gz_kpa_append(ptr %hdr, i64 %rw) {
entry:
  %pane0 = load ptr, ptr %hdr
  %none = icmp eq ptr %pane0, null
  br i1 %none, label %create, label %have, !prof !10
create:
  %new = call ptr @calloc(i64 8, i64 8)
  %cfail = icmp eq ptr %new, null
  br i1 %cfail, label %fail, label %created
created:
  store ptr %new, ptr %hdr
  br label %have
have:
  %pane = phi ptr [ %pane0, %entry ], [ %new, %created ]
  %len.p = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 1
  %len = load i64, ptr %len.p
  %cap.p = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 2
  %cap = load i64, ptr %cap.p
  %full = icmp eq i64 %len, %cap
  br i1 %full, label %grow, label %place, !prof !10
grow:
  %doubled = shl i64 %cap, 1
  %ncap = call i64 @llvm.umax.i64(i64 %doubled, i64 256)
  %huge = icmp ugt i64 %ncap, 68719476736  ; 2^36 rows: the byte size below cannot overflow
  br i1 %huge, label %fail, label %alloc
alloc:
  %rowbytes = shl i64 %rw, 3
  %bytes = mul i64 %ncap, %rowbytes
  %old = load ptr, ptr %pane
  %moved = call ptr @realloc(ptr %old, i64 %bytes)
  %rfail = icmp eq ptr %moved, null
  br i1 %rfail, label %fail, label %grown
grown:
  store ptr %moved, ptr %pane
  store i64 %ncap, ptr %cap.p
  br label %place
place:
  %rows = load ptr, ptr %pane
  %rb = shl i64 %rw, 3
  %off = mul i64 %len, %rb
  %row = getelementptr inbounds i8, ptr %rows, i64 %off
  %len1 = add i64 %len, 1
  store i64 %len1, ptr %len.p
  %mirror = getelementptr inbounds i64, ptr %hdr, i64 2
  store i64 %len1, ptr %mirror
  ret ptr %row
fail:
  ret ptr null
}

; The radix digit of key word %x for byte %b (0 = least significant); the top byte has its
; sign bit flipped so that words sort as signed integers.
define linkonce_odr i64 @gz_kpa_digit(i64 %x, i64 %b) alwaysinline {
entry:
  %sh = shl i64 %b, 3
  %y = lshr i64 %x, %sh
  %d = and i64 %y, 255
  %top = icmp eq i64 %b, 7
  %flip = select i1 %top, i64 128, i64 0
  %r = xor i64 %d, %flip
  ret i64 %r
}

; Copy one row of %rw words.
define linkonce_odr void @gz_kpa_copy(ptr %dst, ptr %src, i64 %rw) alwaysinline {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = getelementptr inbounds i64, ptr %src, i64 %i
  %v = load i64, ptr %s
  %d = getelementptr inbounds i64, ptr %dst, i64 %i
  store i64 %v, ptr %d
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %rw
  br i1 %more, label %loop, label %done
done:
  ret void
}

; Stable LSD radix sort of %n rows (%rw words each) at %rows on their first %kw words (each a
; signed integer, word 0 most significant). A first pass finds the bytes that vary (the OR of
; each word XOR the first row's), a second counts the digits of those bytes only, then each of
; them gets one scatter pass: a byte that every row shares costs nothing (few distinct keys, or
; small key values, mean few passes). %tmp: room for %n rows, or null (allocated here).
; 0, or 1 when out of memory (the rows are then unchanged).
define linkonce_odr i32 @gz_kpa_radix_sort(ptr %rows, i64 %n, i64 %rw, i64 %kw, ptr %tmp0) {
entry:
  %few = icmp ult i64 %n, 2
  br i1 %few, label %ok, label %start
start:
  %rb = shl i64 %rw, 3
  %bytes = mul i64 %n, %rb
  %own = icmp eq ptr %tmp0, null
  br i1 %own, label %alloc.tmp, label %hist.alloc
alloc.tmp:
  %tmpn = call ptr @realloc(ptr null, i64 %bytes)
  %tfail = icmp eq ptr %tmpn, null
  br i1 %tfail, label %oom, label %hist.alloc
hist.alloc:
  %tmp = phi ptr [ %tmp0, %start ], [ %tmpn, %alloc.tmp ]
  ; one block: 256 counters per digit (byte) of the key, the per-word OR of differences, and
  ; the list of varying digits (word * 8 + byte) in pass order
  %digits = shl i64 %kw, 3
  %buckets = shl i64 %digits, 8
  %extra = add i64 %kw, %digits
  %words = add i64 %buckets, %extra
  %hist = call ptr @calloc(i64 %words, i64 8)
  %hfail = icmp eq ptr %hist, null
  br i1 %hfail, label %oom.tmp, label %diff.start
oom.tmp:
  br i1 %own, label %oom.free, label %oom
oom.free:
  call void @free(ptr %tmp)
  br label %oom
oom:
  ret i32 1
diff.start:
  %diff = getelementptr inbounds i64, ptr %hist, i64 %buckets
  %digs = getelementptr inbounds i64, ptr %diff, i64 %kw
  br label %diff.row
diff.row:
  %di = phi i64 [ 1, %diff.start ], [ %di.next, %diff.row.done ]
  %di.off = mul i64 %di, %rb
  %di.row = getelementptr inbounds i8, ptr %rows, i64 %di.off
  br label %diff.word
diff.word:
  %dw = phi i64 [ 0, %diff.row ], [ %dw.next, %diff.word ]
  %dx.p = getelementptr inbounds i64, ptr %di.row, i64 %dw
  %dx = load i64, ptr %dx.p
  %d0.p = getelementptr inbounds i64, ptr %rows, i64 %dw
  %d0 = load i64, ptr %d0.p
  %dxor = xor i64 %dx, %d0
  %dacc.p = getelementptr inbounds i64, ptr %diff, i64 %dw
  %dacc = load i64, ptr %dacc.p
  %dacc1 = or i64 %dacc, %dxor
  store i64 %dacc1, ptr %dacc.p
  %dw.next = add i64 %dw, 1
  %dw.more = icmp ult i64 %dw.next, %kw
  br i1 %dw.more, label %diff.word, label %diff.row.done
diff.row.done:
  %di.next = add i64 %di, 1
  %di.more = icmp ult i64 %di.next, %n
  br i1 %di.more, label %diff.row, label %list.start
list.start:
  ; the varying digits, least significant first: the last word's bytes 0..7, ..., word 0's
  %last.w = sub i64 %kw, 1
  br label %list.word
list.word:
  %lw = phi i64 [ %last.w, %list.start ], [ %lw.next, %list.word.done ]
  %ln0 = phi i64 [ 0, %list.start ], [ %ln.b, %list.word.done ]
  %lw.d.p = getelementptr inbounds i64, ptr %diff, i64 %lw
  %lw.d = load i64, ptr %lw.d.p
  br label %list.byte
list.byte:
  %lb = phi i64 [ 0, %list.word ], [ %lb.next, %list.byte ]
  %ln = phi i64 [ %ln0, %list.word ], [ %ln.b, %list.byte ]
  %lsh = shl i64 %lb, 3
  %lbits = lshr i64 %lw.d, %lsh
  %lbyte = and i64 %lbits, 255
  %lvaries = icmp ne i64 %lbyte, 0
  %lw8 = shl i64 %lw, 3
  %ldig = add i64 %lw8, %lb
  %lslot = getelementptr inbounds i64, ptr %digs, i64 %ln
  store i64 %ldig, ptr %lslot   ; kept only when it varies (the count does not advance otherwise)
  %linc = zext i1 %lvaries to i64
  %ln.b = add i64 %ln, %linc
  %lb.next = add i64 %lb, 1
  %lb.more = icmp ult i64 %lb.next, 8
  br i1 %lb.more, label %list.byte, label %list.word.done
list.word.done:
  %lw.next = sub i64 %lw, 1
  %lw.more = icmp sge i64 %lw.next, 0
  br i1 %lw.more, label %list.word, label %list.done
list.done:
  %nd = add i64 %ln.b, 0
  %none = icmp eq i64 %nd, 0
  br i1 %none, label %cleanup, label %count
count:
  %i = phi i64 [ 0, %list.done ], [ %i.next, %count.row.done ]
  %i.off = mul i64 %i, %rb
  %i.row = getelementptr inbounds i8, ptr %rows, i64 %i.off
  br label %count.digit
count.digit:
  %cj = phi i64 [ 0, %count ], [ %cj.next, %count.digit ]
  %cd.p = getelementptr inbounds i64, ptr %digs, i64 %cj
  %cd = load i64, ptr %cd.p
  %cw = lshr i64 %cd, 3
  %cb = and i64 %cd, 7
  %cx.p = getelementptr inbounds i64, ptr %i.row, i64 %cw
  %cx = load i64, ptr %cx.p
  %cdg = call i64 @gz_kpa_digit(i64 %cx, i64 %cb)
  %cbase = shl i64 %cd, 8
  %chidx = add i64 %cbase, %cdg
  %ch.p = getelementptr inbounds i64, ptr %hist, i64 %chidx
  %ch = load i64, ptr %ch.p
  %ch1 = add i64 %ch, 1
  store i64 %ch1, ptr %ch.p
  %cj.next = add i64 %cj, 1
  %cj.more = icmp ult i64 %cj.next, %nd
  br i1 %cj.more, label %count.digit, label %count.row.done
count.row.done:
  %i.next = add i64 %i, 1
  %i.more = icmp ult i64 %i.next, %n
  br i1 %i.more, label %count, label %pass.head
pass.head:
  %pj = phi i64 [ 0, %count.row.done ], [ %pj.next, %scatter.done ]
  %src = phi ptr [ %rows, %count.row.done ], [ %dst, %scatter.done ]
  %dst = phi ptr [ %tmp, %count.row.done ], [ %src, %scatter.done ]
  %pd.p = getelementptr inbounds i64, ptr %digs, i64 %pj
  %pd = load i64, ptr %pd.p
  %pw = lshr i64 %pd, 3
  %pb = and i64 %pd, 7
  %pbase = shl i64 %pd, 8
  %ph = getelementptr inbounds i64, ptr %hist, i64 %pbase
  br label %prefix
prefix:
  %d = phi i64 [ 0, %pass.head ], [ %d.next, %prefix ]
  %acc = phi i64 [ 0, %pass.head ], [ %acc.next, %prefix ]
  %c.p = getelementptr inbounds i64, ptr %ph, i64 %d
  %c = load i64, ptr %c.p
  store i64 %acc, ptr %c.p
  %acc.next = add i64 %acc, %c
  %d.next = add i64 %d, 1
  %d.more = icmp ult i64 %d.next, 256
  br i1 %d.more, label %prefix, label %scatter
scatter:
  %j = phi i64 [ 0, %prefix ], [ %j.next, %scatter ]
  %j.off = mul i64 %j, %rb
  %j.row = getelementptr inbounds i8, ptr %src, i64 %j.off
  %j.w = getelementptr inbounds i64, ptr %j.row, i64 %pw
  %j.x = load i64, ptr %j.w
  %j.d = call i64 @gz_kpa_digit(i64 %j.x, i64 %pb)
  %pos.p = getelementptr inbounds i64, ptr %ph, i64 %j.d
  %pos = load i64, ptr %pos.p
  %pos1 = add i64 %pos, 1
  store i64 %pos1, ptr %pos.p
  %to.off = mul i64 %pos, %rb
  %to = getelementptr inbounds i8, ptr %dst, i64 %to.off
  call void @gz_kpa_copy(ptr %to, ptr %j.row, i64 %rw)
  %j.next = add i64 %j, 1
  %j.more = icmp ult i64 %j.next, %n
  br i1 %j.more, label %scatter, label %scatter.done
scatter.done:
  %pj.next = add i64 %pj, 1
  %pj.more = icmp ult i64 %pj.next, %nd
  br i1 %pj.more, label %pass.head, label %finish
finish:
  ; the last pass wrote %dst: after an odd number of passes that is %tmp
  %odd = icmp ne ptr %dst, %rows
  br i1 %odd, label %copy.back, label %cleanup
copy.back:
  call void @llvm.memcpy.p0.p0.i64(ptr %rows, ptr %dst, i64 %bytes, i1 false)
  br label %cleanup
cleanup:
  br i1 %own, label %free.tmp, label %free.hist
free.tmp:
  call void @free(ptr %tmp)
  br label %free.hist
free.hist:
  call void @free(ptr %hist)
  br label %ok
ok:
  ret i32 0
}

; Compare the first %kw words of two rows (signed, word 0 first): -1, 0 or 1.
define linkonce_odr i32 @gz_kpa_cmp(ptr %a, ptr %b, i64 %kw) alwaysinline {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %same ]
  %pa = getelementptr inbounds i64, ptr %a, i64 %i
  %x = load i64, ptr %pa
  %pb = getelementptr inbounds i64, ptr %b, i64 %i
  %y = load i64, ptr %pb
  %lt = icmp slt i64 %x, %y
  br i1 %lt, label %less, label %notless
notless:
  %gt = icmp sgt i64 %x, %y
  br i1 %gt, label %greater, label %same
same:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %kw
  br i1 %more, label %loop, label %equal
less:
  ret i32 -1
greater:
  ret i32 1
equal:
  ret i32 0
}

; Sort the new rows of every pane in directory %dir into a run (after each batch). 0, or -1
; when out of memory.
define linkonce_odr i64 @gz_kpa_seal(ptr %dir, i64 %rw, i64 %kw) {
entry:
  %slots = load ptr, ptr %dir
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  %rb = shl i64 %rw, 3
  br label %loop
loop:
  %s = phi i64 [ 0, %entry ], [ %s.next, %next ]
  %done = icmp eq i64 %s, %len
  br i1 %done, label %ok, label %slot
slot:
  %hdr = getelementptr inbounds [4 x i64], ptr %slots, i64 %s, i64 1
  %pane = load ptr, ptr %hdr
  %has = icmp ne ptr %pane, null
  br i1 %has, label %check, label %next
check:
  %n.p = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 1
  %n = load i64, ptr %n.p
  %sealed.p = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 3
  %sealed = load i64, ptr %sealed.p
  %fresh = icmp ugt i64 %n, %sealed
  br i1 %fresh, label %sort, label %next
sort:
  %rows = load ptr, ptr %pane
  %off = mul i64 %sealed, %rb
  %from = getelementptr inbounds i8, ptr %rows, i64 %off
  %count = sub i64 %n, %sealed
  ; the pane's scratch buffer (its last word), reused from batch to batch
  %scratch.p = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 7
  %scratch.old = load ptr, ptr %scratch.p
  %scratch.bytes = mul i64 %count, %rb
  %scratch = call ptr @realloc(ptr %scratch.old, i64 %scratch.bytes)
  %scratch.fail = icmp eq ptr %scratch, null
  br i1 %scratch.fail, label %oom, label %sort.now
sort.now:
  store ptr %scratch, ptr %scratch.p
  %rc = call i32 @gz_kpa_radix_sort(ptr %from, i64 %count, i64 %rw, i64 %kw, ptr %scratch)
  %sfail = icmp ne i32 %rc, 0
  br i1 %sfail, label %oom, label %record
record:
  %runs = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 4
  %prc = call i32 @gz_vec_push(ptr %runs, i64 %n)
  %pfail = icmp ne i32 %prc, 0
  br i1 %pfail, label %oom, label %sealed.now
sealed.now:
  store i64 %n, ptr %sealed.p
  br label %next
next:
  %s.next = add i64 %s, 1
  br label %loop
oom:
  ret i64 -1
ok:
  ret i64 0
}

; Merge two adjacent sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi), stably.
define linkonce_odr void @gz_kpa_merge2(ptr %src, ptr %dst, i64 %lo, i64 %mid, i64 %hi, i64 %rw, i64 %kw) {
entry:
  %rb = shl i64 %rw, 3
  br label %loop
loop:
  %i = phi i64 [ %lo, %entry ], [ %i.next, %step ]
  %j = phi i64 [ %mid, %entry ], [ %j.next, %step ]
  %k = phi i64 [ %lo, %entry ], [ %k.next, %step ]
  %k.done = icmp eq i64 %k, %hi
  br i1 %k.done, label %done, label %pick
pick:
  %left.empty = icmp eq i64 %i, %mid
  br i1 %left.empty, label %take.right, label %left.some
left.some:
  %right.empty = icmp eq i64 %j, %hi
  br i1 %right.empty, label %take.left, label %compare
compare:
  %ai.off = mul i64 %i, %rb
  %ai = getelementptr inbounds i8, ptr %src, i64 %ai.off
  %bj.off = mul i64 %j, %rb
  %bj = getelementptr inbounds i8, ptr %src, i64 %bj.off
  %c = call i32 @gz_kpa_cmp(ptr %ai, ptr %bj, i64 %kw)
  %right.first = icmp sgt i32 %c, 0   ; equal keys: the left (earlier) run first
  br i1 %right.first, label %take.right, label %take.left
take.left:
  %l.off = mul i64 %i, %rb
  %l.row = getelementptr inbounds i8, ptr %src, i64 %l.off
  br label %copy
take.right:
  %r.off = mul i64 %j, %rb
  %r.row = getelementptr inbounds i8, ptr %src, i64 %r.off
  br label %copy
copy:
  %row = phi ptr [ %l.row, %take.left ], [ %r.row, %take.right ]
  %from.left = phi i1 [ true, %take.left ], [ false, %take.right ]
  %to.off = mul i64 %k, %rb
  %to = getelementptr inbounds i8, ptr %dst, i64 %to.off
  call void @gz_kpa_copy(ptr %to, ptr %row, i64 %rw)
  br label %step
step:
  %i.inc = add i64 %i, 1
  %j.inc = add i64 %j, 1
  %i.next = select i1 %from.left, i64 %i.inc, i64 %i
  %j.next = select i1 %from.left, i64 %j, i64 %j.inc
  %k.next = add i64 %k, 1
  br label %loop
done:
  ret void
}

; The rows of every pane starting in [%lo, %hi) of the %nstates state blocks, merged into one
; array sorted on the first %kw words (stable: a key's rows in state, pane and arrival order).
; The array (to be freed by the caller; null when there are no rows) goes to *%result; returns
; the number of rows, or -1 when out of memory.
define linkonce_odr i64 @gz_kpa_window(ptr %states, i64 %nstates, i64 %dir.off, i64 %lo, i64 %hi, i64 %rw, i64 %kw, ptr %result) {
entry:
  store ptr null, ptr %result
  %rb = shl i64 %rw, 3
  %total.a = alloca i64, align 8
  store i64 0, ptr %total.a
  %runs.a = alloca i64, align 8
  store i64 0, ptr %runs.a
  %phase.a = alloca i64, align 8   ; 0: count rows and runs, 1: copy them
  store i64 0, ptr %phase.a
  %buf.a = alloca ptr, align 8
  store ptr null, ptr %buf.a
  %bounds.a = alloca ptr, align 8
  store ptr null, ptr %bounds.a
  %at.a = alloca i64, align 8       ; rows copied so far
  %nb.a = alloca i64, align 8       ; run ends recorded so far
  br label %phase
phase:
  store i64 0, ptr %at.a
  store i64 0, ptr %nb.a
  %none = icmp sle i64 %nstates, 0
  br i1 %none, label %phase.done, label %state.loop
state.loop:
  %si = phi i64 [ 0, %phase ], [ %si.next, %state.done ]
  %state.p = getelementptr inbounds ptr, ptr %states, i64 %si
  %state = load ptr, ptr %state.p
  %dir = getelementptr inbounds i64, ptr %state, i64 %dir.off
  %seal.rc = call i64 @gz_kpa_seal(ptr %dir, i64 %rw, i64 %kw)   ; rows appended since the last seal
  %seal.fail = icmp slt i64 %seal.rc, 0
  br i1 %seal.fail, label %oom, label %sealed
sealed:
  %slots = load ptr, ptr %dir
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  br label %panes
panes:
  %w = phi i64 [ 0, %sealed ], [ %w.next, %pane.done ]
  %w.end = icmp eq i64 %w, %len
  br i1 %w.end, label %state.done, label %pane
pane:
  %slot = getelementptr inbounds [4 x i64], ptr %slots, i64 %w
  %ps = load i64, ptr %slot
  %in.lo = icmp sge i64 %ps, %lo
  %in.hi = icmp slt i64 %ps, %hi
  %in = and i1 %in.lo, %in.hi
  %hdr = getelementptr inbounds i64, ptr %slot, i64 1
  %po = load ptr, ptr %hdr
  %has = icmp ne ptr %po, null
  %use = and i1 %in, %has
  br i1 %use, label %take, label %pane.done
take:
  %n.p = getelementptr inbounds %gz.kpa, ptr %po, i32 0, i32 1
  %n = load i64, ptr %n.p
  %nr.p = getelementptr inbounds %gz.kpa, ptr %po, i32 0, i32 5
  %nr = load i64, ptr %nr.p
  %ph = load i64, ptr %phase.a
  %counting = icmp eq i64 %ph, 0
  br i1 %counting, label %add.counts, label %copy.rows
add.counts:
  %t = load i64, ptr %total.a
  %t1 = add i64 %t, %n
  store i64 %t1, ptr %total.a
  %r = load i64, ptr %runs.a
  %r1 = add i64 %r, %nr
  store i64 %r1, ptr %runs.a
  br label %pane.done
copy.rows:
  %at = load i64, ptr %at.a
  %buf = load ptr, ptr %buf.a
  %dst.off = mul i64 %at, %rb
  %dst = getelementptr inbounds i8, ptr %buf, i64 %dst.off
  %rows = load ptr, ptr %po
  %nbytes = mul i64 %n, %rb
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %rows, i64 %nbytes, i1 false)
  %runs.data.p = getelementptr inbounds %gz.kpa, ptr %po, i32 0, i32 4
  %runs.data = load ptr, ptr %runs.data.p
  %bounds = load ptr, ptr %bounds.a
  %nb0 = load i64, ptr %nb.a
  %any.runs = icmp ugt i64 %nr, 0
  br i1 %any.runs, label %ends, label %ends.done
ends:
  %e = phi i64 [ 0, %copy.rows ], [ %e.next, %ends ]
  %end.p = getelementptr inbounds i64, ptr %runs.data, i64 %e
  %end = load i64, ptr %end.p
  %end.abs = add i64 %end, %at
  %bidx = add i64 %nb0, %e
  %b.p = getelementptr inbounds i64, ptr %bounds, i64 %bidx
  store i64 %end.abs, ptr %b.p
  %e.next = add i64 %e, 1
  %e.more = icmp ult i64 %e.next, %nr
  br i1 %e.more, label %ends, label %ends.done
ends.done:
  %nb1 = add i64 %nb0, %nr
  store i64 %nb1, ptr %nb.a
  %at1 = add i64 %at, %n
  store i64 %at1, ptr %at.a
  br label %pane.done
pane.done:
  %w.next = add i64 %w, 1
  br label %panes
state.done:
  %si.next = add i64 %si, 1
  %si.more = icmp slt i64 %si.next, %nstates
  br i1 %si.more, label %state.loop, label %phase.done
phase.done:
  %phd = load i64, ptr %phase.a
  %was.counting = icmp eq i64 %phd, 0
  br i1 %was.counting, label %allocate, label %merge
allocate:
  %total = load i64, ptr %total.a
  %empty = icmp eq i64 %total, 0
  br i1 %empty, label %nothing, label %alloc.buf
nothing:
  ret i64 0
alloc.buf:
  %tbytes = mul i64 %total, %rb
  %nbuf = call ptr @realloc(ptr null, i64 %tbytes)
  %bfail = icmp eq ptr %nbuf, null
  br i1 %bfail, label %oom, label %alloc.bounds
alloc.bounds:
  store ptr %nbuf, ptr %buf.a
  %nruns = load i64, ptr %runs.a
  %nruns1 = add i64 %nruns, 1
  %nbounds = call ptr @calloc(i64 %nruns1, i64 8)
  %nbfail = icmp eq ptr %nbounds, null
  br i1 %nbfail, label %oom, label %go.copy
go.copy:
  store ptr %nbounds, ptr %bounds.a
  store i64 1, ptr %phase.a
  br label %phase
merge:
  %mbuf = load ptr, ptr %buf.a
  %mbounds = load ptr, ptr %bounds.a
  %mtotal = load i64, ptr %total.a
  %mruns = load i64, ptr %nb.a
  ; merging R runs pairwise reads and writes every row ceil(log2 R) times; sorting the whole
  ; array again (stably: the runs are in arrival order) costs two reads and a pass per key byte
  ; that varies: with many runs (many batches) and few varying bytes (few keys), re-sort
  %mr1 = sub i64 %mruns, 1
  %mlz = call i64 @llvm.ctlz.i64(i64 %mr1, i1 false)
  %levels = sub i64 64, %mlz
  %many = icmp ugt i64 %levels, 3
  br i1 %many, label %count.bytes, label %merge.runs
count.bytes:
  %varying = call i64 @gz_kpa_varying_bytes(ptr %mbuf, i64 %mtotal, i64 %rw, i64 %kw)
  %radix.cost = add i64 %varying, 2
  %resort = icmp ugt i64 %levels, %radix.cost
  br i1 %resort, label %resort.all, label %merge.runs
resort.all:
  call void @free(ptr %mbounds)
  %rrc = call i32 @gz_kpa_radix_sort(ptr %mbuf, i64 %mtotal, i64 %rw, i64 %kw, ptr null)
  %rfail = icmp ne i32 %rrc, 0
  br i1 %rfail, label %oom.merge, label %resorted
resorted:
  store ptr %mbuf, ptr %result
  ret i64 %mtotal
merge.runs:
  %sorted = call ptr @gz_kpa_merge_runs(ptr %mbuf, i64 %mtotal, i64 %rw, i64 %kw, ptr %mbounds, i64 %mruns)
  call void @free(ptr %mbounds)
  %mfail = icmp eq ptr %sorted, null
  br i1 %mfail, label %oom.merge, label %merged
oom.merge:
  call void @free(ptr %mbuf)
  ret i64 -1
merged:
  store ptr %sorted, ptr %result
  ret i64 %mtotal
oom:
  %obuf = load ptr, ptr %buf.a
  call void @free(ptr %obuf)
  %obounds = load ptr, ptr %bounds.a
  call void @free(ptr %obounds)
  ret i64 -1
}

; Merge the %nruns sorted runs of %a (%n rows; run r ends at bounds[r]) pairwise until one is
; left. Returns the sorted array (%a or a new one; the other is freed), or null when out of
; memory (%a is then the caller's to free). %bounds is overwritten.
define linkonce_odr ptr @gz_kpa_merge_runs(ptr %a, i64 %n, i64 %rw, i64 %kw, ptr %bounds, i64 %nruns) {
entry:
  %single = icmp ule i64 %nruns, 1
  br i1 %single, label %one, label %start
one:
  ret ptr %a
start:
  %rb = shl i64 %rw, 3
  %bytes = mul i64 %n, %rb
  %b = call ptr @realloc(ptr null, i64 %bytes)
  %bfail = icmp eq ptr %b, null
  br i1 %bfail, label %oom, label %level
oom:
  ret ptr null
level:
  %src = phi ptr [ %a, %start ], [ %dst, %level.done ]
  %dst = phi ptr [ %b, %start ], [ %src, %level.done ]
  %k = phi i64 [ %nruns, %start ], [ %out, %level.done ]
  br label %pair
pair:
  %r = phi i64 [ 0, %level ], [ %r.next, %pair.done ]
  %o = phi i64 [ 0, %level ], [ %o.next, %pair.done ]
  %from = phi i64 [ 0, %level ], [ %to, %pair.done ]
  %r1 = add i64 %r, 1
  %mid.p = getelementptr inbounds i64, ptr %bounds, i64 %r
  %mid = load i64, ptr %mid.p
  %has.pair = icmp ult i64 %r1, %k
  br i1 %has.pair, label %two, label %lone
two:
  %hi.p = getelementptr inbounds i64, ptr %bounds, i64 %r1
  %hi = load i64, ptr %hi.p
  call void @gz_kpa_merge2(ptr %src, ptr %dst, i64 %from, i64 %mid, i64 %hi, i64 %rw, i64 %kw)
  br label %pair.done
lone:
  %l.off = mul i64 %from, %rb
  %l.src = getelementptr inbounds i8, ptr %src, i64 %l.off
  %l.dst = getelementptr inbounds i8, ptr %dst, i64 %l.off
  %l.rows = sub i64 %mid, %from
  %l.bytes = mul i64 %l.rows, %rb
  call void @llvm.memcpy.p0.p0.i64(ptr %l.dst, ptr %l.src, i64 %l.bytes, i1 false)
  br label %pair.done
pair.done:
  %to = phi i64 [ %hi, %two ], [ %mid, %lone ]
  %o.p = getelementptr inbounds i64, ptr %bounds, i64 %o
  store i64 %to, ptr %o.p
  %o.next = add i64 %o, 1
  %r.next = add i64 %r, 2
  %r.more = icmp ult i64 %r.next, %k
  br i1 %r.more, label %pair, label %level.done
level.done:
  %out = add i64 %o.next, 0
  %again = icmp ugt i64 %out, 1
  br i1 %again, label %level, label %finish
finish:
  ; %dst of this level holds the result
  call void @free(ptr %src)
  ret ptr %dst
}

; Free the pane of slot table %hdr and zero the slot table.
define linkonce_odr void @gz_kpa_free(ptr %hdr) {
entry:
  %pane = load ptr, ptr %hdr
  %has = icmp ne ptr %pane, null
  br i1 %has, label %release, label %zero
release:
  %rows = load ptr, ptr %pane
  call void @free(ptr %rows)
  %runs.p = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 4
  %runs = load ptr, ptr %runs.p
  call void @free(ptr %runs)
  %scratch.p = getelementptr inbounds %gz.kpa, ptr %pane, i32 0, i32 7
  %scratch = load ptr, ptr %scratch.p
  call void @free(ptr %scratch)
  call void @free(ptr %pane)
  br label %zero
zero:
  call void @llvm.memset.p0.i64(ptr %hdr, i8 0, i64 24, i1 false)
  ret void
}

!10 = !{!"branch_weights", i32 1, i32 1000}

; The kernel's epilogue: seal directory %dir's new rows; when out of memory, -1 goes to *%err
; (the state's error code word; the engine checks it after the batch).
define linkonce_odr void @gz_kpa_seal_into(ptr %dir, ptr %err, i64 %rw, i64 %kw) {
entry:
  %rc = call i64 @gz_kpa_seal(ptr %dir, i64 %rw, i64 %kw)
  %failed = icmp slt i64 %rc, 0
  br i1 %failed, label %fail, label %ok
fail:
  store i64 -1, ptr %err
  br label %ok
ok:
  ret void
}

; Free every pane of directory %dir whose last window (the one starting at the window grid point
; %offset + k * %slide at or below the pane, of %size ms) has fired (end - 1 <= %wm).
define linkonce_odr void @gz_kpa_drop(ptr %dir, i64 %wm, i64 %size, i64 %slide, i64 %offset) {
entry:
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %size1 = sub i64 %size, 1
  br label %loop
loop:
  %w = phi i64 [ 0, %entry ], [ %w, %drop ], [ %w.next, %keep ]
  %len = load i64, ptr %len.p
  %done = icmp eq i64 %w, %len
  br i1 %done, label %exit, label %check
check:
  %slots = load ptr, ptr %dir
  %slot = getelementptr inbounds [4 x i64], ptr %slots, i64 %w
  %ps = load i64, ptr %slot
  %rel = sub i64 %ps, %offset
  %rem = srem i64 %rel, %slide
  %remneg = icmp slt i64 %rem, 0
  %remadj = add i64 %rem, %slide
  %mod = select i1 %remneg, i64 %remadj, i64 %rem
  %lastwin = sub i64 %ps, %mod
  %last = add i64 %lastwin, %size1
  %fired = icmp sle i64 %last, %wm
  br i1 %fired, label %drop, label %keep
drop:
  %hdr = getelementptr inbounds i64, ptr %slot, i64 1
  call void @gz_kpa_free(ptr %hdr)
  call void @gz_win_remove(ptr %dir, i64 %w)
  br label %loop
keep:
  %w.next = add i64 %w, 1
  br label %loop
exit:
  ret void
}

; Free every pane of directory %dir and the directory itself.
define linkonce_odr void @gz_kpa_close(ptr %dir) {
entry:
  %slots = load ptr, ptr %dir
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  br label %loop
loop:
  %w = phi i64 [ 0, %entry ], [ %w.next, %body ]
  %done = icmp eq i64 %w, %len
  br i1 %done, label %exit, label %body
body:
  %hdr = getelementptr inbounds [4 x i64], ptr %slots, i64 %w, i64 1
  call void @gz_kpa_free(ptr %hdr)
  %w.next = add i64 %w, 1
  br label %loop
exit:
  call void @gz_win_free(ptr %dir)
  ret void
}

; The smallest word %word over every row of every pane of directory %dir (INT64_MAX: no row).
define linkonce_odr i64 @gz_kpa_min_word(ptr %dir, i64 %rw, i64 %word) {
entry:
  %slots = load ptr, ptr %dir
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  br label %panes
panes:
  %w = phi i64 [ 0, %entry ], [ %w.next, %pane.done ]
  %m = phi i64 [ 9223372036854775807, %entry ], [ %m.pane, %pane.done ]
  %done = icmp eq i64 %w, %len
  br i1 %done, label %exit, label %pane
pane:
  %hdr = getelementptr inbounds [4 x i64], ptr %slots, i64 %w, i64 1
  %po = load ptr, ptr %hdr
  %has = icmp ne ptr %po, null
  br i1 %has, label %rows.start, label %pane.done
rows.start:
  %rows = load ptr, ptr %po
  %n.p = getelementptr inbounds %gz.kpa, ptr %po, i32 0, i32 1
  %n = load i64, ptr %n.p
  %any = icmp ugt i64 %n, 0
  br i1 %any, label %row, label %pane.done
row:
  %i = phi i64 [ 0, %rows.start ], [ %i.next, %row ]
  %mr = phi i64 [ %m, %rows.start ], [ %mr.next, %row ]
  %at = mul i64 %i, %rw
  %idx = add i64 %at, %word
  %p = getelementptr inbounds i64, ptr %rows, i64 %idx
  %x = load i64, ptr %p
  %mr.next = call i64 @llvm.smin.i64(i64 %mr, i64 %x)
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %row, label %pane.done
pane.done:
  %m.pane = phi i64 [ %m, %pane ], [ %m, %rows.start ], [ %mr.next, %row ]
  %w.next = add i64 %w, 1
  br label %panes
exit:
  ret i64 %m
}

declare i64 @llvm.smin.i64(i64, i64)

; How many bytes of the first %kw words vary over the %n rows at %rows (0 to 8 * %kw).
define linkonce_odr i64 @gz_kpa_varying_bytes(ptr %rows, i64 %n, i64 %rw, i64 %kw) {
entry:
  %some = icmp ugt i64 %n, 1
  br i1 %some, label %words, label %none
none:
  ret i64 0
words:
  %w = phi i64 [ 0, %entry ], [ %w.next, %word.done ]
  %count = phi i64 [ 0, %entry ], [ %count.next, %word.done ]
  %x0.p = getelementptr inbounds i64, ptr %rows, i64 %w
  %x0 = load i64, ptr %x0.p
  br label %row
row:
  %i = phi i64 [ 1, %words ], [ %i.next, %row ]
  %acc = phi i64 [ 0, %words ], [ %acc.next, %row ]
  %at = mul i64 %i, %rw
  %idx = add i64 %at, %w
  %x.p = getelementptr inbounds i64, ptr %rows, i64 %idx
  %x = load i64, ptr %x.p
  %d = xor i64 %x, %x0
  %acc.next = or i64 %acc, %d
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %row, label %bytes
bytes:
  ; a byte varies when any of its bits does: fold each byte's bits into its lowest bit
  %f1 = lshr i64 %acc.next, 4
  %o1 = or i64 %acc.next, %f1
  %f2 = lshr i64 %o1, 2
  %o2 = or i64 %o1, %f2
  %f3 = lshr i64 %o2, 1
  %o3 = or i64 %o2, %f3
  %low = and i64 %o3, 72340172838076673   ; 0x0101010101010101
  %nb = call i64 @llvm.ctpop.i64(i64 %low)
  %count.next = add i64 %count, %nb
  br label %word.done
word.done:
  %w.next = add i64 %w, 1
  %w.more = icmp ult i64 %w.next, %kw
  br i1 %w.more, label %words, label %done
done:
  ret i64 %count.next
}

; llvm.ctlz.i64 is declared by windows_placement.ll (the runtime files form one module)
declare i64 @llvm.ctpop.i64(i64)
