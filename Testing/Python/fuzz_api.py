"""API and file fuzzer for PyCA.Core / PyCA.Common.LoadITKImage (issue 11).

Call fuzzing: every free function of spec Appendix A (parsed at run time with
test_api_names.parse_appendix_a, so a new operator is fuzzed automatically)
is called with random argument lists built from its declared signature and
then mutated: Image3D/Field3D on random grids (1 voxel, 2-D, odd sizes,
zero-size, mismatched grids), empty MEM_DEVICE objects (constructible without
a GPU) and device objects with a grid when a GPU exists, wrong types, None,
NaN/inf/huge/negative floats and ints, Vec3Df/Vec3Di, enums in and out of
range, the output aliased with an input, trailing stream/onDev arguments.

Generation uses a seeded ``random.Random`` per call index (not hypothesis):
call ``i`` of seed ``S`` is always the same call, independent of the batch
it runs in, so a reported call is reproduced with ``--only I --seed S``.

Property: each call returns or raises an ordinary Python exception; it never
crashes or hangs the process. Each batch runs in a child process with a
timeout; the child prints (flushed) ``CALL <i> <repr>`` before every call, so
a crash or hang is reported with the offending call. The child also checks
that the ThreadMemoryManager has no pool in use after every call and holds
no more pools at the end than the pools it needed (no leaked pools), and
that host input arrays (not aliased with an output) are unchanged, and that
the memory the process holds (resident, after gc and malloc_trim) returns to
within LEAK_BYTES of its level after the first WARMUP_CALLS calls (no leak).

File fuzzing: mutated NIfTI (.nii, .nii.gz), MetaImage (.mha) and NRRD
(.nrrd) files made from small valid images (truncation, flipped bytes,
absurd header sizes/dims) are loaded with PyCA.Common.LoadITKImage in a
child whose address space may grow by at most 2 GB (RLIMIT_AS): each must
load or raise, never crash.

Usage: python fuzz_api.py --calls N --seed S [--files M] [--batch B]
"""
import argparse
import gzip
import io
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

#: exceptions a call may raise
ALLOWED = (RuntimeError, TypeError, ValueError, MemoryError, OverflowError,
           NotImplementedError, IndexError, AttributeError, ZeroDivisionError)

#: functions not fuzzed, with the reason
SKIP = {
    "SetCUDADevice": "changes process-wide device state",
    "StreamCreate": "process-wide stream table (tested in test_api_names)",
    "StreamDestroy": "process-wide stream table (tested in test_api_names)",
    "StreamIncompatibleWarning": "only prints a warning",
}

#: {name: reason} of calls that crash PyCA.Core (found by this fuzzer); the
#: generator avoids them, test_fuzz_api marks them xfail
KNOWN_CRASHES = {}

#: a MetaImage header with an absurd NDims (65536, 4294967295, 1e30) makes
#: SimpleITK 2.5.7 / ITK 5.4 MetaIO segfault inside sitk.ReadImage (and
#: ImageFileReader.ReadImageInformation) -- outside PyCA.Core
MHA_NDIMS_CRASH = "SimpleITK 2.5.7 (ITK 5.4 MetaIO) segfaults on a MetaImage header with absurd NDims"


def known_file_crash(path):
    """The reason when a crashing file is a known third-party crash, else None."""
    if path.endswith(".mha"):
        with open(path, "rb") as f:
            m = re.search(rb"NDims = (\S+)", f.read(400))
        if m:
            try:
                nd = float(m.group(1))
            except ValueError:
                nd = -1
            if not 1 <= nd <= 16:
                return MHA_NDIMS_CRASH
    return None

#: parameter names of pure inputs (their contents must not change)
INPUT_NAME = re.compile(r"^(a|d)_i\d*$|mask$|^a_h$|^a_v$|^d_h$|^d_vi$|^a_speed$|^kernel$")

#: grids used: (size, spacing, origin)
GRIDS = [
    ((1, 1, 1), (1, 1, 1), (0, 0, 0)),
    ((5, 4, 1), (1.0, 0.7, 1.0), (0, 0, 0)),
    ((3, 5, 7), (0.7, 1.3, 2.1), (1.0, -2.0, 0.5)),
    ((4, 4, 4), (1, 1, 1), (0, 0, 0)),
    ((2, 1, 1), (1, 1, 1), (0, 0, 0)),
    ((1, 6, 1), (2.0, 1.0, 1.0), (0, 0, 0)),
    ((0, 0, 0), (1, 1, 1), (0, 0, 0)),
    ((7, 3, 2), (1, 1, 1), (-1.0, 0.0, 3.0)),
]
MANAGER_GRID = ((8, 8, 8), (1, 1, 1), (0, 0, 0))
MANAGER_VOXELS = 512
#: guard floats before and after the canary views, and their value
CANARY = 64
CANARY_VALUE = -12345.6789
#: grids that cannot be allocated (tried every HUGE_EVERY calls)
HUGE_GRIDS = [(1 << 20, 1 << 20, 1 << 10), (2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1), (1 << 16, 1 << 16, 1 << 16)]
HUGE_EVERY = 50

FLOATS = [0.5, 0.0, -1.0, 2.0, 1e-30, float("nan"), float("inf"), -float("inf"), 3.4e38,
          -1e300, 1e300, -0.0]
FLOATS32 = [f for f in FLOATS if not (math.isfinite(f) and abs(f) > 3.4e38)]
INTS = [0, 1, -1, 2, 3, 7, 2 ** 31 - 1, 2 ** 31, -2 ** 31, 2 ** 32, 2 ** 63, -2 ** 63, 2 ** 64, -7]
BAD = ["none", "str", "list", "float", "int", "image", "field", "vec", "obj"]


def load_overloads():
    """{name: [Overload]} from the spec's Appendix A."""
    import test_api_names as t
    text = t.spec_text()
    if text is None:
        raise RuntimeError("spec PYCA_API.md not found (set PYCA_SPEC)")
    return t.parse_appendix_a(text)


class Arg:
    """A generated argument: the value and its printable description."""
    __slots__ = ("value", "desc")

    def __init__(self, value, desc):
        self.value, self.desc = value, desc


class Gen:
    """Builds call i of a seed."""

    def __init__(self, ca, overloads, has_gpu):
        self.ca = ca
        self.has_gpu = has_gpu
        self.ovls = [o for n in sorted(overloads) if n not in SKIP and n not in KNOWN_CRASHES
                     and hasattr(ca, n) for o in overloads[n]]
        self.keep = []
        self.canaries = []
        ca_ = ca
        self.enums = {
            "bg": [getattr(ca_, n) for n in dir(ca_) if n.startswith("BACKGROUND_STRATEGY_")],
            "interp": [getattr(ca_, n) for n in dir(ca_) if n.startswith("INTERP_")],
            "dim": [getattr(ca_, n) for n in ("DIM_X", "DIM_Y", "DIM_Z")],
            "diff": [getattr(ca_, n) for n in dir(ca_) if n.startswith("DIFF_")],
            "bc": [getattr(ca_, n) for n in dir(ca_) if n.startswith("BC_")],
            "op": [getattr(ca_, n) for n in dir(ca_) if n.startswith("OP_")],
            "MemoryType": [ca_.MEM_HOST, ca_.MEM_HOST_PINNED, ca_.MEM_DEVICE],
        }

    def grid(self, spec):
        ca = self.ca
        s, sp, o = spec
        return ca.GridInfo(ca.Vec3Di(*s), ca.Vec3Df(*sp), ca.Vec3Df(*o))

    def array(self, r, kind, gspec, mem):
        """A host (or device) Image3D/Field3D with random contents."""
        ca = self.ca
        cls = ca.Image3D if kind == "Im" else ca.Field3D
        tag = "%s%s" % (kind, "x".join(map(str, gspec[0])))
        if mem == "devempty":
            return Arg(cls(ca.MEM_DEVICE), kind + "(MEM_DEVICE)")
        nvox = gspec[0][0] * gspec[0][1] * gspec[0][2]
        if mem == "managed" and 0 < nvox <= MANAGER_VOXELS:
            # a pool of the thread's memory manager
            mcls = ca.ManagedImage3D if kind == "Im" else ca.ManagedField3D
            o = mcls(self.grid(gspec), ca.MEM_HOST)
            tag += "@managed"
        elif mem == "canary" and nvox > 0:
            # a view into a NumPy buffer with guard regions before and after it
            import numpy as np
            nc = 1 if kind == "Im" else 3
            buf = np.full(nc * nvox + 2 * CANARY, CANARY_VALUE, dtype=np.float32)
            sx, sy, sz = gspec[0]
            view = buf[CANARY:CANARY + nc * nvox].reshape(nc, sz, sy, sx).transpose(0, 3, 2, 1)
            o = cls.FromDLPack(view[0] if kind == "Im" else view, copy=False)
            o.grid().setSpacing(self.ca.Vec3Df(*gspec[1]))
            o.grid().setOrigin(self.ca.Vec3Df(*gspec[2]))
            self.canaries.append(buf)
            tag += "@canary"
        else:
            o = cls(self.grid(gspec), ca.MEM_HOST)
        vals = r.choice(([0.5], [0.0], [-1.0, 2.0, 0.25], [float("nan")], [1e30, -3.0], [1.0, 0.0]))
        comps = [o.asnp()] if kind == "Im" else list(o.asnp())
        for c in comps:
            if c.size:
                c.reshape(-1)[:] = [vals[k % len(vals)] for k in range(c.size)]
        if mem == "dev":
            o.toType(ca.MEM_DEVICE)
            tag += "@dev"
        if mem == "mutated":
            # the live grid reference changed behind the buffer's back
            g = o.grid()
            sx, sy, sz = gspec[0]
            new_size = r.choice([(sx * 2 + 1, sy, sz), (sx, sy + 3, sz), (max(sx - 1, 0), sy, sz),
                                 (0, 0, 0), (sx, sy, sz * 4 + 1)])
            g.setSize(ca.Vec3Di(*new_size))
            tag += "@grid->%s" % "x".join(map(str, new_size))
        return Arg(o, "%s%s" % (tag, vals))

    def bad(self, r, gspec):
        ca = self.ca
        b = r.choice(BAD)
        if b == "none":
            return Arg(None, "None")
        if b == "str":
            return Arg("x", "'x'")
        if b == "list":
            return Arg([1, 2, 3], "[1,2,3]")
        if b == "float":
            v = r.choice(FLOATS)
            return Arg(v, repr(v))
        if b == "int":
            v = r.choice(INTS)
            return Arg(v, repr(v))
        if b == "image":
            return self.array(r, "Im", gspec, "host")
        if b == "field":
            return self.array(r, "Fld", gspec, "host")
        if b == "vec":
            return Arg(ca.Vec3Df(1, 2, 3), "Vec3Df(1,2,3)")
        return Arg(object(), "object()")

    def value(self, r, p, gspec):
        """A (mostly) well-typed value for parameter p."""
        ca = self.ca
        t = p.type
        if t in ("Im", "Fld"):
            g = gspec if r.random() < 0.85 else r.choice(GRIDS)
            u = r.random()
            mem = "host"
            if u < 0.04:
                mem = "devempty"
            elif u < 0.08 and self.has_gpu:
                mem = "dev"
            elif u < 0.16:
                mem = "managed"
            elif u < 0.26:
                mem = "canary"
            elif u < 0.30:
                mem = "mutated"
            return self.array(r, t, g, mem)
        if t == "float":
            v = 0.5 if r.random() < 0.5 else r.choice(FLOATS)
            return Arg(v, repr(v))
        if t in ("int", "uint", "size_t"):
            v = r.choice([0, 1, 2]) if r.random() < 0.5 else r.choice(INTS)
            if p.name == "numIter" and 0 < v < 2 ** 32:
                v = r.choice([3, 20])  # a huge iteration count is slow, not a bug
            return Arg(v, repr(v))
        if t == "bool":
            v = r.choice([True, False])
            return Arg(v, repr(v))
        if t == "Vec3Df":
            c = [0.5 if r.random() < 0.5 else r.choice(FLOATS32) for _ in range(3)]
            return Arg(ca.Vec3Df(*c), "Vec3Df%r" % (tuple(c),))
        if t == "Vec3Di":
            c = [r.choice([0, 1, 2]) if r.random() < 0.6 else r.choice([-1, -5, 100, 2 ** 31 - 1, -2 ** 31])
                 for _ in range(3)]
            return Arg(ca.Vec3Di(*c), "Vec3Di%r" % (tuple(c),))
        if t in self.enums:
            vals = self.enums[t]
            if r.random() < 0.8 and vals:
                v = r.choice(vals)
            else:
                v = r.choice([-1, 99, 2 ** 31 - 1, len(vals)])
            return Arg(v, "%s=%r" % (t, v))
        if t == "float*":
            # a raw component pointer: always of a live field on the call grid
            f = ca.Field3D(self.grid(gspec), ca.MEM_HOST)
            self.keep.append(f)
            return Arg(f.x, "Fld%s.x" % "x".join(map(str, gspec[0])))
        if t == "Aff3Df":
            if hasattr(ca, "Aff3Df"):
                return Arg(ca.Aff3Df(), "Aff3Df()")
            return Arg(None, "None")
        if t == "char const *":
            v = r.choice(["pyca", "", "x" * 300])
            return Arg(v, repr(v)[:20])
        return Arg(None, "None")

    def call(self, seed, i):
        """(overload, [Arg], input positions to check, output positions)."""
        r = random.Random("%d:%d" % (seed, i))
        self.keep = []
        self.canaries = []
        ovl = r.choice(self.ovls)
        gspec = r.choice(GRIDS)
        args = []
        for p in ovl.params:
            if p.default is not None and r.random() < 0.4:
                break  # leave the remaining defaults out
            if r.random() < 0.07:
                args.append(self.bad(r, gspec))
            else:
                args.append(self.value(r, p, gspec))
        for k, a in enumerate(args):  # a huge iteration count is slow, not a bug
            if ovl.params[k].name == "numIter" and type(a.value) is int and 20 < a.value < 2 ** 32:
                args[k] = Arg(20, "20")
        # alias the output with a later argument of the same type
        if len(args) > 1 and r.random() < 0.15:
            cands = [k for k in range(1, len(args)) if ovl.params[k].type == ovl.params[0].type]
            if cands:
                k = r.choice(cands)
                args[k] = Arg(args[0].value, "<alias of arg0>")
        u = r.random()
        if u < 0.1:
            args.append(Arg(None, "st=None"))
            if ovl.ondev and r.random() < 0.5:
                args.append(Arg(r.choice([False, True]), "onDev"))
        elif u < 0.13:
            args.append(self.bad(r, gspec))  # one argument too many
        elif u < 0.15 and args:
            args.pop()  # one too few
        ca = self.ca
        inputs = []
        outputs = set()
        for k, a in enumerate(args):
            if k >= len(ovl.params):
                continue
            if not INPUT_NAME.match(ovl.params[k].name):
                outputs.add(id(a.value))
        for k, a in enumerate(args):
            if 0 < k < len(ovl.params) and INPUT_NAME.match(ovl.params[k].name) \
                    and isinstance(a.value, (ca.Image3D, ca.Field3D)) \
                    and id(a.value) not in outputs and a.value.memType() == ca.MEM_HOST \
                    and sum(1 for b in args if b.value is a.value) == 1:
                inputs.append(k)
        return ovl, args, inputs


def describe(ovl, args):
    return "%s[%d](%s)" % (ovl.name, ovl.index, ", ".join(a.desc for a in args))


def _snap(ca, o):
    """Copies of the voxels, or None where the object has no view (a grid
    mutated beyond its buffer)."""
    import numpy as np
    try:
        if isinstance(o, ca.Field3D):
            return [np.array(v) for v in o.asnp()]
        return [np.array(o.asnp())]
    except RuntimeError:
        return None


def _same(a, b):
    import numpy as np
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


#: calls run before the process's memory is measured, and the growth allowed
#: after them (allocator fragmentation, Python's own caches)
WARMUP_CALLS = 200
LEAK_BYTES = 16 << 20


def _rss_after_trim():
    """Resident bytes of this process after a collection and malloc_trim
    (freed heap memory handed back to the system), or 0 off Linux."""
    import gc
    gc.collect()
    try:
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def child_calls(seed, start, count, check_every=1):
    """Runs calls [start, start+count) of seed; exits non-zero on a broken
    property (after printing FAIL ...)."""
    import numpy as np
    import PyCA.Core as ca
    has_gpu = ca.GetNumberOfCUDADevices() > 0
    gen = Gen(ca, load_overloads(), has_gpu)
    mgr_mem = ca.MEM_HOST
    ca.ThreadMemoryManager.init(gen.grid(MANAGER_GRID), mgr_mem, 0)
    mm = ca.ThreadMemoryManager.instance()
    base = mm.getNumPools()
    out = sys.stdout
    nraise = nret = 0
    warm = start + min(WARMUP_CALLS, count // 4)  # caches, FFT plans, lazy imports
    rss0 = None
    keep = [] if os.environ.get("PYCA_FUZZ_SELFTEST_LEAK") else None
    for i in range(start, start + count):
        if i == warm:
            rss0 = _rss_after_trim()
        ovl, args, inputs = gen.call(seed, i)
        out.write("CALL %d %s\n" % (i, describe(ovl, args)))
        out.flush()
        before = {k: _snap(ca, args[k].value) for k in inputs} if i % check_every == 0 else {}
        fn = getattr(ca, ovl.name)
        try:
            fn(*[a.value for a in args])
            nret += 1
        except ALLOWED:
            nraise += 1
        except Exception as e:  # an exception type outside the allowed set
            out.write("FAIL %d unexpected exception %s: %s\n" % (i, type(e).__name__, str(e)[:200]))
            out.flush()
            sys.exit(3)
        # managed arguments hold their pools until they are dropped
        held = {id(a.value): (1 if isinstance(a.value, ca.Image3D) else 3)
                for a in args if isinstance(a.value, (ca.ManagedImage3D, ca.ManagedField3D))}
        if mm.poolsInUse() != sum(held.values()):
            out.write("FAIL %d pools in use after the call: %d (managed arguments hold %d)\n"
                      % (i, mm.poolsInUse(), sum(held.values())))
            out.flush()
            sys.exit(4)
        for buf in gen.canaries:
            if not (np.all(buf[:CANARY] == np.float32(CANARY_VALUE))
                    and np.all(buf[-CANARY:] == np.float32(CANARY_VALUE))):
                out.write("FAIL %d wrote outside its output (a guard region changed)\n" % i)
                out.flush()
                sys.exit(7)
        if i % HUGE_EVERY == 0:
            for size in HUGE_GRIDS:
                for make in (lambda g: ca.Image3D(g, ca.MEM_HOST), lambda g: ca.Field3D(g, ca.MEM_HOST),
                             lambda g: ca.MemoryManager(g, ca.MEM_HOST, 1)):
                    try:
                        make(ca.GridInfo(ca.Vec3Di(*size)))
                    except (MemoryError, ValueError, OverflowError):
                        pass
                    else:
                        out.write("FAIL %d an allocation of a %r grid succeeded\n" % (i, size))
                        out.flush()
                        sys.exit(8)
        for k, snap in before.items():
            if snap is not None and not _same(snap, _snap(ca, args[k].value)):
                out.write("FAIL %d input argument %d (%s) was modified\n" % (i, k, ovl.params[k].name))
                out.flush()
                sys.exit(5)
        if keep is not None:  # self-test of the leak check: hold 16 KiB per call
            leak = ca.Image3D(gen.grid(((16, 16, 16), (1, 1, 1), (0, 0, 0))), ca.MEM_HOST)  # 16 KiB
            ca.SetMem(leak, 1.0)  # touched, so resident
            keep.append(leak)
        del args
        gen.canaries = []
        if mm.poolsInUse() != 0:
            out.write("FAIL %d pools still in use once the arguments are gone: %d\n" % (i, mm.poolsInUse()))
            out.flush()
            sys.exit(4)
    # memory held by the process returns to its level after the warm-up (the
    # sanitizer run skips this: ASan holds freed memory in its quarantine)
    grow = 0
    if rss0 is not None and not os.environ.get("PYCA_SANITIZED"):
        grow = _rss_after_trim() - rss0
        if grow > LEAK_BYTES:
            out.write("FAIL %d process memory grew by %d bytes over calls %d..%d (bound %d)\n"
                      % (start + count - 1, grow, warm, start + count - 1, LEAK_BYTES))
            out.flush()
            sys.exit(6)
    # the manager never shrinks; pools added during the batch must all be free
    out.write("DONE returned=%d raised=%d pools=%d(base %d) inuse=%d rss_growth=%d\n"
              % (nret, nraise, mm.getNumPools(), base, mm.poolsInUse(), grow))
    out.flush()
    ca.ThreadMemoryManager.destroy()
    return 0


# ---------------------------------------------------------------------------
# file fuzzing

FORMATS = (".nii", ".nii.gz", ".mha", ".nrrd")


def make_seeds(folder):
    """Small valid images in every format: {ext: [bytes]}."""
    import numpy as np
    import PyCA.Core as ca
    import PyCA.Common as common
    seeds = {e: [] for e in FORMATS}
    for k, size in enumerate([(3, 2, 2), (4, 3, 1), (1, 1, 1)]):
        g = ca.GridInfo(ca.Vec3Di(*size), ca.Vec3Df(0.5, 1.0, 2.0), ca.Vec3Df(1.0, 2.0, 3.0))
        im = ca.Image3D(g, ca.MEM_HOST)
        im.asnp()[...] = np.arange(np.prod(size), dtype=np.float32).reshape(size)
        for e in FORMATS:
            p = os.path.join(folder, "seed%d%s" % (k, e))
            common.SaveITKImage(im, p)
            with open(p, "rb") as f:
                seeds[e].append(f.read())
    return seeds


_HUGE = [b"2147483647", b"4294967295", b"99999999999", b"-1", b"0", b"65536", b"1e30", b"nan"]


def _text_mutate(r, data):
    """Replaces a number of the text header (MetaImage, NRRD)."""
    head_end = data.find(b"\n\n") if data.startswith(b"NRRD") else data.find(b"ElementDataFile")
    head_end = len(data) if head_end < 0 else head_end
    nums = [m for m in re.finditer(rb"-?\d+(\.\d+)?", data[:head_end])]
    if not nums:
        return data
    m = r.choice(nums)
    return data[:m.start()] + r.choice(_HUGE) + data[m.end():]


def _nifti_mutate(r, raw):
    """Sets a field of the 348-byte NIfTI-1 header to an absurd value."""
    b = bytearray(raw)
    if len(b) < 348:
        return bytes(b)
    field = r.choice(["dim", "dim", "datatype", "bitpix", "vox_offset", "pixdim", "sizeof_hdr",
                      "scl"])
    if field == "dim":
        k = r.randrange(0, 8)
        struct.pack_into("<h", b, 40 + 2 * k, r.choice([0, -1, 7, 8, 32767, -32768, 9]))
    elif field == "datatype":
        struct.pack_into("<h", b, 70, r.choice([0, 1, 2, 4, 8, 16, 32, 64, 128, 255, 1536, 2304, 9999]))
    elif field == "bitpix":
        struct.pack_into("<h", b, 72, r.choice([0, 1, 8, 64, 999, -8]))
    elif field == "vox_offset":
        struct.pack_into("<f", b, 108, r.choice([0.0, -352.0, 1e9, 3e38, float("nan"), 351.0]))
    elif field == "pixdim":
        struct.pack_into("<f", b, 76 + 4 * r.randrange(0, 8),
                         r.choice([0.0, -1.0, float("nan"), float("inf"), 1e38]))
    elif field == "sizeof_hdr":
        struct.pack_into("<i", b, 0, r.choice([0, 540, -1, 2 ** 31 - 1]))
    else:
        struct.pack_into("<f", b, 112, r.choice([0.0, float("nan"), float("inf"), 1e38]))
    return bytes(b)


def mutate(r, ext, seed_bytes):
    """One mutated file (bytes) and a short description."""
    raw = seed_bytes
    gz = ext == ".nii.gz"
    if gz:
        raw = gzip.decompress(raw)
    how = r.choice(["truncate", "flip", "flip", "header", "header", "header", "extend"])
    if how == "truncate":
        n = r.randrange(0, len(raw) + 1)
        out, desc = raw[:n], "truncate@%d" % n
    elif how == "flip":
        b = bytearray(raw)
        lim = min(len(b), 400) if r.random() < 0.7 else len(b)
        pos = []
        for _ in range(r.randint(1, 6)):
            p = r.randrange(0, lim)
            b[p] ^= 1 << r.randrange(8)
            pos.append(p)
        out, desc = bytes(b), "flip%s" % pos
    elif how == "extend":
        out, desc = raw + bytes(r.randrange(1, 200)), "extend"
    else:
        if ext in (".nii", ".nii.gz"):
            out = _nifti_mutate(r, raw)
            for _ in range(r.randint(0, 2)):
                out = _nifti_mutate(r, out)
        else:
            out = _text_mutate(r, raw)
            for _ in range(r.randint(0, 2)):
                out = _text_mutate(r, out)
        desc = "header"
    if gz:
        if r.random() < 0.2:  # corrupt the gzip stream itself
            z = bytearray(gzip.compress(out))
            z[r.randrange(0, len(z))] ^= 0xFF
            return bytes(z), desc + "+gzflip"
        return gzip.compress(out), desc
    return out, desc


def child_files(folder, limit_bytes):
    """Loads every file listed in folder/list.txt under an address-space
    limit; prints FILE before and RESULT after each."""
    import resource
    import PyCA.Common as common
    import PyCA.Core  # noqa: F401
    import SimpleITK  # noqa: F401  (imported before the limit)
    # limit_bytes beyond what the process maps now: CUDA builds map a lot, and
    # under AddressSanitizer the shadow memory alone is terabytes of address space
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (mapped + limit_bytes, mapped + limit_bytes))
    out = sys.stdout
    with open(os.path.join(folder, "list.txt")) as f:
        names = f.read().split()
    for n in names:
        out.write("FILE %s\n" % n)
        out.flush()
        try:
            im = common.LoadITKImage(os.path.join(folder, n))
            res = "loaded %s" % (im.size(),)
            del im
        except MemoryError:
            res = "MemoryError"
        except (IOError, OSError, ValueError, RuntimeError) as e:
            res = "raised %s" % type(e).__name__
        except Exception as e:
            out.write("FAIL %s unexpected exception %s: %s\n" % (n, type(e).__name__, str(e)[:200]))
            out.flush()
            sys.exit(3)
        out.write("RESULT %s %s\n" % (n, res))
        out.flush()
    out.write("DONE\n")
    out.flush()
    return 0


# ---------------------------------------------------------------------------
# parent side

def _env():
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _last(lines, tag):
    for ln in reversed(lines):
        if ln.startswith(tag):
            return ln
    return None


def run_batch(args, timeout):
    """(ok, message, stdout lines) of one child run."""
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        lines = out.splitlines()
        return False, "timeout after %ss; last: %s" % (timeout, _last(lines, "CALL") or _last(lines, "FILE")), lines
    lines = p.stdout.splitlines()
    if p.returncode == 0 and lines and lines[-1].startswith("DONE"):
        return True, lines[-1], lines
    sig = ""
    if p.returncode < 0:
        sig = " (signal %d)" % -p.returncode
    fail = _last(lines, "FAIL")
    last = fail or _last(lines, "CALL") or _last(lines, "FILE")
    return False, "rc=%d%s; last: %s; stderr: %s" % (p.returncode, sig, last, p.stderr[-600:]), lines


def fuzz_calls(calls, seed, batch=1000, timeout=120, start=0):
    """Runs the calls in child batches; returns [failure messages] and totals."""
    fails = []
    totals = {"returned": 0, "raised": 0}
    i = start
    while i < start + calls:
        n = min(batch, start + calls - i)
        ok, msg, lines = run_batch(["--child-calls", str(seed), str(i), str(n)], timeout)
        if ok:
            m = re.search(r"returned=(\d+) raised=(\d+)", msg)
            totals["returned"] += int(m.group(1))
            totals["raised"] += int(m.group(2))
            i += n
            continue
        fails.append(msg)
        # continue after the offending call
        last = _last(lines, "CALL")
        i = int(last.split()[1]) + 1 if last else i + n
    return fails, totals


def _asan_new_oom(msg):
    """True for a sanitized child stopped by ASan because operator new (not
    PyCA's allocator, which uses posix_memalign and reports MemoryError) could
    not get the memory."""
    return bool(os.environ.get("PYCA_SANITIZED")) and "AddressSanitizer: allocator is out of memory" in msg \
        and "in operator new" in msg


def fuzz_files(per_format, seed, batch=400, timeout=120, limit=2 << 30, keep_dir=None):
    """Mutates per_format files per format; returns ([failures], {result: count},
    [files that hit MemoryError], [(file, reason) of known third-party crashes])."""
    r = random.Random(seed)
    folder = keep_dir or tempfile.mkdtemp(prefix="pyca_fuzz_files_")
    seeds = make_seeds(folder)
    names = []
    for e in FORMATS:
        for k in range(per_format):
            data, _ = mutate(r, e, r.choice(seeds[e]))
            n = "m%05d%s" % (k, e)
            with open(os.path.join(folder, n), "wb") as f:
                f.write(data)
            names.append(n)
    fails, counts, memerr, known = [], {}, [], []
    pos = 0
    while pos < len(names):
        chunk = names[pos:pos + batch]
        with open(os.path.join(folder, "list.txt"), "w") as f:
            f.write("\n".join(chunk))
        ok, msg, lines = run_batch(["--child-files", folder, str(limit)], timeout)
        done = 0
        for ln in lines:
            if ln.startswith("RESULT "):
                _, n, res = ln.split(" ", 2)
                key = res.split(" ")[0] + (" " + res.split(" ")[1] if res.startswith("raised") else "")
                counts[key] = counts.get(key, 0) + 1
                if res == "MemoryError":
                    memerr.append(n)
                done += 1
        if ok:
            pos += len(chunk)
        else:
            bad = chunk[done] if done < len(chunk) else None
            why = known_file_crash(os.path.join(folder, bad)) if bad and "signal" in msg else None
            if why:
                known.append((bad, why))
            elif bad and _asan_new_oom(msg):
                # Under AddressSanitizer a throwing operator new that cannot be
                # satisfied aborts instead of throwing std::bad_alloc (ASan has no
                # way to throw); without ASan this is the MemoryError outcome,
                # which the plain build's run checks.
                counts["MemoryError"] = counts.get("MemoryError", 0) + 1
                memerr.append(bad)
            else:
                fails.append("%s: %s" % (bad, msg))
            pos += done + 1
    if keep_dir is None:
        shutil.rmtree(folder, ignore_errors=True)
    return fails, counts, memerr, known


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--files", type=int, default=0, help="mutated files per format")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--only", type=int, default=None, help="run call ONLY in this process")
    ap.add_argument("--child-calls", nargs=3, type=int, metavar=("SEED", "START", "N"))
    ap.add_argument("--child-files", nargs=2, metavar=("FOLDER", "LIMIT"))
    a = ap.parse_args(argv)
    if a.child_calls:
        return child_calls(*a.child_calls)
    if a.child_files:
        return child_files(a.child_files[0], int(a.child_files[1]))
    if a.only is not None:
        return child_calls(a.seed, a.only, 1)
    rc = 0
    if a.calls:
        fails, totals = fuzz_calls(a.calls, a.seed, a.batch, a.timeout)
        print("calls: %d (returned %d, raised %d), failures: %d"
              % (a.calls, totals["returned"], totals["raised"], len(fails)))
        for f in fails:
            print("  " + f)
        rc |= bool(fails)
    if a.files:
        fails, counts, memerr, known = fuzz_files(a.files, a.seed, timeout=a.timeout)
        print("files: %d per format x %d formats: %s, failures: %d"
              % (a.files, len(FORMATS), counts, len(fails)))
        for f in fails:
            print("  " + f)
        for n, why in known:
            print("  known crash %s: %s" % (n, why))
        if memerr:
            print("  MemoryError (2 GB address-space limit): %s" % " ".join(memerr))
        rc |= bool(fails)
    return int(rc)


if __name__ == "__main__":
    sys.exit(main())
