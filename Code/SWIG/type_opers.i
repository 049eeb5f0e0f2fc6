// type_opers.i -- Python operators for Image3D and Field3D (legacy file name).
//
// %include'd at the end of Core.i, after math.i: the operators are thin Python
// wrappers around the free functions of PyCA.Core (looked up when called).
//
// * A binary operator allocates ONE new unmanaged Image3D/Field3D with the grid
//   and memory type of its left operand (for `number OP x`: of x; `im OP f`
//   gives a Field3D on im's grid and memory type) and calls the
//   free function (Add, AddC, MulCAddC, ...), so the grid and memory-type
//   checks ("Input grids are not equal", "memory types are not compatible",
//   RuntimeError) and the memory-type dispatch are the C++ operators'.
// * In-place operators call the _I forms and return the same object.
// * Operands: Image3D, Field3D (and the Managed subclasses), Vec3D (Field3D
//   only; converted to Vec3Df) and real numbers (int, float, bool, NumPy
//   scalars). Anything else returns NotImplemented, so Python raises TypeError.
//
//   Image3D  + - * /   Image3D, number       (also reflected: number OP im)
//            ** number (PowC);  number ** im = exp(im * ln(number)), number > 0
//            -im (Neg), +im (a new copy, Copy)
//   Field3D  + - * /   Field3D (f * g, f / g componentwise: not in the legacy),
//                      Image3D (broadcast over x, y, z), Vec3D, number
//            reflected: Image3D, Vec3D or number OP f  ->  Field3D
//            (im - f and im / f broadcast im, then Sub_I/Div_I)
//            -f (MulC by -1), +f (a new copy, Copy)
//   In place: += -= *= /= with the same right-hand types (Image3D also **=);
//            `im OP= field` raises TypeError (it would rebind im to a Field3D).
//
// NumPy scalars on the left (np.float32(2) * im) reach the reflected operator
// because both classes set __array_ufunc__ = None (NumPy defers to them).

%pythoncode %{
import math as _math
import numbers as _numbers

_VEC3D_TYPES = (Vec3Df, Vec3Di, Vec3Dd, Vec3Du)


def _operand(o):
    """(kind, value) of an operator operand: kind is 'field', 'image', 'vec',
    'number' or None (unsupported); value is what the free function takes."""
    if isinstance(o, Field3D):
        return 'field', o
    if isinstance(o, Image3D):
        return 'image', o
    if isinstance(o, Vec3Df):
        return 'vec', o
    if isinstance(o, _VEC3D_TYPES):
        return 'vec', Vec3Df(float(o.x), float(o.y), float(o.z))
    if isinstance(o, _numbers.Real):          # int, float, bool, NumPy scalars
        return 'number', float(o)
    return None, None


def _new_image(like):
    """A new unmanaged Image3D with like's grid and memory type."""
    return Image3D(like.grid(), like.memType())


def _new_field(like):
    """A new unmanaged Field3D with like's grid and memory type."""
    return Field3D(like.grid(), like.memType())


def _vec3(c):
    return Vec3Df(c, c, c)


def _broadcast(o, im):
    """o (a Field3D) = im in each component."""
    for d in range(3):
        Copy(o, im, d)


def _rsub_image_field(o, f, im):          # o = im - f
    _broadcast(o, im)
    Sub_I(o, f)


def _rdiv_image_field(o, f, im):          # o = im / f
    _broadcast(o, im)
    Div_I(o, f)


def _rdiv_const(o, a, c):                 # o = c / a: one rounding, like NumPy
    SetMem(o, c)
    Div_I(o, a)


def _rpow_image(o, a, c):                 # o = c ** a = exp(a * ln c)
    if not c > 0.0:
        raise ValueError("number ** Image3D needs a positive base (got %r)" % c)
    MulC(o, a, _math.log(c))
    Exp_I(o)


# For each operator: {operand kind: f(out, self, value)} for `self OP value`
# (binary), for `value OP self` (reflected), and {kind: f(self, value)} for
# `self OP= value` (in place).
_IMAGE_OPS = {
    'add': dict(
        binary={'image': lambda o, a, b: Add(o, a, b), 'number': lambda o, a, c: AddC(o, a, c)},
        reflected={'number': lambda o, a, c: AddC(o, a, c)},
        inplace={'image': lambda a, b: Add_I(a, b), 'number': lambda a, c: AddC_I(a, c)}),
    'sub': dict(
        binary={'image': lambda o, a, b: Sub(o, a, b), 'number': lambda o, a, c: SubC(o, a, c)},
        reflected={'number': lambda o, a, c: MulCAddC(o, a, -1.0, c)},
        inplace={'image': lambda a, b: Sub_I(a, b), 'number': lambda a, c: SubC_I(a, c)}),
    'mul': dict(
        binary={'image': lambda o, a, b: Mul(o, a, b), 'number': lambda o, a, c: MulC(o, a, c)},
        reflected={'number': lambda o, a, c: MulC(o, a, c)},
        inplace={'image': lambda a, b: Mul_I(a, b), 'number': lambda a, c: MulC_I(a, c)}),
    'truediv': dict(
        binary={'image': lambda o, a, b: Div(o, a, b), 'number': lambda o, a, c: DivC(o, a, c)},
        reflected={'number': _rdiv_const},
        inplace={'image': lambda a, b: Div_I(a, b), 'number': lambda a, c: DivC_I(a, c)}),
    'pow': dict(
        binary={'number': lambda o, a, c: PowC(o, a, c)},
        reflected={'number': _rpow_image},
        inplace={'number': lambda a, c: PowC_I(a, c)}),
}

_FIELD_OPS = {
    'add': dict(
        binary={'field': lambda o, a, b: Add(o, a, b), 'image': lambda o, a, b: Add(o, a, b),
                'vec': lambda o, a, v: AddC(o, a, v), 'number': lambda o, a, c: AddC(o, a, c)},
        reflected={'image': lambda o, a, b: Add(o, a, b),
                   'vec': lambda o, a, v: AddC(o, a, v), 'number': lambda o, a, c: AddC(o, a, c)},
        inplace={'field': lambda a, b: Add_I(a, b), 'image': lambda a, b: Add_I(a, b),
                 'vec': lambda a, v: AddC_I(a, v), 'number': lambda a, c: AddC_I(a, c)}),
    'sub': dict(
        binary={'field': lambda o, a, b: Sub(o, a, b), 'image': lambda o, a, b: Sub(o, a, b),
                'vec': lambda o, a, v: SubC(o, a, v), 'number': lambda o, a, c: SubC(o, a, c)},
        reflected={'image': _rsub_image_field,
                   'vec': lambda o, a, v: MulCAddC(o, a, _vec3(-1.0), v),
                   'number': lambda o, a, c: MulCAddC(o, a, _vec3(-1.0), _vec3(c))},
        inplace={'field': lambda a, b: Sub_I(a, b), 'image': lambda a, b: Sub_I(a, b),
                 'vec': lambda a, v: SubC_I(a, v), 'number': lambda a, c: SubC_I(a, c)}),
    'mul': dict(
        binary={'field': lambda o, a, b: Mul(o, a, b), 'image': lambda o, a, b: Mul(o, a, b),
                'vec': lambda o, a, v: MulC(o, a, v), 'number': lambda o, a, c: MulC(o, a, c)},
        reflected={'image': lambda o, a, b: Mul(o, a, b),
                   'vec': lambda o, a, v: MulC(o, a, v), 'number': lambda o, a, c: MulC(o, a, c)},
        inplace={'field': lambda a, b: Mul_I(a, b), 'image': lambda a, b: Mul_I(a, b),
                 'vec': lambda a, v: MulC_I(a, v), 'number': lambda a, c: MulC_I(a, c)}),
    'truediv': dict(
        binary={'field': lambda o, a, b: Div(o, a, b), 'image': lambda o, a, b: Div(o, a, b),
                'vec': lambda o, a, v: DivC(o, a, v), 'number': lambda o, a, c: DivC(o, a, c)},
        reflected={'image': _rdiv_image_field, 'vec': _rdiv_const, 'number': _rdiv_const},
        inplace={'field': lambda a, b: Div_I(a, b), 'image': lambda a, b: Div_I(a, b),
                 'vec': lambda a, v: DivC_I(a, v), 'number': lambda a, c: DivC_I(a, c)}),
}


def _binary_op(table, new):
    def op(self, other, mod=None):        # mod: pow(a, b, mod) is unsupported
        if mod is not None:
            return NotImplemented
        kind, value = _operand(other)
        fn = table.get(kind)
        if fn is None:
            return NotImplemented
        out = new(self)
        fn(out, self, value)
        return out
    return op


def _reflected_op(table, new):
    def op(self, other):
        kind, value = _operand(other)
        fn = table.get(kind)
        if fn is None:
            return NotImplemented
        # The result follows the left operand when it is an array (im OP field).
        out = new(other) if kind in ('image', 'field') else new(self)
        fn(out, self, value)
        return out
    return op


def _inplace_op(table, forbidden=()):
    def op(self, other):
        kind, value = _operand(other)
        fn = table.get(kind)
        if fn is None:
            if kind in forbidden:
                raise TypeError("unsupported operand type(s) for in-place operator: '%s' and '%s'"
                                % (type(self).__name__, type(other).__name__))
            return NotImplemented
        fn(self, value)
        return self
    return op


def _install_ops(cls, ops, new, forbidden_inplace=()):
    for name, t in ops.items():
        if 'binary' in t:
            setattr(cls, '__%s__' % name, _binary_op(t['binary'], new))
        if 'reflected' in t:
            setattr(cls, '__r%s__' % name, _reflected_op(t['reflected'], new))
        if 'inplace' in t:
            setattr(cls, '__i%s__' % name, _inplace_op(t['inplace'], forbidden_inplace))
    cls.__div__, cls.__rdiv__, cls.__idiv__ = cls.__truediv__, cls.__rtruediv__, cls.__itruediv__
    def pos(self):                        # +x: a new copy (Copy)
        out = new(self)
        Copy(out, self)
        return out
    cls.__pos__ = pos
    # NumPy scalars/arrays on the left defer to the reflected operators.
    cls.__array_ufunc__ = None


def _image_neg(self):
    out = _new_image(self)
    Neg(out, self)
    return out


def _field_neg(self):
    out = _new_field(self)
    MulC(out, self, -1.0)
    return out


_install_ops(Image3D, _IMAGE_OPS, _new_image, forbidden_inplace=('field',))
Image3D.__neg__ = _image_neg
_install_ops(Field3D, _FIELD_OPS, _new_field)
Field3D.__neg__ = _field_neg
%}
