"""The docstrings of PyCA.Core: one table, read at build time by gen_core_docs.py.

Plain Python data (no imports beyond the standard library). Google style
("Args:", "Returns:", "Raises:", "Example:") for Sphinx napoleon.

How an entry is found (lookup() below), for a function NAME or a member
CLASS.NAME of the built module:
  1. DOCS['NAME'] / DOCS['CLASS.NAME'] (the class docstring: DOCS['CLASS']);
  2. the same with the class's group (GROUPS: Vec3Di -> Vec3D, the CPU/GPU
     classes -> their family, ...);
  3. for functions, the pattern families (pointwise operators: X, X_I, XC,
     XC_I and their masked overloads share one template filled per name).
An entry is a dict: summary (required), details, args {name: text} (overrides
the glossary), returns, raises, example.

Argument descriptions come from ARGS (by C++ parameter name, the names SWIG
reports in the signatures), or (CLASS-group, name) keys, or the entry's args.
The generator lists every argument of every overload; one it cannot describe
is left out, and Testing/Python/test_core_docs.py fails on it.

To document a new name: add DOCS['Name'] = doc('summary', ...) (or a family
member in the tables below), and an ARGS entry for any new parameter name.
"""
import re

# ---- shared phrases ----------------------------------------------------------------

GRID_ERRORS = ("RuntimeError: 'Input grids are not equal' when the image/field arguments do not share "
               "one grid (size, spacing and origin), 'memory types are not compatible' when their "
               "memory types differ (both messages start with the C++ declaration of the overload).\n"
               "TypeError: no overload takes these argument types.")
TYPE_ERRORS = "TypeError: no overload takes these argument types."

STREAM = ("CUDA stream (None, or a stream from GetStream); None means the default stream. "
          "Ignored on the CPU.")
ONDEV = ("GPU-parameter mode: read the constant from device memory (legacy EXEC_GPU_PARAM). "
         "Leave False from Python.")
MASK = ("Mask image (same grid and memory type): only voxels where a_mask is nonzero are "
        "written; the others keep their value.")
BG = ("Background strategy for samples outside the grid: BACKGROUND_STRATEGY_CLAMP (nearest "
      "border value), _WRAP, _ZERO, _VAL, _ID / _PARTIAL_ID (identity for H-fields), "
      "_PARTIAL_ZERO (zero for V-fields).")
INTERP = "Interpolation: INTERP_LINEAR (trilinear), INTERP_NN (nearest) or INTERP_CUBIC."
DIFF = "Finite difference: DIFF_CENTRAL, DIFF_FORWARD or DIFF_BACKWARD."
BC = ("Boundary condition of the differences: BC_CLAMP (zero derivative), BC_WRAP (periodic) "
      "or BC_APPROX (one-sided differences at the border).")
HFIELD = ("H-fields hold absolute sample positions in voxel coordinates (identity: h(x) = x); "
          "V-fields hold displacements in physical units (divided by the spacing to become "
          "voxels).")
INPLACE = "The _I form writes the result into its first argument (a_o is both input and output)."


def doc(summary, details=None, args=None, returns=None, raises=None, example=None):
    d = {'summary': summary}
    for k, v in (('details', details), ('args', args), ('returns', returns), ('raises', raises),
                 ('example', example)):
        if v:
            d[k] = v
    return d


# ---- argument glossary (C++ parameter names) ------------------------------------------

ARGS = {
    'a_o': 'Output (overwritten).',
    'd_o': 'Output (overwritten).',
    'a_i': 'First input.',
    'd_i': 'First input.',
    'a_i1': 'Second input.',
    'd_i1': 'Second input.',
    'a_i2': 'Third input.',
    'd_i2': 'Third input.',
    'd_i3': 'Fourth input.',
    'a_mask': MASK,
    'st': STREAM,
    'stream': STREAM,
    'onDev': ONDEV,
    'c': 'Constant operand.',
    'bg': BG,
    'interp': INTERP,
    'diff': DIFF,
    'bc': BC,
    'delta': 'Step factor applied to the V-field (time step).',
    'update': ('Combine with the previous value of the output (legacy C++ accumulation); '
               'meaningless from Python: leave False.'),
    'dim': 'Axis or component index: DIM_X/DIM_Y/DIM_Z (0, 1, 2).',
    'eps': 'Threshold/smoothing width (same units as the data).',
    'dir': 'True: the coordinate cycle x<-y, y<-z, z<-x; False: the reverse cycle.',
    'start': 'Corner of the sub-volume in voxels of the larger grid (Vec3Di).',
    'normalize': 'Divide by the accumulated trilinear weights.',
    'rescaleVector': 'Divide the vectors by the size ratio (for displacement fields).',
    'useOriginOffset': 'Centre the samples with an offset of (ratio - 1) / 2 voxels.',
    'kernel': 'Odd-sized kernel image (correlated, not flipped; CLAMP boundary).',
    'numIter': 'Number of fixed-point iterations.',
    'radius': 'Half-width of the box in voxels per axis (Vec3Di, each >= 0).',
    'a_tmp': 'Scratch image of the input\'s grid (not the input or the output).',
    'accum': 'Add to the output instead of overwriting it.',
    'op': 'OP_VAL (the difference) or OP_SQR (its square).',
    'a_speed': 'Speed image selecting the upwind direction (> 0: backward, < 0: forward).',
    'a_w': 'Optional weight image pushed along with the values.',
    'a_h': 'H-field: absolute sample positions in voxel coordinates. ' + HFIELD,
    'h': 'H-field (absolute sample positions, voxels).',
    'a_u': 'V-field: displacements in physical units.',
    'u': 'V-field: displacements in physical units.',
    'a_v': 'Output V-field (displacements, physical units).',
    'v': 'V-field (displacements, physical units).',
    'a_f': 'Output H-field.',
    'a_g': 'H-field applied first.',
    'f': 'Input H-field.',
    'g': 'H-field (deformation).',
    't': 'Translation in voxels (Vec3Df).',
    'a_hInv': 'Output: the approximate inverse H-field.',
    'ginv': 'Output: the inverse H-field.',
    'ginv0t1': 'Output: the updated inverse H-field.',
    'scratchV': 'Scratch field of the same grid.',
    'ginv0t': 'Current inverse H-field.',
    'w': 'Forward update V-field of the step.',
    'Z': 'Output field.',
    'X': 'First vector field.',
    'Y': 'Second vector field.',
    'n': 'Output momentum field.',
    'm': 'Momentum field.',
    'a_jdet': 'Output: the Jacobian determinant.',
    'a_detJ': 'Output: the Jacobian determinant.',
    'a_Xg': 'Gradient field of the x component.',
    'a_Yg': 'Gradient field of the y component.',
    'a_Zg': 'Gradient field of the z component.',
    'a_vo': 'Output V-field.',
    'd_vo': 'Output field.',
    'd_h': 'H-field (positions, voxels).',
    'd_vi': 'Input field to splat.',
    'aff_in': 'Affine transform in world coordinates (Aff3Df).',
    'invertAff': 'Use the inverse of aff_in.',
    'a': 'First constant (float, or Vec3Df per component for fields).',
    'b': 'Second constant (float, or Vec3Df per component for fields).',
    'ca': 'Constant multiplying the first input.',
    'cb': 'Constant multiplying the second input.',
    'co': 'Constant multiplying the output\'s old value.',
    # utilities
    'type': 'Memory type: MEM_HOST, MEM_HOST_PINNED, MEM_DEVICE (or MEM_UNINITIALIZED).',
    'memType': 'Memory type: MEM_HOST (default), MEM_HOST_PINNED or MEM_DEVICE.',
    'nStream': 'Number of CUDA streams to create.',
    'id': 'Stream index (0: the default stream, None).',
    'nstreams': 'Number of streams the caller needs.',
    'what': 'What is incompatible (message text).',
    'file': 'Source file of the caller.',
    'line': 'Source line of the caller.',
    'sol': 'Suggested solution (message text).',
    'path': "CPU code path: 'auto', 'baseline' or 'avx2'.",
    'deviceNum': 'CUDA device index.',
    'msg': 'Text added to the error message.',
    'devNum': 'CUDA device index.',
    'major': 'Required compute capability, major number.',
    'minor': 'Required compute capability, minor number.',
    # containers
    'grid': 'Grid (size in voxels, spacing and origin in physical units).',
    'sx': 'Size in x (voxels).',
    'sy': 'Size in y (voxels).',
    'sz': 'Size in z (voxels).',
    'size': 'Size in voxels (Vec3Di).',
    'sp': 'Spacing: physical size of a voxel (Vec3Df).',
    'org': 'Origin: physical position of voxel (0, 0, 0) (Vec3Df).',
    'preserveData': 'Keep the old values (as a flat array) in the new buffer.',
    'other': 'The other object.',
    'i': 'Flat index (x fastest).',
    'x': 'Voxel x index.',
    'y': 'Voxel y index.',
    'z': 'Voxel z index.',
    'o': 'The other object.',
    'mm': 'MemoryManager the pools come from.',
    'nPools': 'Number of pools allocated up front.',
    'bytes': 'Limit in bytes (0: none).',
    'filename': 'File name.',
    'l': 'Nested lists of values.',
    'versioned': 'Produce a versioned DLPack capsule.',
    'copied': 'Mark the capsule as a copy.',
    'obj': 'An object exporting __dlpack__ (NumPy, CuPy, PyTorch, ...).',
    'copy': 'None: share when possible; True: always copy; False: never copy (error if needed).',
    'max_version': 'Highest DLPack version the consumer understands.',
    'dl_device': 'Requested device (DLPack device tuple) or None.',
    # algorithms
    'alpha': 'Weight of the Laplacian term of L = -alpha*Lap - beta*grad div + gamma.',
    'beta': 'Weight of the grad div term of L.',
    'gamma': 'Weight of the identity term of L.',
    'lpow': 'Power of the operator L (>= 0).',
    'df': 'Project the result onto divergence-free fields.',
    'sigma': 'Standard deviation of the Gaussian per axis, in voxels (Vec3Df).',
    'kernelRadius': 'Half-width of the kernel in voxels per axis (Vec3Di).',
    'origGrid': 'Grid of the full-resolution data.',
    'downsampleFactor': 'Integer downsampling factor of the new level (> 0).',
    'level': 'Scale level index (0: the coarsest added).',
    'verbose': 'Print the levels as they change.',
    'factor': 'Integer downsampling factor (> 0).',
    'scaleManager': 'The MultiscaleManager whose current level is used.',
    'sI': 'Output image at the current scale.',
    'orgI': 'Input image at full resolution.',
    'sF': 'Output field at the current scale.',
    'orgF': 'Input field at full resolution.',
    'bins': 'Number of histogram bins per image (2..4096).',
    'fixedLo': 'Lower end of the fixed image\'s intensity range.',
    'fixedHi': 'Upper end of the fixed image\'s intensity range.',
    'movingLo': 'Lower end of the moving image\'s intensity range.',
    'movingHi': 'Upper end of the moving image\'s intensity range.',
    'fixed': 'Fixed image.',
    'moving': 'Moving image (same grid).',
    'mask': 'Optional mask image: only voxels where it is nonzero count.',
    'x_': 'x component.',
    'y_': 'y component.',
    'z_': 'z component.',
    'tx': 'Translation in x.',
    'ty': 'Translation in y.',
    'tz': 'Translation in z.',
    'r': 'Row index (0..2).',
    'idx': 'Flat index (row-major, 0..8).',
    'a00': 'Matrix entry (row 0, column 0); a01 .. a22 likewise, row-major.',
    'rhs': 'Right-hand affine transform.',
    'vIn': 'Input vector.',
    'vOut': 'Output vector.',
    'mode': 'Execution mode.',
}
for _n in ('a01', 'a02', 'a10', 'a11', 'a12', 'a20', 'a21', 'a22'):
    ARGS[_n] = 'Matrix entry (row %s, column %s).' % (_n[1], _n[2])
del _n

# Per-class (group) argument meanings where a name means something else there.
CLASS_ARGS = {
    ('Vec3D', 'i'): 'Component index 0, 1 or 2.',
    ('Vec3D', 'v'): 'The value (every component for the one-argument constructor).',
    ('Vec3D', 'o'): 'The other vector.',
    ('Vec3D', 'sx'): 'Factor in x.', ('Vec3D', 'sy'): 'Factor in y.', ('Vec3D', 'sz'): 'Factor in z.',
    ('Vec3D', 'other'): 'Vector to copy.',
    ('Vec3D', 'l'): 'Three numbers [x, y, z].',
    ('Mat3D', 'm'): 'The other matrix.', ('Mat3D', 'v'): 'Vector (Vec3Df) or entry value.',
    ('Mat3D', 'c'): 'Column index (0..2).', ('Mat3D', 'o'): 'Matrix to copy.',
    ('Mat3D', 'oth'): 'Matrix to copy.', ('Mat3D', 'l'): 'Nested lists, 3 x 3.',
    ('Aff3D', 'm'): 'Linear part (Mat3Df).', ('Aff3D', 'v'): 'Translation or vector (Vec3Df).',
    ('Aff3D', 'o'): 'The other transform.', ('Aff3D', 'l'): 'Nested lists, 4 x 4 or 3 x 4.',
    ('FluidKernelFFT', 'eps'): "Spectral tolerance, 0 <= eps < 1: a fraction of K's largest multiplier.",
    ('FluidKernelFFT', 'banded'): "True: applyOperator keeps only K's band; False: the full L.",
    ('GridInfo', 'size'): 'Size in voxels (Vec3Di).', ('GridInfo', 's'): 'New value.',
    ('GridInfo', 'o'): 'The other grid (or new origin for setOrigin).',
    ('GridInfo', 'ot'): 'Grid to copy.',
    ('Image3D', 'v'): 'The value.', ('Image3D', 'l'): 'Nested [x][y][z] lists.',
    ('Image3D', 'size'): 'Capacity as a size in voxels.', ('Image3D', 'nVox'): 'Capacity in voxels.',
    ('Field3D', 'v'): 'The vector (Vec3Df).', ('Field3D', 'l'): 'Nested [x][y][z][3] lists.',
    ('Field3D', 'size'): 'Capacity as a size in voxels.', ('Field3D', 'nVox'): 'Capacity in voxels.',
    ('Field3D', 'd'): 'Component 0, 1 or 2.',
    ('FieldComponent', 'field'): 'The field.', ('FieldComponent', 'd'): 'Component 0, 1 or 2.',
    ('FluidKernelFFT', 'f'): 'Force (momentum) field.', ('FluidKernelFFT', 'v'): 'Velocity field.',
    ('GaussianFilter', 'size'): 'Size of the images to filter (Vec3Di).',
    ('GaussianFilter', 'a_o'): 'Output image or field.', ('GaussianFilter', 'a_i'): 'Input (same grid).',
    ('MultiscaleResampler', 'h'): 'H-field to upsample to the current level.',
    ('MultiscaleResampler', 'v'): 'V-field to upsample to the current level.',
    ('MutualInformation', 'a_o'): 'Output: the gradient image (not an input).',
    ('Multiscale', 'grid'): 'Grid to downscale.',
}

# ---- class groups ----------------------------------------------------------------------------

GROUPS = {}
for _c in ('Vec3Di', 'Vec3Df', 'Vec3Dd', 'Vec3Du'):
    GROUPS[_c] = 'Vec3D'
for _c in ('Mat3Df', 'Mat3Dd'):
    GROUPS[_c] = 'Mat3D'
for _c in ('Aff3Df', 'Aff3Dd'):
    GROUPS[_c] = 'Aff3D'
for _c in ('FluidKernelFFTInterface', 'FluidKernelFFTCPU', 'FluidKernelFFTGPU'):
    GROUPS[_c] = 'FluidKernelFFT'
for _c in ('GaussianFilterInterface', 'GaussianFilterCPU', 'GaussianFilterGPU'):
    GROUPS[_c] = 'GaussianFilter'
for _c in ('MultiscaleResamplerInterface', 'MultiscaleResamplerCPU', 'MultiscaleResamplerGPU',
           'MultiscaleResamplerGaussCPU', 'MultiscaleResamplerGaussGPU'):
    GROUPS[_c] = 'MultiscaleResampler'
GROUPS['ManagedImage3D'] = 'Image3D'
GROUPS['ManagedField3D'] = 'Field3D'
del _c


def arg_doc(cls, name):
    """Description of argument NAME of a member of CLS ('' for functions)."""
    if cls:
        for c in (cls, GROUPS.get(cls)):
            if c and (c, name) in CLASS_ARGS:
                return CLASS_ARGS[(c, name)]
    return ARGS.get(name)


# ---- pointwise families ------------------------------------------------------------------

UNARY = {
    'Abs': '|x|', 'Cube': 'x^3', 'Exp': 'exp(x)', 'Log': 'ln(x) (natural logarithm)', 'Neg': '-x',
    'Ramp': 'max(x, 0)', 'Sgn': 'the sign of x (-1, 0 or 1)', 'Step': '0 where x < 0, 0.5 where x == 0, 1 where x > 0',
    'Sqr': 'x^2', 'Sqrt': 'sqrt(x)', 'Inv': '1/x', 'Ceil': 'ceil(x)', 'Floor': 'floor(x)',
    'Round': 'x rounded to the nearest integer, halves away from zero', 'Sin': 'sin(x)',
    'Asin': 'asin(x)', 'Cos': 'cos(x)', 'Acos': 'acos(x)', 'Tan': 'tan(x)', 'Atan': 'atan(x)',
    'Csc': '1/sin(x)', 'Sec': '1/cos(x)', 'Cot': '1/tan(x)',
}

# name: (formula with a, b; field support text)
BINARY = {
    'Add': ('a + b', 'Fields: Field3D + Field3D, Field3D + Image3D (the image added to each '
            'component); AddC: Field3D + Vec3Df or float.'),
    'Sub': ('a - b', 'Fields as for Add.'),
    'Mul': ('a * b', 'Fields as for Add (Field3D * Field3D is componentwise).'),
    'Div': ('a / b', 'Fields as for Add (Field3D / Field3D is componentwise).'),
    'Max': ('max(a, b)', 'Also Field3D with Field3D; MaxC: Field3D with Vec3Df or float.'),
    'Min': ('min(a, b)', 'Also Field3D with Field3D; MinC: Field3D with Vec3Df or float.'),
    'Atan2': ('atan2(a, b)', ''),
    'GT': ('1.0 where a > b, else 0.0', ''),
    'GTE': ('1.0 where a >= b, else 0.0', ''),
    'EQ': ('1.0 where a == b, else 0.0', ''),
    'NEQ': ('1.0 where a != b, else 0.0', ''),
    'LT': ('1.0 where a < b, else 0.0', ''),
    'LTE': ('1.0 where a <= b, else 0.0', ''),
}

# Fused operators: name -> formula in the inputs a_i, a_i1, a_i2 and constants c, a, b.
FUSED = {
    'PowC': 'a_o = a_i ** c',
    'AbsDiff': 'a_o = |a_i - a_i1|',
    'SqrDiff': 'a_o = (a_i - a_i1)^2',
    'MulMul': 'a_o = a_i * a_i1 * a_i2',
    'MulAdd': 'a_o = a_i * a_i1 + a_i2',
    'MulSub': 'a_o = a_i * a_i1 - a_i2',
    'AddMul': 'a_o = (a_i + a_i1) * a_i2',
    'AddDiv': 'a_o = (a_i + a_i1) / a_i2',
    'SubMul': 'a_o = (a_i - a_i1) * a_i2',
    'SubDiv': 'a_o = (a_i - a_i1) / a_i2',
    'MulCAdd': 'a_o = a_i * c + a_i1',
    'MulCSub': 'a_o = a_i * c - a_i1',
    'MulCAddC': 'a_o = a_i * a + b',
    'AddCMulC': 'a_o = (a_i + a) * b',
    'AddMulC': 'a_o = (a_i + a_i1) * c',
    'SubMulC': 'a_o = (a_i - a_i1) * c',
    'MulMulC': 'a_o = a_i * a_i1 * c',
    'Add_MulC': 'a_o = a_i + a_i1 * c',
    'MulC_Add_MulC': 'a_o = a_i * a + a_i1 * b',
    'AddCMulCAddC': 'a_o = (a_i + a) * b + c',
    'Add_Mul': 'a_o = a_i + a_i1 * a_i2',
    'Sub_Mul': 'a_o = a_i - a_i1 * a_i2',
    'Add_AddMulC': 'a_o = a_i + (a_i1 + a_i2) * c',
    'Add_SubMulC': 'a_o = a_i + (a_i1 - a_i2) * c',
    'Sub_AddMulC': 'a_o = a_i - (a_i1 + a_i2) * c',
    'Sub_SubMulC': 'a_o = a_i - (a_i1 - a_i2) * c',
    'Add_MulMulC': 'a_o = a_i + a_i1 * a_i2 * c',
    'Sub_MulMulC': 'a_o = a_i - a_i1 * a_i2 * c',
}


def _inplace_formula(f):
    """The _I form: a_o takes the place of a_i, the later inputs shift down by one."""
    rhs = f.split('=', 1)[1]
    rhs = rhs.replace('a_i2', '\0').replace('a_i1', '\1').replace('a_i', 'a_o')
    return 'a_o = ' + rhs.replace('\1', 'a_i').replace('\0', 'a_i1').strip()


def family(name):
    """The generated entry of a pointwise family member, or None."""
    base, inplace = (name[:-2], True) if name.endswith('_I') else (name, False)
    tail = ('\n\n' + INPLACE) if inplace else ''
    if base in UNARY:
        arg = 'a_o' if inplace else 'a_i'
        f = UNARY[base]
        what = 'a_o = ' + (re.sub(r'\bx\b', arg, f) if re.search(r'\bx\b', f) else '%s of %s' % (f, arg))
        return doc('Pointwise %s: %s (images).' % (name, what),
                   details='Overloads: without and with a mask (a_mask).' + tail,
                   raises=GRID_ERRORS,
                   example='%s(out, im)' % base if not inplace else '%s(im)' % name)
    if base in BINARY or (base.endswith('C') and base[:-1] in BINARY):
        const = base not in BINARY
        op = base[:-1] if const else base
        formula, fields = BINARY[op]
        first, second = ('a_o', 'a_i') if inplace else ('a_i', 'a_i1')
        second = 'c' if const else '(%s or c)' % second
        lhs = re.sub(r'\bb\b', second, re.sub(r'\ba\b', first, formula))
        summary = 'Pointwise %s: a_o = %s.' % (name, lhs)
        details = ('The second operand is %s. Overloads: without and with a mask (a_mask).'
                   % ('the constant c' if const else 'an image (a_i1, or a_i for _I) or a float constant c'))
        if fields:
            details += ' ' + fields
        if op in ('Max', 'Min') and not const and not inplace:
            details += (' With one array argument, %s(a_i[, update, st, onDev]) is the reduction: '
                        'the %s value of an image or field, a float.' % (op, 'largest' if op == 'Max' else 'smallest'))
        return doc(summary, details=details + tail, raises=GRID_ERRORS,
                   example=('%s(out, a, b)' % name) if not inplace else ('%s(a, b)' % name))
    if base in FUSED:
        f = FUSED[base]
        return doc('Fused pointwise operator: %s.' % (_inplace_formula(f) if inplace else f),
                   details=('Images, and fields where an overload takes Field3D (constants are then '
                            'a float or a Vec3Df per component).' + tail),
                   raises=GRID_ERRORS)
    return None


# ---- per-name entries --------------------------------------------------------------------------

DOCS = {}
D = DOCS

# utilities
D['MemTypeStr'] = doc('Human-readable name of a memory type: "host memory", "pinned host memory", '
                      '"gpu_device_memory" or "uninitialized memory".', returns='str')
D['MemTypeName'] = doc('Short name of a memory type (MEM_HOST -> "MEM_HOST", ...).', returns='str')
D['isHostAccessible'] = doc('Whether memory of this type can be read by the CPU (host or pinned).',
                            args={'t': 'Memory type (MEM_HOST, MEM_HOST_PINNED, MEM_DEVICE).'},
                            returns='bool')
D['StreamCreate'] = doc('Creates nStream CUDA streams (GetStream(i) returns them).',
                        raises='RuntimeError: in CPU builds, or for a negative count.')
D['StreamDestroy'] = doc('Destroys the streams made by StreamCreate.', raises='RuntimeError: in CPU builds.')
D['GetStream'] = doc('The CUDA stream number id, for the stream argument st of the operators.',
                     returns='An opaque stream handle, or None for id 0 without streams.')
D['CheckStreamCondition'] = doc('Checks that nstreams streams exist (legacy helper).')
D['StreamIncompatibleWarning'] = doc('Prints the legacy warning about a stream used with '
                                     'incompatible memory (what, where, and an optional solution).')
D['CudaCompiled'] = doc('Whether this build of PyCA has CUDA support.', returns='bool',
                        example='if CudaCompiled(): im.toType(MEM_DEVICE)')
D['SetCPUDispatch'] = doc("Selects the CPU code path of the pointwise operators and reductions: "
                          "'auto' (AVX2 where the CPU has it), 'baseline' or 'avx2'.",
                          raises="TypeError: path is not a str.\nValueError: an unknown path, or "
                                 "'avx2' on a CPU without AVX2.")
D['GetCPUDispatch'] = doc("The CPU code path in use: 'baseline' or 'avx2'.", returns='str')
D['GetNumberOfCUDADevices'] = doc('Number of CUDA devices (0 in CPU builds).', returns='int')
D['SetCUDADevice'] = doc('Selects the CUDA device used by this thread.',
                         raises='RuntimeError: in CPU builds or for an invalid device number.')
D['CheckCUDAError'] = doc('Raises if CUDA reported an error (no-op in CPU builds).',
                          raises='RuntimeError: the pending CUDA error, with file, line and msg.')
D['GetCUDAMemUsage'] = doc('Free and total GPU memory as text ("CUDA support not compiled" on CPU).',
                           returns='str')
D['AssertMinCUDACapabilityVersion'] = doc('Checks the compute capability of a device (default: the '
                                          'current one) against major.minor.',
                                          raises='RuntimeError: the device is older, or no CUDA.')

# the CPU FFT library (FluidKernelFFT.h; an extension)
D['GetCPUFFTBackend'] = doc("The FFT library of FluidKernelFFTCPU in this build: 'fftw' (FFTW 3, "
                            "preferred) or 'pocketfft' (bundled; built where CMake found no FFTW, "
                            "or with -DPYCA_FFT=pocketfft). Both compute the same to float rounding; "
                            "pocketfft is slower and ignores PYCA_FFTW_PLANNER and PYCA_FFTW_WISDOM.",
                            returns='str')

# the CPU back end's team size (CPUThreads.h; an extension)
D['GetCPUMaxThreads'] = doc("The largest team of the CPU back end's parallel regions: OpenMP's "
                            "omp_get_max_threads() (OMP_NUM_THREADS; PyCA's default, see "
                            "PyCA.threading_info()).", returns='int')
D['GetCPUThreads'] = doc("The team size of the CPU back end's next parallel region: "
                         "GetCPUMaxThreads(), lowered while other processes keep the allowed CPUs busy.",
                         "Measured at most every 100 ms from /proc/stat: the CPUs other processes "
                         "used are subtracted from those of the affinity mask, rounded, at least 1. "
                         "A thread on a core another process holds makes every barrier wait a "
                         "scheduler slice. Results do not depend on it.", returns='int')
D['SetCPUThreadsAdaptive'] = doc('Turns the adaptive team size (GetCPUThreads) on or off.',
                                 'On by default, unless the environment says PYCA_ADAPTIVE_THREADS=0. '
                                 'Off, every region uses GetCPUMaxThreads() threads.',
                                 args={'on': 'True to adapt, False for fixed teams.'})
D['GetCPUThreadsAdaptive'] = doc('Whether the team size adapts to the load of other processes '
                                 '(SetCPUThreadsAdaptive).', returns='bool')

# image utilities
D['Copy'] = doc('Copies values: a_o = a_i (also masked), across memory types (host, pinned, '
                'device) for Image3D->Image3D and Field3D->Field3D.',
                details='Component forms: Copy(im, field, dim) copies component dim of a field '
                        'into an image; Copy(field, im, dim) the reverse.',
                raises=GRID_ERRORS, example='Copy(dev_im, host_im)')
D['SetMem'] = doc('Fills with a constant: a_o = c (images: float; fields: float or Vec3Df), '
                  'optionally only inside a mask.',
                  args={'v': 'Constant vector (Vec3Df), one value per component.',
                        'mask': MASK.replace('a_mask', 'mask'), 'c': 'Constant value.'}, raises=GRID_ERRORS, example='SetMem(im, 0.0)')
D['ShiftCoordinate'] = doc('Permutes the axes cyclically (the output grid is the permuted one).',
                           raises="RuntimeError: 'ShiftCoordinate cannot run in place (a_o == a_i)'.")
D['SubVol'] = doc('Crops: a_o = the block of a_i starting at voxel start, of a_o\'s size.',
                  raises=TYPE_ERRORS)
D['SetSubVol_I'] = doc('Pastes a_i into a_o at voxel start.', raises=TYPE_ERRORS)
D['Shrink'] = doc('Soft threshold: max(x - c, 0) + min(x + c, 0) (fields: on the vector length, '
                  'threshold eps).', raises=GRID_ERRORS)
D['Shrink_I'] = doc('In-place Shrink: a_o = max(a_o - c, 0) + min(a_o + c, 0) (fields: on the '
                    'vector length).', raises=GRID_ERRORS)
D['SoftAbs'] = doc('Huber-like smooth |x| with width eps: a_o = softabs(a_i).', raises=GRID_ERRORS)
D['SoftAbs_I'] = doc('In-place SoftAbs: a_o = softabs(a_o) with width eps.', raises=GRID_ERRORS)
D['SoftSgn'] = doc('Smooth sign: a linear ramp in [-eps, eps], -1/1 outside.', raises=GRID_ERRORS)
D['SoftSgn_I'] = doc('In-place SoftSgn.', raises=GRID_ERRORS)
D['Resample'] = doc('Resamples a_i onto a_o\'s voxel grid (sizes only: spacing and origin are '
                    'ignored). Equal sizes copy.',
                    details='Fields are always centred; rescaleVector divides the vectors by the size '
                            'ratio. Use ResampleWorld to resample through physical coordinates.',
                    raises=TYPE_ERRORS)
D['ResampleWorld'] = doc('Resamples a_i onto a_o\'s grid through world coordinates (both grids\' '
                         'origin and spacing).', raises=TYPE_ERRORS)
D['SplatWorld'] = doc('Adjoint of ResampleWorld: pushes a_i into a_o with trilinear weights, '
                      'accumulating (zero a_o first); a_w receives the weights.', raises=TYPE_ERRORS)
D['Convolve'] = doc('Correlates a_i with an odd-sized kernel image (not flipped), CLAMP boundary.',
                    raises=GRID_ERRORS)

# image <-> field operators
_DEFORM_RAISES = GRID_ERRORS
D['ApplyH'] = doc('Deforms by an H-field: a_o(x) = a_i(h(x)) (images; fields component by '
                  'component, bg required).',
                  details=HFIELD + ' The H-field shares a_o\'s grid; a_i may have any grid of the '
                  'same size.', args={'a_h': 'H-field: sample positions in voxels of a_i.',
                                      'h': 'H-field: sample positions in voxels of a_i.'},
                  raises=_DEFORM_RAISES, example='ApplyH(out, im, h, BACKGROUND_STRATEGY_CLAMP)')
D['ApplyV'] = doc('Deforms by a V-field: a_o(x) = a_i(x + delta * u(x) / spacing).',
                  details=HFIELD, raises=_DEFORM_RAISES)
D['ApplyVInv'] = doc('Deforms by the inverse step of a V-field: a_o(x) = a_i(x - delta * u(x) / spacing).',
                     details=HFIELD, raises=_DEFORM_RAISES)
D['ComposeTranslation'] = doc('Translates: a_o(x) = a_i(x + t) (images) or a_h(x) = a_f(x + t) '
                              '(fields), t in voxels.', raises=_DEFORM_RAISES)
D['Splat'] = doc('Adjoint of interpolation: pushes a_i(x) to a_h(x) with trilinear weights into a_o.',
                 args={'a_h': 'H-field: target positions in voxels.'}, raises=_DEFORM_RAISES)
D['FiniteDiff'] = doc('Finite difference of a_i along one axis into a_o.', raises=GRID_ERRORS)
D['Gradient'] = doc('Gradient of an image: a_o = (d/dx, d/dy, d/dz) a_i, divided by the spacing.',
                    details='The raw-array form takes a field component (field.x) as a_i.',
                    raises=GRID_ERRORS + '\nTypeError: a_i is None.', example='Gradient(g, im)')
D['Gradient2'] = doc('Gradient computed with one-sided second-order differences (CPU only).',
                     raises=GRID_ERRORS + "\nRuntimeError: 'GPU Gradient2 unimplemented' on the GPU.")
D['GradientMask'] = doc('Gradient inside a mask: neighbours outside a_mask are replaced by the centre '
                        'value (zero flux across the border).',
                        args={'a_mask': 'Mask image (nonzero: inside).'},
                        raises=GRID_ERRORS + '\nRuntimeError: BC_WRAP is not supported.')
D['GradFor'] = doc('Gradient by forward differences.', raises=GRID_ERRORS)
D['GradForMag'] = doc('Magnitude of the forward-difference gradient.', raises=GRID_ERRORS)
D['GradientMag'] = doc('Magnitude of the gradient: a_o = |grad a_i|.', raises=GRID_ERRORS)
D['UpwindDiff'] = doc('Upwind difference along dim (speed > 0: backward, < 0: forward).',
                      raises=GRID_ERRORS)
D['UpwindGradMag'] = doc('Upwind gradient magnitude times speed: a_o = |grad a_i| * speed.',
                         raises=GRID_ERRORS)
D['Divergence'] = doc('Divergence of a field: a_o = div a_i (physical units).', raises=GRID_ERRORS)
D['DivBack'] = doc('Divergence by backward differences (the adjoint of GradFor, for TV).',
                   raises=GRID_ERRORS)
D['Magnitude'] = doc('Vector length of a field: a_o = |a_i|.', raises=GRID_ERRORS)
D['SqrMagnitude'] = doc('Squared vector length of a field: a_o = |a_i|^2.', raises=GRID_ERRORS)
D['ComponentDotProd'] = doc('Pointwise dot product of two fields: d_o = d_i . d_i1.', raises=GRID_ERRORS)
D['JacDetH'] = doc('Jacobian determinant of an H-field as the legacy defines it, or the determinant '
                   'of the matrix with rows a_Xg, a_Yg, a_Zg (2 x 2 when the size in z is 1).',
                   details=HFIELD + ' The derivatives of the voxel-coordinate H-field are divided by '
                           'the spacing (as Gradient and Jacobian), so the identity gives 1 / voxel volume; '
                           'JacDetHVoxel gives the volume ratio (1 for the identity).',
                   raises=GRID_ERRORS, example='JacDetH(jdet, h)')
D['JacDetHVoxel'] = doc('Jacobian determinant of an H-field in voxel units (PyCA extension, not in the '
                        'legacy): JacDetH times the voxel volume, so the identity gives 1 and an affine '
                        'map its determinant on any spacing (the local volume ratio). The three-field '
                        'form takes the physical gradients that Jacobian returns.',
                        details=HFIELD, raises=GRID_ERRORS, example='JacDetHVoxel(jdet, h)')
D['JacobianNormSqr'] = doc('Squared Frobenius norm of the Jacobian of a field, per voxel (PyCA extension, '
                           'not in the legacy): a_o = sum of the squares of the nine derivatives that '
                           'Jacobian returns (divided by the spacing), in one pass without storing them. '
                           'sqrt(Max(a_o)) is max_x |Dv(x)|, the stability number of a time step of size 1.',
                           raises=GRID_ERRORS, example='JacobianNormSqr(n2, v); dvmax = Max(n2) ** 0.5')
D['JacDetV'] = doc('Jacobian determinant det(I + J) from the gradients of a V-field.', raises=GRID_ERRORS)
D['JacDetVInv'] = doc('Legacy det(I - J) from the gradients of a V-field (only the diagonal is '
                      'negated, as in the legacy).', raises=GRID_ERRORS)

# field operators
D['ComposeHH'] = doc('Composes H-fields: a_f = a_g o a_h, i.e. a_f(x) = a_g(a_h(x)).', details=HFIELD,
                     args={'a_h': 'H-field applied first.', 'a_g': 'H-field applied second.'},
                     raises=GRID_ERRORS)
D['ComposeVH'] = doc('a_h(x) = a_g(x) + delta * a_v(a_g(x)) / spacing.', details=HFIELD,
                     args={'a_h': 'Output H-field.', 'a_v': 'V-field.', 'a_g': 'H-field.'},
                     raises=GRID_ERRORS)
D['ComposeVInvH'] = doc('a_h(x) = a_g(x) - delta * a_v(a_g(x)) / spacing.', details=HFIELD,
                        args={'a_h': 'Output H-field.', 'a_v': 'V-field.', 'a_g': 'H-field.'},
                        raises=GRID_ERRORS)
D['ComposeHV'] = doc('a_h(x) = a_g(x + delta * a_v(x) / spacing).', details=HFIELD,
                     args={'a_h': 'Output H-field.', 'a_v': 'V-field.', 'a_g': 'H-field.'},
                     raises=GRID_ERRORS)
D['ComposeHVInv'] = doc('a_h(x) = a_g(x - delta * a_v(x) / spacing).', details=HFIELD,
                        args={'a_h': 'Output H-field.', 'a_v': 'V-field.', 'a_g': 'H-field.'},
                        raises=GRID_ERRORS)
D['Jacobian'] = doc('The gradients of the three components of an H-field.',
                    args={'a_Xg': 'Output: gradient of h.x.', 'a_Yg': 'Output: gradient of h.y.',
                          'a_Zg': 'Output: gradient of h.z.', 'a_h': 'H-field.'}, raises=GRID_ERRORS)
D['SplatField'] = doc('Splats each component of a_i along the H-field h into a_o.', raises=GRID_ERRORS)
D['NormalizeSafe'] = doc('Unit vectors: a_o = a_i / |a_i|, zero where |a_i| <= eps.', raises=GRID_ERRORS)
D['NormalizeSafe_I'] = doc('In-place NormalizeSafe.', raises=GRID_ERRORS)
D['ReprojectToUnitVec'] = doc('Projects onto the unit ball: vectors longer than 1 are scaled to length 1.',
                              raises=GRID_ERRORS)
D['FixedPointInverse'] = doc('Legacy fixed-point inverse of an H-field.',
                             raises="RuntimeError: always ('Inverse not yet implemented/tested', as in "
                                    "the legacy).")
D['UpdateInverse'] = doc('Fixed-point update of an inverse after a forward step w: iterates '
                         'ginv_new = ginv_old o (Id - w o ginv_new).', raises=GRID_ERRORS)
D['Ad'] = doc('Adjoint action: Z = |Dg| o g^-1 . X o g^-1.', raises=GRID_ERRORS)
D['AdInf'] = doc('Infinitesimal adjoint action: Z = DX.Y - DY.X.', raises=GRID_ERRORS)
D['CoAd'] = doc('Coadjoint action: n = (Dg)^T m o g |Dg| (voxel-unit Jacobian).', raises=GRID_ERRORS)
D['CoAdInf'] = doc('Infinitesimal coadjoint action: n = (DX)^T m + div(m (x) X).', raises=GRID_ERRORS)
D['DivergenceTensor'] = doc('Z = div(X (x) Y).', raises=GRID_ERRORS)
D['JacobianXY'] = doc('Z = DX . Y.', raises=GRID_ERRORS)
D['JacobianXtY'] = doc('Z = DX^T . Y.', raises=GRID_ERRORS)
D['Is1D'] = doc('Whether the fields can be processed as one flat array of n values (legacy helper).',
                args={'n': 'Number of voxels.'}, returns='bool')
D['SetToIdentity'] = doc('h(x) = x: the identity H-field (voxel coordinates).', raises=TYPE_ERRORS)
D['HtoV'] = doc('a_v = (a_h - x) * spacing: an H-field as a displacement V-field.', details=HFIELD,
                raises=GRID_ERRORS)
D['HtoV_I'] = doc('In-place HtoV: a_v = (a_v - x) * spacing.', args={'a_v': 'H-field in, V-field out.'},
                  raises=GRID_ERRORS)
D['ComposeHTranslation'] = doc('h(x) = f(x + t), t in voxels.', args={'h': 'Output H-field.'},
                               raises=GRID_ERRORS)
D['ResampleH'] = doc('Resamples an H-field onto a_o\'s grid (values are not converted to '
                     'displacements first).', raises=TYPE_ERRORS)
D['InverseZerothOrder'] = doc('Zeroth-order inverse of an H-field: a_hInv(x) = 2x - a_h(x).',
                              raises=GRID_ERRORS)
D['InverseZerothOrder_I'] = doc('In-place InverseZerothOrder.', args={'a_hInv': 'H-field in, inverse out.'},
                                raises=GRID_ERRORS)
D['SplatH'] = doc('Splats the field d_vi along the H-field d_h into d_vo.', raises=GRID_ERRORS)
D['InitializeHFromAffine'] = doc('a_h = the voxel coordinates of the affine image of each voxel\'s '
                                 'world position.',
                                 raises="RuntimeError: 'Error, could not invert affine transform'.")
D['SetToZero'] = doc('v = 0: the zero V-field.', raises=TYPE_ERRORS)
D['VtoH'] = doc('h(x) = x + delta * v(x) / spacing: a V-field as an H-field.', details=HFIELD,
                args={'h': 'Output H-field.'}, raises=GRID_ERRORS)
D['VtoH_I'] = doc('In-place VtoH: h = x + delta * h / spacing.', args={'h': 'V-field in, H-field out.'},
                  raises=GRID_ERRORS)
D['ComposeVTranslation'] = doc('v(x) = g(x + t), t in voxels.', args={'v': 'Output V-field.',
                                                                     'g': 'Input V-field.'},
                               raises=GRID_ERRORS)
D['SplatV'] = doc('Splats the V-field a_i along the H-field a_h into a_o.',
                  args={'a_h': 'H-field (positions, voxels).'}, raises=GRID_ERRORS)
D['ResampleV'] = doc('Resamples a V-field onto a_o\'s grid.', raises=TYPE_ERRORS)

# reductions
_RED = ('ValueError: the image or field has no voxels.\n' + TYPE_ERRORS)
D['Sum'] = doc('Sum of all values (fields: over the three components), a float; '
               'Sum(vec_out, field) fills a Vec3Df with the per-component sums.',
               args={'a_o': 'Output Vec3Df (per-component sums).', 'a_i': 'Image or field.'},
               returns='float (None for the Vec3Df form)', raises=_RED, example='total = Sum(im)')
D['Sum2'] = doc('Sum of squares.', args={'a_i': 'Image or field.'}, returns='float', raises=_RED)
D['L1'] = doc('Sum of absolute values.', args={'a_i': 'Image or field.'}, returns='float', raises=_RED)
D['LInf'] = doc('Largest absolute value.', args={'a_i': 'Image or field.'}, returns='float', raises=_RED)
D['Dot'] = doc('Dot product of two images or two fields.', returns='float', raises=GRID_ERRORS)
D['MinMax'] = doc('Smallest and largest value (fields: over all components).',
                  args={'a_i': 'Image or field.'}, returns='tuple (min, max) of floats', raises=_RED,
                  example='lo, hi = MinMax(im)')
D['SumComp'] = doc('Per-component sums of a field.', args={'a_i': 'Field.'}, returns='Vec3Df',
                   raises=_RED)

# metrics
D['BoxFilter'] = doc('Box (moving-average) filter with radius per axis: separable running sums.',
                     args={'bc': BC}, raises=GRID_ERRORS +
                     "\nValueError/RuntimeError: a radius below 0 or above 2^20, or a_tmp that is "
                     "the input or the output.")

# ---- classes ------------------------------------------------------------------------------------

D['Vec3D'] = doc('A 3-vector (x, y, z): Vec3Di (int), Vec3Df (float), Vec3Dd (double), '
                 'Vec3Du (unsigned).',
                 details='Vec3Di and Vec3Df support + - * / with vectors and numbers; len(), '
                         'iteration and indexing give the components.',
                 example='v = Vec3Df(1.0, 2.0, 3.0)')
for _k, _s in {
    'x': 'The x component.', 'y': 'The y component.', 'z': 'The z component.',
    'get': 'Component i.', 'set': 'Sets component i to v, or all three (x_, y_, z_).',
    'lengthSquared': 'x^2 + y^2 + z^2.', 'length': 'Euclidean length.', 'normL2': 'Euclidean length.',
    'normL1': '|x| + |y| + |z|.', 'prod': 'x * y * z.', 'sum': 'x + y + z.',
    'maxElement': 'The largest component.', 'minElement': 'The smallest component.',
    'scale': 'Multiplies the components in place by sx, sy, sz.',
    'translate': 'Adds tx, ty, tz in place.', 'negate': 'Negates in place.',
    'invert': 'Replaces each component by its reciprocal, in place.',
    'inverse': 'A new vector of the reciprocals.', 'normalize': 'Scales to unit length in place.',
    'distanceSquared': 'Squared distance to o.', 'distance': 'Distance to o.',
    'dot': 'Dot product with o.', 'cross': 'Cross product with o.', 'copy': 'A new copy.',
    'clone': 'Copies o into this vector.', 'tolist': 'The components as a list [x, y, z].',
    'fromlist': 'Sets the components from [x, y, z]; returns self.',
}.items():
    D['Vec3D.' + _k] = doc(_s)

D['GridInfo'] = doc('A grid: size in voxels (Vec3Di), spacing and origin in physical units (Vec3Df).',
                    details='Images and fields of one grid can be combined pointwise; grids compare '
                            'equal when size, spacing and origin are equal.',
                    raises="ValueError: a negative size ('Grid size must not be negative').",
                    example='g = GridInfo(Vec3Di(64, 64, 32), Vec3Df(1.0, 1.0, 2.0))')
_GRID_ARGS = {'setSize': {'s': 'New size in voxels (Vec3Di).'},
              'setSpacing': {'s': 'New spacing (Vec3Df).'},
              'setOrigin': {'o': 'New origin (Vec3Df).'}}
for _k, _s in {
    'set': 'Sets size, spacing and origin.', 'size': 'The size (a live Vec3Di: changing it changes the grid).',
    'spacing': 'The spacing (live Vec3Df).', 'origin': 'The origin (live Vec3Df).',
    'setSize': 'Sets the size in voxels per axis (spacing and origin unchanged).',
    'setSpacing': 'Sets the voxel spacing per axis in physical units (e.g. mm; size and origin unchanged).',
    'setOrigin': 'Sets the origin: the physical position of voxel (0, 0, 0) (size and spacing unchanged).',
    'nVox': 'Number of voxels.', 'voxelVol': 'Volume of a voxel (product of the spacing).',
    'toString': 'The grid as text.', 'copy': 'A new copy.', 'clone': 'Copies o into this grid.',
}.items():
    D['GridInfo.' + _k] = doc(_s, args=_GRID_ARGS.get(_k))

D['Mat3D'] = doc('A 3 x 3 matrix (Mat3Df: float, Mat3Dd: double), row-major.',
                 example='m = Mat3Df(); m.eye()')
for _k, _s in {
    'eye': 'Sets the identity.', 'Transpose': 'The transpose (a new matrix).',
    'det': 'The determinant.', 'invert': 'Inverts in place; returns False if singular.',
    'get': 'Entry (r, c).', 'set': 'Sets entry (r, c) to v.', 'copy': 'A new copy.',
    'clone': 'Copies o into this matrix.', 'tolist': 'The entries as nested lists (3 x 3).',
    'fromlist': 'Sets the entries from nested lists (3 x 3).',
}.items():
    D['Mat3D.' + _k] = doc(_s, args={'v': 'The entry value.'} if _k == 'set' else None)

D['Aff3D'] = doc('An affine transform y = matrix . x + vector (Aff3Df: float, Aff3Dd: double).',
                 example='a = Aff3Df(); a.eye()')
for _k, _s in {
    'eye': 'Sets the identity.', 'invert': 'Inverts in place; returns False if singular.',
    'transformVector': 'Applies the transform to v (or vIn into vOut).',
    'determinant': 'Determinant of the linear part.', 'copy': 'A new copy.',
    'clone': 'Copies o into this transform.', 'matrix': 'The linear part (Mat3Df).',
    'vector': 'The translation (Vec3Df).', 'tolist': 'The transform as nested lists (4 x 4).',
    'fromlist': 'Sets the transform from nested lists (4 x 4 or 3 x 4).',
    'writePLUNCStyle': 'Writes the transform in the PLUNC text format.',
    'readPLUNCStyle': 'Reads the transform from a PLUNC text file.',
}.items():
    D['Aff3D.' + _k] = doc(_s, raises=('OSError: the file cannot be read or written.'
                                       if 'PLUNC' in _k else None))

_CONTAINER = {
    'memType': 'The memory type (MEM_HOST, MEM_HOST_PINNED, MEM_DEVICE).',
    'onDev': 'Whether the data is in GPU memory.', 'onHost': 'Whether the data is in host memory.',
    'grid': 'The grid (a live GridInfo).', 'size': 'The size in voxels (live Vec3Di).',
    'spacing': 'The spacing (live Vec3Df).', 'origin': 'The origin (live Vec3Df).',
    'setGrid': 'Sets the grid (same number of voxels or fewer than the capacity).',
    'setSize': 'Sets the size in voxels per axis (at most the capacity; the data is not moved).',
    'setSpacing': 'Sets the voxel spacing per axis in physical units (e.g. mm); the data is unchanged.',
    'setOrigin': 'Sets the origin: the physical position of voxel (0, 0, 0); the data is unchanged.',
    'nVox': 'Number of voxels.', 'voxelVol': 'Volume of a voxel.',
    'capacity': 'Number of voxels the buffer holds.',
    'resize': 'Sets the grid, reallocating if the capacity is too small.',
    'setCap': 'Sets the capacity.',
    'toType': 'Moves the data to another memory type.',
    'clone': 'Makes this a deep copy of other (grid, memory type and data).',
    'swap': 'Exchanges grid and data with other.',
    'get': 'The value at flat index i or voxel (x, y, z) (host memory).',
    'set': 'Sets the value at flat index i or voxel (x, y, z) to v (host memory).',
    'toString': 'Description: grid and memory type.',
    'copy': 'A new object (same grid and memory type) holding a copy of the data.',
    'tolist': 'The values as nested lists (any memory type).',
    'fromlist': 'Fills from nested lists, resizing if the size differs.',
    'FromDLPack': 'A new object sharing (or copying) the memory of a DLPack exporter.',
}
_CONTAINER_RAISES = ("RuntimeError: 'Grid is larger than pre-allocated memory' / 'grid too large for "
                     "current image' when the buffer is too small; 'memory types are not compatible' "
                     "for clone/swap across memory types.")
D['Image3D'] = doc('A 3-D scalar image: float32 values on a GridInfo, in host, pinned or GPU memory.',
                   details='Constructors: Image3D(memType), Image3D(grid, memType), '
                           'Image3D(sx, sy, sz, memType). Arithmetic operators (+ - * / **) '
                           'allocate a new image; the _I functions work in place.',
                   raises=TYPE_ERRORS,
                   example='im = Image3D(GridInfo(Vec3Di(32, 32, 32)), MEM_HOST)')
D['Field3D'] = doc('A 3-D vector field: three float32 components on a GridInfo (H-fields or '
                   'V-fields).', details=HFIELD + ' Constructors as for Image3D.', raises=TYPE_ERRORS,
                   example='h = Field3D(grid, MEM_HOST); SetToIdentity(h)')
for _k, _s in _CONTAINER.items():
    D['Image3D.' + _k] = doc(_s, raises=_CONTAINER_RAISES if _k in ('resize', 'setGrid', 'setCap', 'clone', 'swap') else None)
    D['Field3D.' + _k] = doc(_s.replace('The value', 'The vector').replace('value', 'vector'),
                             raises=_CONTAINER_RAISES if _k in ('resize', 'setGrid', 'setCap', 'clone', 'swap') else None)
D['Image3D.asnp'] = doc('Zero-copy float32 NumPy view, shape (X, Y, Z), Fortran order.',
                        raises='RuntimeError: the data is in GPU memory.')
D['Image3D.rawptr'] = doc('Address of the data (an int).')
D['Field3D.isContinuous'] = doc('Whether the three components are one contiguous buffer.')
D['Field3D.asnp'] = doc('Tuple of three zero-copy float32 views (x, y, z), each (X, Y, Z).',
                        raises='RuntimeError: the data is in GPU memory.')
for _c in 'xyz':
    D['Field3D.%s_asnp' % _c] = doc('Zero-copy float32 view of the %s component.' % _c,
                                    raises='RuntimeError: the data is in GPU memory.')
    D['Field3D.rawptr_%s' % _c] = doc('Address of the %s component (an int).' % _c)
    D['Field3D.%s_dlpack' % _c] = doc('The %s component as a DLPack exporter (FieldComponent).' % _c)
    D['Field3D.%s' % _c] = doc('The %s component as a raw array (for the raw-array operator forms '
                               'such as Gradient(g, f.x)); does not keep the field alive.' % _c)
D['Field3D.dlpack'] = doc('The whole field as one DLPack exporter (contiguous fields: shape (3, X, Y, Z)).')
D['FieldComponent'] = doc('One component of a Field3D as a DLPack / __cuda_array_interface__ exporter.')
D['ManagedImage3D'] = doc('An Image3D whose buffer is a pool of a MemoryManager (returned to it when '
                          'the image is deleted).',
                          details='Without mm, the ThreadMemoryManager of this thread is used.',
                          raises="RuntimeError: 'Grid too large' when the grid has more voxels than the "
                                 "manager's grid.")
D['ManagedField3D'] = doc('A Field3D whose three buffers are pools of a MemoryManager.',
                          details='Without mm, the ThreadMemoryManager of this thread is used.',
                          raises="RuntimeError: 'Grid too large' when the grid has more voxels than the "
                                 "manager's grid.")
D['MemoryManagerStats'] = doc('Counters of a MemoryManager (MemoryManager.stats()).')
for _k, _s in {'numPools': 'Number of pools.', 'poolsInUse': 'Pools in use now.',
               'peakInUse': 'Most pools in use at once.', 'bytesPerPool': 'Size of one pool buffer in bytes.',
               'bytesHeld': 'Bytes held by all pools.', 'limitBytes': 'The byte limit (0: none).',
               'totalRequests': 'Pools handed out since creation.'}.items():
    D['MemoryManagerStats.' + _k] = doc(_s)
D['MemoryManager'] = doc('A pool of equal buffers (one grid\'s voxel count) for ManagedImage3D and '
                         'ManagedField3D.', details='See Documentation/MemoryManager.md.',
                         example='mm = MemoryManager(grid, MEM_HOST, 4)')
for _k, _s in {
    'getNumPools': 'Number of pools.', 'memType': 'Memory type of the pools.',
    'grid': 'The reference grid (live GridInfo).', 'poolsInUse': 'Pools in use now.',
    'peakInUse': 'Most pools in use at once since the last resetPeak.',
    'bytesHeld': 'Bytes held by all pools.', 'maxUsed': 'Highest pool index used (legacy).',
    'stats': 'All counters (MemoryManagerStats).', 'resetPeak': 'Resets peakInUse.',
    'releaseUnused': 'Frees the pools not in use; returns how many.',
    'setLimit': 'Limits the bytes held (0: no limit).', 'limit': 'The byte limit (0: none).',
    'usageReport': 'A text report of the pools.',
}.items():
    D['MemoryManager.' + _k] = doc(_s, raises=("MemoryError: a new pool would pass the limit."
                                               if _k == 'setLimit' else None))
D['ThreadMemoryManager'] = doc('The per-thread MemoryManager used by ManagedImage3D/ManagedField3D '
                               'without an explicit manager (static methods).')
D['ThreadMemoryManager.init'] = doc('Creates this thread\'s manager.')
D['ThreadMemoryManager.isInitialized'] = doc('Whether this thread\'s manager exists.')
D['ThreadMemoryManager.instance'] = doc('This thread\'s manager (a MemoryManager).',
                                        raises='RuntimeError: init has not been called.')
D['ThreadMemoryManager.destroy'] = doc('Deletes this thread\'s manager and prints its "Maximum temporary '
                                       'Pools N" line on stderr (legacy; the seed tutorial relies on it).')
D['ThreadMemoryManager.release'] = doc('PyCA extension: deletes this thread\'s manager without the '
                                       '"Maximum temporary Pools N" line, now or when a reference that '
                                       'Python still holds dies (the apps\' quiet end; destroy keeps '
                                       'the legacy report).')

D['FluidKernelFFT'] = doc('The fluid operator L = (-alpha Lap - beta grad div + gamma)^lpow and its '
                          'inverse K, applied by FFT (FluidKernelFFTCPU, FluidKernelFFTGPU).',
                          details='Call setGrid before applying. The interface class is abstract.',
                          raises="TypeError: constructing the interface.\nRuntimeError: "
                                 "'FluidKernelFFT: setGrid has not been called'.",
                          example='k = FluidKernelFFTCPU(); k.setGrid(grid); k.applyInverseOperator(v, f)')
for _k, _s in {
    'setAlpha': 'Sets alpha, the weight of the Laplacian term -alpha Lap of L (units: length^2, '
                'the grid spacing\'s unit squared, e.g. mm^2; default 1). Takes effect at the next apply.',
    'getAlpha': 'Alpha, the weight of the Laplacian term -alpha Lap of L (length^2, e.g. mm^2), '
                'as set by setAlpha (default 1).',
    'setBeta': 'Sets beta, the weight of the grad div term -beta grad div of L (length^2, e.g. '
               'mm^2; default 0). Takes effect at the next apply.',
    'getBeta': 'Beta, the weight of the grad div term -beta grad div of L (length^2, e.g. mm^2), '
               'as set by setBeta (default 0).',
    'setGamma': 'Sets gamma, the weight of the identity term of L (dimensionless; default 0; '
                'gamma > 0 makes L invertible, gamma = 0 gives K a zero-mean result).',
    'getGamma': 'Gamma, the weight of the identity term of L (dimensionless), as set by setGamma '
                '(default 0).',
    'setLPow': 'Sets lpow, the power of L applied (L^lpow, K = L^-lpow; an integer >= 0, default 1).',
    'getLPow': 'lpow, the power of L applied (L^lpow, K = L^-lpow), as set by setLPow (default 1).',
    'setSpectralTolerance': 'PyCA extension: applyInverseOperator drops the frequencies where '
                            "K's multiplier is at most eps times its largest (gamma^-lpow), so "
                            '||K - K_eps|| <= eps ||K||, and the CPU skips their FFTs (3-D grids, '
                            'alpha > 0, beta >= 0, gamma > 0, lpow >= 1; elsewhere K stays exact). '
                            '0 (the default): the exact, legacy K. applyOperator is truncated only '
                            'with setBandedOperator(True).',
    'getSpectralTolerance': 'The spectral tolerance of applyInverseOperator (0: exact).',
    'setBandedOperator': 'PyCA extension: with True, applyOperator keeps the band that '
                         'applyInverseOperator keeps (L restricted to K\'s band at the spectral '
                         'tolerance: the other modes set to zero, their FFTs skipped on the CPU). '
                         'False (the default): the full, legacy L.',
    'getBandedOperator': 'Whether applyOperator keeps only K\'s band (setBandedOperator; default False).',
    'setDivergenceFree': 'Projects results onto divergence-free fields.',
    'getDivergenceFree': 'Whether results are projected onto divergence-free fields.',
    'setGrid': 'Sets the grid (plans the FFTs).', 'memType': 'Memory type of the fields it takes.',
    'applyOperator': 'f = L v (or in place on f).', 'applyInverseOperator': 'v = K f (or in place on f).',
}.items():
    D['FluidKernelFFT.' + _k] = doc(_s, raises=(GRID_ERRORS if _k.startswith('apply') else
                                                ("ValueError: lpow < 0." if _k == 'setLPow' else
                                                 "ValueError: eps outside [0, 1)." if _k == 'setSpectralTolerance'
                                                 else None)))
D['GaussianFilter'] = doc('Separable Gaussian filter (GaussianFilterCPU, GaussianFilterGPU). The '
                          'interface class is abstract.',
                          raises="TypeError: constructing the interface.\nValueError: 'Error, sigma "
                                 "must be finite', 'Error, negative size'.",
                          example='gf = GaussianFilterCPU(); gf.updateParams(size, Vec3Df(1, 1, 1), '
                                  'Vec3Di(3, 3, 3))')
for _k, _s in {
    'updateParams': 'Sets the image size, sigma and kernel radius (builds the kernels).',
    'filter': 'Filters a_i into a_o (images, or fields component by component) using a_tmp.',
    'getSize': 'The image size (voxels per axis, Vec3Di) the kernels are built for, as set by '
               'updateParams.',
    'getSigma': 'The standard deviation of the Gaussian per axis (Vec3Df, in voxels, not the '
                'spacing\'s units), as set by updateParams; an axis with sigma <= 0 is not filtered.',
    'getKernelRadius': 'The kernel radius per axis (Vec3Di, in voxels: taps |k| <= radius), as '
                       'given to updateParams and clipped to size/2 - 1.',
    'kernelBuilds': 'How many times the kernels were built (a test counter).',
}.items():
    D['GaussianFilter.' + _k] = doc(_s, raises=GRID_ERRORS if _k == 'filter' else None)
D['Multiscale'] = doc('Multiscale helpers (static).')
D['Multiscale.downScale'] = doc('The grid downsampled by an integer factor.',
                                raises="ValueError: 'Error, downsample factor must be positive'.")
D['MultiscaleManager'] = doc('The scale levels of a multiscale registration.',
                             example='sm = MultiscaleManager(grid); sm.addScaleLevel(2); '
                                     'sm.addScaleLevel(1)')
for _k, _s in {
    'addScaleLevel': 'Adds a level with this downsampling factor.', 'start': 'Goes to the first level.',
    'next': 'Goes to the next level.', 'set': 'Goes to level (clamped to [0, nScale() - 1]).',
    'getCurLevel': 'The index of the current level (0: the first, coarsest one added; changed by '
                   'start, next and set).',
    'nScale': 'Number of levels.', 'getScaleFactor': 'The factor of the current level or of level.',
    'isFirstScale': 'Whether at the first level.', 'isLastScale': 'Whether at the last level.',
    'isIdentityScale': 'Whether the current factor is 1.', 'getCurFactor': 'Per axis, the previous level\'s size divided by the current level\'s '
                    '(Vec3Df; level 0: the original size over the current).',
    'getOrgGrid': 'The full-resolution grid.', 'getCurGrid': 'The grid of the current level.',
    'getPreGrid': 'The grid of the previous level.', 'getOrgSize': 'The full-resolution size.',
    'getCurSize': 'The grid size (voxels per axis, Vec3Di) of the current level.', 'getOrgSpace': 'The full-resolution spacing.',
    'getCurSpace': 'The current spacing.', 'origNVox': 'Voxels at full resolution.',
    'curNVox': 'Voxels at the current level.', 'origVoxelVol': 'Voxel volume at full resolution.',
    'curVoxelVol': 'Voxel volume at the current level.', 'setVerbose': 'Prints level changes.',
    'getVerbose': 'Whether level changes are printed.',
}.items():
    D['MultiscaleManager.' + _k] = doc(_s, raises=(
        "ValueError: 'Error, cannot add multiple scale levels with the same downsample factor'."
        if _k == 'addScaleLevel' else None))
D['MultiscaleResampler'] = doc('Resamples images and fields between the levels of a MultiscaleManager '
                               '(CPU/GPU; Gauss: Gaussian smoothing before downsampling). The interface '
                               'class is abstract.', raises='TypeError: constructing the interface.')
for _k, _s in {
    'getScaleManager': 'The MultiscaleManager of the current level.',
    'setScaleLevel': 'Adopts the current level of scaleManager.',
    'downsampleImage': 'sI = orgI downsampled to the current level.',
    'downsampleField': 'sF = orgF downsampled to the current level.',
    'upsampleImage': 'Upsamples sI from the previous level to the current one.',
    'updateHField': 'Upsamples an H-field to the current level (positions rescaled).',
    'updateVField': 'Upsamples a V-field to the current level.',
    'getSigma': 'Gaussian sigma of the smoothing.', 'getKernelRadius': 'Kernel radius of the smoothing.',
}.items():
    D['MultiscaleResampler.' + _k] = doc(_s)
D['MutualInformation'] = doc('Mutual information of two images from a cubic B-spline Parzen joint '
                             'histogram, with its exact gradient.',
                             raises="ValueError: 'MutualInformation: bins must be 2..4096', or an "
                                    "intensity range that is not finite with lo < hi.",
                             example='mi = MutualInformation(32, 0.0, 1.0, 0.0, 1.0); mi.compute(f, m)')
for _k, _s in {
    'compute': 'Computes the joint histogram and the mutual information (returned).',
    'gradient': 'a_o = d MI / d moving (voxelwise).', 'value': 'The last value.',
    'count': 'Voxels counted last time.', 'bins': 'Number of bins.', 'fixedLo': 'The lower end of the fixed image\'s intensity range (the first histogram bin '
                           'centre; lower values are clamped), as given to the constructor.',
    'fixedHi': 'The upper end of the fixed image\'s intensity range (the last bin centre; higher '
               'values are clamped), as given to the constructor.',
    'movingLo': 'The lower end of the moving image\'s intensity range (the first bin centre; lower '
                'values are clamped), as given to the constructor.',
    'movingHi': 'The upper end of the moving image\'s intensity range (the last bin centre; higher '
                'values are clamped), as given to the constructor.',
    'jointHistogram': 'The last joint histogram p(a, b): float64, (bins + 4, bins + 4), sum 1.',
}.items():
    D['MutualInformation.' + _k] = doc(_s, raises=(GRID_ERRORS if _k in ('compute', 'gradient') else None))

# ITK file IO (ITK builds only)
D['_ITKFileIO'] = doc('ITK file reading and writing (static methods; PyCA.Common uses it).')


def lookup(cls, name):
    """The entry of CLS.NAME (cls None/'' for functions; name '' for the class itself)."""
    if not cls:
        spec = DOCS.get(name) or family(name)
        if spec is not None and name.endswith('_I') and 'a_o' not in spec.get('args', {}):
            ins = {'a_o': 'First operand and output (overwritten in place).',
                   'a_i': 'Second operand (input).', 'a_i1': 'Further operand (input).'}
            ins.update(spec.get('args', {}))
            spec = dict(spec, args=ins)
        return spec
    keys = [cls, GROUPS.get(cls)]
    for c in keys:
        if c and (c + ('.' + name if name else '')) in DOCS:
            return DOCS[c + ('.' + name if name else '')]
    return None


# ---- stub extras: members that are installed at run time (type_opers.i, Vec3D ops) ------------

_BIN = ['add', 'sub', 'mul', 'truediv', 'div']
_ARITH = (['def __%s__(self, other: Any, mod: None = ...) -> Any: ...' % o for o in _BIN] +
          ['def __r%s__(self, other: Any) -> Any: ...' % o for o in _BIN] +
          ['def __i%s__(self, other: Any) -> Any: ...  # type: ignore[misc]' % o for o in _BIN] +
          ['def __neg__(self) -> Any: ...', 'def __pos__(self) -> Any: ...',
           '__array_ufunc__: None'])
_VEC_ARITH = (['def __%s__(self, o: Any) -> Any: ...' % o for o in _BIN] +
              ['def __r%s__(self, o: Any) -> Any: ...' % o for o in _BIN] +
              ['def __i%s__(self, o: Any) -> Any: ...  # type: ignore[misc]' % o for o in _BIN] +
              ['def __neg__(self) -> Any: ...'])
STUB_EXTRA = {
    'Image3D': _ARITH + ['def __pow__(self, other: Any, mod: None = ...) -> Any: ...',
                         'def __rpow__(self, other: Any) -> Any: ...',
                         'def __ipow__(self, other: Any) -> Any: ...  # type: ignore[misc]'],
    'Field3D': _ARITH,
    'Vec3Di': _VEC_ARITH,
    'Vec3Df': _VEC_ARITH,
}

# Stub types of module constants that are not ints.
STUB_CONSTANTS = {'FIX_SCALE_20': 'float', 'GRIDINFO_EPS': 'float', 'MIN_VAL': 'float',
                  'MAX_VAL': 'float', 'cvar': 'Any'}

# Classes that exist in CUDA builds only (the stub follows the build).
CUDA_ONLY = {'FluidKernelFFTGPU', 'GaussianFilterGPU', 'MultiscaleResamplerGPU',
             'MultiscaleResamplerGaussGPU'}

# method-specific argument meanings
DOCS['Image3D.setSize'] = doc('Sets the size (the capacity must hold it).',
                              args={'size': 'New size in voxels (Vec3Di).'}, raises=_CONTAINER_RAISES)
