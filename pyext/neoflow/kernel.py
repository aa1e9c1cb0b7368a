"""Kernel: one specialization of an op, its compiled kernel and the buffers it takes, and its launch: the
checks of index tensors before it and of the memory its outputs need."""

from __future__ import annotations

import array
import ctypes
import math
import os
import struct
import weakref

import torch

from . import _lib, memory, threadshare
from ._lib import launcher
from ._proto import neoflow_pb2 as pb

_FLOATS = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16"}
# Integer inputs: read as values (converted to the op's float dtype) or as indices; they get no gradient.
_INTS = {torch.int32: "int32", torch.int64: "int64", torch.bool: "bool"}
DTYPES = {**_FLOATS, **_INTS}
TORCH_DTYPES = {v: k for k, v in DTYPES.items()}


# The largest scratch block a kernel keeps for its temporaries (Kernel._scratch): held while the kernel lives,
# so a kernel with more in temporaries allocates them at each launch, as PyTorch's own operators do.
SCRATCH_BYTES = 1 << 20
_SCRATCH_ALIGN = 64  # each temporary's offset in the block: torch.empty's alignment on the CPU


class Kernel:
    """One specialization of an op: its kernel and the buffers it takes."""

    __slots__ = (
        "__weakref__",
        "kernel_id",
        "buffers",
        "dtype",
        "c_source",
        "cuda_source",
        "aligned",
        "cache_hit",
        "outputs",
        "allocated",
        "temps",
        "alloc",
        "returned",
        "pointers",
        "pack",
        "index_checks",
        "dtypes",
        "size_names",
        "buffer_sizes",
        "size_of",
        "size_guards",
        "extents",
        "held",
        "spec",
        "scratch",
    )

    def __init__(self, resp: pb.SpecializeResponse, outputs=(), scratch: bool = False):
        self.kernel_id = resp.kernel_id
        # whether no caller reads its temporaries (a forward-only op's kernel): the C launch then places them
        # in one block of scratch memory that its launches reuse (_set_buffers)
        self.scratch = scratch
        self.dtype = TORCH_DTYPES[resp.dtype]
        self.c_source = resp.c_source
        self.cuda_source = resp.cuda_source
        self.aligned = resp.aligned  # CUDA: pass 16-byte aligned pointers only
        self.cache_hit = resp.cache_hit
        # each buffer's element type: the op's dtype, or an integer input's or cast output's
        self.dtypes = [TORCH_DTYPES[b.dtype] if b.dtype else self.dtype for b in resp.buffers]
        names = [b.name for b in resp.buffers]
        # positions of the op's outputs among the buffers, in the op's order
        self.outputs = [names.index(n) for n in outputs] or [
            i for i, b in enumerate(resp.buffers) if b.role == "output"
        ]
        # positions of the temporaries, the other buffers the caller allocates
        self.temps = [i for i, b in enumerate(resp.buffers) if b.role != "input" and i not in self.outputs]
        self.returned = self.outputs + self.temps  # what a call that keeps the temporaries returns
        # index tensors: (position, name, limit); every element must lie in [0, limit)
        self.index_checks = [(i, b.name, b.limit) for i, b in enumerate(resp.buffers) if b.limit > 0]
        # a kernel with symbolic extents: its size variables, each buffer's per dimension ("" fixed), and the
        # kernel itself in the copies that run it at one set of sizes (at), which hold it
        self.size_names = tuple(resp.size_names)
        self.buffer_sizes = [tuple(b.sizes) or ("",) * len(b.shape) for b in resp.buffers] if self.size_names else None
        # and the explicit extents it was built with ({} unless the builder sets them), those that are a size's
        self.size_of = dict(resp.size_of)
        # conditions on the sizes' values under which every access is in bounds: (coefficients, constant),
        # the sum of coefficient * size plus the constant at least 0
        self.size_guards = tuple((tuple(g.coef.items()), g.constant) for g in resp.size_guards)
        self.extents: dict = {}
        self.held = None
        self._set_buffers([(b.name, b.role, tuple(b.shape)) for b in resp.buffers], None)
        if self.kernel_id:  # this object holds the loaded kernel; the Go core may unload it once none does
            weakref.finalize(self, _release_kernel, self.kernel_id)

    def _set_buffers(self, buffers, size_values) -> None:
        """Sets the buffers (name, role, shape) and what launching on them needs; size_values, a kernel with
        symbolic extents' array of its sizes' values, is passed after them."""
        self.buffers = buffers
        # shapes of the buffers the caller allocates: outputs and temporaries
        self.allocated = [shape for _, role, shape in buffers if role != "input"]
        # per allocated buffer: whether it is below neoflow.memory's size for caching, and then its
        # shape as torch.empty's unpacked arguments, else its shape
        self.alloc = []
        for (_, role, shape), dtype in zip(buffers, self.dtypes):
            if role != "input":
                small = math.prod(shape) * dtype.itemsize < memory.MIN_BYTES
                self.alloc.append(((shape or ((),)) if small else shape, small, dtype))
        self.pointers = ctypes.c_void_p * len(buffers)  # the CUDA launch's array of data pointers
        # the C launch's, as bytes: ctypes passes a bytes object as a pointer to its contents, and packing
        # costs half of building a ctypes array (0.42 against 0.87 us for three pointers)
        self.pack = struct.Struct(f"{len(buffers)}Q").pack
        tail = 0
        if size_values is not None:  # the C kernel takes a pointer to the values, the CUDA kernel the values
            tail = size_values.buffer_info()[0]
            pack, packed_tail = self.pack, struct.pack("Q", tail)
            self.pack = lambda *pointers: pack(*pointers) + packed_tail
            array_type, values = ctypes.c_void_p * (len(buffers) + len(size_values)), list(size_values)
            self.pointers = lambda *pointers: array_type(*pointers, *values)
        # a C kernel's launch in C (_lib.launcher.run): its allocations as (callable, args, kwargs) triples, or
        # for a temporary in the scratch block its byte offset there
        self.spec = None
        if self.kernel_id and not self.cuda_source and not self.index_checks:
            allocs = [
                (torch.empty, tuple(s), {"dtype": dt}) if small else (memory.empty, (s, dt), None)
                for s, small, dt in self.alloc
            ]
            scratch = self._scratch(allocs)  # puts the temporaries' offsets into allocs
            self.spec = (self.kernel_id, tuple(allocs), threadshare.launch_threads, tail, scratch)

    def _scratch(self, allocs: list):
        """Where the kernel's temporaries can share a block of scratch memory (see ``scratch``) of at most
        SCRATCH_BYTES: puts each one's byte offset in the block into allocs, in place of its allocation, and
        returns the block's spare list and allocation (what the C launch takes the block from and gives it back
        to; a launch that finds the list empty, another thread's launch holding the block, makes its own);
        else None."""
        if not self.scratch:
            return None
        offsets, total = {}, 0
        allocated = [i for i, (_, role, _) in enumerate(self.buffers) if role != "input"]
        for k, (i, (_, _, dt)) in enumerate(zip(allocated, self.alloc)):
            if self.buffers[i][1] == "temp" and i not in self.outputs:
                offsets[k] = total
                total += -(-math.prod(self.allocated[k]) * dt.itemsize // _SCRATCH_ALIGN) * _SCRATCH_ALIGN
        if not offsets or total > SCRATCH_BYTES:
            return None
        for k, offset in offsets.items():
            allocs[k] = offset
        return ([], (torch.empty, (total,), {"dtype": torch.uint8}))

    def fit(self, shapes, extents: dict) -> dict | None:
        """The values of this kernel's sizes (``size_names``) at inputs of these shapes and these explicit
        extents, by name, or None when they do not fit (a fixed dimension or extent differs, two dimensions of
        one size differ, an extent that is a size differs from it, a size is 0, or the sizes break a launch
        guard)."""
        values: dict = {}
        for i, shape in enumerate(shapes):
            name, role, rep = self.buffers[i]
            if role != "input" or len(shape) != len(rep):
                return None
            for d, size in enumerate(self.buffer_sizes[i]):
                if not size:
                    if shape[d] != rep[d]:
                        return None
                elif values.setdefault(size, shape[d]) != shape[d]:
                    return None
        if len(values) != len(self.size_names) or min(values.values()) < 1 or max(values.values()) >= 1 << 31:
            return None
        if extents.keys() != self.extents.keys():
            return None
        for coef, constant in self.size_guards:
            if sum(c * values[name] for name, c in coef) + constant < 0:
                return None
        for name, n in extents.items():
            size = self.size_of.get(name)
            if n != (values[size] if size else self.extents[name]):
                return None
        return values

    def at(self, shapes, extents: dict) -> Kernel | None:
        """This kernel with symbolic extents for inputs of these shapes and these explicit extents: a copy that
        launches it with its sizes' values read from the shapes, or None when they do not fit (``fit``)."""
        values = self.fit(shapes, extents)
        if values is None:
            return None
        size_values = array.array("q", [values[s] for s in self.size_names])
        buffers = [
            (name, role, tuple(values[s] if s else n for n, s in zip(shape, sizes)))
            for (name, role, shape), sizes in zip(self.buffers, self.buffer_sizes)
        ]
        k = Kernel.__new__(Kernel)
        for slot in Kernel.__slots__[1:]:
            setattr(k, slot, getattr(self, slot))
        k.held = (self, size_values)  # the kernel stays loaded, and the array of values alive, while k is used
        k._set_buffers(buffers, size_values)
        return k

    def call(self, tensors):
        """Launches the kernel on these inputs and returns its output, or its outputs as a tuple: an op's
        call without autograd (``Op.__call__``'s direct path)."""
        bufs = self.run(tensors)
        outs = self.outputs
        return bufs[outs[0]] if len(outs) == 1 else tuple([bufs[i] for i in outs])

    def run(self, tensors, keep: bool = False) -> list[torch.Tensor]:
        """Launches the kernel on these inputs (its specialization's) and
        returns every buffer: the inputs as passed to it (contiguous), then
        the outputs and temporaries it allocated (with ``scratch``, the C
        launch gives the scratch block in place of each temporary, unless
        ``keep`` asks for them). On CUDA those come from PyTorch's caching
        allocator and the kernel runs on PyTorch's current stream of the
        inputs' device."""
        # a C kernel: launched in C unless an input needs a copy first (or the scratch block would stand in for
        # temporaries the caller keeps)
        if self.spec is not None and not (keep and self.scratch):
            bufs = launcher.run(self.spec, tensors)
            if bufs is not None:
                return bufs
        # a lazily negated view's memory is not negated (resolve_neg goes through the dispatcher: 0.5 us a tensor)
        if all(map(_contiguous, tensors)) and not any(map(_negated, tensors)):  # the usual case, tested faster
            bufs = list(tensors)
        else:
            bufs = [t if t.is_contiguous() and not t.is_neg() else t.resolve_neg().contiguous() for t in tensors]
        for i, name, limit in self.index_checks:
            check_index_tensor(bufs[i], name, limit)
        if bufs[0].is_cuda:  # an op has at least one input
            device = bufs[0].device
            if self.aligned:  # it loads 16-byte vectors: a view starting mid-allocation is copied to aligned memory
                bufs = [b if b.data_ptr() % 16 == 0 else b.clone() for b in bufs]
            bufs += [torch.empty(shape, dtype=a[2], device=device) for shape, a in zip(self.allocated, self.alloc)]
            pointers = self.pointers(*[b.data_ptr() for b in bufs])
            _lib.launch_cuda(self.kernel_id, pointers, torch.cuda.current_stream(device).cuda_stream)
            return bufs
        # small buffers straight from torch.empty (unpacked sizes: the fastest form), large ones from neoflow.memory
        bufs += [torch.empty(*s, dtype=dt) if small else memory.empty(s, dt) for s, small, dt in self.alloc]
        _lib.launch(self.kernel_id, self.pack(*map(_data_ptr, bufs)), threadshare.launch_threads())
        return bufs


_contiguous, _negated, _data_ptr = torch.Tensor.is_contiguous, torch.Tensor.is_neg, torch.Tensor.data_ptr
any_autocast = getattr(torch._C, "_is_any_autocast_enabled", lambda: False)


def cuda_device(tensors) -> int:
    """A specialization request's cuda_device: 0 for CPU tensors, ordinal + 1 for CUDA ones."""
    d = tensors[0].device if tensors else None
    if d is None or d.type != "cuda":
        return 0
    return (d.index if d.index is not None else torch.cuda.current_device()) + 1


def autocast_inputs(tensors) -> tuple:
    """Under torch.autocast, the float32 inputs on a device where it is on, cast to its dtype (as PyTorch's
    matmuls run; float64 inputs are not eligible there either): the op then computes in float32 and stores
    that dtype (16-bit kernels load, compute and accumulate in float32 and round once per stored element)."""
    out = []
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.dtype == torch.float32 and torch.is_autocast_enabled(t.device.type):
            dtype = torch.get_autocast_dtype(t.device.type)
            if t.dtype != dtype:
                t = t.to(dtype)
        out.append(t)
    return tuple(out)


def check_index_tensor(t: torch.Tensor, name: str, limit: int) -> None:
    """Raises IndexError unless every element of index tensor t lies in
    [0, limit): one pass on t's device (torch.aminmax on CUDA, a C loop on
    the host); only a failing tensor is searched for the position to name.
    The check reads its result on the host, which a CUDA graph capture does
    not allow: there it raises instead of launching unchecked."""
    if t.is_cuda and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            f"index tensor {name} cannot be checked while a CUDA graph is being captured (the check before each "
            "launch reads its range on the host): run ops that read index tensors outside the capture"
        )
    if t.is_cuda:
        lo, hi = (int(v) for v in torch.aminmax(t))
    else:  # contiguous (Kernel.run's buffers are), int32 or int64, not empty (no dimension is 0)
        lo, hi = _lib.index_range(t.data_ptr(), t.numel(), t.element_size())
    if lo >= 0 and hi < limit:
        return
    bad = lo if lo < 0 else hi
    where = tuple(int(i) for i in (t == bad).nonzero()[0].tolist())
    why = "negative indices are not allowed" if bad < 0 else f"it indexes a dimension of size {limit}"
    raise IndexError(f"index tensor {name} holds {bad} at position {where}, outside [0, {limit}): {why}")


def _memory_total(device: torch.device) -> int:
    """The device's memory in bytes (0 when unknown)."""
    try:
        if device.type == "cuda":
            return torch.cuda.mem_get_info(device)[1]
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, RuntimeError):
        return 0


def check_memory(op, kernel: Kernel, device: torch.device) -> None:
    """Raises MemoryError naming the tensor, before allocating, when the
    outputs and temporaries a call allocates exceed the device's memory."""
    sizes = [
        (n, shape, math.prod(shape) * dt.itemsize)
        for (n, role, shape), dt in zip(kernel.buffers, kernel.dtypes)
        if role != "input"
    ]
    total, limit = sum(b for _, _, b in sizes), _memory_total(device)
    if not limit or total <= limit:
        return
    name, shape, nbytes = max(sizes, key=lambda b: b[2])
    raise MemoryError(
        f"op {op.name or '<anonymous>'}: its outputs and temporaries need {_bytes(total)} but the {device.type} "
        f"device has {_bytes(limit)}; the largest is {name} of shape {list(shape)}, {_bytes(nbytes)} "
        f"({kernel.dtype}); check the inputs' shapes and sizes="
    )


def _bytes(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit} ({n} bytes)"
    return f"{n} bytes"


def _release_kernel(kernel_id: int) -> None:
    try:
        _lib.release_kernel(kernel_id)
    except Exception:  # noqa: BLE001 - at interpreter exit or after fork, releasing is moot
        pass
