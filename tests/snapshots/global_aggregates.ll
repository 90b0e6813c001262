; ==== unit process (O3)
; grizzly-py codegen v19, variant generic
; ---- pipeline 0: window pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)


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
  %c2.vals.p = getelementptr inbounds i64, ptr %columns, i64 12
  %c2.vals = load ptr, ptr %c2.vals.p
  %c2.vraw.p = getelementptr inbounds i64, ptr %columns, i64 13
  %c2.vraw = load ptr, ptr %c2.vraw.p
  %c2.hasv = icmp ne ptr %c2.vraw, null
  %c2.valid = select i1 %c2.hasv, ptr %c2.vraw, ptr @gz_all_valid
  %c2.vmask = select i1 %c2.hasv, i64 -1, i64 0
  %c2.off.p = getelementptr inbounds i64, ptr %columns, i64 14
  %c2.off = load i64, ptr %c2.off.p
  %c1.vals.p = getelementptr inbounds i64, ptr %columns, i64 6
  %c1.vals = load ptr, ptr %c1.vals.p
  %c1.vraw.p = getelementptr inbounds i64, ptr %columns, i64 7
  %c1.vraw = load ptr, ptr %c1.vraw.p
  %c1.hasv = icmp ne ptr %c1.vraw, null
  %c1.valid = select i1 %c1.hasv, ptr %c1.vraw, ptr @gz_all_valid
  %c1.vmask = select i1 %c1.hasv, i64 -1, i64 0
  %c1.off.p = getelementptr inbounds i64, ptr %columns, i64 8
  %c1.off = load i64, ptr %c1.off.p
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
  %ci7 = add i64 %i, %c2.off
  %vi8 = and i64 %ci7, %c2.vmask
  %valid9 = call i1 @gz_bit(ptr %c2.valid, i64 %vi8)
  %ci10 = add i64 %i, %c2.off
  %p11 = getelementptr inbounds i32, ptr %c2.vals, i64 %ci10
  %v12 = load i32, ptr %p11
  %v13 = sext i32 %v12 to i64
  %ci14 = add i64 %i, %c1.off
  %vi15 = and i64 %ci14, %c1.vmask
  %valid16 = call i1 @gz_bit(ptr %c1.valid, i64 %vi15)
  %ci17 = add i64 %i, %c1.off
  %p18 = getelementptr inbounds double, ptr %c1.vals, i64 %ci17
  %f19 = load double, ptr %p18
  ; -- window assign: tumbling 1000 ms (epoch-aligned, floor for negative times)
  %w.cur = load i64, ptr %wcur.a
  %w.known = load i1, ptr %wknown.a
  %w.delta = sub i64 %ts, %w.cur
  %w.inside = icmp ult i64 %w.delta, 1000
  %w.same = and i1 %w.known, %w.inside
  br i1 %w.same, label %w.have, label %w.compute, !prof !1
w.compute:
  ; window bounds must fit in int64: |ts| at least a window away from the limits
  %w.lowok = icmp sge i64 %ts, -9223372036854773808
  %w.highok = icmp sle i64 %ts, 9223372036854773807
  %w.inrange = and i1 %w.lowok, %w.highok
  br i1 %w.inrange, label %w.assign, label %err_time, !prof !1
w.assign:
  %w.rem = srem i64 %ts, 1000
  %w.remneg = icmp slt i64 %w.rem, 0
  %w.remadj = add i64 %w.rem, 1000
  %w.mod = select i1 %w.remneg, i64 %w.remadj, i64 %w.rem
  %w.start = sub i64 %ts, %w.mod
  ; -- pre-trigger: a record whose window already fired (end - 1 <= watermark) is late
  %w.last = add i64 %w.start, 999
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
  %w.end = add i64 %w.start, 1000  ; no window holding this pane ends before the pane does
  %w.minend = load i64, ptr %minend.a
  %w.minend.new = call i64 @llvm.smin.i64(i64 %w.minend, i64 %w.end)
  store i64 %w.minend.new, ptr %minend.a
  br label %w.have
w.have:
  %ht = load ptr, ptr %wht.a
  ; -- key
  %h.0 = add i64 -7046029254386353131, 0
  %h = call i64 @gz_hash_finish(i64 %h.0)
  %h.tagged = add i64 %h, 0
  %grp = call ptr @gz_ht_upsert(ptr %ht, ptr %htv.a, i64 %h.tagged, ptr %key.a, i64 0, i64 96)
  %grp.oom = icmp eq ptr %grp, null
  br i1 %grp.oom, label %err_oom, label %w.update, !prof !0
w.update:
  ; -- aggregate n = count()
  %a0.s0.p = getelementptr inbounds i8, ptr %grp, i64 8
  %a0.s0 = load i64, ptr %a0.s0.p
  %a0.n = add i64 %a0.s0, 1
  store i64 %a0.n, ptr %a0.s0.p
  ; -- aggregate s = sum(col('qty'))
  %a1.s0.p = getelementptr inbounds i8, ptr %grp, i64 16
  %a1.s0 = load i64, ptr %a1.s0.p
  %a1.s1.p = getelementptr inbounds i8, ptr %grp, i64 24
  %a1.s1 = load i64, ptr %a1.s1.p
  %a1.s2.p = getelementptr inbounds i8, ptr %grp, i64 32
  %a1.s2 = load i64, ptr %a1.s2.p
  %a1.add = select i1 %valid9, i64 %v13, i64 0
  %a1.r = call {i64, i1} @llvm.sadd.with.overflow.i64(i64 %a1.s0, i64 %a1.add)
  %a1.sum = extractvalue {i64, i1} %a1.r, 0
  %a1.of = extractvalue {i64, i1} %a1.r, 1
  store i64 %a1.sum, ptr %a1.s0.p
  %a1.addneg = icmp slt i64 %a1.add, 0
  %a1.dir = select i1 %a1.addneg, i64 -1, i64 1
  %a1.cadd = select i1 %a1.of, i64 %a1.dir, i64 0
  %a1.carry = add i64 %a1.s1, %a1.cadd
  store i64 %a1.carry, ptr %a1.s1.p
  %a1.inc = zext i1 %valid9 to i64
  %a1.n = add i64 %a1.s2, %a1.inc
  store i64 %a1.n, ptr %a1.s2.p
  ; -- aggregate lo = min(col('price'))
  %a2.s0.p = getelementptr inbounds i8, ptr %grp, i64 40
  %a2.s0 = load double, ptr %a2.s0.p
  %a2.s1.p = getelementptr inbounds i8, ptr %grp, i64 48
  %a2.s1 = load i64, ptr %a2.s1.p
  %a2.first = icmp eq i64 %a2.s1, 0
  %a2.m = call double @llvm.minnum.f64(double %a2.s0, double %f19)
  %a2.new = select i1 %a2.first, double %f19, double %a2.m
  %a2.keep = select i1 %valid16, double %a2.new, double %a2.s0
  store double %a2.keep, ptr %a2.s0.p
  %a2.inc = zext i1 %valid16 to i64
  %a2.n = add i64 %a2.s1, %a2.inc
  store i64 %a2.n, ptr %a2.s1.p
  ; -- aggregate hi = max(col('price'))
  %a3.s0.p = getelementptr inbounds i8, ptr %grp, i64 56
  %a3.s0 = load double, ptr %a3.s0.p
  %a3.s1.p = getelementptr inbounds i8, ptr %grp, i64 64
  %a3.s1 = load i64, ptr %a3.s1.p
  %a3.first = icmp eq i64 %a3.s1, 0
  %a3.m = call double @llvm.maxnum.f64(double %a3.s0, double %f19)
  %a3.new = select i1 %a3.first, double %f19, double %a3.m
  %a3.keep = select i1 %valid16, double %a3.new, double %a3.s0
  store double %a3.keep, ptr %a3.s0.p
  %a3.inc = zext i1 %valid16 to i64
  %a3.n = add i64 %a3.s1, %a3.inc
  store i64 %a3.n, ptr %a3.s1.p
  ; -- aggregate mean = avg(col('price'))
  %a4.s0.p = getelementptr inbounds i8, ptr %grp, i64 72
  %a4.s0 = load double, ptr %a4.s0.p
  %a4.s1.p = getelementptr inbounds i8, ptr %grp, i64 80
  %a4.s1 = load i64, ptr %a4.s1.p
  %a4.s2.p = getelementptr inbounds i8, ptr %grp, i64 88
  %a4.s2 = load double, ptr %a4.s2.p
  %a4.sum = fadd double %a4.s0, %f19
  %a4.ts.bp = fsub double %a4.sum, %a4.s0
  %a4.ts.ap = fsub double %a4.sum, %a4.ts.bp
  %a4.ts.da = fsub double %a4.s0, %a4.ts.ap
  %a4.ts.db = fsub double %f19, %a4.ts.bp
  %a4.ts.e = fadd double %a4.ts.da, %a4.ts.db
  %a4.comp = fadd double %a4.s2, %a4.ts.e
  %a4.keep = select i1 %valid16, double %a4.sum, double %a4.s0
  store double %a4.keep, ptr %a4.s0.p
  %a4.comp.k = select i1 %valid16, double %a4.comp, double %a4.s2
  store double %a4.comp.k, ptr %a4.s2.p
  %a4.inc = zext i1 %valid16 to i64
  %a4.n = add i64 %a4.s1, %a4.inc
  store i64 %a4.n, ptr %a4.s1.p
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

err_time:
  %err_time.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -4, ptr %err_time.code.p
  %err_time.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err_time.row.p
  ret i64 -4
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
define i64 @p0_generic_count_ready(ptr %state, i64 %wm) {
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
  %wl = add i64 %ws, 999
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

define i64 @p0_generic_merge_emit(ptr %states, i64 %nstates, i64 %lo, i64 %hi, ptr noalias %out, i64 %dense_cap) {
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
  %d.entries = call ptr @gz_ht_dense_alloc(ptr %tmp, i64 %dense_cap, i64 96)
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
  %src = call ptr @gz_ht_entry(ptr %src.ht, i64 %i, i64 96)
  %tag = load i64, ptr %src
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %merge, label %entry_done
merge:
  br i1 %dense, label %merge.dense, label %merge.hashed
merge.dense:  ; the same index in every table: the same key
  %d.grp = call ptr @gz_ht_entry(ptr %tmp, i64 %i, i64 96)
  %d.tag = load i64, ptr %d.grp
  %d.fresh = icmp eq i64 %d.tag, 0
  br i1 %d.fresh, label %merge.claim, label %merge.body
merge.claim:  ; tag and key words, as an insert would write them (the aggregates stay zero)
  call void @llvm.memcpy.p0.p0.i64(ptr %d.grp, ptr %src, i64 8, i1 false)
  br label %merge.body
merge.hashed:
  %key = getelementptr inbounds i8, ptr %src, i64 8
  %h.grp = call ptr @gz_ht_upsert(ptr %tmp, ptr %htv.a, i64 %tag, ptr %key, i64 0, i64 96)
  %grp.oom = icmp eq ptr %h.grp, null
  br i1 %grp.oom, label %oom, label %merge.body
merge.body:
  %grp = phi ptr [ %d.grp, %merge.dense ], [ %d.grp, %merge.claim ], [ %h.grp, %merge.hashed ]
  ; -- merge n = count
  %m0.a0.p = getelementptr inbounds i8, ptr %grp, i64 8
  %m0.a0 = load i64, ptr %m0.a0.p
  %m0.b0.p = getelementptr inbounds i8, ptr %src, i64 8
  %m0.b0 = load i64, ptr %m0.b0.p

  %m0.n = add i64 %m0.a0, %m0.b0
  store i64 %m0.n, ptr %m0.a0.p

  ; -- merge s = sum
  %m1.a0.p = getelementptr inbounds i8, ptr %grp, i64 16
  %m1.a0 = load i64, ptr %m1.a0.p
  %m1.b0.p = getelementptr inbounds i8, ptr %src, i64 16
  %m1.b0 = load i64, ptr %m1.b0.p

  %m1.a1.p = getelementptr inbounds i8, ptr %grp, i64 24
  %m1.a1 = load i64, ptr %m1.a1.p
  %m1.b1.p = getelementptr inbounds i8, ptr %src, i64 24
  %m1.b1 = load i64, ptr %m1.b1.p

  %m1.a2.p = getelementptr inbounds i8, ptr %grp, i64 32
  %m1.a2 = load i64, ptr %m1.a2.p
  %m1.b2.p = getelementptr inbounds i8, ptr %src, i64 32
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

  ; -- merge lo = min
  %m2.a0.p = getelementptr inbounds i8, ptr %grp, i64 40
  %m2.a0 = load double, ptr %m2.a0.p
  %m2.b0.p = getelementptr inbounds i8, ptr %src, i64 40
  %m2.b0 = load double, ptr %m2.b0.p

  %m2.a1.p = getelementptr inbounds i8, ptr %grp, i64 48
  %m2.a1 = load i64, ptr %m2.a1.p
  %m2.b1.p = getelementptr inbounds i8, ptr %src, i64 48
  %m2.b1 = load i64, ptr %m2.b1.p

  %m2.both = call double @llvm.minnum.f64(double %m2.a0, double %m2.b0)
  %m2.aempty = icmp eq i64 %m2.a1, 0
  %m2.bempty = icmp eq i64 %m2.b1, 0
  %m2.v1 = select i1 %m2.aempty, double %m2.b0, double %m2.both
  %m2.v = select i1 %m2.bempty, double %m2.a0, double %m2.v1
  store double %m2.v, ptr %m2.a0.p
  %m2.n = add i64 %m2.a1, %m2.b1
  store i64 %m2.n, ptr %m2.a1.p

  ; -- merge hi = max
  %m3.a0.p = getelementptr inbounds i8, ptr %grp, i64 56
  %m3.a0 = load double, ptr %m3.a0.p
  %m3.b0.p = getelementptr inbounds i8, ptr %src, i64 56
  %m3.b0 = load double, ptr %m3.b0.p

  %m3.a1.p = getelementptr inbounds i8, ptr %grp, i64 64
  %m3.a1 = load i64, ptr %m3.a1.p
  %m3.b1.p = getelementptr inbounds i8, ptr %src, i64 64
  %m3.b1 = load i64, ptr %m3.b1.p

  %m3.both = call double @llvm.maxnum.f64(double %m3.a0, double %m3.b0)
  %m3.aempty = icmp eq i64 %m3.a1, 0
  %m3.bempty = icmp eq i64 %m3.b1, 0
  %m3.v1 = select i1 %m3.aempty, double %m3.b0, double %m3.both
  %m3.v = select i1 %m3.bempty, double %m3.a0, double %m3.v1
  store double %m3.v, ptr %m3.a0.p
  %m3.n = add i64 %m3.a1, %m3.b1
  store i64 %m3.n, ptr %m3.a1.p

  ; -- merge mean = avg
  %m4.a0.p = getelementptr inbounds i8, ptr %grp, i64 72
  %m4.a0 = load double, ptr %m4.a0.p
  %m4.b0.p = getelementptr inbounds i8, ptr %src, i64 72
  %m4.b0 = load double, ptr %m4.b0.p

  %m4.a1.p = getelementptr inbounds i8, ptr %grp, i64 80
  %m4.a1 = load i64, ptr %m4.a1.p
  %m4.b1.p = getelementptr inbounds i8, ptr %src, i64 80
  %m4.b1 = load i64, ptr %m4.b1.p

  %m4.a2.p = getelementptr inbounds i8, ptr %grp, i64 88
  %m4.a2 = load double, ptr %m4.a2.p
  %m4.b2.p = getelementptr inbounds i8, ptr %src, i64 88
  %m4.b2 = load double, ptr %m4.b2.p

  %m4.sum = fadd double %m4.a0, %m4.b0
  %m4.ts.bp = fsub double %m4.sum, %m4.a0
  %m4.ts.ap = fsub double %m4.sum, %m4.ts.bp
  %m4.ts.da = fsub double %m4.a0, %m4.ts.ap
  %m4.ts.db = fsub double %m4.b0, %m4.ts.bp
  %m4.ts.e = fadd double %m4.ts.da, %m4.ts.db

  %m4.c2 = fadd double %m4.a2, %m4.b2
  %m4.comp = fadd double %m4.c2, %m4.ts.e
  %m4.bempty = icmp eq i64 %m4.b1, 0
  %m4.keep = select i1 %m4.bempty, double %m4.a0, double %m4.sum
  store double %m4.keep, ptr %m4.a0.p
  %m4.comp.k = select i1 %m4.bempty, double %m4.a2, double %m4.comp
  store double %m4.comp.k, ptr %m4.a2.p
  %m4.n = add i64 %m4.a1, %m4.b1
  store i64 %m4.n, ptr %m4.a1.p

  br label %entry_done
entry_done:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %cap
  br i1 %more, label %entries, label %pane_done
pane_done:
  %w.next = add i64 %w, 1
  br label %panes
oom:
  call void @p0_generic_release(ptr %tmp)
  ret i64 -1
emit:
  %ws.out.p = getelementptr inbounds ptr, ptr %out, i64 0
  %ws.out = load ptr, ptr %ws.out.p
  %tcap = call i64 @gz_ht_capacity(ptr %tmp)
  %has = icmp ugt i64 %tcap, 0
  br i1 %has, label %loop, label %finish
loop:
  %k = phi i64 [ 0, %emit ], [ %k.next, %next ]
  %e = call ptr @gz_ht_entry(ptr %tmp, i64 %k, i64 96)
  %etag = load i64, ptr %e
  %elive = icmp ugt i64 %etag, 1
  br i1 %elive, label %emit_entry, label %next
emit_entry:
  %j = load i64, ptr %j.a
  %ws.dst = getelementptr inbounds i64, ptr %ws.out, i64 %j
  store i64 %lo, ptr %ws.dst
  ; -- final n = count
  %x0.vp.p = getelementptr inbounds ptr, ptr %out, i64 1
  %x0.vp = load ptr, ptr %x0.vp.p
  %x0.mp.p = getelementptr inbounds ptr, ptr %out, i64 2
  %x0.mp = load ptr, ptr %x0.mp.p
  %x0.n.p = getelementptr inbounds i8, ptr %e, i64 8
  %x0.n = load i64, ptr %x0.n.p
  %x0.s0.p = getelementptr inbounds i8, ptr %e, i64 8
  %x0.valid = add i1 true, false
  %x0.out = add i64 %x0.n, 0
  %x0.dst = getelementptr inbounds i64, ptr %x0.vp, i64 %j
  store i64 %x0.out, ptr %x0.dst
  %x0.m = zext i1 %x0.valid to i8
  %x0.mdst = getelementptr inbounds i8, ptr %x0.mp, i64 %j
  store i8 %x0.m, ptr %x0.mdst

  ; -- final s = sum
  %x1.vp.p = getelementptr inbounds ptr, ptr %out, i64 3
  %x1.vp = load ptr, ptr %x1.vp.p
  %x1.mp.p = getelementptr inbounds ptr, ptr %out, i64 4
  %x1.mp = load ptr, ptr %x1.mp.p
  %x1.n.p = getelementptr inbounds i8, ptr %e, i64 32
  %x1.n = load i64, ptr %x1.n.p
  %x1.s0.p = getelementptr inbounds i8, ptr %e, i64 16
  %x1.valid = icmp sgt i64 %x1.n, 0
  %x1.carry.p = getelementptr inbounds i8, ptr %e, i64 24
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

  ; -- final lo = min
  %x2.vp.p = getelementptr inbounds ptr, ptr %out, i64 5
  %x2.vp = load ptr, ptr %x2.vp.p
  %x2.mp.p = getelementptr inbounds ptr, ptr %out, i64 6
  %x2.mp = load ptr, ptr %x2.mp.p
  %x2.n.p = getelementptr inbounds i8, ptr %e, i64 48
  %x2.n = load i64, ptr %x2.n.p
  %x2.s0.p = getelementptr inbounds i8, ptr %e, i64 40
  %x2.valid = icmp sgt i64 %x2.n, 0
  %x2.out = load double, ptr %x2.s0.p
  %x2.dst = getelementptr inbounds double, ptr %x2.vp, i64 %j
  store double %x2.out, ptr %x2.dst
  %x2.m = zext i1 %x2.valid to i8
  %x2.mdst = getelementptr inbounds i8, ptr %x2.mp, i64 %j
  store i8 %x2.m, ptr %x2.mdst

  ; -- final hi = max
  %x3.vp.p = getelementptr inbounds ptr, ptr %out, i64 7
  %x3.vp = load ptr, ptr %x3.vp.p
  %x3.mp.p = getelementptr inbounds ptr, ptr %out, i64 8
  %x3.mp = load ptr, ptr %x3.mp.p
  %x3.n.p = getelementptr inbounds i8, ptr %e, i64 64
  %x3.n = load i64, ptr %x3.n.p
  %x3.s0.p = getelementptr inbounds i8, ptr %e, i64 56
  %x3.valid = icmp sgt i64 %x3.n, 0
  %x3.out = load double, ptr %x3.s0.p
  %x3.dst = getelementptr inbounds double, ptr %x3.vp, i64 %j
  store double %x3.out, ptr %x3.dst
  %x3.m = zext i1 %x3.valid to i8
  %x3.mdst = getelementptr inbounds i8, ptr %x3.mp, i64 %j
  store i8 %x3.m, ptr %x3.mdst

  ; -- final mean = avg
  %x4.vp.p = getelementptr inbounds ptr, ptr %out, i64 9
  %x4.vp = load ptr, ptr %x4.vp.p
  %x4.mp.p = getelementptr inbounds ptr, ptr %out, i64 10
  %x4.mp = load ptr, ptr %x4.mp.p
  %x4.n.p = getelementptr inbounds i8, ptr %e, i64 80
  %x4.n = load i64, ptr %x4.n.p
  %x4.s0.p = getelementptr inbounds i8, ptr %e, i64 72
  %x4.valid = icmp sgt i64 %x4.n, 0
  %x4.s = load double, ptr %x4.s0.p
  %x4.c.p = getelementptr inbounds i8, ptr %e, i64 88
  %x4.c = load double, ptr %x4.c.p
  %x4.sc = fadd double %x4.s, %x4.c
  %x4.zs = fsub double %x4.s, %x4.s
  %x4.zc = fsub double %x4.c, %x4.c
  %x4.z = fadd double %x4.zs, %x4.zc
  %x4.fin = fcmp oeq double %x4.z, 0.0
  %x4.sf = select i1 %x4.fin, double %x4.sc, double %x4.s

  %x4.nf = sitofp i64 %x4.n to double
  %x4.out = fdiv double %x4.sf, %x4.nf
  %x4.dst = getelementptr inbounds double, ptr %x4.vp, i64 %j
  store double %x4.out, ptr %x4.dst
  %x4.m = zext i1 %x4.valid to i8
  %x4.mdst = getelementptr inbounds i8, ptr %x4.mp, i64 %j
  store i8 %x4.m, ptr %x4.mdst

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
define void @p0_generic_drop_panes(ptr %state, i64 %wm) {
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
  %rem = srem i64 %ps, 1000
  %remneg = icmp slt i64 %rem, 0
  %remadj = add i64 %rem, 1000
  %mod = select i1 %remneg, i64 %remadj, i64 %rem
  %lastwin = sub i64 %ps, %mod
  %last = add i64 %lastwin, 999
  %fired = icmp sle i64 %last, %wm
  br i1 %fired, label %drop, label %kept
drop:
  %ht = getelementptr inbounds i64, ptr %slot, i64 1
  call void @p0_generic_release(ptr %ht)
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

define internal void @p0_generic_release(ptr %ht) {
entry:
  br label %done
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

; Move every table of a state block between placements (runtime/windows_placement.ll): dense for
; the optimized variant's key range, hashed for the others. The engine calls these only while no
; kernel runs on the block. place_dense: 0, 1 out of memory, 2 a key outside the range.
define i32 @p0_generic_place_dense(ptr %state, i64 %lo, i64 %cap) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %rc = call i32 @gz_dir_place_dense(ptr %dir, i64 %lo, i64 %cap, i64 96)
  ret i32 %rc
}

define i32 @p0_generic_place_hashed(ptr %state) {
entry:
  %dir = getelementptr inbounds i64, ptr %state, i64 8
  %rc = call i32 @gz_dir_place_hashed(ptr %dir, i64 96)
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

define i64 @p0_generic_emit(ptr %state, i64 %wm, ptr noalias %out) {
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
  %we = add i64 %ws, 1000
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
  %e = call ptr @gz_ht_entry(ptr %ht, i64 %i, i64 96)
  %tag = load i64, ptr %e
  %live = icmp ugt i64 %tag, 1
  br i1 %live, label %emit_entry, label %next
emit_entry:
  %j = load i64, ptr %j.a
  %ws.dst = getelementptr inbounds i64, ptr %ws.out, i64 %j
  store i64 %ws, ptr %ws.dst
  ; -- final n = count
  %x0.vp.p = getelementptr inbounds ptr, ptr %out, i64 1
  %x0.vp = load ptr, ptr %x0.vp.p
  %x0.mp.p = getelementptr inbounds ptr, ptr %out, i64 2
  %x0.mp = load ptr, ptr %x0.mp.p
  %x0.n.p = getelementptr inbounds i8, ptr %e, i64 8
  %x0.n = load i64, ptr %x0.n.p
  %x0.s0.p = getelementptr inbounds i8, ptr %e, i64 8
  %x0.valid = add i1 true, false
  %x0.out = add i64 %x0.n, 0
  %x0.dst = getelementptr inbounds i64, ptr %x0.vp, i64 %j
  store i64 %x0.out, ptr %x0.dst
  %x0.m = zext i1 %x0.valid to i8
  %x0.mdst = getelementptr inbounds i8, ptr %x0.mp, i64 %j
  store i8 %x0.m, ptr %x0.mdst

  ; -- final s = sum
  %x1.vp.p = getelementptr inbounds ptr, ptr %out, i64 3
  %x1.vp = load ptr, ptr %x1.vp.p
  %x1.mp.p = getelementptr inbounds ptr, ptr %out, i64 4
  %x1.mp = load ptr, ptr %x1.mp.p
  %x1.n.p = getelementptr inbounds i8, ptr %e, i64 32
  %x1.n = load i64, ptr %x1.n.p
  %x1.s0.p = getelementptr inbounds i8, ptr %e, i64 16
  %x1.valid = icmp sgt i64 %x1.n, 0
  %x1.carry.p = getelementptr inbounds i8, ptr %e, i64 24
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

  ; -- final lo = min
  %x2.vp.p = getelementptr inbounds ptr, ptr %out, i64 5
  %x2.vp = load ptr, ptr %x2.vp.p
  %x2.mp.p = getelementptr inbounds ptr, ptr %out, i64 6
  %x2.mp = load ptr, ptr %x2.mp.p
  %x2.n.p = getelementptr inbounds i8, ptr %e, i64 48
  %x2.n = load i64, ptr %x2.n.p
  %x2.s0.p = getelementptr inbounds i8, ptr %e, i64 40
  %x2.valid = icmp sgt i64 %x2.n, 0
  %x2.out = load double, ptr %x2.s0.p
  %x2.dst = getelementptr inbounds double, ptr %x2.vp, i64 %j
  store double %x2.out, ptr %x2.dst
  %x2.m = zext i1 %x2.valid to i8
  %x2.mdst = getelementptr inbounds i8, ptr %x2.mp, i64 %j
  store i8 %x2.m, ptr %x2.mdst

  ; -- final hi = max
  %x3.vp.p = getelementptr inbounds ptr, ptr %out, i64 7
  %x3.vp = load ptr, ptr %x3.vp.p
  %x3.mp.p = getelementptr inbounds ptr, ptr %out, i64 8
  %x3.mp = load ptr, ptr %x3.mp.p
  %x3.n.p = getelementptr inbounds i8, ptr %e, i64 64
  %x3.n = load i64, ptr %x3.n.p
  %x3.s0.p = getelementptr inbounds i8, ptr %e, i64 56
  %x3.valid = icmp sgt i64 %x3.n, 0
  %x3.out = load double, ptr %x3.s0.p
  %x3.dst = getelementptr inbounds double, ptr %x3.vp, i64 %j
  store double %x3.out, ptr %x3.dst
  %x3.m = zext i1 %x3.valid to i8
  %x3.mdst = getelementptr inbounds i8, ptr %x3.mp, i64 %j
  store i8 %x3.m, ptr %x3.mdst

  ; -- final mean = avg
  %x4.vp.p = getelementptr inbounds ptr, ptr %out, i64 9
  %x4.vp = load ptr, ptr %x4.vp.p
  %x4.mp.p = getelementptr inbounds ptr, ptr %out, i64 10
  %x4.mp = load ptr, ptr %x4.mp.p
  %x4.n.p = getelementptr inbounds i8, ptr %e, i64 80
  %x4.n = load i64, ptr %x4.n.p
  %x4.s0.p = getelementptr inbounds i8, ptr %e, i64 72
  %x4.valid = icmp sgt i64 %x4.n, 0
  %x4.s = load double, ptr %x4.s0.p
  %x4.c.p = getelementptr inbounds i8, ptr %e, i64 88
  %x4.c = load double, ptr %x4.c.p
  %x4.sc = fadd double %x4.s, %x4.c
  %x4.zs = fsub double %x4.s, %x4.s
  %x4.zc = fsub double %x4.c, %x4.c
  %x4.z = fadd double %x4.zs, %x4.zc
  %x4.fin = fcmp oeq double %x4.z, 0.0
  %x4.sf = select i1 %x4.fin, double %x4.sc, double %x4.s

  %x4.nf = sitofp i64 %x4.n to double
  %x4.out = fdiv double %x4.sf, %x4.nf
  %x4.dst = getelementptr inbounds double, ptr %x4.vp, i64 %j
  store double %x4.out, ptr %x4.dst
  %x4.m = zext i1 %x4.valid to i8
  %x4.mdst = getelementptr inbounds i8, ptr %x4.mp, i64 %j
  store i8 %x4.m, ptr %x4.mdst

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
; grizzly-py codegen v19, variant generic
; ---- pipeline 0: window pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)


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
  %c2.vals.p = getelementptr inbounds i64, ptr %columns, i64 12
  %c2.vals = load ptr, ptr %c2.vals.p
  %c2.off.p = getelementptr inbounds i64, ptr %columns, i64 14
  %c2.off = load i64, ptr %c2.off.p
  %c1.vals.p = getelementptr inbounds i64, ptr %columns, i64 6
  %c1.vals = load ptr, ptr %c1.vals.p
  %c1.off.p = getelementptr inbounds i64, ptr %columns, i64 8
  %c1.off = load i64, ptr %c1.off.p
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
  %ci4 = add i64 %i, %c2.off
  %p5 = getelementptr inbounds i32, ptr %c2.vals, i64 %ci4
  %v6 = load i32, ptr %p5
  %v7 = sext i32 %v6 to i64
  %ci8 = add i64 %i, %c1.off
  %p9 = getelementptr inbounds double, ptr %c1.vals, i64 %ci8
  %f10 = load double, ptr %p9
  ; -- window assign: tumbling 1000 ms (epoch-aligned, floor for negative times)
  %w.cur = load i64, ptr %wcur.a
  %w.known = load i1, ptr %wknown.a
  %w.delta = sub i64 %ts, %w.cur
  %w.inside = icmp ult i64 %w.delta, 1000
  %w.same = and i1 %w.known, %w.inside
  br i1 %w.same, label %w.have, label %w.compute, !prof !1
w.compute:
  ; window bounds must fit in int64: |ts| at least a window away from the limits
  %w.lowok = icmp sge i64 %ts, -9223372036854773808
  %w.highok = icmp sle i64 %ts, 9223372036854773807
  %w.inrange = and i1 %w.lowok, %w.highok
  br i1 %w.inrange, label %w.assign, label %err_time, !prof !1
w.assign:
  %w.rem = srem i64 %ts, 1000
  %w.remneg = icmp slt i64 %w.rem, 0
  %w.remadj = add i64 %w.rem, 1000
  %w.mod = select i1 %w.remneg, i64 %w.remadj, i64 %w.rem
  %w.start = sub i64 %ts, %w.mod
  ; -- pre-trigger: a record whose window already fired (end - 1 <= watermark) is late
  %w.last = add i64 %w.start, 999
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
  %w.end = add i64 %w.start, 1000  ; no window holding this pane ends before the pane does
  %w.minend = load i64, ptr %minend.a
  %w.minend.new = call i64 @llvm.smin.i64(i64 %w.minend, i64 %w.end)
  store i64 %w.minend.new, ptr %minend.a
  br label %w.have
w.have:
  %ht = load ptr, ptr %wht.a
  ; -- key
  %h.0 = add i64 -7046029254386353131, 0
  %h = call i64 @gz_hash_finish(i64 %h.0)
  %h.tagged = add i64 %h, 0
  %grp = call ptr @gz_ht_upsert(ptr %ht, ptr %htv.a, i64 %h.tagged, ptr %key.a, i64 0, i64 96)
  %grp.oom = icmp eq ptr %grp, null
  br i1 %grp.oom, label %err_oom, label %w.update, !prof !0
w.update:
  ; -- aggregate n = count()
  %a0.s0.p = getelementptr inbounds i8, ptr %grp, i64 8
  %a0.s0 = load i64, ptr %a0.s0.p
  %a0.n = add i64 %a0.s0, 1
  store i64 %a0.n, ptr %a0.s0.p
  ; -- aggregate s = sum(col('qty'))
  %a1.s0.p = getelementptr inbounds i8, ptr %grp, i64 16
  %a1.s0 = load i64, ptr %a1.s0.p
  %a1.s1.p = getelementptr inbounds i8, ptr %grp, i64 24
  %a1.s1 = load i64, ptr %a1.s1.p
  %a1.s2.p = getelementptr inbounds i8, ptr %grp, i64 32
  %a1.s2 = load i64, ptr %a1.s2.p
  %a1.add = select i1 true, i64 %v7, i64 0
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
  ; -- aggregate lo = min(col('price'))
  %a2.s0.p = getelementptr inbounds i8, ptr %grp, i64 40
  %a2.s0 = load double, ptr %a2.s0.p
  %a2.s1.p = getelementptr inbounds i8, ptr %grp, i64 48
  %a2.s1 = load i64, ptr %a2.s1.p
  %a2.first = icmp eq i64 %a2.s1, 0
  %a2.m = call double @llvm.minnum.f64(double %a2.s0, double %f10)
  %a2.new = select i1 %a2.first, double %f10, double %a2.m
  %a2.keep = select i1 true, double %a2.new, double %a2.s0
  store double %a2.keep, ptr %a2.s0.p
  %a2.inc = zext i1 true to i64
  %a2.n = add i64 %a2.s1, %a2.inc
  store i64 %a2.n, ptr %a2.s1.p
  ; -- aggregate hi = max(col('price'))
  %a3.s0.p = getelementptr inbounds i8, ptr %grp, i64 56
  %a3.s0 = load double, ptr %a3.s0.p
  %a3.s1.p = getelementptr inbounds i8, ptr %grp, i64 64
  %a3.s1 = load i64, ptr %a3.s1.p
  %a3.first = icmp eq i64 %a3.s1, 0
  %a3.m = call double @llvm.maxnum.f64(double %a3.s0, double %f10)
  %a3.new = select i1 %a3.first, double %f10, double %a3.m
  %a3.keep = select i1 true, double %a3.new, double %a3.s0
  store double %a3.keep, ptr %a3.s0.p
  %a3.inc = zext i1 true to i64
  %a3.n = add i64 %a3.s1, %a3.inc
  store i64 %a3.n, ptr %a3.s1.p
  ; -- aggregate mean = avg(col('price'))
  %a4.s0.p = getelementptr inbounds i8, ptr %grp, i64 72
  %a4.s0 = load double, ptr %a4.s0.p
  %a4.s1.p = getelementptr inbounds i8, ptr %grp, i64 80
  %a4.s1 = load i64, ptr %a4.s1.p
  %a4.s2.p = getelementptr inbounds i8, ptr %grp, i64 88
  %a4.s2 = load double, ptr %a4.s2.p
  %a4.sum = fadd double %a4.s0, %f10
  %a4.ts.bp = fsub double %a4.sum, %a4.s0
  %a4.ts.ap = fsub double %a4.sum, %a4.ts.bp
  %a4.ts.da = fsub double %a4.s0, %a4.ts.ap
  %a4.ts.db = fsub double %f10, %a4.ts.bp
  %a4.ts.e = fadd double %a4.ts.da, %a4.ts.db
  %a4.comp = fadd double %a4.s2, %a4.ts.e
  %a4.keep = select i1 true, double %a4.sum, double %a4.s0
  store double %a4.keep, ptr %a4.s0.p
  %a4.comp.k = select i1 true, double %a4.comp, double %a4.s2
  store double %a4.comp.k, ptr %a4.s2.p
  %a4.inc = zext i1 true to i64
  %a4.n = add i64 %a4.s1, %a4.inc
  store i64 %a4.n, ptr %a4.s1.p
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

err_time:
  %err_time.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -4, ptr %err_time.code.p
  %err_time.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err_time.row.p
  ret i64 -4
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
