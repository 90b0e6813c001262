; grizzly-py runtime: the string and date functions of generated code (grizzly_py/functions/,
; codegen/functions.py). Strings are UTF-8 byte strings given as (pointer, byte length).
;
; New text (a case mapping, a replacement, a concatenation, a formatted time) goes to a per-call
; arena: a kernel that needs one allocas its words (%gz.arena), initializes it on entry and frees
; it on every exit. Its chunks never move, so text written there stays valid until the call
; returns. Output string columns are written with gz_strbuf_put into a growable buffer
; {data, length, capacity} that the engine owns and frees.
;
; Linked into every compiled module.

%gz.arena = type { ptr, i64, i64 }   ; current chunk (its first word links the older chunk), used, capacity

define linkonce_odr void @gz_arena_init(ptr %a) alwaysinline {
entry:
  store ptr null, ptr %a
  %used.p = getelementptr inbounds %gz.arena, ptr %a, i32 0, i32 1
  store i64 0, ptr %used.p
  %cap.p = getelementptr inbounds %gz.arena, ptr %a, i32 0, i32 2
  store i64 0, ptr %cap.p
  ret void
}

; %n bytes from the arena; null when out of memory.
define linkonce_odr ptr @gz_arena_alloc(ptr %a, i64 %n) {
entry:
  %data = load ptr, ptr %a
  %used.p = getelementptr inbounds %gz.arena, ptr %a, i32 0, i32 1
  %used = load i64, ptr %used.p
  %cap.p = getelementptr inbounds %gz.arena, ptr %a, i32 0, i32 2
  %cap = load i64, ptr %cap.p
  %end = add i64 %used, %n
  %fits = icmp ule i64 %end, %cap
  br i1 %fits, label %take, label %grow
take:
  %p = getelementptr inbounds i8, ptr %data, i64 %used
  store i64 %end, ptr %used.p
  ret ptr %p
grow:
  %twice = shl i64 %cap, 1
  %need = add i64 %n, 8
  %c1 = call i64 @llvm.umax.i64(i64 %twice, i64 %need)
  %newcap = call i64 @llvm.umax.i64(i64 %c1, i64 65536)
  %chunk = call ptr @realloc(ptr null, i64 %newcap)
  %oom = icmp eq ptr %chunk, null
  br i1 %oom, label %fail, label %linked
fail:
  ret ptr null
linked:
  store ptr %data, ptr %chunk
  store ptr %chunk, ptr %a
  store i64 %newcap, ptr %cap.p
  %used.new = add i64 8, %n
  store i64 %used.new, ptr %used.p
  %p2 = getelementptr inbounds i8, ptr %chunk, i64 8
  ret ptr %p2
}

define linkonce_odr void @gz_arena_free(ptr %a) {
entry:
  %first = load ptr, ptr %a
  br label %loop
loop:
  %c = phi ptr [ %first, %entry ], [ %next, %free ]
  %end = icmp eq ptr %c, null
  br i1 %end, label %done, label %free
free:
  %next = load ptr, ptr %c
  call void @free(ptr %c)
  br label %loop
done:
  store ptr null, ptr %a
  ret void
}

; Write (%s, %n) at byte %at of the growable buffer %b {data, length, capacity}; the end offset,
; or -1 when out of memory.
define linkonce_odr i64 @gz_strbuf_put(ptr %b, i64 %at, ptr %s, i64 %n) {
entry:
  %end = add i64 %at, %n
  %cap.p = getelementptr inbounds i64, ptr %b, i64 2
  %cap = load i64, ptr %cap.p
  %fits = icmp ule i64 %end, %cap
  br i1 %fits, label %copy, label %grow
grow:
  %twice = shl i64 %cap, 1
  %c1 = call i64 @llvm.umax.i64(i64 %twice, i64 %end)
  %newcap = call i64 @llvm.umax.i64(i64 %c1, i64 4096)
  %old = load ptr, ptr %b
  %new = call ptr @realloc(ptr %old, i64 %newcap)
  %oom = icmp eq ptr %new, null
  br i1 %oom, label %fail, label %grown
fail:
  ret i64 -1
grown:
  store ptr %new, ptr %b
  store i64 %newcap, ptr %cap.p
  br label %copy
copy:
  %data = load ptr, ptr %b
  %dst = getelementptr inbounds i8, ptr %data, i64 %at
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %s, i64 %n, i1 false)
  %len.p = getelementptr inbounds i64, ptr %b, i64 1
  store i64 %end, ptr %len.p
  ret i64 %end
}

; --- search ----------------------------------------------------------------------------------

; The first byte offset >= %from at which (%nd, %m) occurs in (%h, %n), or -1 (an empty needle
; occurs at %from, when %from <= %n).
;
; Candidates are found 32 positions at a time: those whose byte equals the needle's first byte
; and whose byte %m - 1 further equals its last byte (two vector compares), and only they are
; compared in full. The positions after the last whole vector are the last 32 positions, those
; before %i masked off; a haystack with fewer than 32 positions is scanned byte by byte.
define linkonce_odr i64 @gz_str_find(ptr %h, i64 %n, ptr %nd, i64 %m, i64 %from) {
entry:
  %empty = icmp eq i64 %m, 0
  br i1 %empty, label %empty.needle, label %scan
empty.needle:
  %in = icmp sle i64 %from, %n
  %r0 = select i1 %in, i64 %from, i64 -1
  ret i64 %r0
scan:
  %last = sub i64 %n, %m                ; the last position a match can start at
  %ends = add i64 %last, 1              ; positions [%from, %ends)
  %first = load i8, ptr %nd
  %mlast = sub i64 %m, 1
  %ndl = getelementptr inbounds i8, ptr %nd, i64 %mlast
  %final = load i8, ptr %ndl
  %fi = insertelement <32 x i8> poison, i8 %first, i64 0
  %fv = shufflevector <32 x i8> %fi, <32 x i8> poison, <32 x i32> zeroinitializer
  %li = insertelement <32 x i8> poison, i8 %final, i64 0
  %lv = shufflevector <32 x i8> %li, <32 x i8> poison, <32 x i32> zeroinitializer
  br label %vec
vec:
  %i = phi i64 [ %from, %scan ], [ %i.next, %vnone ]
  %iend = add i64 %i, 32
  %room = icmp sle i64 %iend, %ends
  br i1 %room, label %vload, label %rest
vload:
  %ap = getelementptr inbounds i8, ptr %h, i64 %i
  %a = load <32 x i8>, ptr %ap, align 1
  %bp = getelementptr inbounds i8, ptr %ap, i64 %mlast
  %b = load <32 x i8>, ptr %bp, align 1
  %ae = icmp eq <32 x i8> %a, %fv
  %be = icmp eq <32 x i8> %b, %lv
  %both = and <32 x i1> %ae, %be
  %bits32 = bitcast <32 x i1> %both to i32
  %bits = zext i32 %bits32 to i64
  br label %vcand
vcand:
  %vb = phi i64 [ %bits, %vload ], [ %vb.next, %vdiffer ]
  %vany = icmp ne i64 %vb, 0
  br i1 %vany, label %vcheck, label %vnone
vcheck:
  %vtz = call i64 @llvm.cttz.i64(i64 %vb, i1 true)
  %vat = add i64 %i, %vtz
  %vp = getelementptr inbounds i8, ptr %h, i64 %vat
  %vr = call i32 @memcmp(ptr %vp, ptr %nd, i64 %m)
  %veq = icmp eq i32 %vr, 0
  br i1 %veq, label %vfound, label %vdiffer
vfound:
  ret i64 %vat
vdiffer:
  %vb1 = sub i64 %vb, 1
  %vb.next = and i64 %vb, %vb1
  br label %vcand
vnone:
  %i.next = add i64 %i, 32
  br label %vec
rest:
  %left = icmp slt i64 %i, %ends
  %whole = icmp sge i64 %ends, 32
  %tail = and i1 %left, %whole
  br i1 %tail, label %tload, label %bytes
tload:
  %base = sub i64 %ends, 32             ; < %i, as %i + 32 > %ends
  %tp = getelementptr inbounds i8, ptr %h, i64 %base
  %ta = load <32 x i8>, ptr %tp, align 1
  %tq = getelementptr inbounds i8, ptr %tp, i64 %mlast
  %tb = load <32 x i8>, ptr %tq, align 1
  %tae = icmp eq <32 x i8> %ta, %fv
  %tbe = icmp eq <32 x i8> %tb, %lv
  %tboth = and <32 x i1> %tae, %tbe
  %tbits32 = bitcast <32 x i1> %tboth to i32
  %tbits = zext i32 %tbits32 to i64
  %skip = sub i64 %i, %base
  %tafter = lshr i64 %tbits, %skip      ; bit k: position %i + k
  br label %tcand
tcand:
  %tc = phi i64 [ %tafter, %tload ], [ %tc.next, %tdiffer ]
  %tany = icmp ne i64 %tc, 0
  br i1 %tany, label %tcheck, label %none
tcheck:
  %ttz = call i64 @llvm.cttz.i64(i64 %tc, i1 true)
  %tat = add i64 %i, %ttz
  %tpp = getelementptr inbounds i8, ptr %h, i64 %tat
  %tr = call i32 @memcmp(ptr %tpp, ptr %nd, i64 %m)
  %teq = icmp eq i32 %tr, 0
  br i1 %teq, label %tfound, label %tdiffer
tfound:
  ret i64 %tat
tdiffer:
  %tc1 = sub i64 %tc, 1
  %tc.next = and i64 %tc, %tc1
  br label %tcand
bytes:
  %j = phi i64 [ %i, %rest ], [ %j.next, %next ]
  %past = icmp sgt i64 %j, %last
  br i1 %past, label %none, label %check
check:
  %hp = getelementptr inbounds i8, ptr %h, i64 %j
  %c = load i8, ptr %hp
  %same = icmp eq i8 %c, %first
  br i1 %same, label %compare, label %next
compare:
  %r = call i32 @memcmp(ptr %hp, ptr %nd, i64 %m)
  %eq = icmp eq i32 %r, 0
  br i1 %eq, label %found, label %next
next:
  %j.next = add i64 %j, 1
  br label %bytes
found:
  ret i64 %j
none:
  ret i64 -1
}

declare i64 @llvm.cttz.i64(i64, i1)

define linkonce_odr i1 @gz_str_starts(ptr %s, i64 %n, ptr %p, i64 %m) alwaysinline {
entry:
  %fits = icmp uge i64 %n, %m
  br i1 %fits, label %cmp, label %no
cmp:
  %eq = call i1 @gz_str_eq(ptr %s, i64 %m, ptr %p, i64 %m)
  ret i1 %eq
no:
  ret i1 false
}

define linkonce_odr i1 @gz_str_ends(ptr %s, i64 %n, ptr %p, i64 %m) alwaysinline {
entry:
  %fits = icmp uge i64 %n, %m
  br i1 %fits, label %cmp, label %no
cmp:
  %off = sub i64 %n, %m
  %tail = getelementptr inbounds i8, ptr %s, i64 %off
  %eq = call i1 @gz_str_eq(ptr %tail, i64 %m, ptr %p, i64 %m)
  ret i1 %eq
no:
  ret i1 false
}

; Non-overlapping occurrences of (%nd, %m) in (%h, %n) (of a one-byte needle: the bytes equal to
; it, counted 32 at a time); an empty needle occurs before every code
; point and at the end (as Python's str.count).
define linkonce_odr i64 @gz_str_count(ptr %h, i64 %n, ptr %nd, i64 %m) {
entry:
  %empty = icmp eq i64 %m, 0
  br i1 %empty, label %points, label %several
several:
  %single = icmp eq i64 %m, 1
  br i1 %single, label %byte, label %loop
byte:                                   ; one byte (ASCII): the bytes equal to it, 32 at a time
  %want = load i8, ptr %nd
  %wi = insertelement <32 x i8> poison, i8 %want, i64 0
  %wv = shufflevector <32 x i8> %wi, <32 x i8> poison, <32 x i32> zeroinitializer
  br label %bvec
bvec:
  %bi = phi i64 [ 0, %byte ], [ %bi.next, %bbody ]
  %bk = phi i64 [ 0, %byte ], [ %bk.next, %bbody ]
  %biend = add i64 %bi, 32
  %broom = icmp ule i64 %biend, %n
  br i1 %broom, label %bbody, label %btail
bbody:
  %bp = getelementptr inbounds i8, ptr %h, i64 %bi
  %bv = load <32 x i8>, ptr %bp, align 1
  %beq = icmp eq <32 x i8> %bv, %wv
  %bbits32 = bitcast <32 x i1> %beq to i32
  %bbits = zext i32 %bbits32 to i64
  %bpop = call i64 @llvm.ctpop.i64(i64 %bbits)
  %bk.next = add i64 %bk, %bpop
  %bi.next = add i64 %bi, 32
  br label %bvec
btail:
  %ti = phi i64 [ %bi, %bvec ], [ %ti.next, %tstep ]
  %tk = phi i64 [ %bk, %bvec ], [ %tk.next, %tstep ]
  %tmore = icmp ult i64 %ti, %n
  br i1 %tmore, label %tstep, label %tdone
tstep:
  %tp = getelementptr inbounds i8, ptr %h, i64 %ti
  %tv = load i8, ptr %tp
  %teq = icmp eq i8 %tv, %want
  %tinc = zext i1 %teq to i64
  %tk.next = add i64 %tk, %tinc
  %ti.next = add i64 %ti, 1
  br label %btail
tdone:
  ret i64 %tk
points:
  %cp = call i64 @gz_utf8_count(ptr %h, i64 %n)
  %cp1 = add i64 %cp, 1
  ret i64 %cp1
loop:
  %pos = phi i64 [ 0, %several ], [ %pos.next, %hit ]
  %k = phi i64 [ 0, %several ], [ %k.next, %hit ]
  %f = call i64 @gz_str_find(ptr %h, i64 %n, ptr %nd, i64 %m, i64 %pos)
  %miss = icmp slt i64 %f, 0
  br i1 %miss, label %done, label %hit
hit:
  %k.next = add i64 %k, 1
  %pos.next = add i64 %f, %m
  br label %loop
done:
  ret i64 %k
}

; Piece %k (0-based) of (%s, %n) split at (%sep, %m): its end offset, its start in *%start;
; -1 when there is no such piece.
define linkonce_odr i64 @gz_str_split_part(ptr %s, i64 %n, ptr %sep, i64 %m, i64 %k, ptr %start) {
entry:
  br label %skip
skip:
  %pos = phi i64 [ 0, %entry ], [ %pos.next, %more ]
  %left = phi i64 [ %k, %entry ], [ %left.next, %more ]
  %here = icmp eq i64 %left, 0
  br i1 %here, label %piece, label %find
find:
  %f = call i64 @gz_str_find(ptr %s, i64 %n, ptr %sep, i64 %m, i64 %pos)
  %absent = icmp slt i64 %f, 0
  br i1 %absent, label %none, label %more
more:
  %pos.next = add i64 %f, %m
  %left.next = sub i64 %left, 1
  br label %skip
piece:
  store i64 %pos, ptr %start
  %e = call i64 @gz_str_find(ptr %s, i64 %n, ptr %sep, i64 %m, i64 %pos)
  %last = icmp slt i64 %e, 0
  %end = select i1 %last, i64 %n, i64 %e
  ret i64 %end
none:
  ret i64 -1
}

; --- UTF-8 -----------------------------------------------------------------------------------

; Code points of (%s, %n): its bytes that are not continuation bytes (10xxxxxx).
define linkonce_odr i64 @gz_utf8_count(ptr %s, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %body ]
  %c = phi i64 [ 0, %entry ], [ %c.next, %body ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %p = getelementptr inbounds i8, ptr %s, i64 %i
  %b = load i8, ptr %p
  %top = and i8 %b, -64
  %cont = icmp eq i8 %top, -128
  %lead = xor i1 %cont, true
  %inc = zext i1 %lead to i64
  %c.next = add i64 %c, %inc
  %i.next = add i64 %i, 1
  br label %loop
done:
  ret i64 %c
}

; The byte offset at which code point %k (0-based) of (%s, %n) starts; %n when %k is past its last.
define linkonce_odr i64 @gz_utf8_offset(ptr %s, i64 %n, i64 %k) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %step ]
  %seen = phi i64 [ 0, %entry ], [ %seen.next, %step ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %p = getelementptr inbounds i8, ptr %s, i64 %i
  %b = load i8, ptr %p
  %top = and i8 %b, -64
  %cont = icmp eq i8 %top, -128
  br i1 %cont, label %step.cont, label %lead
lead:
  %at = icmp eq i64 %seen, %k
  br i1 %at, label %found, label %step.lead
step.lead:
  br label %step
step.cont:
  br label %step
step:
  %inc = phi i64 [ 1, %step.lead ], [ 0, %step.cont ]
  %seen.next = add i64 %seen, %inc
  %i.next = add i64 %i, 1
  br label %loop
found:
  ret i64 %i
done:
  ret i64 %n
}

; (%s, %n) in upper (%upper) or lower case into %dst (%n bytes: the mapping keeps byte lengths):
; ASCII letters, and the Latin-1 letters U+00C0-U+00DE <-> U+00E0-U+00FE (but U+00D7, U+00F7),
; whose second UTF-8 byte (after 0xC3) differs by 0x20.
define linkonce_odr void @gz_str_case(ptr %dst, ptr %s, i64 %n, i1 %upper) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %store ]
  %prev = phi i8 [ 0, %entry ], [ %b, %store ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %p = getelementptr inbounds i8, ptr %s, i64 %i
  %b = load i8, ptr %p
  %latin = icmp eq i8 %prev, -61                 ; 0xC3: %b is the second byte of U+00C0-U+00FF
  ; ASCII: upper maps a-z (0x61-0x7A) down by 0x20, lower A-Z (0x41-0x5A) up
  %lo.a = select i1 %upper, i8 97, i8 65
  %off.a = sub i8 %b, %lo.a
  %ascii = icmp ult i8 %off.a, 26
  ; Latin-1: upper maps 0xA0-0xBE (but 0xB7) down by 0x20, lower 0x80-0x9E (but 0x97) up
  %lo.l = select i1 %upper, i8 -96, i8 -128
  %off.l = sub i8 %b, %lo.l
  %in.l = icmp ult i8 %off.l, 31
  %sign = select i1 %upper, i8 -73, i8 -105        ; 0xB7 / 0x97 (the division / multiplication sign)
  %not.sign = icmp ne i8 %b, %sign
  %l1 = and i1 %latin, %in.l
  %l2 = and i1 %l1, %not.sign
  %change = or i1 %ascii, %l2
  %delta = select i1 %upper, i8 -32, i8 32
  %moved = add i8 %b, %delta
  %out = select i1 %change, i8 %moved, i8 %b
  br label %store
store:
  %d = getelementptr inbounds i8, ptr %dst, i64 %i
  store i8 %out, ptr %d
  %i.next = add i64 %i, 1
  br label %loop
done:
  ret void
}

; (%s, %n) with its first (%all false) or every occurrence of (%p, %m) replaced by (%v, %vl),
; into the arena: the result's pointer (its length in *%len), null when out of memory. An empty
; pattern occurs before every code point and at the end (as Python's str.replace).
define linkonce_odr ptr @gz_str_replace(ptr %arena, ptr %s, i64 %n, ptr %p, i64 %m, ptr %v, i64 %vl, i1 %all,
                                        ptr %len) {
entry:
  %count.all = call i64 @gz_str_count(ptr %s, i64 %n, ptr %p, i64 %m)
  %some = icmp sgt i64 %count.all, 0
  %one = zext i1 %some to i64
  %count = select i1 %all, i64 %count.all, i64 %one
  %grow = sub i64 %vl, %m
  %extra = mul i64 %count, %grow
  %size = add i64 %n, %extra
  %size1 = call i64 @llvm.umax.i64(i64 %size, i64 1)
  %dst = call ptr @gz_arena_alloc(ptr %arena, i64 %size1)
  %oom = icmp eq ptr %dst, null
  br i1 %oom, label %fail, label %start
fail:
  ret ptr null
start:
  store i64 %size, ptr %len
  br label %loop
loop:
  ; %src: next source byte to copy, %out: next destination byte, %left: replacements to make
  %src = phi i64 [ 0, %start ], [ %src.next, %copied ]
  %out = phi i64 [ 0, %start ], [ %out.next, %copied ]
  %left = phi i64 [ %count, %start ], [ %left.next, %copied ]
  %any = icmp sgt i64 %left, 0
  br i1 %any, label %find, label %tail
find:
  %empty = icmp eq i64 %m, 0
  br i1 %empty, label %at.empty, label %at.find
at.empty:
  ; before the code point at %src (or at the end): a replacement, then that code point
  %next.cp = call i64 @gz_utf8_offset.from(ptr %s, i64 %n, i64 %src)
  br label %hit
at.find:
  %f = call i64 @gz_str_find(ptr %s, i64 %n, ptr %p, i64 %m, i64 %src)
  br label %hit
hit:
  %match = phi i64 [ %src, %at.empty ], [ %f, %at.find ]
  %after = phi i64 [ %next.cp, %at.empty ], [ %f, %at.find ]   ; copy source up to here after the value
  ; the source before the match, then the value
  %before = sub i64 %match, %src
  %d1 = getelementptr inbounds i8, ptr %dst, i64 %out
  %s1 = getelementptr inbounds i8, ptr %s, i64 %src
  call void @llvm.memcpy.p0.p0.i64(ptr %d1, ptr %s1, i64 %before, i1 false)
  %out1 = add i64 %out, %before
  %d2 = getelementptr inbounds i8, ptr %dst, i64 %out1
  call void @llvm.memcpy.p0.p0.i64(ptr %d2, ptr %v, i64 %vl, i1 false)
  %out2 = add i64 %out1, %vl
  ; past the match (an empty match: the code point after it is copied as it is)
  %skip = add i64 %match, %m
  %kept = sub i64 %after, %skip
  %kept.pos = call i64 @llvm.smax.i64(i64 %kept, i64 0)
  %d3 = getelementptr inbounds i8, ptr %dst, i64 %out2
  %s3 = getelementptr inbounds i8, ptr %s, i64 %skip
  call void @llvm.memcpy.p0.p0.i64(ptr %d3, ptr %s3, i64 %kept.pos, i1 false)
  %out.next = add i64 %out2, %kept.pos
  %src.next = add i64 %skip, %kept.pos
  br label %copied
copied:
  %left.next = sub i64 %left, 1
  br label %loop
tail:
  %rest = sub i64 %n, %src
  %d4 = getelementptr inbounds i8, ptr %dst, i64 %out
  %s4 = getelementptr inbounds i8, ptr %s, i64 %src
  call void @llvm.memcpy.p0.p0.i64(ptr %d4, ptr %s4, i64 %rest, i1 false)
  ret ptr %dst
}

; The byte offset of the code point after the one at byte %i of (%s, %n) (%n at or past the end).
define linkonce_odr i64 @gz_utf8_offset.from(ptr %s, i64 %n, i64 %i) {
entry:
  %at.end = icmp sge i64 %i, %n
  br i1 %at.end, label %end, label %step
step:
  %j0 = add i64 %i, 1
  br label %loop
loop:
  %j = phi i64 [ %j0, %step ], [ %j.next, %cont ]
  %more = icmp slt i64 %j, %n
  br i1 %more, label %check, label %end
check:
  %p = getelementptr inbounds i8, ptr %s, i64 %j
  %b = load i8, ptr %p
  %top = and i8 %b, -64
  %is.cont = icmp eq i8 %top, -128
  br i1 %is.cont, label %cont, label %found
cont:
  %j.next = add i64 %j, 1
  br label %loop
found:
  ret i64 %j
end:
  ret i64 %n
}

; --- dates -----------------------------------------------------------------------------------

; The calendar parts of %ms (epoch milliseconds, UTC, proleptic Gregorian) into %out[0..7]: year,
; month, day, hour, minute, second, ISO weekday (Monday 1), day of the year (Howard Hinnant's
; civil_from_days, in integers: every int64 works).
define linkonce_odr void @gz_civil(i64 %ms, ptr %out) {
entry:
  %q = sdiv i64 %ms, 86400000
  %r = srem i64 %ms, 86400000
  %neg = icmp slt i64 %r, 0
  %q1 = sub i64 %q, 1
  %days = select i1 %neg, i64 %q1, i64 %q
  %r1 = add i64 %r, 86400000
  %rest = select i1 %neg, i64 %r1, i64 %r
  %z = add i64 %days, 719468
  %zneg = icmp slt i64 %z, 0
  %zadj = sub i64 %z, 146096
  %zz = select i1 %zneg, i64 %zadj, i64 %z
  %era = sdiv i64 %zz, 146097
  %era.days = mul i64 %era, 146097
  %doe = sub i64 %z, %era.days
  %a1 = sdiv i64 %doe, 1460
  %a2 = sdiv i64 %doe, 36524
  %a3 = sdiv i64 %doe, 146096
  %y1 = sub i64 %doe, %a1
  %y2 = add i64 %y1, %a2
  %y3 = sub i64 %y2, %a3
  %yoe = sdiv i64 %y3, 365
  %era.years = mul i64 %era, 400
  %y = add i64 %yoe, %era.years
  %d365 = mul i64 %yoe, 365
  %d4 = sdiv i64 %yoe, 4
  %d100 = sdiv i64 %yoe, 100
  %dd1 = add i64 %d365, %d4
  %dd2 = sub i64 %dd1, %d100
  %doy = sub i64 %doe, %dd2
  %m5 = mul i64 %doy, 5
  %m52 = add i64 %m5, 2
  %mp = sdiv i64 %m52, 153
  %mp153 = mul i64 %mp, 153
  %mp1532 = add i64 %mp153, 2
  %mpd = sdiv i64 %mp1532, 5
  %d0 = sub i64 %doy, %mpd
  %d = add i64 %d0, 1
  %early = icmp slt i64 %mp, 10
  %m.a = add i64 %mp, 3
  %m.b = sub i64 %mp, 9
  %m = select i1 %early, i64 %m.a, i64 %m.b
  %janfeb = icmp sle i64 %m, 2
  %y.next = add i64 %y, 1
  %year = select i1 %janfeb, i64 %y.next, i64 %y
  %hour = sdiv i64 %rest, 3600000
  %mins = sdiv i64 %rest, 60000
  %minute = srem i64 %mins, 60
  %secs = sdiv i64 %rest, 1000
  %second = srem i64 %secs, 60
  ; ISO weekday: 1970-01-01 was a Thursday
  %w0 = add i64 %days, 3
  %w1 = srem i64 %w0, 7
  %wneg = icmp slt i64 %w1, 0
  %w2 = add i64 %w1, 7
  %w3 = select i1 %wneg, i64 %w2, i64 %w1
  %weekday = add i64 %w3, 1
  ; day of the year: Jan and Feb count from March 1 of the previous year (doy 306..)
  %y4 = srem i64 %year, 4
  %y100 = srem i64 %year, 100
  %y400 = srem i64 %year, 400
  %l4 = icmp eq i64 %y4, 0
  %l100 = icmp ne i64 %y100, 0
  %l400 = icmp eq i64 %y400, 0
  %lc = or i1 %l100, %l400
  %leap = and i1 %l4, %lc
  %leap.i = zext i1 %leap to i64
  %yd.jf = sub i64 %doy, 305
  %yd.m0 = add i64 %doy, 60
  %yd.m = add i64 %yd.m0, %leap.i
  %yday = select i1 %janfeb, i64 %yd.jf, i64 %yd.m
  store i64 %year, ptr %out
  %o1 = getelementptr inbounds i64, ptr %out, i64 1
  store i64 %m, ptr %o1
  %o2 = getelementptr inbounds i64, ptr %out, i64 2
  store i64 %d, ptr %o2
  %o3 = getelementptr inbounds i64, ptr %out, i64 3
  store i64 %hour, ptr %o3
  %o4 = getelementptr inbounds i64, ptr %out, i64 4
  store i64 %minute, ptr %o4
  %o5 = getelementptr inbounds i64, ptr %out, i64 5
  store i64 %second, ptr %o5
  %o6 = getelementptr inbounds i64, ptr %out, i64 6
  store i64 %weekday, ptr %o6
  %o7 = getelementptr inbounds i64, ptr %out, i64 7
  store i64 %yday, ptr %o7
  ret void
}

; %v (>= 0) in decimal, zero-padded to at least %width digits, at %dst: the bytes written (at most 20).
define linkonce_odr i64 @gz_fmt_digits(ptr %dst, i64 %v, i64 %width) {
entry:
  %buf = alloca [20 x i8], align 1
  br label %loop
loop:
  ; digits into %buf from its end
  %x = phi i64 [ %v, %entry ], [ %x.next, %loop ]
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %digit = urem i64 %x, 10
  %x.next = udiv i64 %x, 10
  %ch64 = add i64 %digit, 48
  %ch = trunc i64 %ch64 to i8
  %k.next = add i64 %k, 1
  %at = sub i64 20, %k.next
  %bp = getelementptr inbounds [20 x i8], ptr %buf, i64 0, i64 %at
  store i8 %ch, ptr %bp
  %more = icmp ne i64 %x.next, 0
  br i1 %more, label %loop, label %pad
pad:
  %short = icmp slt i64 %k.next, %width
  %zeros = sub i64 %width, %k.next
  %z = select i1 %short, i64 %zeros, i64 0
  call void @llvm.memset.p0.i64(ptr %dst, i8 48, i64 %z, i1 false)
  %dd = getelementptr inbounds i8, ptr %dst, i64 %z
  %from = sub i64 20, %k.next
  %src = getelementptr inbounds [20 x i8], ptr %buf, i64 0, i64 %from
  call void @llvm.memcpy.p0.p0.i64(ptr %dd, ptr %src, i64 %k.next, i1 false)
  %n = add i64 %z, %k.next
  ret i64 %n
}

; A year as %Y writes it: at least four digits, a minus sign before a negative one.
define linkonce_odr i64 @gz_fmt_year(ptr %dst, i64 %y) {
entry:
  %neg = icmp slt i64 %y, 0
  br i1 %neg, label %minus, label %plain
minus:
  store i8 45, ptr %dst
  %rest = getelementptr inbounds i8, ptr %dst, i64 1
  %abs = sub i64 0, %y
  %n1 = call i64 @gz_fmt_digits(ptr %rest, i64 %abs, i64 4)
  %n = add i64 %n1, 1
  ret i64 %n
plain:
  %n2 = call i64 @gz_fmt_digits(ptr %dst, i64 %y, i64 4)
  ret i64 %n2
}

; English day (%a, Monday first) and month (%b) abbreviations, three bytes each.
@gz_day_names = linkonce_odr constant [21 x i8] c"MonTueWedThuFriSatSun", align 1
@gz_month_names = linkonce_odr constant [36 x i8] c"JanFebMarAprMayJunJulAugSepOctNovDec", align 1
