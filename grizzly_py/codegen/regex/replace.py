"""IR of ``str.replace`` / ``str.replace_all`` with a regular expression: ``@P_replace`` writes a
string with its first (or every) match, as ``re.sub`` finds them, replaced by literal text.

``ptr @P_replace(ptr %arena, ptr %s, i64 %n, ptr %v, i64 %vl, i1 %all, ptr %len)``: the result's
bytes (its length stored at ``%len``): ``%s`` itself where nothing matches, else a copy in the
kernel's arena (``runtime/strfuncs.ll``), sized for the matches ``@P_count`` counts (and no more
are replaced than it counted, so the copy stays inside it whatever ``@P_find`` says); null where
the arena has no room. It needs the pattern's ``search`` and ``find`` parts with the same
prefix (``emit.py``) and the runtime's ``@gz_arena_alloc``.
"""

from __future__ import annotations


def replace_module(prefix: str) -> str:
    P = prefix
    return f"""define internal ptr @{P}_replace(ptr %arena, ptr %s, i64 %n, ptr %v, i64 %vl, i1 %all, ptr %len) {{
entry:
  %first = call {{i64, i64}} @{P}_find(ptr %s, i64 %n, i64 0, i1 false)
  %fs = extractvalue {{i64, i64}} %first, 0
  %fe = extractvalue {{i64, i64}} %first, 1
  %none = icmp slt i64 %fs, 0
  br i1 %none, label %unchanged, label %size
unchanged:
  store i64 %n, ptr %len
  ret ptr %s
size:
  br i1 %all, label %count, label %sized
count:
  %every = call i64 @{P}_count(ptr %s, i64 %n)
  br label %sized
sized:
  %matches = phi i64 [1, %size], [%every, %count]
  %grow = mul i64 %matches, %vl
  %most = add i64 %n, %grow
  %most1 = call i64 @llvm.umax.i64(i64 %most, i64 1)
  %dst = call ptr @gz_arena_alloc(ptr %arena, i64 %most1)
  %oom = icmp eq ptr %dst, null
  br i1 %oom, label %fail, label %loop
fail:
  ret ptr null
loop:
  ; copy the text before the match at [%ms, %me), then the value; %src: the next byte to copy
  %src = phi i64 [0, %sized], [%me, %next]
  %out = phi i64 [0, %sized], [%out2, %next]
  %left = phi i64 [%matches, %sized], [%left1, %next]
  %ms = phi i64 [%fs, %sized], [%ns, %next]
  %me = phi i64 [%fe, %sized], [%ne, %next]
  %before = sub i64 %ms, %src
  %d1 = getelementptr inbounds i8, ptr %dst, i64 %out
  %s1 = getelementptr inbounds i8, ptr %s, i64 %src
  call void @llvm.memcpy.p0.p0.i64(ptr %d1, ptr %s1, i64 %before, i1 false)
  %out1 = add i64 %out, %before
  %d2 = getelementptr inbounds i8, ptr %dst, i64 %out1
  call void @llvm.memcpy.p0.p0.i64(ptr %d2, ptr %v, i64 %vl, i1 false)
  %out2 = add i64 %out1, %vl
  %left1 = sub i64 %left, 1
  %more = icmp sgt i64 %left1, 0
  br i1 %more, label %again, label %tail
again:
  %empty = icmp eq i64 %ms, %me
  %nm = call {{i64, i64}} @{P}_find(ptr %s, i64 %n, i64 %me, i1 %empty)
  %ns = extractvalue {{i64, i64}} %nm, 0
  %ne = extractvalue {{i64, i64}} %nm, 1
  %found = icmp sge i64 %ns, 0
  br i1 %found, label %next, label %tail
next:
  br label %loop
tail:
  %rest = sub i64 %n, %me
  %d3 = getelementptr inbounds i8, ptr %dst, i64 %out2
  %s3 = getelementptr inbounds i8, ptr %s, i64 %me
  call void @llvm.memcpy.p0.p0.i64(ptr %d3, ptr %s3, i64 %rest, i1 false)
  %total = add i64 %out2, %rest
  store i64 %total, ptr %len
  ret ptr %dst
}}
"""
