; grizzly-py runtime: one native call runs a task's parts (Grizzly section 5: a task is a run
; of morsels; the per-call cost of Python and ctypes is paid once per task, not once per part).
;
; Linked into every compiled module. %parts holds 3 words per part: the column descriptors'
; address, the rows, the parameters' address (the watermark in force for that part). %fn is a
; fused kernel, (state, columns, rows, params, out) -> i64, with no output rows (a window's).

declare i64 @llvm.ssub.sat.i64(i64, i64)
declare i64 @llvm.smax.i64(i64, i64)

; Run the parts in order. Stops at the first part whose kernel returns non-zero (an error, or a
; stop that the caller finishes): stores its index in %done and returns the kernel's code; else
; stores %n and returns 0.
; %delay >= 0 chains the watermark through the parts (each part whole source batches in stream
; order, the state's largest event time first raised to that of the rows before the task:
; local.QueryRun._flush_group): a part's watermark becomes at least the one before it and the
; largest event time in the state minus %delay (the source's out-of-orderness + 1), as the
; driver's clock would have moved it after the batch before (local.SourceClock); %delay < 0:
; as given.
define linkonce_odr i64 @gz_run_parts(ptr %fn, ptr %state, ptr %parts, i64 %n, ptr %done, i64 %delay) {
entry:
  %chain = icmp sge i64 %delay, 0
  %maxts.p = getelementptr inbounds i64, ptr %state, i64 3  ; abi.STATE_MAX_EVENT_TIME
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %ok ]
  %wm.before = phi i64 [ -9223372036854775808, %entry ], [ %wm, %ok ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %finished
body:
  %base = mul i64 %i, 3
  %columns.p = getelementptr inbounds i64, ptr %parts, i64 %base
  %columns.i = load i64, ptr %columns.p
  %columns = inttoptr i64 %columns.i to ptr
  %rows.p = getelementptr inbounds i64, ptr %columns.p, i64 1
  %rows = load i64, ptr %rows.p
  %params.p = getelementptr inbounds i64, ptr %columns.p, i64 2
  %params.i = load i64, ptr %params.p
  %params = inttoptr i64 %params.i to ptr
  %wm.given = load i64, ptr %params
  br i1 %chain, label %chained, label %call
chained:
  %maxts = load i64, ptr %maxts.p
  %seen = icmp ne i64 %maxts, -9223372036854775808
  %candidate = call i64 @llvm.ssub.sat.i64(i64 %maxts, i64 %delay)
  %from.state = select i1 %seen, i64 %candidate, i64 -9223372036854775808
  %wm.a = call i64 @llvm.smax.i64(i64 %wm.given, i64 %wm.before)
  %wm.chained = call i64 @llvm.smax.i64(i64 %wm.a, i64 %from.state)
  store i64 %wm.chained, ptr %params
  br label %call
call:
  %wm = phi i64 [ %wm.given, %body ], [ %wm.chained, %chained ]
  %rc = call i64 %fn(ptr %state, ptr %columns, i64 %rows, ptr %params, ptr null)
  %failed = icmp ne i64 %rc, 0
  br i1 %failed, label %stop, label %ok
ok:
  %next = add i64 %i, 1
  br label %loop
stop:
  store i64 %i, ptr %done
  ret i64 %rc
finished:
  store i64 %n, ptr %done
  ret i64 0
}
