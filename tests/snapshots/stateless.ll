; ==== unit process (O3)
; grizzly-py codegen v19, variant generic
; ---- pipeline 0: project pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)

@p0_generic.process.str0 = private unnamed_addr constant [1 x i8] c"y"
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
  %mask.a = alloca i64, align 8
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
  %c2.data.p = getelementptr inbounds i64, ptr %columns, i64 15
  %c2.data = load ptr, ptr %c2.data.p
  %c2.dlen.p = getelementptr inbounds i64, ptr %columns, i64 16
  %c2.dlen = load i64, ptr %c2.dlen.p
  %c1.vals.p = getelementptr inbounds i64, ptr %columns, i64 6
  %c1.vals = load ptr, ptr %c1.vals.p
  %c1.vraw.p = getelementptr inbounds i64, ptr %columns, i64 7
  %c1.vraw = load ptr, ptr %c1.vraw.p
  %c1.hasv = icmp ne ptr %c1.vraw, null
  %c1.valid = select i1 %c1.hasv, ptr %c1.vraw, ptr @gz_all_valid
  %c1.vmask = select i1 %c1.hasv, i64 -1, i64 0
  %c1.off.p = getelementptr inbounds i64, ptr %columns, i64 8
  %c1.off = load i64, ptr %c1.off.p
  %out.sel.p = getelementptr inbounds ptr, ptr %out, i64 0
  %out.sel = load ptr, ptr %out.sel.p
  %out.v0.p = getelementptr inbounds ptr, ptr %out, i64 1
  %out.v0 = load ptr, ptr %out.v0.p
  %out.m0.p = getelementptr inbounds ptr, ptr %out, i64 2
  %out.m0 = load ptr, ptr %out.m0.p
  %out.v1.p = getelementptr inbounds ptr, ptr %out, i64 3
  %out.v1 = load ptr, ptr %out.v1.p
  %out.m1.p = getelementptr inbounds ptr, ptr %out, i64 4
  %out.m1 = load ptr, ptr %out.m1.p
  %nonempty = icmp sgt i64 %rows, 0
  br i1 %nonempty, label %chunk, label %exit

; masked loop (projections with predicated filters): per chunk of 64 rows, a branch-free pass
; (vectorizable) folds the filters' verdicts into a 64-bit mask; a chunk that keeps nothing costs
; the predicate alone, a sparse one runs the body for its set bits only (%r), a dense one runs
; dense_body for every row (%d) with the row's bit as the keep flag.
chunk:
  %c = phi i64 [ 0, %entry ], [ %c.next, %chunk_done ]
  %c.lim = add nuw nsw i64 %c, 64
  %c.short = icmp slt i64 %rows, %c.lim
  %c.end = select i1 %c.short, i64 %rows, i64 %c.lim
  store i64 0, ptr %mask.a
  br label %scan

scan:
  %i = phi i64 [ %c, %chunk ], [ %i.next, %scan.latch ]
  %ci1 = add i64 %i, %c0.off
  %vi2 = and i64 %ci1, %c0.vmask
  %valid3 = call i1 @gz_bit(ptr %c0.valid, i64 %vi2)
  %ci4 = add i64 %i, %c0.off
  %p5 = getelementptr inbounds double, ptr %c0.vals, i64 %ci4
  %f6 = load double, ptr %p5
  %cmp7 = fcmp ogt double %f6, 0x3FF0000000000000
  ; -- filter (col('price') > lit(1.0))
  %filter0 = and i1 %valid3, %cmp7
  %ci8 = add i64 %i, %c2.off
  %vi9 = and i64 %ci8, %c2.vmask
  %valid10 = call i1 @gz_bit(ptr %c2.valid, i64 %vi9)
  %ci11 = add i64 %i, %c2.off
  %p12 = getelementptr inbounds i32, ptr %c2.vals, i64 %ci11
  %v13 = load i32, ptr %p12
  %v14 = sext i32 %v13 to i64
  %ci15 = add i64 %ci11, 1
  %p16 = getelementptr inbounds i32, ptr %c2.vals, i64 %ci15
  %v17 = load i32, ptr %p16
  %v18 = sext i32 %v17 to i64
  %sb19 = icmp slt i64 %v14, 0
  %sb20 = icmp sgt i64 %v14, %v18
  %sb21 = icmp sgt i64 %v18, %c2.dlen
  %sb22 = or i1 %sb19, %sb20
  %sb23 = or i1 %sb22, %sb21
  br i1 %sb23, label %err24, label %ok25, !prof !0
ok25:
  %s26 = getelementptr inbounds i8, ptr %c2.data, i64 %v14
  %slen27 = sub i64 %v18, %v14
  %streq28 = call i1 @gz_str_eq(ptr %s26, i64 %slen27, ptr @p0_generic.process.str0, i64 1)
  %ne29 = xor i1 %streq28, true
  ; -- filter (col('name') != lit('y'))
  %filter1 = and i1 %valid10, %ne29
  %keep30 = and i1 %filter0, %filter1
  br label %scan.latch

scan.latch:
  %m.v = load i64, ptr %mask.a
  %m.bit = zext i1 %keep30 to i64
  %m.shift = sub nuw nsw i64 %i, %c
  %m.at = shl i64 %m.bit, %m.shift
  %m.or = or i64 %m.v, %m.at
  store i64 %m.or, ptr %mask.a
  %i.next = add nuw nsw i64 %i, 1
  %scan.more = icmp slt i64 %i.next, %c.end
  br i1 %scan.more, label %scan, label %walk

walk:
  %mw.all = load i64, ptr %mask.a
  %mw.any = icmp ne i64 %mw.all, 0
  br i1 %mw.any, label %walk.pick, label %chunk_done

walk.pick:
  %mw.pop = call i64 @llvm.ctpop.i64(i64 %mw.all)
  %mw.dense = icmp ugt i64 %mw.pop, 16
  br i1 %mw.dense, label %dense, label %loop

; a dense chunk: every row, written at the cursor, which advances by the row's bit
dense:
  %d = phi i64 [ %c, %walk.pick ], [ %d.next, %dense.latch ]
  %d.shift = sub nuw nsw i64 %d, %c
  %d.bits = lshr i64 %mw.all, %d.shift
  %d.keep = trunc i64 %d.bits to i1
  %ci60 = add i64 %d, %c0.off
  %vi61 = and i64 %ci60, %c0.vmask
  %valid62 = call i1 @gz_bit(ptr %c0.valid, i64 %vi61)
  %ci63 = add i64 %d, %c0.off
  %p64 = getelementptr inbounds double, ptr %c0.vals, i64 %ci63
  %f65 = load double, ptr %p64
  %ci66 = add i64 %d, %c1.off
  %vi67 = and i64 %ci66, %c1.vmask
  %valid68 = call i1 @gz_bit(ptr %c1.valid, i64 %vi67)
  %ci69 = add i64 %d, %c1.off
  %p70 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci69
  %v71 = load i32, ptr %p70
  %v72 = sext i32 %v71 to i64
  %cv73 = sitofp i64 %v72 to double
  %vd74 = and i1 %valid62, %valid68
  %ar75 = fmul double %f65, %cv73
  %md77 = icmp ne i64 4, 0
  %md78 = icmp eq i64 4, -1
  %md79 = select i1 %md77, i64 4, i64 1
  %md80 = select i1 %md78, i64 1, i64 %md79
  %md81 = srem i64 %v72, %md80
  %md82 = icmp ne i64 %md81, 0
  %md83 = xor i64 %md81, 4
  %md84 = icmp slt i64 %md83, 0
  %md85 = and i1 %md82, %md84
  %md86 = add i64 %md81, 4
  %md87 = select i1 %md85, i64 %md86, i64 %md81
  %vd88 = and i1 %valid68, %md77
  ; -- emit row: selection vector + 2 computed column(s)
  %prjd.n = load i64, ptr %nout.a
  %prjd.selp = getelementptr inbounds i64, ptr %out.sel, i64 %prjd.n
  store i64 %d, ptr %prjd.selp
  %prjd.o0.vp = getelementptr inbounds double, ptr %out.v0, i64 %prjd.n
  store double %ar75, ptr %prjd.o0.vp
  %prjd.o0.mp = getelementptr inbounds i8, ptr %out.m0, i64 %prjd.n
  %prjd.o0.m = zext i1 %vd74 to i8
  store i8 %prjd.o0.m, ptr %prjd.o0.mp
  %prjd.o1.vp = getelementptr inbounds i64, ptr %out.v1, i64 %prjd.n
  store i64 %md87, ptr %prjd.o1.vp
  %prjd.o1.mp = getelementptr inbounds i8, ptr %out.m1, i64 %prjd.n
  %prjd.o1.m = zext i1 %vd88 to i8
  store i8 %prjd.o1.m, ptr %prjd.o1.mp
  %prjd.inc = zext i1 %d.keep to i64
  %prjd.n1 = add i64 %prjd.n, %prjd.inc
  store i64 %prjd.n1, ptr %nout.a
  br label %dense.latch

dense.latch:
  %d.next = add nuw nsw i64 %d, 1
  %d.more = icmp slt i64 %d.next, %c.end
  br i1 %d.more, label %dense, label %chunk_done

; a sparse chunk: the set bits only, lowest first

loop:
  %mw = load i64, ptr %mask.a
  %mw.tz = call i64 @llvm.cttz.i64(i64 %mw, i1 true)
  %r = add nuw nsw i64 %c, %mw.tz
  %mw.less = add i64 %mw, -1
  %mw.rest = and i64 %mw, %mw.less
  store i64 %mw.rest, ptr %mask.a
  %ci31 = add i64 %r, %c0.off
  %vi32 = and i64 %ci31, %c0.vmask
  %valid33 = call i1 @gz_bit(ptr %c0.valid, i64 %vi32)
  %ci34 = add i64 %r, %c0.off
  %p35 = getelementptr inbounds double, ptr %c0.vals, i64 %ci34
  %f36 = load double, ptr %p35
  %ci37 = add i64 %r, %c1.off
  %vi38 = and i64 %ci37, %c1.vmask
  %valid39 = call i1 @gz_bit(ptr %c1.valid, i64 %vi38)
  %ci40 = add i64 %r, %c1.off
  %p41 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci40
  %v42 = load i32, ptr %p41
  %v43 = sext i32 %v42 to i64
  %cv44 = sitofp i64 %v43 to double
  %vd45 = and i1 %valid33, %valid39
  %ar46 = fmul double %f36, %cv44
  %md48 = icmp ne i64 4, 0
  %md49 = icmp eq i64 4, -1
  %md50 = select i1 %md48, i64 4, i64 1
  %md51 = select i1 %md49, i64 1, i64 %md50
  %md52 = srem i64 %v43, %md51
  %md53 = icmp ne i64 %md52, 0
  %md54 = xor i64 %md52, 4
  %md55 = icmp slt i64 %md54, 0
  %md56 = and i1 %md53, %md55
  %md57 = add i64 %md52, 4
  %md58 = select i1 %md56, i64 %md57, i64 %md52
  %vd59 = and i1 %valid39, %md48
  ; -- emit row: selection vector + 2 computed column(s)
  %prj.n = load i64, ptr %nout.a
  %prj.selp = getelementptr inbounds i64, ptr %out.sel, i64 %prj.n
  store i64 %r, ptr %prj.selp
  %prj.o0.vp = getelementptr inbounds double, ptr %out.v0, i64 %prj.n
  store double %ar46, ptr %prj.o0.vp
  %prj.o0.mp = getelementptr inbounds i8, ptr %out.m0, i64 %prj.n
  %prj.o0.m = zext i1 %vd45 to i8
  store i8 %prj.o0.m, ptr %prj.o0.mp
  %prj.o1.vp = getelementptr inbounds i64, ptr %out.v1, i64 %prj.n
  store i64 %md58, ptr %prj.o1.vp
  %prj.o1.mp = getelementptr inbounds i8, ptr %out.m1, i64 %prj.n
  %prj.o1.m = zext i1 %vd59 to i8
  store i8 %prj.o1.m, ptr %prj.o1.mp
  %prj.n1 = add i64 %prj.n, 1
  store i64 %prj.n1, ptr %nout.a
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
  %mw.left = load i64, ptr %mask.a
  %mw.more = icmp ne i64 %mw.left, 0
  br i1 %mw.more, label %loop, label %chunk_done

chunk_done:
  %c.next = add nuw nsw i64 %c, 64
  %chunks.more = icmp slt i64 %c.next, %rows
  br i1 %chunks.more, label %chunk, label %exit

exit:
  %nout.final = load i64, ptr %nout.a
  %filtered.final = sub i64 %rows, %nout.final
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

err24:
  %err24.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -2, ptr %err24.code.p
  %err24.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err24.row.p
  ret i64 -2
}

declare i64 @llvm.cttz.i64(i64, i1)
declare i64 @llvm.ctpop.i64(i64)
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

; ==== unit process_nonnull (O3)
; grizzly-py codegen v19, variant generic
; ---- pipeline 0: project pipeline over (event_time: int64, event_type: string, campaign_id: int64, price: float64, qty: int32, name: string)

@p0_generic.process_nonnull.str0 = private unnamed_addr constant [1 x i8] c"y"
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
  %mask.a = alloca i64, align 8
  %c0.vals.p = getelementptr inbounds i64, ptr %columns, i64 0
  %c0.vals = load ptr, ptr %c0.vals.p
  %c0.off.p = getelementptr inbounds i64, ptr %columns, i64 2
  %c0.off = load i64, ptr %c0.off.p
  %c2.vals.p = getelementptr inbounds i64, ptr %columns, i64 12
  %c2.vals = load ptr, ptr %c2.vals.p
  %c2.off.p = getelementptr inbounds i64, ptr %columns, i64 14
  %c2.off = load i64, ptr %c2.off.p
  %c2.data.p = getelementptr inbounds i64, ptr %columns, i64 15
  %c2.data = load ptr, ptr %c2.data.p
  %c2.dlen.p = getelementptr inbounds i64, ptr %columns, i64 16
  %c2.dlen = load i64, ptr %c2.dlen.p
  %c1.vals.p = getelementptr inbounds i64, ptr %columns, i64 6
  %c1.vals = load ptr, ptr %c1.vals.p
  %c1.off.p = getelementptr inbounds i64, ptr %columns, i64 8
  %c1.off = load i64, ptr %c1.off.p
  %out.sel.p = getelementptr inbounds ptr, ptr %out, i64 0
  %out.sel = load ptr, ptr %out.sel.p
  %out.v0.p = getelementptr inbounds ptr, ptr %out, i64 1
  %out.v0 = load ptr, ptr %out.v0.p
  %out.m0.p = getelementptr inbounds ptr, ptr %out, i64 2
  %out.m0 = load ptr, ptr %out.m0.p
  %out.v1.p = getelementptr inbounds ptr, ptr %out, i64 3
  %out.v1 = load ptr, ptr %out.v1.p
  %out.m1.p = getelementptr inbounds ptr, ptr %out, i64 4
  %out.m1 = load ptr, ptr %out.m1.p
  %nonempty = icmp sgt i64 %rows, 0
  br i1 %nonempty, label %chunk, label %exit

; masked loop (projections with predicated filters): per chunk of 64 rows, a branch-free pass
; (vectorizable) folds the filters' verdicts into a 64-bit mask; a chunk that keeps nothing costs
; the predicate alone, a sparse one runs the body for its set bits only (%r), a dense one runs
; dense_body for every row (%d) with the row's bit as the keep flag.
chunk:
  %c = phi i64 [ 0, %entry ], [ %c.next, %chunk_done ]
  %c.lim = add nuw nsw i64 %c, 64
  %c.short = icmp slt i64 %rows, %c.lim
  %c.end = select i1 %c.short, i64 %rows, i64 %c.lim
  store i64 0, ptr %mask.a
  br label %scan

scan:
  %i = phi i64 [ %c, %chunk ], [ %i.next, %scan.latch ]
  %ci1 = add i64 %i, %c0.off
  %p2 = getelementptr inbounds double, ptr %c0.vals, i64 %ci1
  %f3 = load double, ptr %p2
  %cmp4 = fcmp ogt double %f3, 0x3FF0000000000000
  ; -- filter (col('price') > lit(1.0))
  %filter0 = and i1 true, %cmp4
  %ci5 = add i64 %i, %c2.off
  %p6 = getelementptr inbounds i32, ptr %c2.vals, i64 %ci5
  %v7 = load i32, ptr %p6
  %v8 = sext i32 %v7 to i64
  %ci9 = add i64 %ci5, 1
  %p10 = getelementptr inbounds i32, ptr %c2.vals, i64 %ci9
  %v11 = load i32, ptr %p10
  %v12 = sext i32 %v11 to i64
  %sb13 = icmp slt i64 %v8, 0
  %sb14 = icmp sgt i64 %v8, %v12
  %sb15 = icmp sgt i64 %v12, %c2.dlen
  %sb16 = or i1 %sb13, %sb14
  %sb17 = or i1 %sb16, %sb15
  br i1 %sb17, label %err18, label %ok19, !prof !0
ok19:
  %s20 = getelementptr inbounds i8, ptr %c2.data, i64 %v8
  %slen21 = sub i64 %v12, %v8
  %streq22 = call i1 @gz_str_eq(ptr %s20, i64 %slen21, ptr @p0_generic.process_nonnull.str0, i64 1)
  %ne23 = xor i1 %streq22, true
  ; -- filter (col('name') != lit('y'))
  %filter1 = and i1 true, %ne23
  %keep24 = and i1 %filter0, %filter1
  br label %scan.latch

scan.latch:
  %m.v = load i64, ptr %mask.a
  %m.bit = zext i1 %keep24 to i64
  %m.shift = sub nuw nsw i64 %i, %c
  %m.at = shl i64 %m.bit, %m.shift
  %m.or = or i64 %m.v, %m.at
  store i64 %m.or, ptr %mask.a
  %i.next = add nuw nsw i64 %i, 1
  %scan.more = icmp slt i64 %i.next, %c.end
  br i1 %scan.more, label %scan, label %walk

walk:
  %mw.all = load i64, ptr %mask.a
  %mw.any = icmp ne i64 %mw.all, 0
  br i1 %mw.any, label %walk.pick, label %chunk_done

walk.pick:
  %mw.pop = call i64 @llvm.ctpop.i64(i64 %mw.all)
  %mw.dense = icmp ugt i64 %mw.pop, 16
  br i1 %mw.dense, label %dense, label %loop

; a dense chunk: every row, written at the cursor, which advances by the row's bit
dense:
  %d = phi i64 [ %c, %walk.pick ], [ %d.next, %dense.latch ]
  %d.shift = sub nuw nsw i64 %d, %c
  %d.bits = lshr i64 %mw.all, %d.shift
  %d.keep = trunc i64 %d.bits to i1
  %ci46 = add i64 %d, %c0.off
  %p47 = getelementptr inbounds double, ptr %c0.vals, i64 %ci46
  %f48 = load double, ptr %p47
  %ci49 = add i64 %d, %c1.off
  %p50 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci49
  %v51 = load i32, ptr %p50
  %v52 = sext i32 %v51 to i64
  %cv53 = sitofp i64 %v52 to double
  %ar54 = fmul double %f48, %cv53
  %md56 = icmp ne i64 4, 0
  %md57 = icmp eq i64 4, -1
  %md58 = select i1 %md56, i64 4, i64 1
  %md59 = select i1 %md57, i64 1, i64 %md58
  %md60 = srem i64 %v52, %md59
  %md61 = icmp ne i64 %md60, 0
  %md62 = xor i64 %md60, 4
  %md63 = icmp slt i64 %md62, 0
  %md64 = and i1 %md61, %md63
  %md65 = add i64 %md60, 4
  %md66 = select i1 %md64, i64 %md65, i64 %md60
  ; -- emit row: selection vector + 2 computed column(s)
  %prjd.n = load i64, ptr %nout.a
  %prjd.selp = getelementptr inbounds i64, ptr %out.sel, i64 %prjd.n
  store i64 %d, ptr %prjd.selp
  %prjd.o0.vp = getelementptr inbounds double, ptr %out.v0, i64 %prjd.n
  store double %ar54, ptr %prjd.o0.vp
  %prjd.o0.mp = getelementptr inbounds i8, ptr %out.m0, i64 %prjd.n
  %prjd.o0.m = zext i1 true to i8
  store i8 %prjd.o0.m, ptr %prjd.o0.mp
  %prjd.o1.vp = getelementptr inbounds i64, ptr %out.v1, i64 %prjd.n
  store i64 %md66, ptr %prjd.o1.vp
  %prjd.o1.mp = getelementptr inbounds i8, ptr %out.m1, i64 %prjd.n
  %prjd.o1.m = zext i1 %md56 to i8
  store i8 %prjd.o1.m, ptr %prjd.o1.mp
  %prjd.inc = zext i1 %d.keep to i64
  %prjd.n1 = add i64 %prjd.n, %prjd.inc
  store i64 %prjd.n1, ptr %nout.a
  br label %dense.latch

dense.latch:
  %d.next = add nuw nsw i64 %d, 1
  %d.more = icmp slt i64 %d.next, %c.end
  br i1 %d.more, label %dense, label %chunk_done

; a sparse chunk: the set bits only, lowest first

loop:
  %mw = load i64, ptr %mask.a
  %mw.tz = call i64 @llvm.cttz.i64(i64 %mw, i1 true)
  %r = add nuw nsw i64 %c, %mw.tz
  %mw.less = add i64 %mw, -1
  %mw.rest = and i64 %mw, %mw.less
  store i64 %mw.rest, ptr %mask.a
  %ci25 = add i64 %r, %c0.off
  %p26 = getelementptr inbounds double, ptr %c0.vals, i64 %ci25
  %f27 = load double, ptr %p26
  %ci28 = add i64 %r, %c1.off
  %p29 = getelementptr inbounds i32, ptr %c1.vals, i64 %ci28
  %v30 = load i32, ptr %p29
  %v31 = sext i32 %v30 to i64
  %cv32 = sitofp i64 %v31 to double
  %ar33 = fmul double %f27, %cv32
  %md35 = icmp ne i64 4, 0
  %md36 = icmp eq i64 4, -1
  %md37 = select i1 %md35, i64 4, i64 1
  %md38 = select i1 %md36, i64 1, i64 %md37
  %md39 = srem i64 %v31, %md38
  %md40 = icmp ne i64 %md39, 0
  %md41 = xor i64 %md39, 4
  %md42 = icmp slt i64 %md41, 0
  %md43 = and i1 %md40, %md42
  %md44 = add i64 %md39, 4
  %md45 = select i1 %md43, i64 %md44, i64 %md39
  ; -- emit row: selection vector + 2 computed column(s)
  %prj.n = load i64, ptr %nout.a
  %prj.selp = getelementptr inbounds i64, ptr %out.sel, i64 %prj.n
  store i64 %r, ptr %prj.selp
  %prj.o0.vp = getelementptr inbounds double, ptr %out.v0, i64 %prj.n
  store double %ar33, ptr %prj.o0.vp
  %prj.o0.mp = getelementptr inbounds i8, ptr %out.m0, i64 %prj.n
  %prj.o0.m = zext i1 true to i8
  store i8 %prj.o0.m, ptr %prj.o0.mp
  %prj.o1.vp = getelementptr inbounds i64, ptr %out.v1, i64 %prj.n
  store i64 %md45, ptr %prj.o1.vp
  %prj.o1.mp = getelementptr inbounds i8, ptr %out.m1, i64 %prj.n
  %prj.o1.m = zext i1 %md35 to i8
  store i8 %prj.o1.m, ptr %prj.o1.mp
  %prj.n1 = add i64 %prj.n, 1
  store i64 %prj.n1, ptr %nout.a
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
  %mw.left = load i64, ptr %mask.a
  %mw.more = icmp ne i64 %mw.left, 0
  br i1 %mw.more, label %loop, label %chunk_done

chunk_done:
  %c.next = add nuw nsw i64 %c, 64
  %chunks.more = icmp slt i64 %c.next, %rows
  br i1 %chunks.more, label %chunk, label %exit

exit:
  %nout.final = load i64, ptr %nout.a
  %filtered.final = sub i64 %rows, %nout.final
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

err18:
  %err18.code.p = getelementptr inbounds i64, ptr %state, i64 4
  store i64 -2, ptr %err18.code.p
  %err18.row.p = getelementptr inbounds i64, ptr %state, i64 5
  store i64 %i, ptr %err18.row.p
  ret i64 -2
}

declare i64 @llvm.cttz.i64(i64, i1)
declare i64 @llvm.ctpop.i64(i64)
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
