; ==== unit process (O3)
; grizzly-py codegen v19, variant generic
; ---- pipeline 0: window pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)

; ---- count panes: 20 records per pane, 5 panes per window
declare ptr @realloc(ptr, i64)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; Merge the decomposable aggregates of pane state %src into %grp.
define internal void @p0_generic_cw_merge(ptr %grp, ptr %src) {
entry:
  ; -- merge n = count
  %m0.a0.p = getelementptr inbounds i8, ptr %grp, i64 0
  %m0.a0 = load i64, ptr %m0.a0.p
  %m0.b0.p = getelementptr inbounds i8, ptr %src, i64 0
  %m0.b0 = load i64, ptr %m0.b0.p

  %m0.n = add i64 %m0.a0, %m0.b0
  store i64 %m0.n, ptr %m0.a0.p

  ; -- merge total = sum
  %m1.a0.p = getelementptr inbounds i8, ptr %grp, i64 8
  %m1.a0 = load i64, ptr %m1.a0.p
  %m1.b0.p = getelementptr inbounds i8, ptr %src, i64 8
  %m1.b0 = load i64, ptr %m1.b0.p

  %m1.a1.p = getelementptr inbounds i8, ptr %grp, i64 16
  %m1.a1 = load i64, ptr %m1.a1.p
  %m1.b1.p = getelementptr inbounds i8, ptr %src, i64 16
  %m1.b1 = load i64, ptr %m1.b1.p

  %m1.a2.p = getelementptr inbounds i8, ptr %grp, i64 24
  %m1.a2 = load i64, ptr %m1.a2.p
  %m1.b2.p = getelementptr inbounds i8, ptr %src, i64 24
  %m1.b2 = load i64, ptr %m1.b2.p

  %m1.r = call {i64, i1} @llvm.sadd.with.overflow.i64(i64 %m1.a0, i64 %m1.b0)
  %m1.sum = extractvalue {i64, i1} %m1.r, 0
  %m1.of = extractvalue {i64, i1} %m1.r, 1
  store i64 %m1.sum, ptr %m1.a0.p
  %m1.neg = icmp slt i64 %m1.b0, 0
  %m1.dir = select i1 %m1.neg, i64 -1, i64 1
  %m1.cadd = select i1 %m1.of, i64 %m1.dir, i64 0
  %m1.c1 = add i64 %m1.a1, %m1.b1
  %m1.carry = add i64 %m1.c1, %m1.cadd
  store i64 %m1.carry, ptr %m1.a1.p
  %m1.n = add i64 %m1.a2, %m1.b2
  store i64 %m1.n, ptr %m1.a2.p

  ; -- merge hi = max
  %m2.a0.p = getelementptr inbounds i8, ptr %grp, i64 32
  %m2.a0 = load double, ptr %m2.a0.p
  %m2.b0.p = getelementptr inbounds i8, ptr %src, i64 32
  %m2.b0 = load double, ptr %m2.b0.p

  %m2.a1.p = getelementptr inbounds i8, ptr %grp, i64 40
  %m2.a1 = load i64, ptr %m2.a1.p
  %m2.b1.p = getelementptr inbounds i8, ptr %src, i64 40
  %m2.b1 = load i64, ptr %m2.b1.p

  %m2.both = call double @llvm.maxnum.f64(double %m2.a0, double %m2.b0)
  %m2.aempty = icmp eq i64 %m2.a1, 0
  %m2.bempty = icmp eq i64 %m2.b1, 0
  %m2.v1 = select i1 %m2.aempty, double %m2.b0, double %m2.both
  %m2.v = select i1 %m2.bempty, double %m2.a0, double %m2.v1
  store double %m2.v, ptr %m2.a0.p
  %m2.n = add i64 %m2.a1, %m2.b1
  store i64 %m2.n, ptr %m2.a1.p

  ret void
}

; Append the value vectors of pane state %src to those of %grp; 1 when out of memory.
define internal i32 @p0_generic_cw_extend(ptr %grp, ptr %src) {
entry:
  ; -- merge med = median
  %m3.dst = getelementptr inbounds i8, ptr %grp, i64 48
  %m3.src = getelementptr inbounds i8, ptr %src, i64 48
  %m3.rc = call i32 @gz_vec_extend(ptr %m3.dst, ptr %m3.src)
  %m3.oom = icmp ne i32 %m3.rc, 0
  br i1 %m3.oom, label %oom, label %m3.ok
m3.ok:

  ret i32 0
oom:
  ret i32 1
}

define internal void @p0_generic_cw_free_vectors(ptr %s) {
entry:
  %v3 = getelementptr inbounds i8, ptr %s, i64 48
  call void @gz_vec_free(ptr %v3)
  ret void
}

; The %cnt-th record of the key of entry %grp closed its open pane (%cnt is a multiple of
; 20): move the pane into the ring (growing it up to 5 slots). When %cnt is a
; multiple of 40, build the window of the key's last min(100, %cnt) records in
; the aggregates of the entry-shaped buffer %tmp: the suffix state of the previous block above
; this pane's slot, the prefix state, and (holistic aggregates) every pane's vectors. A pane
; that completes a block of 5 turns the block into suffix states. Returns 1 when the
; window fires, 0 when not, -1 when out of memory (the state stays consistent).
define internal i32 @p0_generic_cw_pane(ptr %grp, i64 %cnt, ptr %tmp) {
entry:
  %ring.p = getelementptr inbounds i8, ptr %grp, i64 32
  %cap.p = getelementptr inbounds i8, ptr %grp, i64 40
  %ring0 = load ptr, ptr %ring.p
  %cap0 = load i64, ptr %cap.p
  %closed = udiv i64 %cnt, 20
  %i = sub i64 %closed, 1
  %q = urem i64 %i, 5
  %fits = icmp ult i64 %q, %cap0
  br i1 %fits, label %have, label %grow
grow:
  ; capacity: min(5, max(2 * capacity, q + 1, 4)) slots
  %g.dbl = shl i64 %cap0, 1
  %g.big = icmp ugt i64 %g.dbl, 4
  %g.1 = select i1 %g.big, i64 %g.dbl, i64 4
  %q1g = add i64 %q, 1
  %g.q = icmp ugt i64 %q1g, %g.1
  %g.2 = select i1 %g.q, i64 %q1g, i64 %g.1
  %g.over = icmp ugt i64 %g.2, 5
  %cap.new = select i1 %g.over, i64 5, i64 %g.2
  %slots.new = add i64 %cap.new, 1
  %bytes.new = mul i64 %slots.new, 72
  %moved = call ptr @realloc(ptr %ring0, i64 %bytes.new)
  %failed = icmp eq ptr %moved, null
  br i1 %failed, label %oom, label %grown
grown:
  ; zero the new slots (and the prefix state of a new ring)
  %was.empty = icmp eq i64 %cap0, 0
  %slots.old = add i64 %cap0, 1
  %bytes.kept = mul i64 %slots.old, 72
  %bytes.old = select i1 %was.empty, i64 0, i64 %bytes.kept
  %fresh = getelementptr inbounds i8, ptr %moved, i64 %bytes.old
  %bytes.fresh = sub i64 %bytes.new, %bytes.old
  call void @llvm.memset.p0.i64(ptr %fresh, i8 0, i64 %bytes.fresh, i1 false)
  store ptr %moved, ptr %ring.p
  store i64 %cap.new, ptr %cap.p
  br label %have
have:
  %ring = phi ptr [ %ring0, %entry ], [ %moved, %grown ]
  %cap = phi i64 [ %cap0, %entry ], [ %cap.new, %grown ]
  %q1 = add i64 %q, 1
  %slot.off = mul i64 %q1, 72
  %slot = getelementptr inbounds i8, ptr %ring, i64 %slot.off
  ; the pane 5 panes back leaves the ring: free its value vectors
  call void @p0_generic_cw_free_vectors(ptr %slot)
  %open = getelementptr inbounds i8, ptr %grp, i64 48
  call void @llvm.memcpy.p0.p0.i64(ptr %slot, ptr %open, i64 72, i1 false)
  call void @llvm.memset.p0.i64(ptr %open, i8 0, i64 72, i1 false)
  call void @p0_generic_cw_merge(ptr %ring, ptr %slot)
  %fire.r = urem i64 %cnt, 40
  %fire = icmp eq i64 %fire.r, 0
  %w = getelementptr inbounds i8, ptr %tmp, i64 48
  br i1 %fire, label %window, label %block
window:
  call void @llvm.memset.p0.i64(ptr %w, i8 0, i64 72, i1 false)
  %q2 = add i64 %q, 2
  %has.suffix = icmp ult i64 %q1, %cap
  br i1 %has.suffix, label %suffix, label %prefix
suffix:
  %suffix.off = mul i64 %q2, 72
  %suffix.s = getelementptr inbounds i8, ptr %ring, i64 %suffix.off
  call void @p0_generic_cw_merge(ptr %w, ptr %suffix.s)
  br label %prefix
prefix:
  call void @p0_generic_cw_merge(ptr %w, ptr %ring)
  br label %values
values:
  %k = phi i64 [ 0, %prefix ], [ %k.next, %values.next ]
  %k1 = add i64 %k, 1
  %k.off = mul i64 %k1, 72
  %k.s = getelementptr inbounds i8, ptr %ring, i64 %k.off
  %k.rc = call i32 @p0_generic_cw_extend(ptr %w, ptr %k.s)
  %k.oom = icmp ne i32 %k.rc, 0
  br i1 %k.oom, label %values.oom, label %values.next
values.next:
  %k.next = add i64 %k, 1
  %k.more = icmp ult i64 %k.next, %cap
  br i1 %k.more, label %values, label %windowed
values.oom:
  call void @p0_generic_cw_free_vectors(ptr %w)
  br label %oom
windowed:
  br label %block
block:
  %fired = phi i32 [ 0, %have ], [ 1, %windowed ]
  %complete = icmp eq i64 %q, 4
  br i1 %complete, label %convert, label %done
convert:
  ; the block of 5 panes is complete: slot k becomes the merge of panes k..4
  br label %convert.loop
convert.loop:
  %c = phi i64 [ 3, %convert ], [ %c.next, %convert.loop ]
  %c1 = add i64 %c, 1
  %c.off = mul i64 %c1, 72
  %c.dst = getelementptr inbounds i8, ptr %ring, i64 %c.off
  %c.src = getelementptr inbounds i8, ptr %c.dst, i64 72
  call void @p0_generic_cw_merge(ptr %c.dst, ptr %c.src)
  %c.next = sub i64 %c, 1
  %c.more = icmp ne i64 %c, 0
  br i1 %c.more, label %convert.loop, label %converted
converted:
  ; the next block's prefix starts empty (it never holds value vectors)
  call void @llvm.memset.p0.i64(ptr %ring, i8 0, i64 72, i1 false)
  br label %done
done:
  ret i32 %fired
oom:
  ret i32 -1
}

define i64 @p0_generic_process(ptr noalias %state, ptr noalias %columns, i64 %rows, ptr noalias %params, ptr noalias %out) {
entry:
  %wm.p = getelementptr inbounds i64, ptr %params, i64 0
  %wm = load i64, ptr %wm.p
  %filtered.a = alloca i64, align 8
  store i64 0, ptr %filtered.a
  %late.a = alloca i64, align 8
  store i64 0, ptr %late.a
  %nout.a = alloca i64, align 8
  store i64 0, ptr %nout.a
  %maxts.p = getelementptr inbounds i64, ptr %state, i64 3
  %maxts.0 = load i64, ptr %maxts.p
  %maxts.a = alloca i64, align 8
  store i64 %maxts.0, ptr %maxts.a
  %minend.p = getelementptr inbounds i64, ptr %state, i64 6
  %minend.0 = load i64, ptr %minend.p
  %minend.a = alloca i64, align 8
  store i64 %minend.0, ptr %minend.a
  %c0.vals.p = getelementptr inbounds i64, ptr %columns, i64 0
  %c0.vals = load ptr, ptr %c0.vals.p
  %c0.vraw.p = getelementptr inbounds i64, ptr %columns, i64 1
  %c0.vraw = load ptr, ptr %c0.vraw.p
  %c0.hasv = icmp ne ptr %c0.vraw, null
  %c0.valid = select i1 %c0.hasv, ptr %c0.vraw, ptr @gz_all_valid
  %c0.vmask = select i1 %c0.hasv, i64 -1, i64 0
  %c0.off.p = getelementptr inbounds i64, ptr %columns, i64 2
  %c0.off = load i64, ptr %c0.off.p
  %c1.vals.p = getelementptr inbounds i64, ptr %columns, i64 6
  %c1.vals = load ptr, ptr %c1.vals.p
  %c1.vraw.p = getelementptr inbounds i64, ptr %columns, i64 7
  %c1.vraw = load ptr, ptr %c1.vraw.p
  %c1.hasv = icmp ne ptr %c1.vraw, null
  %c1.valid = select i1 %c1.hasv, ptr %c1.vraw, ptr @gz_all_valid
  %c1.vmask = select i1 %c1.hasv, i64 -1, i64 0
  %c1.off.p = getelementptr inbounds i64, ptr %columns, i64 8
  %c1.off = load i64, ptr %c1.off.p
  %c5.vals.p = getelementptr inbounds i64, ptr %columns, i64 30
  %c5.vals = load ptr, ptr %c5.vals.p
  %c5.vraw.p = getelementptr inbounds i64, ptr %columns, i64 31
  %c5.vraw = load ptr, ptr %c5.vraw.p
  %c5.hasv = icmp ne ptr %c5.vraw, null
  %c5.valid = select i1 %c5.hasv, ptr %c5.vraw, ptr @gz_all_valid
  %c5.vmask = select i1 %c5.hasv, i64 -1, i64 0
  %c5.off.p = getelementptr inbounds i64, ptr %columns, i64 32
  %c5.off = load i64, ptr %c5.off.p
  %c3.vals.p = getelementptr inbounds i64, ptr %columns, i64 18
  %c3.vals = load ptr, ptr %c3.vals.p
  %c3.vraw.p = getelementptr inbounds i64, ptr %columns, i64 19
  %c3.vraw = load ptr, ptr %c3.vraw.p
  %c3.hasv = icmp ne ptr %c3.vraw, null
  %c3.valid = select i1 %c3.hasv, ptr %c3.vraw, ptr @gz_all_valid
  %c3.vmask = select i1 %c3.hasv, i64 -1, i64 0
  %c3.off.p = getelementptr inbounds i64, ptr %columns, i64 20
  %c3.off = load i64, ptr %c3.off.p
  %c2.vals.p = getelementptr inbounds i64, ptr %columns, i64 12
  %c2.vals = load ptr, ptr %c2.vals.p
  %c2.vraw.p = getelementptr inbounds i64, ptr %columns, i64 13
  %c2.vraw = load ptr, ptr %c2.vraw.p
  %c2.hasv = icmp ne ptr %c2.vraw, null
  %c2.valid = select i1 %c2.hasv, ptr %c2.vraw, ptr @gz_all_valid
  %c2.vmask = select i1 %c2.hasv, i64 -1, i64 0
  %c2.off.p = getelementptr inbounds i64, ptr %columns, i64 14
  %c2.off = load i64, ptr %c2.off.p
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %key.a = alloca [2 x i64], align 8
  %htv.a = alloca { ptr, i64 }, align 8
  %ht.slot = call ptr @gz_win_table(ptr %dir, i64 0)
  %ht.ok = icmp ne ptr %ht.slot, null
  %ht.none = alloca [3 x i64], align 8
  call void @llvm.memset.p0.i64(ptr %ht.none, i8 0, i64 24, i1 false)
  %ht = select i1 %ht.ok, ptr %ht.slot, ptr %ht.none  ; out of memory: the first row reports it
  call void @gz_ht_view(ptr %ht, ptr %htv.a)
  %overflow.a = alloca i1, align 1
  store i1 false, ptr %overflow.a
  %overflow_which.a = alloca i64, align 8
  store i64 -1, ptr %overflow_which.a
  %cw.tmp = alloca [120 x i8], align 8
  %nonempty = icmp sgt i64 %rows, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %row_done ]
  %ci1 = add i64 %i, %c0.off
  %vi2 = and i64 %ci1, %c0.vmask
  %valid3 = call i1 @gz_bit(ptr %c0.valid, i64 %vi2)
  %ci4 = add i64 %i, %c0.off
  %p5 = getelementptr inbounds i64, ptr %c0.vals, i64 %ci4
  %v6 = load i64, ptr %p5
  ; -- event time
  %ts = add i64 %v6, 0
  %ts.max = load i64, ptr %maxts.a
  %ts.max.new = call i64 @llvm.smax.i64(i64 %ts.max, i64 %ts)
  store i64 %ts.max.new, ptr %maxts.a
  %ci7 = add i64 %i, %c1.off
  %vi8 = and i64 %ci7, %c1.vmask
  %valid9 = call i1 @gz_bit(ptr %c1.valid, i64 %vi8)
  %ci10 = add i64 %i, %c1.off
  %p11 = getelementptr inbounds i64, ptr %c1.vals, i64 %ci10
  %v12 = load i64, ptr %p11
  %kw13 = select i1 %valid9, i64 %v12, i64 0
  %ci14 = add i64 %i, %c5.off
  %vi15 = and i64 %ci14, %c5.vmask
  %valid16 = call i1 @gz_bit(ptr %c5.valid, i64 %vi15)
  %ci17 = add i64 %i, %c5.off
  %p18 = getelementptr inbounds i64, ptr %c5.vals, i64 %ci17
  %v19 = load i64, ptr %p18
  %kw20 = select i1 %valid16, i64 %v19, i64 0
  %nm21 = xor i1 %valid9, true
  %nm22 = zext i1 %nm21 to i64
  %nm23 = shl i64 %nm22, 0
  %nm24 = or i64 0, %nm23
  %nm25 = xor i1 %valid16, true
  %nm26 = zext i1 %nm25 to i64
  %nm27 = shl i64 %nm26, 1
  %nm28 = or i64 %nm24, %nm27
  %ci29 = add i64 %i, %c3.off
  %vi30 = and i64 %ci29, %c3.vmask
  %valid31 = call i1 @gz_bit(ptr %c3.valid, i64 %vi30)
  %ci32 = add i64 %i, %c3.off
  %p33 = getelementptr inbounds i32, ptr %c3.vals, i64 %ci32
  %v34 = load i32, ptr %p33
  %v35 = sext i32 %v34 to i64
  %ci36 = add i64 %i, %c2.off
  %vi37 = and i64 %ci36, %c2.vmask
  %valid38 = call i1 @gz_bit(ptr %c2.valid, i64 %vi37)
  %ci39 = add i64 %i, %c2.off
  %p40 = getelementptr inbounds double, ptr %c2.vals, i64 %ci39
  %f41 = load double, ptr %p40
  %hk42 = call i64 @gz_f64_key(double %f41)
  br i1 %ht.ok, label %c.table, label %err_oom, !prof !1
c.table:
  ; -- key campaign_id name
  %key0.p = getelementptr inbounds i64, ptr %key.a, i64 0
  store i64 %kw13, ptr %key0.p
  %key1.p = getelementptr inbounds i64, ptr %key.a, i64 1
  store i64 %kw20, ptr %key1.p
  %h.0 = add i64 -7046029254386353131, 0
  %h.1 = call i64 @gz_hash_mix(i64 %h.0, i64 %kw13)
  %h.2 = call i64 @gz_hash_mix(i64 %h.1, i64 %kw20)
  %h = call i64 @gz_hash_finish(i64 %h.2)
  ; the key null mask travels in bits 48..62 of the hash, hence of the entry's tag
  %h.low = and i64 %h, 281474976710655
  %h.nm = shl i64 %nm28, 48
  %h.tagged = or i64 %h.low, %h.nm
  %grp = call ptr @gz_ht_upsert(ptr %ht, ptr %htv.a, i64 %h.tagged, ptr %key.a, i64 2, i64 120)
  %grp.oom = icmp eq ptr %grp, null
  br i1 %grp.oom, label %err_oom, label %w.update, !prof !0
w.update:
  ; -- aggregate n = count()
  %a0.s0.p = getelementptr inbounds i8, ptr %grp, i64 48
  %a0.s0 = load i64, ptr %a0.s0.p
  %a0.n = add i64 %a0.s0, 1
  store i64 %a0.n, ptr %a0.s0.p
  ; -- aggregate total = sum(col('qty'))
  %a1.s0.p = getelementptr inbounds i8, ptr %grp, i64 56
  %a1.s0 = load i64, ptr %a1.s0.p
  %a1.s1.p = getelementptr inbounds i8, ptr %grp, i64 64
  %a1.s1 = load i64, ptr %a1.s1.p
  %a1.s2.p = getelementptr inbounds i8, ptr %grp, i64 72
  %a1.s2 = load i64, ptr %a1.s2.p
  %a1.add = select i1 %valid31, i64 %v35, i64 0
  %a1.r = call {i64, i1} @llvm.sadd.with.overflow.i64(i64 %a1.s0, i64 %a1.add)
  %a1.sum = extractvalue {i64, i1} %a1.r, 0
  %a1.of = extractvalue {i64, i1} %a1.r, 1
  store i64 %a1.sum, ptr %a1.s0.p
  %a1.addneg = icmp slt i64 %a1.add, 0
  %a1.dir = select i1 %a1.addneg, i64 -1, i64 1
  %a1.cadd = select i1 %a1.of, i64 %a1.dir, i64 0
  %a1.carry = add i64 %a1.s1, %a1.cadd
  store i64 %a1.carry, ptr %a1.s1.p
  %a1.inc = zext i1 %valid31 to i64
  %a1.n = add i64 %a1.s2, %a1.inc
  store i64 %a1.n, ptr %a1.s2.p
  ; -- aggregate hi = max(col('price'))
  %a2.s0.p = getelementptr inbounds i8, ptr %grp, i64 80
  %a2.s0 = load double, ptr %a2.s0.p
  %a2.s1.p = getelementptr inbounds i8, ptr %grp, i64 88
  %a2.s1 = load i64, ptr %a2.s1.p
  %a2.first = icmp eq i64 %a2.s1, 0
  %a2.m = call double @llvm.maxnum.f64(double %a2.s0, double %f41)
  %a2.new = select i1 %a2.first, double %f41, double %a2.m
  %a2.keep = select i1 %valid38, double %a2.new, double %a2.s0
  store double %a2.keep, ptr %a2.s0.p
  %a2.inc = zext i1 %valid38 to i64
  %a2.n = add i64 %a2.s1, %a2.inc
  store i64 %a2.n, ptr %a2.s1.p
  ; -- aggregate med = median(col('price'))
  %a3.vec = getelementptr inbounds i8, ptr %grp, i64 96
  br i1 %valid38, label %a3.push, label %a3.pushed
a3.push:
  %a3.rc = call i32 @gz_vec_push_value(ptr %a3.vec, i64 %hk42)
  %a3.oom = icmp ne i32 %a3.rc, 0
  br i1 %a3.oom, label %err_oom, label %a3.pushed, !prof !0
a3.pushed:
  ; -- post-trigger: count window of the last 100 records every 40, panes of 20
  %c.cnt.p = getelementptr inbounds i8, ptr %grp, i64 24
  %c.cnt = load i64, ptr %c.cnt.p
  %c.cnt1 = add i64 %c.cnt, 1
  store i64 %c.cnt1, ptr %c.cnt.p
  %c.r = urem i64 %c.cnt1, 20
  %c.close = icmp eq i64 %c.r, 0
  br i1 %c.close, label %c.pane, label %c.done
c.pane:
  %c.rc = call i32 @p0_generic_cw_pane(ptr %grp, i64 %c.cnt1, ptr %cw.tmp)
  %c.oom = icmp slt i32 %c.rc, 0
  br i1 %c.oom, label %err_oom, label %c.fired, !prof !0
c.fired:
  %c.fire = icmp eq i32 %c.rc, 1
  br i1 %c.fire, label %c.emit, label %c.done
c.emit:
  %j = load i64, ptr %nout.a
  %tag = load i64, ptr %grp
  ; the window's aggregates are in %cw.tmp; its key words come from the entry
  call void @llvm.memcpy.p0.p0.i64(ptr %cw.tmp, ptr %grp, i64 24, i1 false)
  %e = getelementptr inbounds i8, ptr %cw.tmp, i64 0
  %k0.vp.p = getelementptr inbounds ptr, ptr %out, i64 1
  %k0.vp = load ptr, ptr %k0.vp.p
  %k0.mp.p = getelementptr inbounds ptr, ptr %out, i64 2
  %k0.mp = load ptr, ptr %k0.mp.p
  %k0.src = getelementptr inbounds i8, ptr %e, i64 8
  %k0.w = load i64, ptr %k0.src
  %k0.dst = getelementptr inbounds i64, ptr %k0.vp, i64 %j
  store i64 %k0.w, ptr %k0.dst
  %k0.bit = lshr i64 %tag, 48
  %k0.null = trunc i64 %k0.bit to i1
  %k0.valid = xor i1 %k0.null, true
  %k0.m = zext i1 %k0.valid to i8
  %k0.mdst = getelementptr inbounds i8, ptr %k0.mp, i64 %j
  store i8 %k0.m, ptr %k0.mdst
  %k1.vp.p = getelementptr inbounds ptr, ptr %out, i64 3
  %k1.vp = load ptr, ptr %k1.vp.p
  %k1.mp.p = getelementptr inbounds ptr, ptr %out, i64 4
  %k1.mp = load ptr, ptr %k1.mp.p
  %k1.src = getelementptr inbounds i8, ptr %e, i64 16
  %k1.w = load i64, ptr %k1.src
  %k1.dst = getelementptr inbounds i64, ptr %k1.vp, i64 %j
  store i64 %k1.w, ptr %k1.dst
  %k1.bit = lshr i64 %tag, 49
  %k1.null = trunc i64 %k1.bit to i1
  %k1.valid = xor i1 %k1.null, true
  %k1.m = zext i1 %k1.valid to i8
  %k1.mdst = getelementptr inbounds i8, ptr %k1.mp, i64 %j
  store i8 %k1.m, ptr %k1.mdst
  ; -- final n = count
  %x0.vp.p = getelementptr inbounds ptr, ptr %out, i64 5
  %x0.vp = load ptr, ptr %x0.vp.p
  %x0.mp.p = getelementptr inbounds ptr, ptr %out, i64 6
  %x0.mp = load ptr, ptr %x0.mp.p
  %x0.n.p = getelementptr inbounds i8, ptr %e, i64 48
  %x0.n = load i64, ptr %x0.n.p
  %x0.s0.p = getelementptr inbounds i8, ptr %e, i64 48
  %x0.valid = add i1 true, false
  %x0.out = add i64 %x0.n, 0
  %x0.dst = getelementptr inbounds i64, ptr %x0.vp, i64 %j
  store i64 %x0.out, ptr %x0.dst
  %x0.m = zext i1 %x0.valid to i8
  %x0.mdst = getelementptr inbounds i8, ptr %x0.mp, i64 %j
  store i8 %x0.m, ptr %x0.mdst

  ; -- final total = sum
  %x1.vp.p = getelementptr inbounds ptr, ptr %out, i64 7
  %x1.vp = load ptr, ptr %x1.vp.p
  %x1.mp.p = getelementptr inbounds ptr, ptr %out, i64 8
  %x1.mp = load ptr, ptr %x1.mp.p
  %x1.n.p = getelementptr inbounds i8, ptr %e, i64 72
  %x1.n = load i64, ptr %x1.n.p
  %x1.s0.p = getelementptr inbounds i8, ptr %e, i64 56
  %x1.valid = icmp sgt i64 %x1.n, 0
  %x1.carry.p = getelementptr inbounds i8, ptr %e, i64 64
  %x1.carry = load i64, ptr %x1.carry.p
  %x1.ovf = icmp ne i64 %x1.carry, 0
  %x1.ovf.old = load i1, ptr %overflow.a
  %x1.ovf.any = or i1 %x1.ovf.old, %x1.ovf
  store i1 %x1.ovf.any, ptr %overflow.a
  %x1.which.old = load i64, ptr %overflow_which.a
  %x1.which = select i1 %x1.ovf, i64 1, i64 %x1.which.old
  store i64 %x1.which, ptr %overflow_which.a
  %x1.out = load i64, ptr %x1.s0.p
  %x1.dst = getelementptr inbounds i64, ptr %x1.vp, i64 %j
  store i64 %x1.out, ptr %x1.dst
  %x1.m = zext i1 %x1.valid to i8
  %x1.mdst = getelementptr inbounds i8, ptr %x1.mp, i64 %j
  store i8 %x1.m, ptr %x1.mdst

  ; -- final hi = max
  %x2.vp.p = getelementptr inbounds ptr, ptr %out, i64 9
  %x2.vp = load ptr, ptr %x2.vp.p
  %x2.mp.p = getelementptr inbounds ptr, ptr %out, i64 10
  %x2.mp = load ptr, ptr %x2.mp.p
  %x2.n.p = getelementptr inbounds i8, ptr %e, i64 88
  %x2.n = load i64, ptr %x2.n.p
  %x2.s0.p = getelementptr inbounds i8, ptr %e, i64 80
  %x2.valid = icmp sgt i64 %x2.n, 0
  %x2.out = load double, ptr %x2.s0.p
  %x2.dst = getelementptr inbounds double, ptr %x2.vp, i64 %j
  store double %x2.out, ptr %x2.dst
  %x2.m = zext i1 %x2.valid to i8
  %x2.mdst = getelementptr inbounds i8, ptr %x2.mp, i64 %j
  store i8 %x2.m, ptr %x2.mdst

  ; -- final med = median
  %x3.vp.p = getelementptr inbounds ptr, ptr %out, i64 11
  %x3.vp = load ptr, ptr %x3.vp.p
  %x3.mp.p = getelementptr inbounds ptr, ptr %out, i64 12
  %x3.mp = load ptr, ptr %x3.mp.p
  %x3.vec = getelementptr inbounds i8, ptr %e, i64 96
  %x3.len.p = getelementptr inbounds i8, ptr %e, i64 104
  %x3.len = load i64, ptr %x3.len.p
  %x3.valid = icmp sgt i64 %x3.len, 0
  %x3.out = call double @gz_vec_median(ptr %x3.vec, i1 true)
  %x3.dst = getelementptr inbounds double, ptr %x3.vp, i64 %j
  store double %x3.out, ptr %x3.dst
  call void @gz_vec_free(ptr %x3.vec)
  %x3.m = zext i1 %x3.valid to i8
  %x3.mdst = getelementptr inbounds i8, ptr %x3.mp, i64 %j
  store i8 %x3.m, ptr %x3.mdst

  %c.ovf = load i1, ptr %overflow.a
  br i1 %c.ovf, label %c.overflow, label %c.next, !prof !0
c.overflow:
  %c.which = load i64, ptr %overflow_which.a
  %c.detail.p = getelementptr inbounds i64, ptr %state, i64 7
  store i64 %c.which, ptr %c.detail.p
  br label %err_overflow
c.next:
  %j.next = add i64 %j, 1
  store i64 %j.next, ptr %nout.a
  br label %c.done
c.done:
  br label %row_done

filtered:
  %filtered.v = load i64, ptr %filtered.a
  %filtered.n = add i64 %filtered.v, 1
  store i64 %filtered.n, ptr %filtered.a
  br label %row_done

late_row:
  %late.v = load i64, ptr %late.a
  %late.n = add i64 %late.v, 1
  store i64 %late.n, ptr %late.a
  br label %row_done

row_done:
  %i.next = add nuw nsw i64 %i, 1
  %more = icmp slt i64 %i.next, %rows
  br i1 %more, label %loop, label %exit

exit:
  %filtered.final = load i64, ptr %filtered.a
  call void @p0_generic_process_add_counter(ptr %state, i64 1, i64 %filtered.final)
  %late.final = load i64, ptr %late.a
  call void @p0_generic_process_add_counter(ptr %state, i64 2, i64 %late.final)
  %nonneg_rows = select i1 %nonempty, i64 %rows, i64 0
  call void @p0_generic_process_add_counter(ptr %state, i64 0, i64 %nonneg_rows)
  %maxts.final = load i64, ptr %maxts.a
  store i64 %maxts.final, ptr %maxts.p
  %minend.final = load i64, ptr %minend.a
  store i64 %minend.final, ptr %minend.p
  %result = load i64, ptr %nout.a
  ret i64 %result

err_oom:
  %err_oom.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -1, ptr %err_oom.code.p
  %err_oom.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err_oom.row.p
  ret i64 -1

err_overflow:
  %err_overflow.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -3, ptr %err_overflow.code.p
  %err_overflow.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err_overflow.row.p
  ret i64 -3
}

define internal void @p0_generic_process_add_counter(ptr %state, i64 %index, i64 %delta) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %state, i64 %index
  %v = load i64, ptr %p
  %n = add i64 %v, %delta
  store i64 %n, ptr %p
  ret void
}

declare double @llvm.fabs.f64(double)
declare double @llvm.minnum.f64(double, double)
declare double @llvm.maxnum.f64(double, double)
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.smax.i64(i64, i64)
declare i64 @llvm.ctlz.i64(i64, i1)
declare {i64, i1} @llvm.sadd.with.overflow.i64(i64, i64)
declare double @llvm.sqrt.f64(double)
declare double @llvm.fma.f64(double, double, double)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

!0 = !{!"branch_weights", i32 1, i32 100000}
!1 = !{!"branch_weights", i32 100000, i32 1}

; runtime (linked in from runtime/*.ll)
@gz_day_names = external constant [21 x i8]
@gz_month_names = external constant [36 x i8]
@gz_all_valid = external constant [8 x i8]
declare ptr @gz_calloc_table(i64, i64)
declare void @gz_ht_free(ptr)
declare i32 @gz_ht_rehash(ptr, i64, i64)
declare ptr @gz_ht_upsert(ptr, ptr, i64, ptr, i64, i64)
declare ptr @gz_ht_find(ptr, i64, ptr, i64, i64)
declare void @gz_ht_view(ptr, ptr)
declare ptr @gz_ht_entry(ptr, i64, i64)
declare i64 @gz_ht_capacity(ptr)
declare i64 @gz_hash_mix(i64, i64)
declare i64 @gz_hash_finish(i64)
declare void @gz_advise_huge(ptr, i64)
declare ptr @gz_kpa_append(ptr, i64)
declare i64 @gz_kpa_digit(i64, i64)
declare void @gz_kpa_copy(ptr, ptr, i64)
declare i32 @gz_kpa_radix_sort(ptr, i64, i64, i64, ptr)
declare i32 @gz_kpa_cmp(ptr, ptr, i64)
declare i64 @gz_kpa_seal(ptr, i64, i64)
declare void @gz_kpa_merge2(ptr, ptr, i64, i64, i64, i64, i64)
declare i64 @gz_kpa_window(ptr, i64, i64, i64, i64, i64, i64, ptr)
declare ptr @gz_kpa_merge_runs(ptr, i64, i64, i64, ptr, i64)
declare void @gz_kpa_free(ptr)
declare void @gz_kpa_seal_into(ptr, ptr, i64, i64)
declare void @gz_kpa_drop(ptr, i64, i64, i64, i64)
declare void @gz_kpa_close(ptr)
declare i64 @gz_kpa_min_word(ptr, i64, i64)
declare i64 @gz_kpa_varying_bytes(ptr, i64, i64, i64)
declare void @gz_arena_init(ptr)
declare ptr @gz_arena_alloc(ptr, i64)
declare void @gz_arena_free(ptr)
declare i64 @gz_strbuf_put(ptr, i64, ptr, i64)
declare i64 @gz_str_find(ptr, i64, ptr, i64, i64)
declare i1 @gz_str_starts(ptr, i64, ptr, i64)
declare i1 @gz_str_ends(ptr, i64, ptr, i64)
declare i64 @gz_str_count(ptr, i64, ptr, i64)
declare i64 @gz_str_split_part(ptr, i64, ptr, i64, i64, ptr)
declare i64 @gz_utf8_count(ptr, i64)
declare i64 @gz_utf8_offset(ptr, i64, i64)
declare void @gz_str_case(ptr, ptr, i64, i1)
declare ptr @gz_str_replace(ptr, ptr, i64, ptr, i64, ptr, i64, i1, ptr)
declare i64 @gz_utf8_offset.from(ptr, i64, i64)
declare void @gz_civil(i64, ptr)
declare i64 @gz_fmt_digits(ptr, i64, i64)
declare i64 @gz_fmt_year(ptr, i64)
declare i1 @gz_str_eq(ptr, i64, ptr, i64)
declare i1 @gz_bit(ptr, i64)
declare i64 @gz_run_parts(ptr, ptr, ptr, i64, ptr, i64)
declare i32 @gz_vec_push(ptr, i64)
declare i32 @gz_vec_push_value(ptr, i64)
declare i32 @gz_vec_push_growing(ptr, i64, i64)
declare i32 @gz_vec_reserve(ptr, i64)
declare i32 @gz_vec_grow(ptr, i64, i64)
declare i32 @gz_vec_extend(ptr, ptr)
declare void @gz_vec_free(ptr)
declare i64 @gz_vec_bytes(ptr)
declare i32 @gz_cmp_i64(ptr, ptr)
declare i1 @gz_is_ascending(ptr, i64)
declare void @gz_vec_sort(ptr)
declare i64 @gz_f64_key(double)
declare double @gz_f64_of_key(i64)
declare double @gz_key_value(i64, i1)
declare void @gz_select_kth(ptr, i64, i64)
declare i64 @gz_max_of(ptr, i64, i64)
declare double @gz_vec_median(ptr, i1)
declare double @gz_middle_mean(double, double)
declare i64 @gz_vec_mode(ptr)
declare i64 @gz_mode_of_runs(ptr, i64)
declare i64 @gz_vec_distinct(ptr)
declare void @gz_vec_top_k(ptr, ptr, i64, i1, ptr)
declare i32 @gz_bag_add(ptr, i64, i64)
declare i32 @gz_bag2_add(ptr, i64, i64, i64)
declare void @gz_bag2_ties(ptr, i1, ptr, ptr)
declare double @gz_bag_median(ptr, i1)
declare i64 @gz_bag_mode(ptr)
declare void @gz_bag_top_k(ptr, ptr, i64, i1, ptr)
declare void @gz_bag2_mode_ties(ptr, ptr, ptr)
declare i32 @gz_seq_insert(ptr, i64, i64, i64)
declare void @gz_seq_remove(ptr, i64)
declare ptr @gz_win_table(ptr, i64)
declare void @gz_win_remove(ptr, i64)
declare void @gz_win_free(ptr)
declare ptr @gz_ht_dense_alloc(ptr, i64, i64)
declare i1 @gz_ht_dense_fits(ptr, i64, i64, i64)
declare i32 @gz_ht_place_dense(ptr, i64, i64, i64)
declare i32 @gz_dir_place_dense(ptr, i64, i64, i64)
declare i32 @gz_dir_place_hashed(ptr, i64)

; ==== unit state (O1)
; grizzly-py codegen v19, variant generic
define internal void @p0_generic_release(ptr %ht) {
entry:
  %cap = call i64 @gz_ht_capacity(ptr %ht)
  %any = icmp ugt i64 %cap, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %next ]
  %e = call ptr @gz_ht_entry(ptr %ht, i64 %i, i64 120)
  %tag = load i64, ptr %e
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %free, label %next
free:
  %v3 = getelementptr inbounds i8, ptr %e, i64 96
  call void @gz_vec_free(ptr %v3)
  %ring.p = getelementptr inbounds i8, ptr %e, i64 32
  %ring = load ptr, ptr %ring.p
  %slots.p = getelementptr inbounds i8, ptr %e, i64 40
  %slots = load i64, ptr %slots.p
  %has.slots = icmp ugt i64 %slots, 0
  br i1 %has.slots, label %slot, label %ring.free
slot:
  %k = phi i64 [ 0, %free ], [ %k.next, %slot ]
  %k1 = add i64 %k, 1
  %k.off = mul i64 %k1, 72
  %s = getelementptr inbounds i8, ptr %ring, i64 %k.off
  %sv3 = getelementptr inbounds i8, ptr %s, i64 48
  call void @gz_vec_free(ptr %sv3)
  %k.next = add i64 %k, 1
  %k.more = icmp ult i64 %k.next, %slots
  br i1 %k.more, label %slot, label %ring.free
ring.free:
  call void @free(ptr %ring)
  store ptr null, ptr %ring.p
  br label %next
next:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %cap
  br i1 %more, label %loop, label %done
done:
  call void @gz_ht_free(ptr %ht)
  ret void
}

define void @p0_generic_close(ptr %state) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %slots = load ptr, ptr %dir
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  br label %loop
loop:
  %w = phi i64 [ 0, %entry ], [ %w.next, %body ]
  %done = icmp eq i64 %w, %len
  br i1 %done, label %exit, label %body
body:
  %ht = getelementptr inbounds [4 x i64], ptr %slots, i64 %w, i64 1
  call void @p0_generic_release(ptr %ht)
  %w.next = add i64 %w, 1
  br label %loop
exit:
  call void @gz_win_free(ptr %dir)
  ret void
}

; The bytes of every key's ring of pane states (and their panes' value vectors): the state outside
; the key table, for the state-memory limit (engine/state_memory.py; the entries' own value
; vectors are read from the table there).
define i64 @p0_generic_heap_bytes(ptr %state) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  %has_table = icmp ugt i64 %len, 0
  br i1 %has_table, label %table, label %none
none:
  ret i64 0
table:
  %slots = load ptr, ptr %dir
  %ht = getelementptr inbounds i64, ptr %slots, i64 1
  %cap = call i64 @gz_ht_capacity(ptr %ht)
  %any = icmp ugt i64 %cap, 0
  br i1 %any, label %loop, label %none
loop:
  %i = phi i64 [ 0, %table ], [ %i.next, %next ]
  %acc = phi i64 [ 0, %table ], [ %acc.next, %next ]
  %e = call ptr @gz_ht_entry(ptr %ht, i64 %i, i64 120)
  %tag = load i64, ptr %e
  %live = icmp ugt i64 %tag, 1
  %ring.p = getelementptr inbounds i8, ptr %e, i64 32
  %ring = load ptr, ptr %ring.p
  %has.ring = icmp ne ptr %ring, null
  %counted = and i1 %live, %has.ring
  br i1 %counted, label %ring.add, label %next
ring.add:
  %slots.p = getelementptr inbounds i8, ptr %e, i64 40
  %nslots = load i64, ptr %slots.p
  %states = add i64 %nslots, 1
  %ring.bytes = mul i64 %states, 72
  %with.ring = add i64 %acc, %ring.bytes
  %has.slots = icmp ugt i64 %nslots, 0
  br i1 %has.slots, label %slot, label %next
slot:
  %k = phi i64 [ 0, %ring.add ], [ %k.next, %slot ]
  %sum = phi i64 [ %with.ring, %ring.add ], [ %sum.next, %slot ]
  %k1 = add i64 %k, 1
  %k.off = mul i64 %k1, 72
  %s = getelementptr inbounds i8, ptr %ring, i64 %k.off
  %sum.0 = add i64 %sum, 0
  %sv3 = getelementptr inbounds i8, ptr %s, i64 48
  %sb3 = call i64 @gz_vec_bytes(ptr %sv3)
  %sum.1 = add i64 %sum.0, %sb3
  %sum.next = add i64 %sum.1, 0
  %k.next = add i64 %k, 1
  %k.more = icmp ult i64 %k.next, %nslots
  br i1 %k.more, label %slot, label %next
next:
  %acc.next = phi i64 [ %acc, %loop ], [ %with.ring, %ring.add ], [ %sum.next, %slot ]
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %cap
  br i1 %more, label %loop, label %done
done:
  ret i64 %acc.next
}

declare void @free(ptr)

; runtime (linked in from runtime/*.ll)
@gz_day_names = external constant [21 x i8]
@gz_month_names = external constant [36 x i8]
@gz_all_valid = external constant [8 x i8]
declare ptr @gz_calloc_table(i64, i64)
declare void @gz_ht_free(ptr)
declare i32 @gz_ht_rehash(ptr, i64, i64)
declare ptr @gz_ht_upsert(ptr, ptr, i64, ptr, i64, i64)
declare ptr @gz_ht_find(ptr, i64, ptr, i64, i64)
declare void @gz_ht_view(ptr, ptr)
declare ptr @gz_ht_entry(ptr, i64, i64)
declare i64 @gz_ht_capacity(ptr)
declare i64 @gz_hash_mix(i64, i64)
declare i64 @gz_hash_finish(i64)
declare void @gz_advise_huge(ptr, i64)
declare ptr @gz_kpa_append(ptr, i64)
declare i64 @gz_kpa_digit(i64, i64)
declare void @gz_kpa_copy(ptr, ptr, i64)
declare i32 @gz_kpa_radix_sort(ptr, i64, i64, i64, ptr)
declare i32 @gz_kpa_cmp(ptr, ptr, i64)
declare i64 @gz_kpa_seal(ptr, i64, i64)
declare void @gz_kpa_merge2(ptr, ptr, i64, i64, i64, i64, i64)
declare i64 @gz_kpa_window(ptr, i64, i64, i64, i64, i64, i64, ptr)
declare ptr @gz_kpa_merge_runs(ptr, i64, i64, i64, ptr, i64)
declare void @gz_kpa_free(ptr)
declare void @gz_kpa_seal_into(ptr, ptr, i64, i64)
declare void @gz_kpa_drop(ptr, i64, i64, i64, i64)
declare void @gz_kpa_close(ptr)
declare i64 @gz_kpa_min_word(ptr, i64, i64)
declare i64 @gz_kpa_varying_bytes(ptr, i64, i64, i64)
declare void @gz_arena_init(ptr)
declare ptr @gz_arena_alloc(ptr, i64)
declare void @gz_arena_free(ptr)
declare i64 @gz_strbuf_put(ptr, i64, ptr, i64)
declare i64 @gz_str_find(ptr, i64, ptr, i64, i64)
declare i1 @gz_str_starts(ptr, i64, ptr, i64)
declare i1 @gz_str_ends(ptr, i64, ptr, i64)
declare i64 @gz_str_count(ptr, i64, ptr, i64)
declare i64 @gz_str_split_part(ptr, i64, ptr, i64, i64, ptr)
declare i64 @gz_utf8_count(ptr, i64)
declare i64 @gz_utf8_offset(ptr, i64, i64)
declare void @gz_str_case(ptr, ptr, i64, i1)
declare ptr @gz_str_replace(ptr, ptr, i64, ptr, i64, ptr, i64, i1, ptr)
declare i64 @gz_utf8_offset.from(ptr, i64, i64)
declare void @gz_civil(i64, ptr)
declare i64 @gz_fmt_digits(ptr, i64, i64)
declare i64 @gz_fmt_year(ptr, i64)
declare i1 @gz_str_eq(ptr, i64, ptr, i64)
declare i1 @gz_bit(ptr, i64)
declare i64 @gz_run_parts(ptr, ptr, ptr, i64, ptr, i64)
declare i32 @gz_vec_push(ptr, i64)
declare i32 @gz_vec_push_value(ptr, i64)
declare i32 @gz_vec_push_growing(ptr, i64, i64)
declare i32 @gz_vec_reserve(ptr, i64)
declare i32 @gz_vec_grow(ptr, i64, i64)
declare i32 @gz_vec_extend(ptr, ptr)
declare void @gz_vec_free(ptr)
declare i64 @gz_vec_bytes(ptr)
declare i32 @gz_cmp_i64(ptr, ptr)
declare i1 @gz_is_ascending(ptr, i64)
declare void @gz_vec_sort(ptr)
declare i64 @gz_f64_key(double)
declare double @gz_f64_of_key(i64)
declare double @gz_key_value(i64, i1)
declare void @gz_select_kth(ptr, i64, i64)
declare i64 @gz_max_of(ptr, i64, i64)
declare double @gz_vec_median(ptr, i1)
declare double @gz_middle_mean(double, double)
declare i64 @gz_vec_mode(ptr)
declare i64 @gz_mode_of_runs(ptr, i64)
declare i64 @gz_vec_distinct(ptr)
declare void @gz_vec_top_k(ptr, ptr, i64, i1, ptr)
declare i32 @gz_bag_add(ptr, i64, i64)
declare i32 @gz_bag2_add(ptr, i64, i64, i64)
declare void @gz_bag2_ties(ptr, i1, ptr, ptr)
declare double @gz_bag_median(ptr, i1)
declare i64 @gz_bag_mode(ptr)
declare void @gz_bag_top_k(ptr, ptr, i64, i1, ptr)
declare void @gz_bag2_mode_ties(ptr, ptr, ptr)
declare i32 @gz_seq_insert(ptr, i64, i64, i64)
declare void @gz_seq_remove(ptr, i64)
declare ptr @gz_win_table(ptr, i64)
declare void @gz_win_remove(ptr, i64)
declare void @gz_win_free(ptr)
declare ptr @gz_ht_dense_alloc(ptr, i64, i64)
declare i1 @gz_ht_dense_fits(ptr, i64, i64, i64)
declare i32 @gz_ht_place_dense(ptr, i64, i64, i64)
declare i32 @gz_dir_place_dense(ptr, i64, i64, i64)
declare i32 @gz_dir_place_hashed(ptr, i64)

; ==== unit process_nonnull (O3)
; grizzly-py codegen v19, variant generic
; ---- pipeline 0: window pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)

; ---- count panes: 20 records per pane, 5 panes per window
declare ptr @realloc(ptr, i64)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; Merge the decomposable aggregates of pane state %src into %grp.
define internal void @p0_generic_cw_merge(ptr %grp, ptr %src) {
entry:
  ; -- merge n = count
  %m0.a0.p = getelementptr inbounds i8, ptr %grp, i64 0
  %m0.a0 = load i64, ptr %m0.a0.p
  %m0.b0.p = getelementptr inbounds i8, ptr %src, i64 0
  %m0.b0 = load i64, ptr %m0.b0.p

  %m0.n = add i64 %m0.a0, %m0.b0
  store i64 %m0.n, ptr %m0.a0.p

  ; -- merge total = sum
  %m1.a0.p = getelementptr inbounds i8, ptr %grp, i64 8
  %m1.a0 = load i64, ptr %m1.a0.p
  %m1.b0.p = getelementptr inbounds i8, ptr %src, i64 8
  %m1.b0 = load i64, ptr %m1.b0.p

  %m1.a1.p = getelementptr inbounds i8, ptr %grp, i64 16
  %m1.a1 = load i64, ptr %m1.a1.p
  %m1.b1.p = getelementptr inbounds i8, ptr %src, i64 16
  %m1.b1 = load i64, ptr %m1.b1.p

  %m1.a2.p = getelementptr inbounds i8, ptr %grp, i64 24
  %m1.a2 = load i64, ptr %m1.a2.p
  %m1.b2.p = getelementptr inbounds i8, ptr %src, i64 24
  %m1.b2 = load i64, ptr %m1.b2.p

  %m1.r = call {i64, i1} @llvm.sadd.with.overflow.i64(i64 %m1.a0, i64 %m1.b0)
  %m1.sum = extractvalue {i64, i1} %m1.r, 0
  %m1.of = extractvalue {i64, i1} %m1.r, 1
  store i64 %m1.sum, ptr %m1.a0.p
  %m1.neg = icmp slt i64 %m1.b0, 0
  %m1.dir = select i1 %m1.neg, i64 -1, i64 1
  %m1.cadd = select i1 %m1.of, i64 %m1.dir, i64 0
  %m1.c1 = add i64 %m1.a1, %m1.b1
  %m1.carry = add i64 %m1.c1, %m1.cadd
  store i64 %m1.carry, ptr %m1.a1.p
  %m1.n = add i64 %m1.a2, %m1.b2
  store i64 %m1.n, ptr %m1.a2.p

  ; -- merge hi = max
  %m2.a0.p = getelementptr inbounds i8, ptr %grp, i64 32
  %m2.a0 = load double, ptr %m2.a0.p
  %m2.b0.p = getelementptr inbounds i8, ptr %src, i64 32
  %m2.b0 = load double, ptr %m2.b0.p

  %m2.a1.p = getelementptr inbounds i8, ptr %grp, i64 40
  %m2.a1 = load i64, ptr %m2.a1.p
  %m2.b1.p = getelementptr inbounds i8, ptr %src, i64 40
  %m2.b1 = load i64, ptr %m2.b1.p

  %m2.both = call double @llvm.maxnum.f64(double %m2.a0, double %m2.b0)
  %m2.aempty = icmp eq i64 %m2.a1, 0
  %m2.bempty = icmp eq i64 %m2.b1, 0
  %m2.v1 = select i1 %m2.aempty, double %m2.b0, double %m2.both
  %m2.v = select i1 %m2.bempty, double %m2.a0, double %m2.v1
  store double %m2.v, ptr %m2.a0.p
  %m2.n = add i64 %m2.a1, %m2.b1
  store i64 %m2.n, ptr %m2.a1.p

  ret void
}

; Append the value vectors of pane state %src to those of %grp; 1 when out of memory.
define internal i32 @p0_generic_cw_extend(ptr %grp, ptr %src) {
entry:
  ; -- merge med = median
  %m3.dst = getelementptr inbounds i8, ptr %grp, i64 48
  %m3.src = getelementptr inbounds i8, ptr %src, i64 48
  %m3.rc = call i32 @gz_vec_extend(ptr %m3.dst, ptr %m3.src)
  %m3.oom = icmp ne i32 %m3.rc, 0
  br i1 %m3.oom, label %oom, label %m3.ok
m3.ok:

  ret i32 0
oom:
  ret i32 1
}

define internal void @p0_generic_cw_free_vectors(ptr %s) {
entry:
  %v3 = getelementptr inbounds i8, ptr %s, i64 48
  call void @gz_vec_free(ptr %v3)
  ret void
}

; The %cnt-th record of the key of entry %grp closed its open pane (%cnt is a multiple of
; 20): move the pane into the ring (growing it up to 5 slots). When %cnt is a
; multiple of 40, build the window of the key's last min(100, %cnt) records in
; the aggregates of the entry-shaped buffer %tmp: the suffix state of the previous block above
; this pane's slot, the prefix state, and (holistic aggregates) every pane's vectors. A pane
; that completes a block of 5 turns the block into suffix states. Returns 1 when the
; window fires, 0 when not, -1 when out of memory (the state stays consistent).
define internal i32 @p0_generic_cw_pane(ptr %grp, i64 %cnt, ptr %tmp) {
entry:
  %ring.p = getelementptr inbounds i8, ptr %grp, i64 32
  %cap.p = getelementptr inbounds i8, ptr %grp, i64 40
  %ring0 = load ptr, ptr %ring.p
  %cap0 = load i64, ptr %cap.p
  %closed = udiv i64 %cnt, 20
  %i = sub i64 %closed, 1
  %q = urem i64 %i, 5
  %fits = icmp ult i64 %q, %cap0
  br i1 %fits, label %have, label %grow
grow:
  ; capacity: min(5, max(2 * capacity, q + 1, 4)) slots
  %g.dbl = shl i64 %cap0, 1
  %g.big = icmp ugt i64 %g.dbl, 4
  %g.1 = select i1 %g.big, i64 %g.dbl, i64 4
  %q1g = add i64 %q, 1
  %g.q = icmp ugt i64 %q1g, %g.1
  %g.2 = select i1 %g.q, i64 %q1g, i64 %g.1
  %g.over = icmp ugt i64 %g.2, 5
  %cap.new = select i1 %g.over, i64 5, i64 %g.2
  %slots.new = add i64 %cap.new, 1
  %bytes.new = mul i64 %slots.new, 72
  %moved = call ptr @realloc(ptr %ring0, i64 %bytes.new)
  %failed = icmp eq ptr %moved, null
  br i1 %failed, label %oom, label %grown
grown:
  ; zero the new slots (and the prefix state of a new ring)
  %was.empty = icmp eq i64 %cap0, 0
  %slots.old = add i64 %cap0, 1
  %bytes.kept = mul i64 %slots.old, 72
  %bytes.old = select i1 %was.empty, i64 0, i64 %bytes.kept
  %fresh = getelementptr inbounds i8, ptr %moved, i64 %bytes.old
  %bytes.fresh = sub i64 %bytes.new, %bytes.old
  call void @llvm.memset.p0.i64(ptr %fresh, i8 0, i64 %bytes.fresh, i1 false)
  store ptr %moved, ptr %ring.p
  store i64 %cap.new, ptr %cap.p
  br label %have
have:
  %ring = phi ptr [ %ring0, %entry ], [ %moved, %grown ]
  %cap = phi i64 [ %cap0, %entry ], [ %cap.new, %grown ]
  %q1 = add i64 %q, 1
  %slot.off = mul i64 %q1, 72
  %slot = getelementptr inbounds i8, ptr %ring, i64 %slot.off
  ; the pane 5 panes back leaves the ring: free its value vectors
  call void @p0_generic_cw_free_vectors(ptr %slot)
  %open = getelementptr inbounds i8, ptr %grp, i64 48
  call void @llvm.memcpy.p0.p0.i64(ptr %slot, ptr %open, i64 72, i1 false)
  call void @llvm.memset.p0.i64(ptr %open, i8 0, i64 72, i1 false)
  call void @p0_generic_cw_merge(ptr %ring, ptr %slot)
  %fire.r = urem i64 %cnt, 40
  %fire = icmp eq i64 %fire.r, 0
  %w = getelementptr inbounds i8, ptr %tmp, i64 48
  br i1 %fire, label %window, label %block
window:
  call void @llvm.memset.p0.i64(ptr %w, i8 0, i64 72, i1 false)
  %q2 = add i64 %q, 2
  %has.suffix = icmp ult i64 %q1, %cap
  br i1 %has.suffix, label %suffix, label %prefix
suffix:
  %suffix.off = mul i64 %q2, 72
  %suffix.s = getelementptr inbounds i8, ptr %ring, i64 %suffix.off
  call void @p0_generic_cw_merge(ptr %w, ptr %suffix.s)
  br label %prefix
prefix:
  call void @p0_generic_cw_merge(ptr %w, ptr %ring)
  br label %values
values:
  %k = phi i64 [ 0, %prefix ], [ %k.next, %values.next ]
  %k1 = add i64 %k, 1
  %k.off = mul i64 %k1, 72
  %k.s = getelementptr inbounds i8, ptr %ring, i64 %k.off
  %k.rc = call i32 @p0_generic_cw_extend(ptr %w, ptr %k.s)
  %k.oom = icmp ne i32 %k.rc, 0
  br i1 %k.oom, label %values.oom, label %values.next
values.next:
  %k.next = add i64 %k, 1
  %k.more = icmp ult i64 %k.next, %cap
  br i1 %k.more, label %values, label %windowed
values.oom:
  call void @p0_generic_cw_free_vectors(ptr %w)
  br label %oom
windowed:
  br label %block
block:
  %fired = phi i32 [ 0, %have ], [ 1, %windowed ]
  %complete = icmp eq i64 %q, 4
  br i1 %complete, label %convert, label %done
convert:
  ; the block of 5 panes is complete: slot k becomes the merge of panes k..4
  br label %convert.loop
convert.loop:
  %c = phi i64 [ 3, %convert ], [ %c.next, %convert.loop ]
  %c1 = add i64 %c, 1
  %c.off = mul i64 %c1, 72
  %c.dst = getelementptr inbounds i8, ptr %ring, i64 %c.off
  %c.src = getelementptr inbounds i8, ptr %c.dst, i64 72
  call void @p0_generic_cw_merge(ptr %c.dst, ptr %c.src)
  %c.next = sub i64 %c, 1
  %c.more = icmp ne i64 %c, 0
  br i1 %c.more, label %convert.loop, label %converted
converted:
  ; the next block's prefix starts empty (it never holds value vectors)
  call void @llvm.memset.p0.i64(ptr %ring, i8 0, i64 72, i1 false)
  br label %done
done:
  ret i32 %fired
oom:
  ret i32 -1
}

define i64 @p0_generic_process_nonnull(ptr noalias %state, ptr noalias %columns, i64 %rows, ptr noalias %params, ptr noalias %out) {
entry:
  %wm.p = getelementptr inbounds i64, ptr %params, i64 0
  %wm = load i64, ptr %wm.p
  %filtered.a = alloca i64, align 8
  store i64 0, ptr %filtered.a
  %late.a = alloca i64, align 8
  store i64 0, ptr %late.a
  %nout.a = alloca i64, align 8
  store i64 0, ptr %nout.a
  %maxts.p = getelementptr inbounds i64, ptr %state, i64 3
  %maxts.0 = load i64, ptr %maxts.p
  %maxts.a = alloca i64, align 8
  store i64 %maxts.0, ptr %maxts.a
  %minend.p = getelementptr inbounds i64, ptr %state, i64 6
  %minend.0 = load i64, ptr %minend.p
  %minend.a = alloca i64, align 8
  store i64 %minend.0, ptr %minend.a
  %c0.vals.p = getelementptr inbounds i64, ptr %columns, i64 0
  %c0.vals = load ptr, ptr %c0.vals.p
  %c0.off.p = getelementptr inbounds i64, ptr %columns, i64 2
  %c0.off = load i64, ptr %c0.off.p
  %c1.vals.p = getelementptr inbounds i64, ptr %columns, i64 6
  %c1.vals = load ptr, ptr %c1.vals.p
  %c1.off.p = getelementptr inbounds i64, ptr %columns, i64 8
  %c1.off = load i64, ptr %c1.off.p
  %c5.vals.p = getelementptr inbounds i64, ptr %columns, i64 30
  %c5.vals = load ptr, ptr %c5.vals.p
  %c5.off.p = getelementptr inbounds i64, ptr %columns, i64 32
  %c5.off = load i64, ptr %c5.off.p
  %c3.vals.p = getelementptr inbounds i64, ptr %columns, i64 18
  %c3.vals = load ptr, ptr %c3.vals.p
  %c3.off.p = getelementptr inbounds i64, ptr %columns, i64 20
  %c3.off = load i64, ptr %c3.off.p
  %c2.vals.p = getelementptr inbounds i64, ptr %columns, i64 12
  %c2.vals = load ptr, ptr %c2.vals.p
  %c2.off.p = getelementptr inbounds i64, ptr %columns, i64 14
  %c2.off = load i64, ptr %c2.off.p
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %key.a = alloca [2 x i64], align 8
  %htv.a = alloca { ptr, i64 }, align 8
  %ht.slot = call ptr @gz_win_table(ptr %dir, i64 0)
  %ht.ok = icmp ne ptr %ht.slot, null
  %ht.none = alloca [3 x i64], align 8
  call void @llvm.memset.p0.i64(ptr %ht.none, i8 0, i64 24, i1 false)
  %ht = select i1 %ht.ok, ptr %ht.slot, ptr %ht.none  ; out of memory: the first row reports it
  call void @gz_ht_view(ptr %ht, ptr %htv.a)
  %overflow.a = alloca i1, align 1
  store i1 false, ptr %overflow.a
  %overflow_which.a = alloca i64, align 8
  store i64 -1, ptr %overflow_which.a
  %cw.tmp = alloca [120 x i8], align 8
  %nonempty = icmp sgt i64 %rows, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %row_done ]
  %ci1 = add i64 %i, %c0.off
  %p2 = getelementptr inbounds i64, ptr %c0.vals, i64 %ci1
  %v3 = load i64, ptr %p2
  ; -- event time
  %ts = add i64 %v3, 0
  %ts.max = load i64, ptr %maxts.a
  %ts.max.new = call i64 @llvm.smax.i64(i64 %ts.max, i64 %ts)
  store i64 %ts.max.new, ptr %maxts.a
  %ci4 = add i64 %i, %c1.off
  %p5 = getelementptr inbounds i64, ptr %c1.vals, i64 %ci4
  %v6 = load i64, ptr %p5
  %ci7 = add i64 %i, %c5.off
  %p8 = getelementptr inbounds i64, ptr %c5.vals, i64 %ci7
  %v9 = load i64, ptr %p8
  %ci10 = add i64 %i, %c3.off
  %p11 = getelementptr inbounds i32, ptr %c3.vals, i64 %ci10
  %v12 = load i32, ptr %p11
  %v13 = sext i32 %v12 to i64
  %ci14 = add i64 %i, %c2.off
  %p15 = getelementptr inbounds double, ptr %c2.vals, i64 %ci14
  %f16 = load double, ptr %p15
  %hk17 = call i64 @gz_f64_key(double %f16)
  br i1 %ht.ok, label %c.table, label %err_oom, !prof !1
c.table:
  ; -- key campaign_id name
  %key0.p = getelementptr inbounds i64, ptr %key.a, i64 0
  store i64 %v6, ptr %key0.p
  %key1.p = getelementptr inbounds i64, ptr %key.a, i64 1
  store i64 %v9, ptr %key1.p
  %h.0 = add i64 -7046029254386353131, 0
  %h.1 = call i64 @gz_hash_mix(i64 %h.0, i64 %v6)
  %h.2 = call i64 @gz_hash_mix(i64 %h.1, i64 %v9)
  %h = call i64 @gz_hash_finish(i64 %h.2)
  ; the key null mask travels in bits 48..62 of the hash, hence of the entry's tag
  %h.low = and i64 %h, 281474976710655
  %h.nm = shl i64 0, 48
  %h.tagged = or i64 %h.low, %h.nm
  %grp = call ptr @gz_ht_upsert(ptr %ht, ptr %htv.a, i64 %h.tagged, ptr %key.a, i64 2, i64 120)
  %grp.oom = icmp eq ptr %grp, null
  br i1 %grp.oom, label %err_oom, label %w.update, !prof !0
w.update:
  ; -- aggregate n = count()
  %a0.s0.p = getelementptr inbounds i8, ptr %grp, i64 48
  %a0.s0 = load i64, ptr %a0.s0.p
  %a0.n = add i64 %a0.s0, 1
  store i64 %a0.n, ptr %a0.s0.p
  ; -- aggregate total = sum(col('qty'))
  %a1.s0.p = getelementptr inbounds i8, ptr %grp, i64 56
  %a1.s0 = load i64, ptr %a1.s0.p
  %a1.s1.p = getelementptr inbounds i8, ptr %grp, i64 64
  %a1.s1 = load i64, ptr %a1.s1.p
  %a1.s2.p = getelementptr inbounds i8, ptr %grp, i64 72
  %a1.s2 = load i64, ptr %a1.s2.p
  %a1.add = select i1 true, i64 %v13, i64 0
  %a1.r = call {i64, i1} @llvm.sadd.with.overflow.i64(i64 %a1.s0, i64 %a1.add)
  %a1.sum = extractvalue {i64, i1} %a1.r, 0
  %a1.of = extractvalue {i64, i1} %a1.r, 1
  store i64 %a1.sum, ptr %a1.s0.p
  %a1.addneg = icmp slt i64 %a1.add, 0
  %a1.dir = select i1 %a1.addneg, i64 -1, i64 1
  %a1.cadd = select i1 %a1.of, i64 %a1.dir, i64 0
  %a1.carry = add i64 %a1.s1, %a1.cadd
  store i64 %a1.carry, ptr %a1.s1.p
  %a1.inc = zext i1 true to i64
  %a1.n = add i64 %a1.s2, %a1.inc
  store i64 %a1.n, ptr %a1.s2.p
  ; -- aggregate hi = max(col('price'))
  %a2.s0.p = getelementptr inbounds i8, ptr %grp, i64 80
  %a2.s0 = load double, ptr %a2.s0.p
  %a2.s1.p = getelementptr inbounds i8, ptr %grp, i64 88
  %a2.s1 = load i64, ptr %a2.s1.p
  %a2.first = icmp eq i64 %a2.s1, 0
  %a2.m = call double @llvm.maxnum.f64(double %a2.s0, double %f16)
  %a2.new = select i1 %a2.first, double %f16, double %a2.m
  %a2.keep = select i1 true, double %a2.new, double %a2.s0
  store double %a2.keep, ptr %a2.s0.p
  %a2.inc = zext i1 true to i64
  %a2.n = add i64 %a2.s1, %a2.inc
  store i64 %a2.n, ptr %a2.s1.p
  ; -- aggregate med = median(col('price'))
  %a3.vec = getelementptr inbounds i8, ptr %grp, i64 96
  br i1 true, label %a3.push, label %a3.pushed
a3.push:
  %a3.rc = call i32 @gz_vec_push_value(ptr %a3.vec, i64 %hk17)
  %a3.oom = icmp ne i32 %a3.rc, 0
  br i1 %a3.oom, label %err_oom, label %a3.pushed, !prof !0
a3.pushed:
  ; -- post-trigger: count window of the last 100 records every 40, panes of 20
  %c.cnt.p = getelementptr inbounds i8, ptr %grp, i64 24
  %c.cnt = load i64, ptr %c.cnt.p
  %c.cnt1 = add i64 %c.cnt, 1
  store i64 %c.cnt1, ptr %c.cnt.p
  %c.r = urem i64 %c.cnt1, 20
  %c.close = icmp eq i64 %c.r, 0
  br i1 %c.close, label %c.pane, label %c.done
c.pane:
  %c.rc = call i32 @p0_generic_cw_pane(ptr %grp, i64 %c.cnt1, ptr %cw.tmp)
  %c.oom = icmp slt i32 %c.rc, 0
  br i1 %c.oom, label %err_oom, label %c.fired, !prof !0
c.fired:
  %c.fire = icmp eq i32 %c.rc, 1
  br i1 %c.fire, label %c.emit, label %c.done
c.emit:
  %j = load i64, ptr %nout.a
  %tag = load i64, ptr %grp
  ; the window's aggregates are in %cw.tmp; its key words come from the entry
  call void @llvm.memcpy.p0.p0.i64(ptr %cw.tmp, ptr %grp, i64 24, i1 false)
  %e = getelementptr inbounds i8, ptr %cw.tmp, i64 0
  %k0.vp.p = getelementptr inbounds ptr, ptr %out, i64 1
  %k0.vp = load ptr, ptr %k0.vp.p
  %k0.mp.p = getelementptr inbounds ptr, ptr %out, i64 2
  %k0.mp = load ptr, ptr %k0.mp.p
  %k0.src = getelementptr inbounds i8, ptr %e, i64 8
  %k0.w = load i64, ptr %k0.src
  %k0.dst = getelementptr inbounds i64, ptr %k0.vp, i64 %j
  store i64 %k0.w, ptr %k0.dst
  %k0.bit = lshr i64 %tag, 48
  %k0.null = trunc i64 %k0.bit to i1
  %k0.valid = xor i1 %k0.null, true
  %k0.m = zext i1 %k0.valid to i8
  %k0.mdst = getelementptr inbounds i8, ptr %k0.mp, i64 %j
  store i8 %k0.m, ptr %k0.mdst
  %k1.vp.p = getelementptr inbounds ptr, ptr %out, i64 3
  %k1.vp = load ptr, ptr %k1.vp.p
  %k1.mp.p = getelementptr inbounds ptr, ptr %out, i64 4
  %k1.mp = load ptr, ptr %k1.mp.p
  %k1.src = getelementptr inbounds i8, ptr %e, i64 16
  %k1.w = load i64, ptr %k1.src
  %k1.dst = getelementptr inbounds i64, ptr %k1.vp, i64 %j
  store i64 %k1.w, ptr %k1.dst
  %k1.bit = lshr i64 %tag, 49
  %k1.null = trunc i64 %k1.bit to i1
  %k1.valid = xor i1 %k1.null, true
  %k1.m = zext i1 %k1.valid to i8
  %k1.mdst = getelementptr inbounds i8, ptr %k1.mp, i64 %j
  store i8 %k1.m, ptr %k1.mdst
  ; -- final n = count
  %x0.vp.p = getelementptr inbounds ptr, ptr %out, i64 5
  %x0.vp = load ptr, ptr %x0.vp.p
  %x0.mp.p = getelementptr inbounds ptr, ptr %out, i64 6
  %x0.mp = load ptr, ptr %x0.mp.p
  %x0.n.p = getelementptr inbounds i8, ptr %e, i64 48
  %x0.n = load i64, ptr %x0.n.p
  %x0.s0.p = getelementptr inbounds i8, ptr %e, i64 48
  %x0.valid = add i1 true, false
  %x0.out = add i64 %x0.n, 0
  %x0.dst = getelementptr inbounds i64, ptr %x0.vp, i64 %j
  store i64 %x0.out, ptr %x0.dst
  %x0.m = zext i1 %x0.valid to i8
  %x0.mdst = getelementptr inbounds i8, ptr %x0.mp, i64 %j
  store i8 %x0.m, ptr %x0.mdst

  ; -- final total = sum
  %x1.vp.p = getelementptr inbounds ptr, ptr %out, i64 7
  %x1.vp = load ptr, ptr %x1.vp.p
  %x1.mp.p = getelementptr inbounds ptr, ptr %out, i64 8
  %x1.mp = load ptr, ptr %x1.mp.p
  %x1.n.p = getelementptr inbounds i8, ptr %e, i64 72
  %x1.n = load i64, ptr %x1.n.p
  %x1.s0.p = getelementptr inbounds i8, ptr %e, i64 56
  %x1.valid = icmp sgt i64 %x1.n, 0
  %x1.carry.p = getelementptr inbounds i8, ptr %e, i64 64
  %x1.carry = load i64, ptr %x1.carry.p
  %x1.ovf = icmp ne i64 %x1.carry, 0
  %x1.ovf.old = load i1, ptr %overflow.a
  %x1.ovf.any = or i1 %x1.ovf.old, %x1.ovf
  store i1 %x1.ovf.any, ptr %overflow.a
  %x1.which.old = load i64, ptr %overflow_which.a
  %x1.which = select i1 %x1.ovf, i64 1, i64 %x1.which.old
  store i64 %x1.which, ptr %overflow_which.a
  %x1.out = load i64, ptr %x1.s0.p
  %x1.dst = getelementptr inbounds i64, ptr %x1.vp, i64 %j
  store i64 %x1.out, ptr %x1.dst
  %x1.m = zext i1 %x1.valid to i8
  %x1.mdst = getelementptr inbounds i8, ptr %x1.mp, i64 %j
  store i8 %x1.m, ptr %x1.mdst

  ; -- final hi = max
  %x2.vp.p = getelementptr inbounds ptr, ptr %out, i64 9
  %x2.vp = load ptr, ptr %x2.vp.p
  %x2.mp.p = getelementptr inbounds ptr, ptr %out, i64 10
  %x2.mp = load ptr, ptr %x2.mp.p
  %x2.n.p = getelementptr inbounds i8, ptr %e, i64 88
  %x2.n = load i64, ptr %x2.n.p
  %x2.s0.p = getelementptr inbounds i8, ptr %e, i64 80
  %x2.valid = icmp sgt i64 %x2.n, 0
  %x2.out = load double, ptr %x2.s0.p
  %x2.dst = getelementptr inbounds double, ptr %x2.vp, i64 %j
  store double %x2.out, ptr %x2.dst
  %x2.m = zext i1 %x2.valid to i8
  %x2.mdst = getelementptr inbounds i8, ptr %x2.mp, i64 %j
  store i8 %x2.m, ptr %x2.mdst

  ; -- final med = median
  %x3.vp.p = getelementptr inbounds ptr, ptr %out, i64 11
  %x3.vp = load ptr, ptr %x3.vp.p
  %x3.mp.p = getelementptr inbounds ptr, ptr %out, i64 12
  %x3.mp = load ptr, ptr %x3.mp.p
  %x3.vec = getelementptr inbounds i8, ptr %e, i64 96
  %x3.len.p = getelementptr inbounds i8, ptr %e, i64 104
  %x3.len = load i64, ptr %x3.len.p
  %x3.valid = icmp sgt i64 %x3.len, 0
  %x3.out = call double @gz_vec_median(ptr %x3.vec, i1 true)
  %x3.dst = getelementptr inbounds double, ptr %x3.vp, i64 %j
  store double %x3.out, ptr %x3.dst
  call void @gz_vec_free(ptr %x3.vec)
  %x3.m = zext i1 %x3.valid to i8
  %x3.mdst = getelementptr inbounds i8, ptr %x3.mp, i64 %j
  store i8 %x3.m, ptr %x3.mdst

  %c.ovf = load i1, ptr %overflow.a
  br i1 %c.ovf, label %c.overflow, label %c.next, !prof !0
c.overflow:
  %c.which = load i64, ptr %overflow_which.a
  %c.detail.p = getelementptr inbounds i64, ptr %state, i64 7
  store i64 %c.which, ptr %c.detail.p
  br label %err_overflow
c.next:
  %j.next = add i64 %j, 1
  store i64 %j.next, ptr %nout.a
  br label %c.done
c.done:
  br label %row_done

filtered:
  %filtered.v = load i64, ptr %filtered.a
  %filtered.n = add i64 %filtered.v, 1
  store i64 %filtered.n, ptr %filtered.a
  br label %row_done

late_row:
  %late.v = load i64, ptr %late.a
  %late.n = add i64 %late.v, 1
  store i64 %late.n, ptr %late.a
  br label %row_done

row_done:
  %i.next = add nuw nsw i64 %i, 1
  %more = icmp slt i64 %i.next, %rows
  br i1 %more, label %loop, label %exit

exit:
  %filtered.final = load i64, ptr %filtered.a
  call void @p0_generic_process_nonnull_add_counter(ptr %state, i64 1, i64 %filtered.final)
  %late.final = load i64, ptr %late.a
  call void @p0_generic_process_nonnull_add_counter(ptr %state, i64 2, i64 %late.final)
  %nonneg_rows = select i1 %nonempty, i64 %rows, i64 0
  call void @p0_generic_process_nonnull_add_counter(ptr %state, i64 0, i64 %nonneg_rows)
  %maxts.final = load i64, ptr %maxts.a
  store i64 %maxts.final, ptr %maxts.p
  %minend.final = load i64, ptr %minend.a
  store i64 %minend.final, ptr %minend.p
  %result = load i64, ptr %nout.a
  ret i64 %result

err_oom:
  %err_oom.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -1, ptr %err_oom.code.p
  %err_oom.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err_oom.row.p
  ret i64 -1

err_overflow:
  %err_overflow.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -3, ptr %err_overflow.code.p
  %err_overflow.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err_overflow.row.p
  ret i64 -3
}

define internal void @p0_generic_process_nonnull_add_counter(ptr %state, i64 %index, i64 %delta) alwaysinline {
entry:
  %p = getelementptr inbounds i64, ptr %state, i64 %index
  %v = load i64, ptr %p
  %n = add i64 %v, %delta
  store i64 %n, ptr %p
  ret void
}

declare double @llvm.fabs.f64(double)
declare double @llvm.minnum.f64(double, double)
declare double @llvm.maxnum.f64(double, double)
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.smax.i64(i64, i64)
declare i64 @llvm.ctlz.i64(i64, i1)
declare {i64, i1} @llvm.sadd.with.overflow.i64(i64, i64)
declare double @llvm.sqrt.f64(double)
declare double @llvm.fma.f64(double, double, double)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

!0 = !{!"branch_weights", i32 1, i32 100000}
!1 = !{!"branch_weights", i32 100000, i32 1}

; runtime (linked in from runtime/*.ll)
@gz_day_names = external constant [21 x i8]
@gz_month_names = external constant [36 x i8]
@gz_all_valid = external constant [8 x i8]
declare ptr @gz_calloc_table(i64, i64)
declare void @gz_ht_free(ptr)
declare i32 @gz_ht_rehash(ptr, i64, i64)
declare ptr @gz_ht_upsert(ptr, ptr, i64, ptr, i64, i64)
declare ptr @gz_ht_find(ptr, i64, ptr, i64, i64)
declare void @gz_ht_view(ptr, ptr)
declare ptr @gz_ht_entry(ptr, i64, i64)
declare i64 @gz_ht_capacity(ptr)
declare i64 @gz_hash_mix(i64, i64)
declare i64 @gz_hash_finish(i64)
declare void @gz_advise_huge(ptr, i64)
declare ptr @gz_kpa_append(ptr, i64)
declare i64 @gz_kpa_digit(i64, i64)
declare void @gz_kpa_copy(ptr, ptr, i64)
declare i32 @gz_kpa_radix_sort(ptr, i64, i64, i64, ptr)
declare i32 @gz_kpa_cmp(ptr, ptr, i64)
declare i64 @gz_kpa_seal(ptr, i64, i64)
declare void @gz_kpa_merge2(ptr, ptr, i64, i64, i64, i64, i64)
declare i64 @gz_kpa_window(ptr, i64, i64, i64, i64, i64, i64, ptr)
declare ptr @gz_kpa_merge_runs(ptr, i64, i64, i64, ptr, i64)
declare void @gz_kpa_free(ptr)
declare void @gz_kpa_seal_into(ptr, ptr, i64, i64)
declare void @gz_kpa_drop(ptr, i64, i64, i64, i64)
declare void @gz_kpa_close(ptr)
declare i64 @gz_kpa_min_word(ptr, i64, i64)
declare i64 @gz_kpa_varying_bytes(ptr, i64, i64, i64)
declare void @gz_arena_init(ptr)
declare ptr @gz_arena_alloc(ptr, i64)
declare void @gz_arena_free(ptr)
declare i64 @gz_strbuf_put(ptr, i64, ptr, i64)
declare i64 @gz_str_find(ptr, i64, ptr, i64, i64)
declare i1 @gz_str_starts(ptr, i64, ptr, i64)
declare i1 @gz_str_ends(ptr, i64, ptr, i64)
declare i64 @gz_str_count(ptr, i64, ptr, i64)
declare i64 @gz_str_split_part(ptr, i64, ptr, i64, i64, ptr)
declare i64 @gz_utf8_count(ptr, i64)
declare i64 @gz_utf8_offset(ptr, i64, i64)
declare void @gz_str_case(ptr, ptr, i64, i1)
declare ptr @gz_str_replace(ptr, ptr, i64, ptr, i64, ptr, i64, i1, ptr)
declare i64 @gz_utf8_offset.from(ptr, i64, i64)
declare void @gz_civil(i64, ptr)
declare i64 @gz_fmt_digits(ptr, i64, i64)
declare i64 @gz_fmt_year(ptr, i64)
declare i1 @gz_str_eq(ptr, i64, ptr, i64)
declare i1 @gz_bit(ptr, i64)
declare i64 @gz_run_parts(ptr, ptr, ptr, i64, ptr, i64)
declare i32 @gz_vec_push(ptr, i64)
declare i32 @gz_vec_push_value(ptr, i64)
declare i32 @gz_vec_push_growing(ptr, i64, i64)
declare i32 @gz_vec_reserve(ptr, i64)
declare i32 @gz_vec_grow(ptr, i64, i64)
declare i32 @gz_vec_extend(ptr, ptr)
declare void @gz_vec_free(ptr)
declare i64 @gz_vec_bytes(ptr)
declare i32 @gz_cmp_i64(ptr, ptr)
declare i1 @gz_is_ascending(ptr, i64)
declare void @gz_vec_sort(ptr)
declare i64 @gz_f64_key(double)
declare double @gz_f64_of_key(i64)
declare double @gz_key_value(i64, i1)
declare void @gz_select_kth(ptr, i64, i64)
declare i64 @gz_max_of(ptr, i64, i64)
declare double @gz_vec_median(ptr, i1)
declare double @gz_middle_mean(double, double)
declare i64 @gz_vec_mode(ptr)
declare i64 @gz_mode_of_runs(ptr, i64)
declare i64 @gz_vec_distinct(ptr)
declare void @gz_vec_top_k(ptr, ptr, i64, i1, ptr)
declare i32 @gz_bag_add(ptr, i64, i64)
declare i32 @gz_bag2_add(ptr, i64, i64, i64)
declare void @gz_bag2_ties(ptr, i1, ptr, ptr)
declare double @gz_bag_median(ptr, i1)
declare i64 @gz_bag_mode(ptr)
declare void @gz_bag_top_k(ptr, ptr, i64, i1, ptr)
declare void @gz_bag2_mode_ties(ptr, ptr, ptr)
declare i32 @gz_seq_insert(ptr, i64, i64, i64)
declare void @gz_seq_remove(ptr, i64)
declare ptr @gz_win_table(ptr, i64)
declare void @gz_win_remove(ptr, i64)
declare void @gz_win_free(ptr)
declare ptr @gz_ht_dense_alloc(ptr, i64, i64)
declare i1 @gz_ht_dense_fits(ptr, i64, i64, i64)
declare i32 @gz_ht_place_dense(ptr, i64, i64, i64)
declare i32 @gz_dir_place_dense(ptr, i64, i64, i64)
declare i32 @gz_dir_place_hashed(ptr, i64)
