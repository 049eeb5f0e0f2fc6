// affine.i -- Mat3Df/Mat3Dd and Aff3Df/Aff3Dd (spec 2.3). %included by
// types.i after Vec3D and GridInfo (it uses PYCA_KEEPALIVE).
//
// Python adds: checked __call__/get/set (IndexError), copy (Aff3Df too: the
// legacy lacked it), clone, tolist/fromlist (Mat3D 3x3, Aff3D 4x4 nested
// lists), __str__, in-place *=, and the live members aff.matrix/aff.vector
// (the proxy keeps its transform alive).

// ---- Mat3D -------------------------------------------------------------------
%ignore PyCA::Mat3D::a;
%ignore PyCA::Mat3D::Mat3D(const T*);
%ignore PyCA::Mat3D::Mat3D(const Mat3D<U>&);
%ignore PyCA::Mat3D::operator();
%ignore PyCA::Mat3D::get(unsigned int, unsigned int) const;
%ignore PyCA::Mat3D::set(unsigned int, unsigned int, T);
%ignore PyCA::Mat3D::computeInverse;
%ignore PyCA::Mat3D::writeASCII;
%ignore PyCA::Mat3D::operator*=;

// ---- Aff3D -------------------------------------------------------------------
%ignore PyCA::Aff3D::matrix;
%ignore PyCA::Aff3D::vector;
%ignore PyCA::Aff3D::operator*=;
%rename(_writePLUNCStyle) PyCA::Aff3D::writePLUNCStyle;
%rename(_readPLUNCStyle) PyCA::Aff3D::readPLUNCStyle;

%copyctor PyCA::Mat3D;
%copyctor PyCA::Aff3D;
%include "Mat3D.h"
%include "Aff3D.h"

%{
#include <stdexcept>
%}

%extend PyCA::Mat3D {
  std::string __str__() const {
    std::ostringstream os;
    os << *$self;
    return os.str();
  }
  /// Element (r, c); IndexError unless r, c are in 0..2.
  T __call__(int r, int c) const {
    if (r < 0 || r > 2 || c < 0 || c > 2)
      throw std::out_of_range("Mat3D index out of range (row and column 0..2)");
    return (*$self)(r, c);
  }
  /// Element idx of the row-major array; IndexError unless idx is in 0..8.
  T __call__(int idx) const {
    if (idx < 0 || idx > 8) throw std::out_of_range("Mat3D index out of range (0..8)");
    return (*$self)(idx);
  }
  T get(int r, int c) const {
    if (r < 0 || r > 2 || c < 0 || c > 2)
      throw std::out_of_range("Mat3D index out of range (row and column 0..2)");
    return (*$self)(r, c);
  }
  void set(int r, int c, T v) {
    if (r < 0 || r > 2 || c < 0 || c > 2)
      throw std::out_of_range("Mat3D index out of range (row and column 0..2)");
    (*$self)(r, c) = v;
  }
  PyCA::Mat3D<T> copy() const { return *$self; }
  void clone(const PyCA::Mat3D<T>& o) { *$self = o; }
  %pythoncode %{
    __repr__ = __str__
    __hash__ = None

    def tolist(self):
        """The rows as a 3x3 nested list."""
        return [[self.get(r, c) for c in range(3)] for r in range(3)]

    def fromlist(self, l):
        """Sets the matrix from a 3x3 nested list (rows); returns self."""
        rows = _real_rows(l, 3, 3)
        for r in range(3):
            for c in range(3):
                self.set(r, c, rows[r][c])
        return self

    def __imul__(self, o):
        # TypeError rather than NotImplemented: Python would fall back to
        # x = x * o and rebind x to a Vec3D for a vector operand.
        if not isinstance(o, type(self)):
            raise TypeError("unsupported operand type(s) for *=: '%s' and '%s'"
                            % (type(self).__name__, type(o).__name__))
        self.clone(self * o)
        return self
  %}
}

%extend PyCA::Aff3D {
  std::string __str__() const {
    std::ostringstream os;
    os << *$self;
    return os.str();
  }
  PyCA::Aff3D<T> copy() const { return *$self; }
  void clone(const PyCA::Aff3D<T>& o) { *$self = o; }
  PyCA::Mat3D<T>& _matrix() { return $self->matrix; }
  PyCA::Vec3D<T>& _vector() { return $self->vector; }
  void _set_matrix(const PyCA::Mat3D<T>& m) { $self->matrix = m; }
  void _set_vector(const PyCA::Vec3D<T>& v) { $self->vector = v; }
  %pythoncode %{
    __repr__ = __str__
    __hash__ = None

    #: The linear part, a live Mat3D (aff.matrix.set(0, 0, 2) changes aff).
    matrix = property(lambda self: self._matrix(), lambda self, m: self._set_matrix(m))
    #: The translation, a live Vec3D (aff.vector.x = 1 changes aff).
    vector = property(lambda self: self._vector(), lambda self, v: self._set_vector(v))

    def tolist(self):
        """The homogeneous 4x4 matrix as nested lists (last row [0, 0, 0, 1])."""
        m, v = self.matrix, self.vector
        rows = [[m.get(r, c) for c in range(3)] + [v.get(r)] for r in range(3)]
        return rows + [[0.0, 0.0, 0.0, 1.0]]

    def fromlist(self, l):
        """Sets the transform from a homogeneous 4x4 nested list whose last row
        is [0, 0, 0, 1]; returns self."""
        rows = _real_rows(l, 4, 4)
        if any(abs(a - b) > 1e-6 for a, b in zip(rows[3], (0.0, 0.0, 0.0, 1.0))):
            raise ValueError("the last row of an affine 4x4 matrix must be [0, 0, 0, 1], got %r" % (rows[3],))
        m = self.matrix
        for r in range(3):
            for c in range(3):
                m.set(r, c, rows[r][c])
        self.vector.set(rows[0][3], rows[1][3], rows[2][3])
        return self

    def __imul__(self, o):
        # TypeError rather than NotImplemented: Python would fall back to
        # x = x * o and rebind x to a Vec3D for a vector operand.
        if not isinstance(o, type(self)):
            raise TypeError("unsupported operand type(s) for *=: '%s' and '%s'"
                            % (type(self).__name__, type(o).__name__))
        self.clone(self * o)
        return self

    def writePLUNCStyle(self, filename):
        """Writes the PLUNC-style 4x4 text form (RuntimeError if it cannot)."""
        return self._writePLUNCStyle(_os.fspath(filename))

    def readPLUNCStyle(self, filename):
        """Reads a PLUNC-style 4x4 text file (RuntimeError if missing or malformed)."""
        return self._readPLUNCStyle(_os.fspath(filename))
  %}
}

PYCA_KEEPALIVE(PyCA::Aff3D::_matrix)
PYCA_KEEPALIVE(PyCA::Aff3D::_vector)

%template(Mat3Df) PyCA::Mat3D<float>;
%template(Mat3Dd) PyCA::Mat3D<double>;
%template(Aff3Df) PyCA::Aff3D<float>;
%template(Aff3Dd) PyCA::Aff3D<double>;

%pythoncode %{
import os as _os
import numbers as _numbers


def _real(v):
    """A float from a real number; TypeError for anything else (strings included)."""
    if isinstance(v, (str, bytes)) or not (isinstance(v, _numbers.Real) or hasattr(v, '__float__')):
        raise TypeError("expected a real number, got %s" % type(v).__name__)
    return float(v)


def _real_rows(l, nrows, ncols):
    """l as nrows lists of ncols floats; TypeError/ValueError for other shapes."""
    def seq(x, what):
        if x is None or isinstance(x, (str, bytes)) or not hasattr(x, '__len__') or not hasattr(x, '__getitem__'):
            raise TypeError("expected %s, got %s" % (what, type(x).__name__))
        return x
    seq(l, "a %dx%d nested list" % (nrows, ncols))
    if len(l) != nrows:
        raise ValueError("expected %d rows, got %d" % (nrows, len(l)))
    rows = []
    for row in l:
        seq(row, "a row of %d numbers" % ncols)
        if len(row) != ncols:
            raise ValueError("expected rows of %d numbers, got one of %d" % (ncols, len(row)))
        rows.append([_real(v) for v in row])
    return rows
%}
