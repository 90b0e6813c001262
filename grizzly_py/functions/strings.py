"""String functions (polars names, ``col("s").str.<name>(...)``; ``concat_str``).

Strings are UTF-8; lengths, offsets and slices count code points. Case mapping covers ASCII and
the Latin-1 Supplement (U+00C0-U+00DE <-> U+00E0-U+00FE, but for the multiplication and division
signs); every other code point is left as it is. A pattern is a Python regular expression unless
``literal=True`` (``patterns.py`` says what is refused); a replacement ``value`` is literal text.
"""

from __future__ import annotations

import re

from ..types import BOOL, INT64, STRING, SchemaError
from .patterns import check_pattern
from .registry import FunctionSpec, register


def _latin1_case(s: str, upper: bool) -> str:
    out = []
    for ch in s:
        c = ord(ch)
        if upper and (0x61 <= c <= 0x7A or (0xE0 <= c <= 0xFE and c != 0xF7)):
            c -= 0x20
        elif not upper and (0x41 <= c <= 0x5A or (0xC0 <= c <= 0xDE and c != 0xD7)):
            c += 0x20
        out.append(chr(c))
    return "".join(out)


class StringFunction(FunctionSpec):
    """A function of one string argument (``self.method``: its name in ``.str``)."""

    result = STRING

    def output_type(self, call, arg_types):
        self.require(arg_types[0], "needs a string", call, arg_types[0].is_string)
        return self.result


class Pattern(StringFunction):
    """A function of a ``pattern`` (a regular expression, or text with ``literal=True``)."""

    def check_options(self, options):
        if not isinstance(options.get("literal", False), bool):
            raise TypeError(f"str.{self.method}: literal must be True or False, got {options['literal']!r}")
        if options.get("literal", False):
            if not isinstance(options["pattern"], str):
                raise TypeError(f"str.{self.method}: the text must be a string, got {options['pattern']!r}")
        else:
            check_pattern(options["pattern"], f"str.{self.method}")

    @staticmethod
    def regex(call) -> re.Pattern | None:
        """The compiled pattern (None for a literal)."""
        return None if call.option("literal", False) else re.compile(call.option("pattern"))


class Contains(Pattern):
    name, method, result = "str.contains", "contains", BOOL

    def reference(self, call, s):
        p = self.regex(call)
        return call.option("pattern") in s if p is None else p.search(s) is not None


class StartsWith(StringFunction):
    name, method, result = "str.starts_with", "starts_with", BOOL

    def check_options(self, options):
        if not isinstance(options["prefix"], str):
            raise TypeError(f"str.starts_with: the prefix must be a string, got {options['prefix']!r}")

    def reference(self, call, s):
        return s.startswith(call.option("prefix"))


class EndsWith(StringFunction):
    name, method, result = "str.ends_with", "ends_with", BOOL

    def check_options(self, options):
        if not isinstance(options["suffix"], str):
            raise TypeError(f"str.ends_with: the suffix must be a string, got {options['suffix']!r}")

    def reference(self, call, s):
        return s.endswith(call.option("suffix"))


class ToLowercase(StringFunction):
    name, method = "str.to_lowercase", "to_lowercase"

    def reference(self, call, s):
        return _latin1_case(s, upper=False)


class ToUppercase(StringFunction):
    name, method = "str.to_uppercase", "to_uppercase"

    def reference(self, call, s):
        return _latin1_case(s, upper=True)


class LenChars(StringFunction):
    name, method, result = "str.len_chars", "len_chars", INT64

    def reference(self, call, s):
        return len(s)


class Slice(StringFunction):
    """``slice(offset, length=None)``: code points from ``offset`` (negative: from the end), at
    most ``length`` of them; what falls outside the string is cut off (polars)."""

    name, method = "str.slice", "slice"

    def check_options(self, options):
        offset, length = options["offset"], options.get("length")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"str.slice: offset must be an int, got {offset!r}")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 0):
            raise TypeError(f"str.slice: length must be a non-negative int or None, got {length!r}")

    def reference(self, call, s):
        n, offset, length = len(s), call.option("offset"), call.option("length")
        start = offset if offset >= 0 else n + offset
        end = n if length is None else start + length
        start, end = min(max(start, 0), n), min(max(end, 0), n)
        return s[start:end] if start < end else ""


class Replace(Pattern):
    name, method, count = "str.replace", "replace", 1

    def check_options(self, options):
        super().check_options(options)
        if not isinstance(options["value"], str):
            raise TypeError(f"str.{self.method}: the value must be a string, got {options['value']!r}")

    def reference(self, call, s):
        p, value = self.regex(call), call.option("value")
        if p is None:
            return s.replace(call.option("pattern"), value, self.count or -1)
        return p.sub(lambda _m: value, s, count=self.count)


class ReplaceAll(Replace):
    name, method, count = "str.replace_all", "replace_all", 0


class Extract(StringFunction):
    """``extract(pattern, group_index=1)``: capture group ``group_index`` (0: the whole match) of
    the first match; null where nothing matches or the group took no part in the match."""

    name, method = "str.extract", "extract"

    def check_options(self, options):
        compiled = check_pattern(options["pattern"], "str.extract")
        group = options["group_index"]
        if isinstance(group, bool) or not isinstance(group, int) or not 0 <= group <= compiled.groups:
            raise ValueError(f"str.extract: group_index must be between 0 and {compiled.groups} (the pattern's "
                             f"groups), got {group!r}")

    def reference(self, call, s):
        m = re.search(call.option("pattern"), s)
        return None if m is None else m.group(call.option("group_index"))


class SplitPart(StringFunction):
    """``split_part(separator, index)``: piece ``index`` (0-based) of the string split at every
    ``separator``; null where there is no such piece, and for an empty string."""

    name, method = "str.split_part", "split_part"

    def check_options(self, options):
        sep, index = options["separator"], options["index"]
        if not isinstance(sep, str) or not sep:
            raise ValueError(f"str.split_part: the separator must be a non-empty string, got {sep!r}")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"str.split_part: index must be a non-negative int (0: the first piece), got {index!r}")

    def reference(self, call, s):
        if not s:
            return None
        parts = s.split(call.option("separator"))
        index = call.option("index")
        return parts[index] if index < len(parts) else None


class CountMatches(Pattern):
    name, method, result = "str.count_matches", "count_matches", INT64

    def reference(self, call, s):
        p = self.regex(call)
        return s.count(call.option("pattern")) if p is None else sum(1 for _ in p.finditer(s))


class ConcatStr(FunctionSpec):
    """``concat_str(*exprs, separator="")``: the strings joined; null if any of them is null."""

    name, arity = "concat_str", -1

    def check_options(self, options):
        if not isinstance(options.get("separator", ""), str):
            raise TypeError(f"concat_str: separator must be a string, got {options['separator']!r}")

    def output_type(self, call, arg_types):
        for t, a in zip(arg_types, call.args):
            if not t.is_string:
                raise SchemaError(f"concat_str: {a!r} is {t.name}, not a string (cast numbers with a string "
                                  f"function first, or pass string columns and literals)")
        return STRING

    def reference(self, call, *parts):
        return call.option("separator", "").join(parts)

    def describe(self, call):
        args = ", ".join(repr(a) for a in call.args)
        sep = call.option("separator", "")
        return f"concat_str({args}{f', separator={sep!r}' if sep else ''})"


for _spec in (Contains(), StartsWith(), EndsWith(), ToLowercase(), ToUppercase(), LenChars(), Slice(), Replace(),
              ReplaceAll(), Extract(), SplitPart(), CountMatches(), ConcatStr()):
    register(_spec)
