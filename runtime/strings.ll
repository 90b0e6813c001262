; grizzly-py runtime: string comparison and Arrow buffer helpers.
;
; Linked into every compiled module.

declare i32 @memcmp(ptr, ptr, i64)

; A byte with every bit set: the validity bitmap of a column that has none (all valid).
; Generated code points at it with bit index 0 instead of branching on a null bitmap pointer.
@gz_all_valid = linkonce_odr constant [8 x i8] c"\FF\FF\FF\FF\FF\FF\FF\FF", align 8

; Equality of the byte strings (a, alen) and (b, blen).
define linkonce_odr i1 @gz_str_eq(ptr %a, i64 %alen, ptr %b, i64 %blen) alwaysinline {
entry:
  %same_len = icmp eq i64 %alen, %blen
  br i1 %same_len, label %bytes, label %differ
bytes:
  %zero = icmp eq i64 %alen, 0
  br i1 %zero, label %equal, label %cmp
cmp:
  %c = call i32 @memcmp(ptr %a, ptr %b, i64 %alen)
  %eq = icmp eq i32 %c, 0
  ret i1 %eq
equal:
  ret i1 true
differ:
  ret i1 false
}

; Bit %i of an Arrow bitmap.
define linkonce_odr i1 @gz_bit(ptr %bitmap, i64 %i) alwaysinline {
entry:
  %byte_index = lshr i64 %i, 3
  %p = getelementptr inbounds i8, ptr %bitmap, i64 %byte_index
  %byte = load i8, ptr %p
  %shift64 = and i64 %i, 7
  %shift = trunc i64 %shift64 to i8
  %shifted = lshr i8 %byte, %shift
  %bit = trunc i8 %shifted to i1
  ret i1 %bit
}
