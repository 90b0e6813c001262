; grizzly-py codegen v1, variant generic
; ---- pipeline 0: Pipeline 0: reads source arrow#2 (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)
@p0_generic.str0 = private unnamed_addr constant [4 x i8] c"view"

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
  %c2.vals.p = getelementptr inbounds i64, ptr %columns, i64 12
  %c2.vals = load ptr, ptr %c2.vals.p
  %c2.vraw.p = getelementptr inbounds i64, ptr %columns, i64 13
  %c2.vraw = load ptr, ptr %c2.vraw.p
  %c2.hasv = icmp ne ptr %c2.vraw, null
  %c2.valid = select i1 %c2.hasv, ptr %c2.vraw, ptr @gz_all_valid
  %c2.vmask = select i1 %c2.hasv, i64 -1, i64 0
  %c2.off.p = getelementptr inbounds i64, ptr %columns, i64 14
  %c2.off = load i64, ptr %c2.off.p
  %ht = getelementptr inbounds i64, ptr %state, i64 8
  %key.a = alloca [3 x i64], align 8
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
  %maxts.cur = load i64, ptr %maxts.a
  %maxts.new = call i64 @llvm.smax.i64(i64 %maxts.cur, i64 %ts)
  store i64 %maxts.new, ptr %maxts.a
  %ci7 = add i64 %i, %c1.off
  %vi8 = and i64 %ci7, %c1.vmask
  %valid9 = call i1 @gz_bit(ptr %c1.valid, i64 %vi8)
  %ci10 = add i64 %i, %c1.off
  %p11 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci10
  %v12 = load i32, ptr %p11
  %v13 = sext i32 %v12 to i64
  %dictp15 = getelementptr inbounds i64, ptr %params, i64 1
  %dictcode16 = load i64, ptr %dictp15
  %streq14 = icmp eq i64 %v13, %dictcode16
  ; -- filter (col('event_type') == lit('view'))
  %filter0 = and i1 %valid9, %streq14
  br i1 %filter0, label %filters.pass, label %filtered
filters.pass:
  %ci17 = add i64 %i, %c2.off
  %vi18 = and i64 %ci17, %c2.vmask
  %valid19 = call i1 @gz_bit(ptr %c2.valid, i64 %vi18)
  %ci20 = add i64 %i, %c2.off
  %p21 = getelementptr inbounds i64, ptr %c2.vals, i64 %ci20
  %v22 = load i64, ptr %p21
  %kw23 = select i1 %valid19, i64 %v22, i64 0
  %nm24 = xor i1 %valid19, true
  %nm25 = zext i1 %nm24 to i64
  %nm26 = shl i64 %nm25, 0
  %nm27 = or i64 0, %nm26
  ; -- window assign: tumbling 10000 ms (epoch-aligned, floor for negative times)
  %w.rem = srem i64 %ts, 10000
  %w.remneg = icmp slt i64 %w.rem, 0
  %w.remadj = add i64 %w.rem, 10000
  %w.mod = select i1 %w.remneg, i64 %w.remadj, i64 %w.rem
  %w.start = sub i64 %ts, %w.mod
  %w.end = add i64 %w.start, 10000
  %w.last = sub i64 %w.end, 1
  ; -- pre-trigger: a record whose window already fired (end - 1 <= watermark) is late
  %w.late = icmp sle i64 %w.last, %wm
  br i1 %w.late, label %late_row, label %w.assign, !prof !0
w.assign:
  %w.minend = load i64, ptr %minend.a
  %w.minend.new = call i64 @llvm.smin.i64(i64 %w.minend, i64 %w.end)
  store i64 %w.minend.new, ptr %minend.a
  ; -- key: window start, campaign_id
  store i64 %w.start, ptr %key.a
  %key1.p = getelementptr inbounds i64, ptr %key.a, i64 1
  store i64 %kw23, ptr %key1.p
  %key.nm.p = getelementptr inbounds i64, ptr %key.a, i64 2
  store i64 %nm27, ptr %key.nm.p
  %h.0 = call i64 @gz_hash_mix(i64 -7046029254386353131, i64 %w.start)
  %h.1 = call i64 @gz_hash_mix(i64 %h.0, i64 %kw23)
  %h = call i64 @gz_hash_finish(i64 %h.1)
  %grp = call ptr @gz_ht_upsert(ptr %ht, i64 %h, ptr %key.a, i64 3, i64 40)
  %grp.oom = icmp eq ptr %grp, null
  br i1 %grp.oom, label %err_oom, label %w.update, !prof !0
w.update:
  ; -- aggregate views = count()
  %a0.s0.p = getelementptr inbounds i8, ptr %grp, i64 32
  %a0.s0 = load i64, ptr %a0.s0.p
  %a0.n = add i64 %a0.s0, 1
  store i64 %a0.n, ptr %a0.s0.p
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
  call void @p0_generic_add_counter(ptr %state, i64 1, i64 %filtered.final)
  %late.final = load i64, ptr %late.a
  call void @p0_generic_add_counter(ptr %state, i64 2, i64 %late.final)
  %nonneg_rows = select i1 %nonempty, i64 %rows, i64 0
  call void @p0_generic_add_counter(ptr %state, i64 0, i64 %nonneg_rows)
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
}

define internal void @p0_generic_add_counter(ptr %state, i64 %index, i64 %delta) alwaysinline {
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
declare {i64, i1} @llvm.sadd.with.overflow.i64(i64, i64)

!0 = !{!"branch_weights", i32 1, i32 100000}
define i32 @p0_generic_open(ptr %state) {
entry:
  %ht = getelementptr inbounds i64, ptr %state, i64 8
  %rc = call i32 @gz_ht_init(ptr %ht, i64 1024, i64 40)
  ret i32 %rc
}

define void @p0_generic_close(ptr %state) {
entry:
  %ht = getelementptr inbounds i64, ptr %state, i64 8
  call void @gz_ht_free(ptr %ht)
  ret void
}

define i64 @p0_generic_count_ready(ptr %state, i64 %wm) {
entry:
  %ht = getelementptr inbounds i64, ptr %state, i64 8
  %cap = call i64 @gz_ht_capacity(ptr %ht)
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %count = phi i64 [ 0, %entry ], [ %count.next, %loop ]
  %e = call ptr @gz_ht_entry(ptr %ht, i64 %i, i64 40)
  %tag = load i64, ptr %e
  %live = icmp ugt i64 %tag, 1
  %ws.p = getelementptr inbounds i8, ptr %e, i64 8
  %ws = load i64, ptr %ws.p
  %we = add i64 %ws, 10000
  %wl = sub i64 %we, 1
  %ready0 = icmp sle i64 %wl, %wm
  %ready = and i1 %live, %ready0
  %inc = zext i1 %ready to i64
  %count.next = add i64 %count, %inc
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %cap
  br i1 %more, label %loop, label %done
done:
  ret i64 %count.next
}

define i64 @p0_generic_emit(ptr %state, i64 %wm, ptr noalias %out) {
entry:
  %ht = getelementptr inbounds i64, ptr %state, i64 8
  %cap = call i64 @gz_ht_capacity(ptr %ht)
  %overflow.a = alloca i1, align 1
  store i1 false, ptr %overflow.a
  %overflow_which.a = alloca i64, align 8
  store i64 -1, ptr %overflow_which.a
  %j.a = alloca i64, align 8
  store i64 0, ptr %j.a
  %minend.a = alloca i64, align 8
  store i64 9223372036854775807, ptr %minend.a
  %ws.out.p = getelementptr inbounds ptr, ptr %out, i64 0
  %ws.out = load ptr, ptr %ws.out.p
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %next ]
  %e = call ptr @gz_ht_entry(ptr %ht, i64 %i, i64 40)
  %tag = load i64, ptr %e
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %check, label %next
check:
  %ws.p = getelementptr inbounds i8, ptr %e, i64 8
  %ws = load i64, ptr %ws.p
  %we = add i64 %ws, 10000
  %wl = sub i64 %we, 1
  %ready = icmp sle i64 %wl, %wm
  br i1 %ready, label %fire, label %keep
keep:
  %minend = load i64, ptr %minend.a
  %minend.new = call i64 @llvm.smin.i64(i64 %minend, i64 %we)
  store i64 %minend.new, ptr %minend.a
  br label %next
fire:
  %j = load i64, ptr %j.a
  %ws.dst = getelementptr inbounds i64, ptr %ws.out, i64 %j
  store i64 %ws, ptr %ws.dst
  %k0.vp.p = getelementptr inbounds ptr, ptr %out, i64 1
  %k0.vp = load ptr, ptr %k0.vp.p
  %k0.mp.p = getelementptr inbounds ptr, ptr %out, i64 2
  %k0.mp = load ptr, ptr %k0.mp.p
  %k0.src = getelementptr inbounds i8, ptr %e, i64 16
  %k0.w = load i64, ptr %k0.src
  %k0.dst = getelementptr inbounds i64, ptr %k0.vp, i64 %j
  store i64 %k0.w, ptr %k0.dst
  %k0.nm.p = getelementptr inbounds i8, ptr %e, i64 24
  %k0.nm = load i64, ptr %k0.nm.p
  %k0.bit = lshr i64 %k0.nm, 0
  %k0.null = trunc i64 %k0.bit to i1
  %k0.valid = xor i1 %k0.null, true
  %k0.m = zext i1 %k0.valid to i8
  %k0.mdst = getelementptr inbounds i8, ptr %k0.mp, i64 %j
  store i8 %k0.m, ptr %k0.mdst
  ; -- final views = count
  %x0.vp.p = getelementptr inbounds ptr, ptr %out, i64 3
  %x0.vp = load ptr, ptr %x0.vp.p
  %x0.mp.p = getelementptr inbounds ptr, ptr %out, i64 4
  %x0.mp = load ptr, ptr %x0.mp.p
  %x0.n.p = getelementptr inbounds i8, ptr %e, i64 32
  %x0.n = load i64, ptr %x0.n.p
  %x0.s0.p = getelementptr inbounds i8, ptr %e, i64 32
  %x0.valid = add i1 true, false
  %x0.out = add i64 %x0.n, 0
  %x0.dst = getelementptr inbounds i64, ptr %x0.vp, i64 %j
  store i64 %x0.out, ptr %x0.dst
  %x0.m = zext i1 %x0.valid to i8
  %x0.mdst = getelementptr inbounds i8, ptr %x0.mp, i64 %j
  store i8 %x0.m, ptr %x0.mdst

  store i64 1, ptr %e
  %j.next = add i64 %j, 1
  store i64 %j.next, ptr %j.a
  br label %next
next:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %cap
  br i1 %more, label %loop, label %done
done:
  %minend.final = load i64, ptr %minend.a
  %minend.p = getelementptr inbounds i64, ptr %state, i64 6
  store i64 %minend.final, ptr %minend.p
  %emitted = load i64, ptr %j.a
  %any = icmp sgt i64 %emitted, 0
  br i1 %any, label %compact, label %check_overflow
compact:
  %rc = call i32 @gz_ht_rehash(ptr %ht, i64 %cap, i64 40)
  %rc.bad = icmp ne i32 %rc, 0
  br i1 %rc.bad, label %oom, label %check_overflow
oom:
  ret i64 -1
check_overflow:
  %ovf = load i1, ptr %overflow.a
  br i1 %ovf, label %overflowed, label %ok
overflowed:
  %which = load i64, ptr %overflow_which.a
  %detail.p = getelementptr inbounds i64, ptr %state, i64 7
  store i64 %which, ptr %detail.p
  ret i64 -3
ok:
  ret i64 %emitted
}

; runtime (linked in from runtime/*.ll)
@gz_all_valid = external constant [8 x i8]
declare i32 @gz_ht_init(ptr, i64, i64)
declare void @gz_ht_free(ptr)
declare i32 @gz_ht_rehash(ptr, i64, i64)
declare ptr @gz_ht_upsert(ptr, i64, ptr, i64, i64)
declare ptr @gz_ht_entry(ptr, i64, i64)
declare i64 @gz_ht_capacity(ptr)
declare i64 @gz_hash_mix(i64, i64)
declare i64 @gz_hash_finish(i64)
declare i1 @gz_str_eq(ptr, i64, ptr, i64)
declare i1 @gz_bit(ptr, i64)
