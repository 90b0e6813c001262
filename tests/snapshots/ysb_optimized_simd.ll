; ==== unit process (O3)
; grizzly-py codegen v19, variant optimized
; ---- pipeline 0: window pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)

@p0_optimized.process.str0 = private unnamed_addr constant [4 x i8] c"view"
define i64 @p0_optimized_process(ptr noalias %state, ptr noalias %columns, i64 %rows, ptr noalias %params, ptr noalias %out) {
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
  %sel.a = alloca [4096 x i64], align 16
  %nsel.a = alloca i64, align 8
  %stop.after.a = alloca i1, align 1
  store i1 false, ptr %stop.after.a
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
  %c1.dlen.p = getelementptr inbounds i64, ptr %columns, i64 10
  %c1.dlen = load i64, ptr %c1.dlen.p
  %dictp19 = getelementptr inbounds i64, ptr %params, i64 3
  %dictcode20 = load i64, ptr %dictp19
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
  %key.a = alloca [1 x i64], align 8
  %htv.a = alloca { ptr, i64 }, align 8
  store ptr null, ptr %htv.a
  %wht.a = alloca ptr, align 8
  store ptr null, ptr %wht.a
  %dents.a = alloca ptr, align 8  ; dense placement: the current window's entries
  store ptr null, ptr %dents.a
  %wcur.a = alloca i64, align 8
  store i64 0, ptr %wcur.a
  %wknown.a = alloca i1, align 1
  store i1 false, ptr %wknown.a
  %nonempty = icmp sgt i64 %rows, 0
  br i1 %nonempty, label %block, label %exit

; blocked loop: per block of 4096 rows, a branch-free pass evaluates event time and
; filters and appends the surviving row indices to a selection vector; a second pass runs the
; rest of the pipeline over the selected rows only.
block:
  %b = phi i64 [ 0, %entry ], [ %b.next, %block_done ]
  %b.lim = add nuw nsw i64 %b, 4096
  %b.short = icmp slt i64 %rows, %b.lim
  %b.end = select i1 %b.short, i64 %rows, i64 %b.lim
  store i64 0, ptr %nsel.a
  br label %scan

scan:
  %i = phi i64 [ %b, %block ], [ %i.next, %scan.latch ]
  %ci1 = add i64 %i, %c0.off
  %vi2 = and i64 %ci1, %c0.vmask
  %valid3 = call i1 @gz_bit(ptr %c0.valid, i64 %vi2)
  %ci4 = add i64 %i, %c0.off
  %p5 = getelementptr inbounds i64, ptr %c0.vals, i64 %ci4
  %v6 = load i64, ptr %p5
  ; -- event time
  %ts.scan = add i64 %v6, 0
  %ts.scan.max = load i64, ptr %maxts.a
  %ts.scan.max.new = call i64 @llvm.smax.i64(i64 %ts.scan.max, i64 %ts.scan)
  store i64 %ts.scan.max.new, ptr %maxts.a
  %ci7 = add i64 %i, %c1.off
  %vi8 = and i64 %ci7, %c1.vmask
  %valid9 = call i1 @gz_bit(ptr %c1.valid, i64 %vi8)
  %ci10 = add i64 %i, %c1.off
  %p11 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci10
  %v12 = load i32, ptr %p11
  %v13 = sext i32 %v12 to i64
  %dx14 = icmp uge i64 %v13, %c1.dlen
  %dbad15 = and i1 %valid9, %dx14
  br i1 %dbad15, label %err16, label %ok17, !prof !0
ok17:
  %streq18 = icmp eq i64 %v13, %dictcode20
  ; -- filter (col('event_type') == lit('view'))
  %filter0 = and i1 %valid9, %streq18
  br label %scan.latch

scan.latch:
  %sel.n = load i64, ptr %nsel.a
  %sel.p = getelementptr inbounds i64, ptr %sel.a, i64 %sel.n
  store i64 %i, ptr %sel.p
  %sel.inc = zext i1 %filter0 to i64
  %sel.n1 = add i64 %sel.n, %sel.inc
  store i64 %sel.n1, ptr %nsel.a
  %i.next = add nuw nsw i64 %i, 1
  %scan.more = icmp slt i64 %i.next, %b.end
  br i1 %scan.more, label %scan, label %gather

gather:
  %sel.total = load i64, ptr %nsel.a
  %b.rows = sub i64 %b.end, %b
  %b.filtered = sub i64 %b.rows, %sel.total
  %filtered.b = load i64, ptr %filtered.a
  %filtered.b1 = add i64 %filtered.b, %b.filtered
  store i64 %filtered.b1, ptr %filtered.a
  %any.sel = icmp sgt i64 %sel.total, 0
  br i1 %any.sel, label %loop, label %block_done

loop:
  %j = phi i64 [ 0, %gather ], [ %j.next, %row_done ]
  %r.p = getelementptr inbounds i64, ptr %sel.a, i64 %j
  %r = load i64, ptr %r.p
  %ci21 = add i64 %r, %c0.off
  %vi22 = and i64 %ci21, %c0.vmask
  %valid23 = call i1 @gz_bit(ptr %c0.valid, i64 %vi22)
  %ci24 = add i64 %r, %c0.off
  %p25 = getelementptr inbounds i64, ptr %c0.vals, i64 %ci24
  %v26 = load i64, ptr %p25
  ; -- event time
  %ts = add i64 %v26, 0
  %ci27 = add i64 %r, %c2.off
  %vi28 = and i64 %ci27, %c2.vmask
  %valid29 = call i1 @gz_bit(ptr %c2.valid, i64 %vi28)
  %ci30 = add i64 %r, %c2.off
  %p31 = getelementptr inbounds i64, ptr %c2.vals, i64 %ci30
  %v32 = load i64, ptr %p31
  %kw33 = select i1 %valid29, i64 %v32, i64 0
  %nm34 = xor i1 %valid29, true
  %nm35 = zext i1 %nm34 to i64
  %nm36 = shl i64 %nm35, 0
  %nm37 = or i64 0, %nm36
  ; -- window assign: tumbling 10000 ms (epoch-aligned, floor for negative times)
  %w.cur = load i64, ptr %wcur.a
  %w.known = load i1, ptr %wknown.a
  %w.delta = sub i64 %ts, %w.cur
  %w.inside = icmp ult i64 %w.delta, 10000
  %w.same = and i1 %w.known, %w.inside
  br i1 %w.same, label %w.have, label %w.compute, !prof !1
w.compute:
  ; window bounds must fit in int64: |ts| at least a window away from the limits
  %w.lowok = icmp sge i64 %ts, -9223372036854755808
  %w.highok = icmp sle i64 %ts, 9223372036854755807
  %w.inrange = and i1 %w.lowok, %w.highok
  br i1 %w.inrange, label %w.assign, label %err_time, !prof !1
w.assign:
  %w.rem = srem i64 %ts, 10000
  %w.remneg = icmp slt i64 %w.rem, 0
  %w.remadj = add i64 %w.rem, 10000
  %w.mod = select i1 %w.remneg, i64 %w.remadj, i64 %w.rem
  %w.start = sub i64 %ts, %w.mod
  ; -- pre-trigger: a record whose window already fired (end - 1 <= watermark) is late
  %w.last = add i64 %w.start, 9999
  %w.late = icmp sle i64 %w.last, %wm
  br i1 %w.late, label %late_row, label %w.open, !prof !0
w.open:
  %w.table = call ptr @gz_win_table(ptr %dir, i64 %w.start)
  %w.oom = icmp eq ptr %w.table, null
  br i1 %w.oom, label %err_oom, label %w.opened, !prof !0
w.opened:
  store i64 %w.start, ptr %wcur.a
  store i1 true, ptr %wknown.a
  store ptr %w.table, ptr %wht.a
  call void @gz_ht_view(ptr %w.table, ptr %htv.a)
  ; dense placement: the table's entries exist from its window's first record on, so the
  ; rows of the window find them without a check
  %d.e0 = load ptr, ptr %htv.a
  %d.none = icmp eq ptr %d.e0, null
  br i1 %d.none, label %d.alloc, label %d.opened, !prof !0
d.alloc:
  %d.e1 = call ptr @gz_ht_dense_alloc(ptr %w.table, i64 16384, i64 24)
  %d.oom = icmp eq ptr %d.e1, null
  br i1 %d.oom, label %err_oom, label %d.alloced, !prof !0
d.alloced:
  call void @gz_ht_view(ptr %w.table, ptr %htv.a)
  br label %d.opened
d.opened:
  %d.entries.w = phi ptr [ %d.e0, %w.opened ], [ %d.e1, %d.alloced ]
  store ptr %d.entries.w, ptr %dents.a
  %w.end = add i64 %w.start, 10000  ; no window holding this pane ends before the pane does
  %w.minend = load i64, ptr %minend.a
  %w.minend.new = call i64 @llvm.smin.i64(i64 %w.minend, i64 %w.end)
  store i64 %w.minend.new, ptr %minend.a
  br label %w.have
w.have:
  %ht = load ptr, ptr %wht.a
  ; -- dense placement (optimized variant): key campaign_id in [-2048, -2048 + 16384)
  ;    has its entry at index key - -2048; any other key (or a null) stops the kernel here:
  ;    the engine deoptimizes and runs the rest of the batch with the generic variant
  %d.off = sub i64 %kw33, -2048
  %d.in = icmp ult i64 %d.off, 16384
  %d.ok = and i1 %d.in, %valid29
  br i1 %d.ok, label %d.go, label %stop, !prof !1
d.go:
  %d.entries = load ptr, ptr %dents.a  ; allocated when the window was opened
  %d.byte = mul i64 %d.off, 24
  %grp = getelementptr inbounds i8, ptr %d.entries, i64 %d.byte
  %d.tag = load i64, ptr %grp
  %d.new = icmp eq i64 %d.tag, 0
  br i1 %d.new, label %d.claim, label %w.update, !prof !0
d.claim:
  ; a new key: the entry gets the tag and key the generic table would give it
  %h.0 = add i64 -7046029254386353131, 0
  %h.1 = call i64 @gz_hash_mix(i64 %h.0, i64 %kw33)
  %h = call i64 @gz_hash_finish(i64 %h.1)
  ; the key null mask travels in bits 48..62 of the hash, hence of the entry's tag
  %h.low = and i64 %h, 281474976710655
  %h.nm = shl i64 %nm37, 48
  %h.tagged = or i64 %h.low, %h.nm
  %d.tagged = or i64 %h.tagged, -9223372036854775808
  store i64 %d.tagged, ptr %grp
  %d.key.p = getelementptr inbounds i64, ptr %grp, i64 1
  store i64 %kw33, ptr %d.key.p
  %d.size.p = getelementptr inbounds i64, ptr %ht, i64 2
  %d.size = load i64, ptr %d.size.p
  %d.size.n = add i64 %d.size, 1
  store i64 %d.size.n, ptr %d.size.p
  br label %w.update
w.update:
  ; -- aggregate views = count()
  %a0.s0.p = getelementptr inbounds i8, ptr %grp, i64 16
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
  %j.next = add nuw nsw i64 %j, 1
  %more = icmp slt i64 %j.next, %sel.total
  br i1 %more, label %loop, label %block_done

block_done:
  %b.next = add nuw nsw i64 %b, 4096
  %blocks.more = icmp slt i64 %b.next, %rows
  br i1 %blocks.more, label %block, label %exit

exit:
  %filtered.final = load i64, ptr %filtered.a
  call void @p0_optimized_process_add_counter(ptr %state, i64 1, i64 %filtered.final)
  %late.final = load i64, ptr %late.a
  call void @p0_optimized_process_add_counter(ptr %state, i64 2, i64 %late.final)
  %nonneg_rows = select i1 %nonempty, i64 %rows, i64 0
  call void @p0_optimized_process_add_counter(ptr %state, i64 0, i64 %nonneg_rows)
  %maxts.final = load i64, ptr %maxts.a
  store i64 %maxts.final, ptr %maxts.p
  %minend.final = load i64, ptr %minend.a
  store i64 %minend.final, ptr %minend.p
  %result = load i64, ptr %nout.a
  ret i64 %result

; the kernel stops early (a shared window state must grow first): the rows before
; state[ERROR_ROW] are done and counted, the engine reruns the rest of the batch
stop:
  %stop.after = load i1, ptr %stop.after.a  ; the current row is done too
  %stop.inc = zext i1 %stop.after to i64
  ; done: this block's rows before the next selected row that was not processed; the gather
  ; counted every filtered row of the block, keep those before that row only
  %stop.sel = add i64 %j, %stop.inc
  %stop.insel = icmp slt i64 %stop.sel, %sel.total
  br i1 %stop.insel, label %stop.next, label %stop.resume
stop.next:
  %stop.next.p = getelementptr inbounds i64, ptr %sel.a, i64 %stop.sel
  %stop.next.r = load i64, ptr %stop.next.p
  br label %stop.resume
stop.resume:
  %stop.row = phi i64 [ %stop.next.r, %stop.next ], [ %b.end, %stop ]
  %stop.f0 = load i64, ptr %filtered.a
  %stop.f1 = sub i64 %stop.f0, %b.filtered
  %stop.span = sub i64 %stop.row, %b
  %stop.fhere = sub i64 %stop.span, %stop.sel
  %stop.filtered = add i64 %stop.f1, %stop.fhere
  call void @p0_optimized_process_add_counter(ptr %state, i64 1, i64 %stop.filtered)
  %stop.late = load i64, ptr %late.a
  call void @p0_optimized_process_add_counter(ptr %state, i64 2, i64 %stop.late)
  call void @p0_optimized_process_add_counter(ptr %state, i64 0, i64 %stop.row)
  %stop.maxts = load i64, ptr %maxts.a
  store i64 %stop.maxts, ptr %maxts.p
  %stop.minend = load i64, ptr %minend.a
  store i64 %stop.minend, ptr %minend.p
  %stop.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %stop.row, ptr %stop.row.p
  ret i64 1

err16:
  %err16.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -5, ptr %err16.code.p
  %err16.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err16.row.p
  ret i64 -5

err_oom:
  %err_oom.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -1, ptr %err_oom.code.p
  %err_oom.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %r, ptr %err_oom.row.p
  ret i64 -1

err_time:
  %err_time.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -4, ptr %err_time.code.p
  %err_time.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %r, ptr %err_time.row.p
  ret i64 -4
}

define internal void @p0_optimized_process_add_counter(ptr %state, i64 %index, i64 %delta) alwaysinline {
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
; grizzly-py codegen v19, variant optimized
define i64 @p0_optimized_count_ready(ptr %state, i64 %wm) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %slots = load ptr, ptr %dir
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %body ]
  %count = phi i64 [ 0, %entry ], [ %count.next, %body ]
  %done = icmp eq i64 %i, %len
  br i1 %done, label %exit, label %body
body:
  %slot = getelementptr inbounds [4 x i64], ptr %slots, i64 %i
  %ws = load i64, ptr %slot
  %wl = add i64 %ws, 9999
  %ready = icmp sle i64 %wl, %wm
  %size.p = getelementptr inbounds i64, ptr %slot, i64 3
  %size = load i64, ptr %size.p
  %add = select i1 %ready, i64 %size, i64 0
  %count.next = add i64 %count, %add
  %i.next = add i64 %i, 1
  br label %loop
exit:
  ret i64 %count
}

define i64 @p0_optimized_merge_emit(ptr %states, i64 %nstates, i64 %lo, i64 %hi, ptr noalias %out, i64 %dense_cap) {
entry:
  %tmp = alloca [3 x i64], align 8
  call void @llvm.memset.p0.i64(ptr %tmp, i8 0, i64 24, i1 false)
  %htv.a = alloca { ptr, i64 }, align 8
  call void @gz_ht_view(ptr %tmp, ptr %htv.a)
  %overflow.a = alloca i1, align 1
  store i1 false, ptr %overflow.a
  %overflow_which.a = alloca i64, align 8
  store i64 -1, ptr %overflow_which.a
  %j.a = alloca i64, align 8
  store i64 0, ptr %j.a
  %dense = icmp sgt i64 %dense_cap, 0
  br i1 %dense, label %dense_alloc, label %start
dense_alloc:
  %d.entries = call ptr @gz_ht_dense_alloc(ptr %tmp, i64 %dense_cap, i64 24)
  %d.oom = icmp eq ptr %d.entries, null
  br i1 %d.oom, label %oom, label %start
start:
  %has_states = icmp sgt i64 %nstates, 0
  br i1 %has_states, label %states_loop, label %emit
states_loop:
  %si = phi i64 [ 0, %start ], [ %si.next, %state_done ]
  %state.p = getelementptr inbounds ptr, ptr %states, i64 %si
  %state = load ptr, ptr %state.p
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  br label %panes
panes:
  %w = phi i64 [ 0, %states_loop ], [ %w.next, %pane_done ]
  %w.done = icmp eq i64 %w, %len
  br i1 %w.done, label %state_done, label %pane
state_done:
  %si.next = add i64 %si, 1
  %si.more = icmp slt i64 %si.next, %nstates
  br i1 %si.more, label %states_loop, label %emit
pane:
  %slots = load ptr, ptr %dir
  %slot = getelementptr inbounds [4 x i64], ptr %slots, i64 %w
  %ps = load i64, ptr %slot
  %in.lo = icmp sge i64 %ps, %lo
  %in.hi = icmp slt i64 %ps, %hi
  %in = and i1 %in.lo, %in.hi
  %src.ht = getelementptr inbounds i64, ptr %slot, i64 1
  %cap = call i64 @gz_ht_capacity(ptr %src.ht)
  %nonempty = icmp ugt i64 %cap, 0
  %use = and i1 %in, %nonempty
  br i1 %use, label %entries, label %pane_done
entries:
  %i = phi i64 [ 0, %pane ], [ %i.next, %entry_done ]
  %src = call ptr @gz_ht_entry(ptr %src.ht, i64 %i, i64 24)
  %tag = load i64, ptr %src
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %merge, label %entry_done
merge:
  br i1 %dense, label %merge.dense, label %merge.hashed
merge.dense:  ; the same index in every table: the same key
  %d.grp = call ptr @gz_ht_entry(ptr %tmp, i64 %i, i64 24)
  %d.tag = load i64, ptr %d.grp
  %d.fresh = icmp eq i64 %d.tag, 0
  br i1 %d.fresh, label %merge.claim, label %merge.body
merge.claim:  ; tag and key words, as an insert would write them (the aggregates stay zero)
  call void @llvm.memcpy.p0.p0.i64(ptr %d.grp, ptr %src, i64 16, i1 false)
  br label %merge.body
merge.hashed:
  %key = getelementptr inbounds i8, ptr %src, i64 8
  %h.grp = call ptr @gz_ht_upsert(ptr %tmp, ptr %htv.a, i64 %tag, ptr %key, i64 1, i64 24)
  %grp.oom = icmp eq ptr %h.grp, null
  br i1 %grp.oom, label %oom, label %merge.body
merge.body:
  %grp = phi ptr [ %d.grp, %merge.dense ], [ %d.grp, %merge.claim ], [ %h.grp, %merge.hashed ]
  ; -- merge views = count
  %m0.a0.p = getelementptr inbounds i8, ptr %grp, i64 16
  %m0.a0 = load i64, ptr %m0.a0.p
  %m0.b0.p = getelementptr inbounds i8, ptr %src, i64 16
  %m0.b0 = load i64, ptr %m0.b0.p

  %m0.n = add i64 %m0.a0, %m0.b0
  store i64 %m0.n, ptr %m0.a0.p

  br label %entry_done
entry_done:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %cap
  br i1 %more, label %entries, label %pane_done
pane_done:
  %w.next = add i64 %w, 1
  br label %panes
oom:
  call void @p0_optimized_release(ptr %tmp)
  ret i64 -1
emit:
  %ws.out.p = getelementptr inbounds ptr, ptr %out, i64 0
  %ws.out = load ptr, ptr %ws.out.p
  %tcap = call i64 @gz_ht_capacity(ptr %tmp)
  %has = icmp ugt i64 %tcap, 0
  br i1 %has, label %loop, label %finish
loop:
  %k = phi i64 [ 0, %emit ], [ %k.next, %next ]
  %e = call ptr @gz_ht_entry(ptr %tmp, i64 %k, i64 24)
  %etag = load i64, ptr %e
  %elive = icmp ugt i64 %etag, 1
  br i1 %elive, label %emit_entry, label %next
emit_entry:
  %j = load i64, ptr %j.a
  %ws.dst = getelementptr inbounds i64, ptr %ws.out, i64 %j
  store i64 %lo, ptr %ws.dst
  %k0.vp.p = getelementptr inbounds ptr, ptr %out, i64 1
  %k0.vp = load ptr, ptr %k0.vp.p
  %k0.mp.p = getelementptr inbounds ptr, ptr %out, i64 2
  %k0.mp = load ptr, ptr %k0.mp.p
  %k0.src = getelementptr inbounds i8, ptr %e, i64 8
  %k0.w = load i64, ptr %k0.src
  %k0.dst = getelementptr inbounds i64, ptr %k0.vp, i64 %j
  store i64 %k0.w, ptr %k0.dst
  %k0.bit = lshr i64 %etag, 48
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
  %x0.n.p = getelementptr inbounds i8, ptr %e, i64 16
  %x0.n = load i64, ptr %x0.n.p
  %x0.s0.p = getelementptr inbounds i8, ptr %e, i64 16
  %x0.valid = add i1 true, false
  %x0.out = add i64 %x0.n, 0
  %x0.dst = getelementptr inbounds i64, ptr %x0.vp, i64 %j
  store i64 %x0.out, ptr %x0.dst
  %x0.m = zext i1 %x0.valid to i8
  %x0.mdst = getelementptr inbounds i8, ptr %x0.mp, i64 %j
  store i8 %x0.m, ptr %x0.mdst

  %j.next = add i64 %j, 1
  store i64 %j.next, ptr %j.a
  br label %next
next:
  %k.next = add i64 %k, 1
  %kmore = icmp ult i64 %k.next, %tcap
  br i1 %kmore, label %loop, label %finish
finish:
  call void @gz_ht_free(ptr %tmp)
  %ovf = load i1, ptr %overflow.a
  br i1 %ovf, label %overflowed, label %ok
overflowed:
  %which = load i64, ptr %overflow_which.a
  %state0 = load ptr, ptr %states
  %detail.p = getelementptr inbounds i64, ptr %state0, i64 7
  store i64 %which, ptr %detail.p
  ret i64 -3
ok:
  %emitted = load i64, ptr %j.a
  ret i64 %emitted
}

; Free every pane whose last window (the one starting at the window grid point at or below the
; pane: window_geometry.PaneGeometry.last_end) has fired.
define void @p0_optimized_drop_panes(ptr %state, i64 %wm) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  br label %loop
loop:
  %w = phi i64 [ 0, %entry ], [ %w, %dropped ], [ %w.next, %kept ]
  %len = load i64, ptr %len.p
  %done = icmp eq i64 %w, %len
  br i1 %done, label %exit, label %check
check:
  %slots = load ptr, ptr %dir
  %slot = getelementptr inbounds [4 x i64], ptr %slots, i64 %w
  %ps = load i64, ptr %slot
  %rem = srem i64 %ps, 10000
  %remneg = icmp slt i64 %rem, 0
  %remadj = add i64 %rem, 10000
  %mod = select i1 %remneg, i64 %remadj, i64 %rem
  %lastwin = sub i64 %ps, %mod
  %last = add i64 %lastwin, 9999
  %fired = icmp sle i64 %last, %wm
  br i1 %fired, label %drop, label %kept
drop:
  %ht = getelementptr inbounds i64, ptr %slot, i64 1
  call void @p0_optimized_release(ptr %ht)
  call void @gz_win_remove(ptr %dir, i64 %w)
  br label %dropped
dropped:
  br label %loop
kept:
  %w.next = add i64 %w, 1
  br label %loop
exit:
  ret void
}

define internal void @p0_optimized_release(ptr %ht) {
entry:
  br label %done
done:
  call void @gz_ht_free(ptr %ht)
  ret void
}

define void @p0_optimized_close(ptr %state) {
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
  call void @p0_optimized_release(ptr %ht)
  %w.next = add i64 %w, 1
  br label %loop
exit:
  call void @gz_win_free(ptr %dir)
  ret void
}

; Move every table of a state block between placements (runtime/windows_placement.ll): dense for
; the optimized variant's key range, hashed for the others. The engine calls these only while no
; kernel runs on the block. place_dense: 0, 1 out of memory, 2 a key outside the range.
define i32 @p0_optimized_place_dense(ptr %state, i64 %lo, i64 %cap) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %rc = call i32 @gz_dir_place_dense(ptr %dir, i64 %lo, i64 %cap, i64 24)
  ret i32 %rc
}

define i32 @p0_optimized_place_hashed(ptr %state) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %rc = call i32 @gz_dir_place_hashed(ptr %dir, i64 24)
  ret i32 %rc
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare double @llvm.sqrt.f64(double)
declare double @llvm.fabs.f64(double)
declare i64 @llvm.smin.i64(i64, i64)
declare {i64, i1} @llvm.sadd.with.overflow.i64(i64, i64)
declare double @llvm.minnum.f64(double, double)
declare double @llvm.maxnum.f64(double, double)
declare i64 @llvm.smax.i64(i64, i64)

define i64 @p0_optimized_emit(ptr %state, i64 %wm, ptr noalias %out) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
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
  br label %windows
windows:
  %w = phi i64 [ 0, %entry ], [ %w, %fired ], [ %w.next, %kept ]
  %len = load i64, ptr %len.p
  %w.done = icmp eq i64 %w, %len
  br i1 %w.done, label %done, label %window
window:
  %slots = load ptr, ptr %dir
  %slot = getelementptr inbounds [4 x i64], ptr %slots, i64 %w
  %ws = load i64, ptr %slot
  %we = add i64 %ws, 10000
  %wl = sub i64 %we, 1
  %ready = icmp sle i64 %wl, %wm
  br i1 %ready, label %fire, label %keep
keep:
  %minend = load i64, ptr %minend.a
  %minend.new = call i64 @llvm.smin.i64(i64 %minend, i64 %we)
  store i64 %minend.new, ptr %minend.a
  br label %kept
kept:
  %w.next = add i64 %w, 1
  br label %windows
fire:
  %ht = getelementptr inbounds i64, ptr %slot, i64 1
  %cap = call i64 @gz_ht_capacity(ptr %ht)
  %has_entries = icmp ugt i64 %cap, 0
  br i1 %has_entries, label %loop, label %fired
loop:
  %i = phi i64 [ 0, %fire ], [ %i.next, %next ]
  %e = call ptr @gz_ht_entry(ptr %ht, i64 %i, i64 24)
  %tag = load i64, ptr %e
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %emit_entry, label %next
emit_entry:
  %j = load i64, ptr %j.a
  %ws.dst = getelementptr inbounds i64, ptr %ws.out, i64 %j
  store i64 %ws, ptr %ws.dst
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
  ; -- final views = count
  %x0.vp.p = getelementptr inbounds ptr, ptr %out, i64 3
  %x0.vp = load ptr, ptr %x0.vp.p
  %x0.mp.p = getelementptr inbounds ptr, ptr %out, i64 4
  %x0.mp = load ptr, ptr %x0.mp.p
  %x0.n.p = getelementptr inbounds i8, ptr %e, i64 16
  %x0.n = load i64, ptr %x0.n.p
  %x0.s0.p = getelementptr inbounds i8, ptr %e, i64 16
  %x0.valid = add i1 true, false
  %x0.out = add i64 %x0.n, 0
  %x0.dst = getelementptr inbounds i64, ptr %x0.vp, i64 %j
  store i64 %x0.out, ptr %x0.dst
  %x0.m = zext i1 %x0.valid to i8
  %x0.mdst = getelementptr inbounds i8, ptr %x0.mp, i64 %j
  store i8 %x0.m, ptr %x0.mdst

  %j.next = add i64 %j, 1
  store i64 %j.next, ptr %j.a
  br label %next
next:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %cap
  br i1 %more, label %loop, label %fired
fired:
  call void @gz_ht_free(ptr %ht)
  call void @gz_win_remove(ptr %dir, i64 %w)
  br label %windows
done:
  %minend.final = load i64, ptr %minend.a
  %minend.p = getelementptr inbounds i64, ptr %state, i64 6
  store i64 %minend.final, ptr %minend.p
  %ovf = load i1, ptr %overflow.a
  br i1 %ovf, label %overflowed, label %ok
overflowed:
  %which = load i64, ptr %overflow_which.a
  %detail.p = getelementptr inbounds i64, ptr %state, i64 7
  store i64 %which, ptr %detail.p
  ret i64 -3
ok:
  %emitted = load i64, ptr %j.a
  ret i64 %emitted
}


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
; grizzly-py codegen v19, variant optimized
; ---- pipeline 0: window pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)

@p0_optimized.process_nonnull.str0 = private unnamed_addr constant [4 x i8] c"view"
define i64 @p0_optimized_process_nonnull(ptr noalias %state, ptr noalias %columns, i64 %rows, ptr noalias %params, ptr noalias %out) {
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
  %sel.a = alloca [4096 x i64], align 16
  %nsel.a = alloca i64, align 8
  %fp.tmin.a = alloca i64, align 8
  %fp.tmax.a = alloca i64, align 8
  %fp.kmin.a = alloca i64, align 8
  %fp.kmax.a = alloca i64, align 8
  %fp.kept.a = alloca i64, align 8

  %stop.after.a = alloca i1, align 1
  store i1 false, ptr %stop.after.a
  %c0.vals.p = getelementptr inbounds i64, ptr %columns, i64 0
  %c0.vals = load ptr, ptr %c0.vals.p
  %c0.off.p = getelementptr inbounds i64, ptr %columns, i64 2
  %c0.off = load i64, ptr %c0.off.p
  %c1.vals.p = getelementptr inbounds i64, ptr %columns, i64 6
  %c1.vals = load ptr, ptr %c1.vals.p
  %c1.off.p = getelementptr inbounds i64, ptr %columns, i64 8
  %c1.off = load i64, ptr %c1.off.p
  %c1.dlen.p = getelementptr inbounds i64, ptr %columns, i64 10
  %c1.dlen = load i64, ptr %c1.dlen.p
  %dictp13 = getelementptr inbounds i64, ptr %params, i64 3
  %dictcode14 = load i64, ptr %dictp13
  %c2.vals.p = getelementptr inbounds i64, ptr %columns, i64 12
  %c2.vals = load ptr, ptr %c2.vals.p
  %c2.off.p = getelementptr inbounds i64, ptr %columns, i64 14
  %c2.off = load i64, ptr %c2.off.p
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %key.a = alloca [1 x i64], align 8
  %htv.a = alloca { ptr, i64 }, align 8
  store ptr null, ptr %htv.a
  %wht.a = alloca ptr, align 8
  store ptr null, ptr %wht.a
  %dents.a = alloca ptr, align 8  ; dense placement: the current window's entries
  store ptr null, ptr %dents.a
  %wcur.a = alloca i64, align 8
  store i64 0, ptr %wcur.a
  %wknown.a = alloca i1, align 1
  store i1 false, ptr %wknown.a
  %nonempty = icmp sgt i64 %rows, 0
  br i1 %nonempty, label %block, label %exit

; blocked loop: per block of 4096 rows, a branch-free pass evaluates event time and
; filters and appends the surviving row indices to a selection vector; a second pass runs the
; rest of the pipeline over the selected rows only.
block:
  %b = phi i64 [ 0, %entry ], [ %b.next, %block_done ]
  %b.lim = add nuw nsw i64 %b, 4096
  %b.short = icmp slt i64 %rows, %b.lim
  %b.end = select i1 %b.short, i64 %rows, i64 %b.lim
  store i64 0, ptr %nsel.a
  ; dense pass: a block whose rows all lie in the open window (pane) with every key
  ; campaign_id in [-2048, -2048 + 16384) runs as one branch-free pass that
  ; updates entry[key - -2048] with the filters' verdict as each row's validity; any other
  ; block takes the general path below
  %fp.known = load i1, ptr %wknown.a
  br i1 %fp.known, label %fp.start, label %scan.start
fp.start:
  store i64 9223372036854775807, ptr %fp.tmin.a
  store i64 -9223372036854775808, ptr %fp.tmax.a
  store i64 9223372036854775807, ptr %fp.kmin.a
  store i64 -9223372036854775808, ptr %fp.kmax.a
  br label %fp.pre
fp.pre:
  %pi = phi i64 [ %b, %fp.start ], [ %pi.next, %fp.pre.latch ]
  %ci21 = add i64 %pi, %c0.off
  %p22 = getelementptr inbounds i64, ptr %c0.vals, i64 %ci21
  %v23 = load i64, ptr %p22
  %ci24 = add i64 %pi, %c2.off
  %p25 = getelementptr inbounds i64, ptr %c2.vals, i64 %ci24
  %v26 = load i64, ptr %p25
  br label %fp.pre.latch
fp.pre.latch:
  %fp.tmin = load i64, ptr %fp.tmin.a
  %fp.tmin.n = call i64 @llvm.smin.i64(i64 %fp.tmin, i64 %v23)
  store i64 %fp.tmin.n, ptr %fp.tmin.a
  %fp.tmax = load i64, ptr %fp.tmax.a
  %fp.tmax.n = call i64 @llvm.smax.i64(i64 %fp.tmax, i64 %v23)
  store i64 %fp.tmax.n, ptr %fp.tmax.a
  %fp.kmin = load i64, ptr %fp.kmin.a
  %fp.kmin.n = call i64 @llvm.smin.i64(i64 %fp.kmin, i64 %v26)
  store i64 %fp.kmin.n, ptr %fp.kmin.a
  %fp.kmax = load i64, ptr %fp.kmax.a
  %fp.kmax.n = call i64 @llvm.smax.i64(i64 %fp.kmax, i64 %v26)
  store i64 %fp.kmax.n, ptr %fp.kmax.a
  %pi.next = add nuw nsw i64 %pi, 1
  %fp.pre.more = icmp slt i64 %pi.next, %b.end
  br i1 %fp.pre.more, label %fp.pre, label %fp.test
fp.test:
  %fp.cur = load i64, ptr %wcur.a
  %fp.tmin.f = load i64, ptr %fp.tmin.a
  %fp.tmin.d = sub i64 %fp.tmin.f, %fp.cur
  %fp.tmin.in = icmp ult i64 %fp.tmin.d, 10000
  %fp.tmax.f = load i64, ptr %fp.tmax.a
  %fp.tmax.d = sub i64 %fp.tmax.f, %fp.cur
  %fp.tmax.in = icmp ult i64 %fp.tmax.d, 10000
  %fp.kmin.f = load i64, ptr %fp.kmin.a
  %fp.kmin.d = sub i64 %fp.kmin.f, -2048
  %fp.kmin.in = icmp ult i64 %fp.kmin.d, 16384
  %fp.kmax.f = load i64, ptr %fp.kmax.a
  %fp.kmax.d = sub i64 %fp.kmax.f, -2048
  %fp.kmax.in = icmp ult i64 %fp.kmax.d, 16384
  %fp.tin = and i1 %fp.tmin.in, %fp.tmax.in
  %fp.kin = and i1 %fp.kmin.in, %fp.kmax.in
  %fp.ok = and i1 %fp.tin, %fp.kin
  br i1 %fp.ok, label %fp.run, label %scan.start, !prof !1
fp.run:
  ; the rows' event times (the general path's scan would track them the same way)
  %fp.maxts = load i64, ptr %maxts.a
  %fp.maxts.n = call i64 @llvm.smax.i64(i64 %fp.maxts, i64 %fp.tmax.f)
  store i64 %fp.maxts.n, ptr %maxts.a
  %fp.ents = load ptr, ptr %dents.a  ; the open window's entries (allocated when it opened)
  %fp.unclaimed.p = getelementptr inbounds i64, ptr %state, i64 11
  %fp.unclaimed = load i64, ptr %fp.unclaimed.p
  %fp.unclaimed.n = call i64 @llvm.smin.i64(i64 %fp.unclaimed, i64 %fp.cur)
  store i64 %fp.unclaimed.n, ptr %fp.unclaimed.p  ; the engine calls claim after this call
  store i64 0, ptr %fp.kept.a
  ; the kept rows of the block's first multiple of 8 rows, eight at a time: the filters
  ; compared lane-wise, the kept lanes' row indices compressed (AVX-512 vpcompressq, in a
  ; register) and stored at the end of the selection vector; the rest run in fp.loop. A
  ; dictionary index outside its dictionary sends the block to the general path, which
  ; reports it with its row.
  %fv.n = sub i64 %b.end, %b
  %fv.full = and i64 %fv.n, -8
  %fv.end = add i64 %b, %fv.full
  %fv.any = icmp sgt i64 %fv.full, 0
  br i1 %fv.any, label %fv.loop, label %fv.done
fv.loop:
  %fv.i = phi i64 [ %b, %fp.run ], [ %fv.i.next, %fv.loop ]
  %fv.k = phi i64 [ 0, %fp.run ], [ %fv.k.next, %fv.loop ]
  %fv.bad = phi i8 [ 0, %fp.run ], [ %fv.bad1, %fv.loop ]
  %fv.t0.at = add i64 %fv.i, %c1.off
  %fv.t0.p = getelementptr inbounds i32, ptr %c1.vals, i64 %fv.t0.at
  %fv.t0.raw = load <8 x i32>, ptr %fv.t0.p, align 1
  %fv.t0.v = sext <8 x i32> %fv.t0.raw to <8 x i64>
  %fv.t0.r1 = insertelement <8 x i64> poison, i64 %dictcode14, i64 0
  %fv.t0.r = shufflevector <8 x i64> %fv.t0.r1, <8 x i64> poison, <8 x i32> zeroinitializer
  %fv.t0.m = icmp eq <8 x i64> %fv.t0.v, %fv.t0.r
  %fv.t0.d1 = insertelement <8 x i64> poison, i64 %c1.dlen, i64 0
  %fv.t0.d = shufflevector <8 x i64> %fv.t0.d1, <8 x i64> poison, <8 x i32> zeroinitializer
  %fv.t0.out = icmp uge <8 x i64> %fv.t0.v, %fv.t0.d
  %fv.t0.outb = bitcast <8 x i1> %fv.t0.out to i8
  %fv.bad1 = or i8 %fv.bad, %fv.t0.outb
  %fv.m1 = and <8 x i1> %fv.t0.m, <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>
  %fv.s1 = insertelement <8 x i64> poison, i64 %fv.i, i64 0
  %fv.s = shufflevector <8 x i64> %fv.s1, <8 x i64> poison, <8 x i32> zeroinitializer
  %fv.rows = add <8 x i64> %fv.s, <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>
  %fv.kept = call <8 x i64> @llvm.x86.avx512.mask.compress.v8i64(<8 x i64> %fv.rows, <8 x i64> zeroinitializer, <8 x i1> %fv.m1)
  %fv.o = getelementptr inbounds i64, ptr %sel.a, i64 %fv.k
  store <8 x i64> %fv.kept, ptr %fv.o, align 8
  %fv.mb = bitcast <8 x i1> %fv.m1 to i8
  %fv.pc = call i8 @llvm.ctpop.i8(i8 %fv.mb)
  %fv.pc64 = zext i8 %fv.pc to i64
  %fv.k.next = add nuw nsw i64 %fv.k, %fv.pc64
  %fv.i.next = add nuw nsw i64 %fv.i, 8
  %fv.more = icmp slt i64 %fv.i.next, %fv.end
  br i1 %fv.more, label %fv.loop, label %fv.exit
fv.exit:
  store i64 %fv.k.next, ptr %fp.kept.a
  %fv.isbad = icmp ne i8 %fv.bad1, 0
  br i1 %fv.isbad, label %scan.start, label %fv.done, !prof !0
fv.done:
  %fv.from = phi i64 [ %b, %fp.run ], [ %fv.end, %fv.exit ]
  %fv.tail = icmp slt i64 %fv.from, %b.end
  br i1 %fv.tail, label %fp.loop, label %fp.upd.start
fp.loop:
  %fi = phi i64 [ %fv.from, %fv.done ], [ %fi.next, %fp.latch ]
  %ci27 = add i64 %fi, %c1.off
  %p28 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci27
  %v29 = load i32, ptr %p28
  %v30 = sext i32 %v29 to i64
  %dx31 = icmp uge i64 %v30, %c1.dlen
  %dbad32 = and i1 true, %dx31
  br i1 %dbad32, label %err33, label %ok34, !prof !0
ok34:
  %streq35 = icmp eq i64 %v30, %dictcode14
  ; -- filter (col('event_type') == lit('view'))
  %fp.filter0 = and i1 true, %streq35
  br label %fp.latch
fp.latch:
  ; the kept rows' indices into the selection vector (branch-free); fp.upd updates their entries
  %fp.kept = load i64, ptr %fp.kept.a
  %fp.slot = getelementptr inbounds i64, ptr %sel.a, i64 %fp.kept
  store i64 %fi, ptr %fp.slot
  %fp.inc = zext i1 %fp.filter0 to i64
  %fp.kept.n = add i64 %fp.kept, %fp.inc
  store i64 %fp.kept.n, ptr %fp.kept.a
  %fi.next = add nuw nsw i64 %fi, 1
  %fp.more = icmp slt i64 %fi.next, %b.end
  br i1 %fp.more, label %fp.loop, label %fp.upd.start
fp.upd.start:
  %fp.m = load i64, ptr %fp.kept.a
  %fp.any = icmp sgt i64 %fp.m, 0
  br i1 %fp.any, label %fp.upd, label %fp.done
fp.upd:
  %fj = phi i64 [ 0, %fp.upd.start ], [ %fj.next, %fp.upd.latch ]
  %fr.p = getelementptr inbounds i64, ptr %sel.a, i64 %fj
  %fr = load i64, ptr %fr.p
  %ci36 = add i64 %fr, %c2.off
  %p37 = getelementptr inbounds i64, ptr %c2.vals, i64 %ci36
  %v38 = load i64, ptr %p37
  br label %fp.upd.latch
fp.upd.latch:
  %fp.off = sub i64 %v38, -2048
  %fp.byte = mul i64 %fp.off, 24
  %fp.grp = getelementptr inbounds i8, ptr %fp.ents, i64 %fp.byte
  ; -- aggregate views = count(*)
  %afp0.s0.p = getelementptr inbounds i8, ptr %fp.grp, i64 16
  %afp0.s0 = load i64, ptr %afp0.s0.p
  %afp0.inc = zext i1 true to i64
  %afp0.n = add i64 %afp0.s0, %afp0.inc
  store i64 %afp0.n, ptr %afp0.s0.p
  %fj.next = add nuw nsw i64 %fj, 1
  %fp.umore = icmp slt i64 %fj.next, %fp.m
  br i1 %fp.umore, label %fp.upd, label %fp.done
fp.done:
  %fp.kept.total = load i64, ptr %fp.kept.a
  %fp.rows = sub i64 %b.end, %b
  %fp.dropped = sub i64 %fp.rows, %fp.kept.total
  %fp.filtered = load i64, ptr %filtered.a
  %fp.filtered.n = add i64 %fp.filtered, %fp.dropped
  store i64 %fp.filtered.n, ptr %filtered.a
  br label %block_done
scan.start:

  br label %scan

scan:
  %i = phi i64 [ %b, %scan.start ], [ %i.next, %scan.latch ]
  %ci1 = add i64 %i, %c0.off
  %p2 = getelementptr inbounds i64, ptr %c0.vals, i64 %ci1
  %v3 = load i64, ptr %p2
  ; -- event time
  %ts.scan = add i64 %v3, 0
  %ts.scan.max = load i64, ptr %maxts.a
  %ts.scan.max.new = call i64 @llvm.smax.i64(i64 %ts.scan.max, i64 %ts.scan)
  store i64 %ts.scan.max.new, ptr %maxts.a
  %ci4 = add i64 %i, %c1.off
  %p5 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci4
  %v6 = load i32, ptr %p5
  %v7 = sext i32 %v6 to i64
  %dx8 = icmp uge i64 %v7, %c1.dlen
  %dbad9 = and i1 true, %dx8
  br i1 %dbad9, label %err10, label %ok11, !prof !0
ok11:
  %streq12 = icmp eq i64 %v7, %dictcode14
  ; -- filter (col('event_type') == lit('view'))
  %filter0 = and i1 true, %streq12
  br label %scan.latch

scan.latch:
  %sel.n = load i64, ptr %nsel.a
  %sel.p = getelementptr inbounds i64, ptr %sel.a, i64 %sel.n
  store i64 %i, ptr %sel.p
  %sel.inc = zext i1 %filter0 to i64
  %sel.n1 = add i64 %sel.n, %sel.inc
  store i64 %sel.n1, ptr %nsel.a
  %i.next = add nuw nsw i64 %i, 1
  %scan.more = icmp slt i64 %i.next, %b.end
  br i1 %scan.more, label %scan, label %gather

gather:
  %sel.total = load i64, ptr %nsel.a
  %b.rows = sub i64 %b.end, %b
  %b.filtered = sub i64 %b.rows, %sel.total
  %filtered.b = load i64, ptr %filtered.a
  %filtered.b1 = add i64 %filtered.b, %b.filtered
  store i64 %filtered.b1, ptr %filtered.a
  %any.sel = icmp sgt i64 %sel.total, 0
  br i1 %any.sel, label %loop, label %block_done

loop:
  %j = phi i64 [ 0, %gather ], [ %j.next, %row_done ]
  %r.p = getelementptr inbounds i64, ptr %sel.a, i64 %j
  %r = load i64, ptr %r.p
  %ci15 = add i64 %r, %c0.off
  %p16 = getelementptr inbounds i64, ptr %c0.vals, i64 %ci15
  %v17 = load i64, ptr %p16
  ; -- event time
  %ts = add i64 %v17, 0
  %ci18 = add i64 %r, %c2.off
  %p19 = getelementptr inbounds i64, ptr %c2.vals, i64 %ci18
  %v20 = load i64, ptr %p19
  ; -- window assign: tumbling 10000 ms (epoch-aligned, floor for negative times)
  %w.cur = load i64, ptr %wcur.a
  %w.known = load i1, ptr %wknown.a
  %w.delta = sub i64 %ts, %w.cur
  %w.inside = icmp ult i64 %w.delta, 10000
  %w.same = and i1 %w.known, %w.inside
  br i1 %w.same, label %w.have, label %w.compute, !prof !1
w.compute:
  ; window bounds must fit in int64: |ts| at least a window away from the limits
  %w.lowok = icmp sge i64 %ts, -9223372036854755808
  %w.highok = icmp sle i64 %ts, 9223372036854755807
  %w.inrange = and i1 %w.lowok, %w.highok
  br i1 %w.inrange, label %w.assign, label %err_time, !prof !1
w.assign:
  %w.rem = srem i64 %ts, 10000
  %w.remneg = icmp slt i64 %w.rem, 0
  %w.remadj = add i64 %w.rem, 10000
  %w.mod = select i1 %w.remneg, i64 %w.remadj, i64 %w.rem
  %w.start = sub i64 %ts, %w.mod
  ; -- pre-trigger: a record whose window already fired (end - 1 <= watermark) is late
  %w.last = add i64 %w.start, 9999
  %w.late = icmp sle i64 %w.last, %wm
  br i1 %w.late, label %late_row, label %w.open, !prof !0
w.open:
  %w.table = call ptr @gz_win_table(ptr %dir, i64 %w.start)
  %w.oom = icmp eq ptr %w.table, null
  br i1 %w.oom, label %err_oom, label %w.opened, !prof !0
w.opened:
  store i64 %w.start, ptr %wcur.a
  store i1 true, ptr %wknown.a
  store ptr %w.table, ptr %wht.a
  call void @gz_ht_view(ptr %w.table, ptr %htv.a)
  ; dense placement: the table's entries exist from its window's first record on, so the
  ; rows of the window find them without a check
  %d.e0 = load ptr, ptr %htv.a
  %d.none = icmp eq ptr %d.e0, null
  br i1 %d.none, label %d.alloc, label %d.opened, !prof !0
d.alloc:
  %d.e1 = call ptr @gz_ht_dense_alloc(ptr %w.table, i64 16384, i64 24)
  %d.oom = icmp eq ptr %d.e1, null
  br i1 %d.oom, label %err_oom, label %d.alloced, !prof !0
d.alloced:
  call void @gz_ht_view(ptr %w.table, ptr %htv.a)
  br label %d.opened
d.opened:
  %d.entries.w = phi ptr [ %d.e0, %w.opened ], [ %d.e1, %d.alloced ]
  store ptr %d.entries.w, ptr %dents.a
  %w.end = add i64 %w.start, 10000  ; no window holding this pane ends before the pane does
  %w.minend = load i64, ptr %minend.a
  %w.minend.new = call i64 @llvm.smin.i64(i64 %w.minend, i64 %w.end)
  store i64 %w.minend.new, ptr %minend.a
  br label %w.have
w.have:
  %ht = load ptr, ptr %wht.a
  ; -- dense placement (optimized variant): key campaign_id in [-2048, -2048 + 16384)
  ;    has its entry at index key - -2048; any other key (or a null) stops the kernel here:
  ;    the engine deoptimizes and runs the rest of the batch with the generic variant
  %d.off = sub i64 %v20, -2048
  %d.in = icmp ult i64 %d.off, 16384
  %d.ok = and i1 %d.in, true
  br i1 %d.ok, label %d.go, label %stop, !prof !1
d.go:
  %d.entries = load ptr, ptr %dents.a  ; allocated when the window was opened
  %d.byte = mul i64 %d.off, 24
  %grp = getelementptr inbounds i8, ptr %d.entries, i64 %d.byte
  %d.tag = load i64, ptr %grp
  %d.new = icmp eq i64 %d.tag, 0
  br i1 %d.new, label %d.claim, label %w.update, !prof !0
d.claim:
  ; a new key: the entry gets the tag and key the generic table would give it
  %h.0 = add i64 -7046029254386353131, 0
  %h.1 = call i64 @gz_hash_mix(i64 %h.0, i64 %v20)
  %h = call i64 @gz_hash_finish(i64 %h.1)
  ; the key null mask travels in bits 48..62 of the hash, hence of the entry's tag
  %h.low = and i64 %h, 281474976710655
  %h.nm = shl i64 0, 48
  %h.tagged = or i64 %h.low, %h.nm
  %d.tagged = or i64 %h.tagged, -9223372036854775808
  store i64 %d.tagged, ptr %grp
  %d.key.p = getelementptr inbounds i64, ptr %grp, i64 1
  store i64 %v20, ptr %d.key.p
  %d.size.p = getelementptr inbounds i64, ptr %ht, i64 2
  %d.size = load i64, ptr %d.size.p
  %d.size.n = add i64 %d.size, 1
  store i64 %d.size.n, ptr %d.size.p
  br label %w.update
w.update:
  ; -- aggregate views = count()
  %a0.s0.p = getelementptr inbounds i8, ptr %grp, i64 16
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
  %j.next = add nuw nsw i64 %j, 1
  %more = icmp slt i64 %j.next, %sel.total
  br i1 %more, label %loop, label %block_done

block_done:
  %b.next = add nuw nsw i64 %b, 4096
  %blocks.more = icmp slt i64 %b.next, %rows
  br i1 %blocks.more, label %block, label %exit

exit:
  %filtered.final = load i64, ptr %filtered.a
  call void @p0_optimized_process_nonnull_add_counter(ptr %state, i64 1, i64 %filtered.final)
  %late.final = load i64, ptr %late.a
  call void @p0_optimized_process_nonnull_add_counter(ptr %state, i64 2, i64 %late.final)
  %nonneg_rows = select i1 %nonempty, i64 %rows, i64 0
  call void @p0_optimized_process_nonnull_add_counter(ptr %state, i64 0, i64 %nonneg_rows)
  %maxts.final = load i64, ptr %maxts.a
  store i64 %maxts.final, ptr %maxts.p
  %minend.final = load i64, ptr %minend.a
  store i64 %minend.final, ptr %minend.p
  %result = load i64, ptr %nout.a
  ret i64 %result

; the kernel stops early (a shared window state must grow first): the rows before
; state[ERROR_ROW] are done and counted, the engine reruns the rest of the batch
stop:
  %stop.after = load i1, ptr %stop.after.a  ; the current row is done too
  %stop.inc = zext i1 %stop.after to i64
  ; done: this block's rows before the next selected row that was not processed; the gather
  ; counted every filtered row of the block, keep those before that row only
  %stop.sel = add i64 %j, %stop.inc
  %stop.insel = icmp slt i64 %stop.sel, %sel.total
  br i1 %stop.insel, label %stop.next, label %stop.resume
stop.next:
  %stop.next.p = getelementptr inbounds i64, ptr %sel.a, i64 %stop.sel
  %stop.next.r = load i64, ptr %stop.next.p
  br label %stop.resume
stop.resume:
  %stop.row = phi i64 [ %stop.next.r, %stop.next ], [ %b.end, %stop ]
  %stop.f0 = load i64, ptr %filtered.a
  %stop.f1 = sub i64 %stop.f0, %b.filtered
  %stop.span = sub i64 %stop.row, %b
  %stop.fhere = sub i64 %stop.span, %stop.sel
  %stop.filtered = add i64 %stop.f1, %stop.fhere
  call void @p0_optimized_process_nonnull_add_counter(ptr %state, i64 1, i64 %stop.filtered)
  %stop.late = load i64, ptr %late.a
  call void @p0_optimized_process_nonnull_add_counter(ptr %state, i64 2, i64 %stop.late)
  call void @p0_optimized_process_nonnull_add_counter(ptr %state, i64 0, i64 %stop.row)
  %stop.maxts = load i64, ptr %maxts.a
  store i64 %stop.maxts, ptr %maxts.p
  %stop.minend = load i64, ptr %minend.a
  store i64 %stop.minend, ptr %minend.p
  %stop.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %stop.row, ptr %stop.row.p
  ret i64 1

err10:
  %err10.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -5, ptr %err10.code.p
  %err10.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err10.row.p
  ret i64 -5

err_oom:
  %err_oom.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -1, ptr %err_oom.code.p
  %err_oom.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %r, ptr %err_oom.row.p
  ret i64 -1

err_time:
  %err_time.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -4, ptr %err_time.code.p
  %err_time.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %r, ptr %err_time.row.p
  ret i64 -4

err33:
  %err33.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -5, ptr %err33.code.p
  %err33.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %fi, ptr %err33.row.p
  ret i64 -5
}

; The entries the dense pass reached first get the tag, key and table size the general path
; gives a new entry: every entry with tag 0 and a non-zero count of each dense table that
; starts at or after the lowest window (pane) start the pass ran in (state[STATE_UNCLAIMED]).
define void @p0_optimized_claim(ptr %state) {
entry:
  %unclaimed.p = getelementptr inbounds i64, ptr %state, i64 11
  %unclaimed = load i64, ptr %unclaimed.p
  store i64 9223372036854775807, ptr %unclaimed.p
  %pending = icmp ne i64 %unclaimed, 9223372036854775807
  br i1 %pending, label %tables, label %done
tables:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %slots = load ptr, ptr %dir
  %len.p = getelementptr inbounds i64, ptr %dir, i64 1
  %len = load i64, ptr %len.p
  %any = icmp sgt i64 %len, 0
  br i1 %any, label %slot, label %done
slot:
  %s = phi i64 [ 0, %tables ], [ %s.next, %slot.next ]
  ; a directory slot is { i64 window start, { ptr entries, i64 capacity, i64 size } }
  %slot.byte = mul i64 %s, 32
  %ht.byte = add i64 %slot.byte, 8
  %ht = getelementptr inbounds i8, ptr %slots, i64 %ht.byte
  %ents = load ptr, ptr %ht
  %cap.p = getelementptr inbounds i64, ptr %ht, i64 1
  %cap = load i64, ptr %cap.p
  %has = icmp ne ptr %ents, null
  %placed = icmp eq i64 %cap, 16384
  %start.p = getelementptr inbounds i8, ptr %slots, i64 %slot.byte
  %start = load i64, ptr %start.p
  %reached.slot = icmp sge i64 %start, %unclaimed  ; (older panes: claimed after earlier calls)
  %placed.has = and i1 %has, %placed
  %go = and i1 %placed.has, %reached.slot
  br i1 %go, label %e.loop, label %slot.next
e.loop:
  %e = phi i64 [ 0, %slot ], [ %e.next, %e.latch ]
  %e.byte = mul i64 %e, 24
  %grp = getelementptr inbounds i8, ptr %ents, i64 %e.byte
  %tag = load i64, ptr %grp
  %c.p = getelementptr inbounds i8, ptr %grp, i64 16  ; rows the first aggregate took
  %c = load i64, ptr %c.p
  %untagged = icmp eq i64 %tag, 0
  %reached = icmp ne i64 %c, 0
  %claim = and i1 %untagged, %reached
  br i1 %claim, label %e.claim, label %e.latch
e.claim:
  %key = add i64 %e, -2048
  %h.0 = add i64 -7046029254386353131, 0
  %h.1 = call i64 @gz_hash_mix(i64 %h.0, i64 %key)
  %h = call i64 @gz_hash_finish(i64 %h.1)
  ; the key null mask travels in bits 48..62 of the hash, hence of the entry's tag
  %h.low = and i64 %h, 281474976710655
  %h.nm = shl i64 0, 48
  %h.tagged = or i64 %h.low, %h.nm
  %tagged = or i64 %h.tagged, -9223372036854775808  ; (the key has no null: no null flags)
  store i64 %tagged, ptr %grp
  %key.p = getelementptr inbounds i64, ptr %grp, i64 1
  store i64 %key, ptr %key.p
  %size.p = getelementptr inbounds i64, ptr %ht, i64 2
  %size = load i64, ptr %size.p
  %size.n = add i64 %size, 1
  store i64 %size.n, ptr %size.p
  br label %e.latch
e.latch:
  %e.next = add nuw nsw i64 %e, 1
  %e.more = icmp ult i64 %e.next, 16384
  br i1 %e.more, label %e.loop, label %slot.next
slot.next:
  %s.next = add nuw nsw i64 %s, 1
  %s.more = icmp slt i64 %s.next, %len
  br i1 %s.more, label %slot, label %done
done:
  ret void
}

declare <8 x i64> @llvm.x86.avx512.mask.compress.v8i64(<8 x i64>, <8 x i64>, <8 x i1>)
declare i8 @llvm.ctpop.i8(i8)
define internal void @p0_optimized_process_nonnull_add_counter(ptr %state, i64 %index, i64 %delta) alwaysinline {
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
