"""JIT compilation of generated IR with llvmlite: link the runtime, optimize (O3, new pass
manager) for the host CPU, and load the machine code with MCJIT.

Compiled modules are cached in-process by the SHA-256 of their IR text (plus optimization level),
so running the same query again, or another variant that renders identical IR, costs nothing;
the cache keeps the ``CACHE_MODULES`` most recently used modules.
``CompiledModule`` keeps the IR before and after optimization and the assembly for ``explain``.
Machine code also stays on disk between processes (``code_cache``): a new process loads the
object of a module compiled before instead of running LLVM.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache

from . import code_cache
from .codegen.templates import runtime_externals, runtime_ir


class CompileError(RuntimeError):
    """Generated IR failed to parse or verify: a bug in grizzly-py, never in the user's query."""


_init_lock = threading.Lock()
_per_thread = threading.local()


@lru_cache(maxsize=1)
def _host() -> tuple:
    with _init_lock:
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        return llvm, llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def _llvm():
    return _host()[0]


def host_has_features(*names: str) -> bool:
    """Whether the CPU that code is compiled for has every named feature (LLVM's names, such
    as ``"avx512f"``): code that uses a feature's intrinsics must not be compiled without it."""
    enabled = {f[1:] for f in _host()[2].split(",") if f.startswith("+")}
    return all(n in enabled for n in names)


def llvm_ready() -> bool:
    """Whether LLVM was set up in this process (so generated code may have run). A finalizer that
    would compile must not be the first to: ``_host`` may be importing llvmlite in this very
    thread, under ``_init_lock``, when the garbage collector calls it (a deadlock)."""
    return _host.cache_info().currsize > 0


def new_target_machine():
    llvm, cpu, features = _host()
    return llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3, jit=True)


def target_machine():
    """This thread's target machine for the host CPU, for optimization and assembly listings
    (an MCJIT engine owns the one it is given, so each engine gets a new one)."""
    tm = getattr(_per_thread, "tm", None)
    if tm is None:
        tm = _per_thread.tm = new_target_machine()
    return tm


@dataclass
class CompiledModule:
    """A loaded module. ``from_disk``: its machine code came from the on-disk cache
    (``code_cache``), so its optimized IR is made again only when asked for."""

    ir: str
    opt_level: int
    engine: object = field(repr=False)
    compile_ms: float = 0.0
    from_disk: bool = False
    _optimized_ir: str | None = field(default=None, repr=False)
    _asm: str | None = field(default=None, repr=False)
    _module: object = field(default=None, repr=False)
    _addresses: dict = field(default_factory=dict, repr=False)

    @property
    def optimized_ir(self) -> str:
        if self._optimized_ir is None:
            self._optimized_ir = str(optimize(parse_and_link(self.ir), self.opt_level))
        return self._optimized_ir

    def address(self, name: str) -> int:
        """The machine-code address of function ``name``, looked up in LLVM once: a lookup takes
        llvmlite's global lock, which a compile on another thread holds for its whole length."""
        addr = self._addresses.get(name)
        if addr is None:
            addr = self._addresses[name] = self.engine.get_function_address(name)
        if not addr:
            raise CompileError(f"compiled module has no function {name!r}")
        return addr

    def function(self, name: str, restype, *argtypes):
        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))

    @property
    def assembly(self) -> str:
        if self._asm is None:
            self._asm = target_machine().emit_assembly(_llvm().parse_assembly(self.optimized_ir))
        return self._asm


_cache: "OrderedDict[str, Future]" = OrderedDict()  # least recently used first
_lock = threading.Lock()
CACHE_MODULES = 256  # compiled modules kept for reuse; kernels keep the ones they use alive


def compile_ir(ir: str, opt_level: int = 3) -> CompiledModule:
    """Compile (or find in the cache) a module. A second request for a module being compiled
    waits for that compile. (llvmlite serializes its calls into LLVM, so compiles do not overlap
    each other, but a background compile overlaps the kernels, which run without the GIL.)"""
    return compile_ir_async(ir, opt_level).result()


def compile_ir_async(ir: str, opt_level: int = 3, background: bool = False) -> Future:
    """A future of the compiled module; with ``background``, compile on a new thread."""
    key = _key(ir, opt_level)
    with _lock:
        future = _cache.get(key)
        owner = future is None
        if owner:
            future = _cache[key] = Future()
            _evict()
        else:
            _cache.move_to_end(key)
    if owner:
        def work():
            try:
                future.set_result(_compile(ir, opt_level, key))
            except BaseException as e:  # the error reaches whoever waits
                with _lock:
                    _cache.pop(key, None)
                future.set_exception(e)
        if background:
            # not a daemon: a compile is short, and one cut off at exit would leave its waiters
            threading.Thread(target=work, name="grizzly-compile").start()
        else:
            work()
    return future


def _llvm_lock():
    """llvmlite's lock around every call into LLVM (``ffi.lib._lock``), if llvmlite is loaded."""
    ffi = sys.modules.get("llvmlite.binding.ffi")
    return getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_lock", None)


def _before_fork() -> None:
    """A fork waits until no thread is inside LLVM or this cache: a child forked while another
    thread held llvmlite's lock (a background compile) would wait for it forever at its first
    LLVM call, and LLVM's state would be that of a call cut in half. (In the order the locks
    are taken elsewhere: LLVM's set-up, the cache, LLVM.)"""
    _init_lock.acquire()
    _lock.acquire()
    llvm = _llvm_lock()
    if llvm is not None:
        llvm.acquire()


def _after_fork_in_parent() -> None:
    llvm = _llvm_lock()
    if llvm is not None:
        llvm.release()
    _lock.release()
    _init_lock.release()


def _after_fork_in_child() -> None:
    """The child lacks the threads that compiled in the background: a compile under way at the
    fork (between two LLVM calls) never finishes there, so its future is dropped (the next
    request compiles again)."""
    _after_fork_in_parent()
    for key in [k for k, f in _cache.items() if not f.done()]:
        del _cache[key]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def on_disk(ir: str, opt_level: int = 3) -> bool:
    """Whether the on-disk cache (``code_cache``) holds this module's machine code, so that
    compiling it means loading it (a few ms) rather than running LLVM."""
    return code_cache.folder() is not None and \
        code_cache.holds(code_cache.key(_key(ir, opt_level), disk_context()))


def is_compiled(ir: str, opt_level: int = 3) -> bool:
    """Whether a module of this IR is compiled (or being compiled) in this process."""
    with _lock:
        return _key(ir, opt_level) in _cache


@functools.lru_cache(maxsize=256)
def _key(ir: str, opt_level: int) -> str:
    """The cache key of a module (remembered per IR text: the same units are looked up on every
    variant switch and in every job, ~70 us of hashing each time for a YSB kernel)."""
    return hashlib.sha256(f"O{opt_level}\n{ir}".encode()).hexdigest()


def _evict() -> None:
    """Forget the least recently used finished modules beyond ``CACHE_MODULES`` (caller holds
    ``_lock``). Their machine code is freed once no kernel refers to them."""
    excess = len(_cache) - CACHE_MODULES
    for key in [k for k, f in _cache.items() if f.done()][:max(excess, 0)]:
        del _cache[key]


def parse_and_link(ir: str):
    """Parse generated IR, check its symbols (``check_symbols``), link the runtime into it and
    verify the result."""
    llvm = _llvm()
    try:
        module = llvm.parse_assembly(ir)
    except RuntimeError as e:
        numbered = "\n".join(f"{n + 1:5d} {line}" for n, line in enumerate(ir.splitlines()))
        raise CompileError(f"generated IR is invalid: {e}\n{numbered}") from e
    check_symbols(module)
    try:
        module.link_in(llvm.parse_assembly(runtime_ir()))
        module.verify()
    except RuntimeError as e:
        numbered = "\n".join(f"{n + 1:5d} {line}" for n, line in enumerate(ir.splitlines()))
        raise CompileError(f"generated IR is invalid: {e}\n{numbered}") from e
    return module


@lru_cache(maxsize=1)
def _runtime_symbols() -> tuple[frozenset, frozenset, frozenset]:
    """(functions the runtime defines, C functions it calls, globals it defines)."""
    runtime = _llvm().parse_assembly(runtime_ir())
    return (frozenset(f.name for f in runtime.functions if not f.is_declaration), runtime_externals(),
            frozenset(g.name for g in runtime.global_variables if not g.is_declaration))


def check_symbols(module) -> None:
    """Refuse a module that could reach beyond the runtime: it may declare only the runtime's
    functions and globals, the C functions the runtime calls and LLVM's intrinsics, and may
    define none of those (a definition of ``calloc`` would replace the runtime's allocator).
    Text from data never becomes IR (``codegen/ir_text.py``); this is the check behind that
    rule, so that a missed escape fails to compile instead of running."""
    runtime, libc, runtime_globals = _runtime_symbols()
    for f in module.functions:
        name = f.name
        if f.is_declaration:
            if not (name in runtime or name in libc or name.startswith("llvm.")):
                raise CompileError(f"generated code declares function {name!r}, which the runtime "
                                   "does not provide (a bug in grizzly-py: generated code calls the runtime only)")
        elif name in runtime or name in libc:
            raise CompileError(f"generated code defines function {name!r}, which the runtime "
                               "provides or calls (a bug in grizzly-py)")
    for g in module.global_variables:
        if g.is_declaration and g.name not in runtime_globals:
            raise CompileError(f"generated code declares global {g.name!r}, which the runtime does "
                               "not define (a bug in grizzly-py)")


def optimize(module, opt_level: int = 3):
    """Run LLVM's ``opt_level`` pipeline on ``module``, after dropping the runtime functions
    nothing in it calls (every module links the whole runtime; the pipelines would otherwise
    optimize them before discarding them: ~20% of a kernel's optimization time)."""
    llvm = _llvm()
    tm = target_machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pb = llvm.create_pass_builder(tm, pto)
    unused = llvm.create_new_module_pass_manager()
    unused.add_global_dead_code_eliminate_pass()  # only unreferenced linkonce/internal definitions
    unused.run(module, pb)
    pb.getModulePassManager().run(module, pb)
    return module


def _compile(ir: str, opt_level: int, key: str | None = None) -> CompiledModule:
    """Parse, link, optimize and generate machine code; or, when the on-disk cache holds this
    module's object (``code_cache``), let MCJIT load that object in place of an empty module.
    ``key``: the module's in-process key (``_key``), when the caller has it."""
    llvm = _llvm()
    start = time.perf_counter()
    name = code_cache.key(key or _key(ir, opt_level), disk_context()) if code_cache.folder() is not None else None
    cached = code_cache.load(name) if name is not None else None
    if cached is None:
        module = optimize(parse_and_link(ir), opt_level)
    else:
        module = _loader_module()
    engine = llvm.create_mcjit_compiler(module, new_target_machine())  # the engine owns it
    if name is not None:
        engine.set_object_cache(
            notify_func=None if cached is not None else lambda _, obj: code_cache.store(name, bytes(obj)),
            getbuffer_func=lambda _: cached)
    engine.finalize_object()
    ms = (time.perf_counter() - start) * 1000
    return CompiledModule(ir, opt_level, engine, ms, from_disk=cached is not None,
                          _optimized_ir=None if cached is not None else str(module),
                          _module=module)


def _loader_module():
    """An empty module for MCJIT to load a cached object in place of (the object holds the
    module's code linked with the runtime, compiled from IR that passed ``check_symbols``;
    its key is a digest of that IR): parsing, checking and linking the IR again took most of
    a cached module's load, 10-25 ms each, five modules in a warm-started job."""
    llvm = _llvm()
    module = llvm.parse_assembly("")
    tm = target_machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    return module


@lru_cache(maxsize=1)
def disk_context() -> str:
    """What the machine code depends on besides a module's IR (``code_cache.context``): the
    runtime linked into every module, LLVM and llvmlite, the host CPU."""
    import llvmlite
    llvm, cpu, features = _host()
    return code_cache.context(runtime_ir(), (f"llvmlite {llvmlite.__version__} llvm {llvm.llvm_version_info}",
                                             cpu, features))


def cache_size() -> int:
    return len(_cache)
