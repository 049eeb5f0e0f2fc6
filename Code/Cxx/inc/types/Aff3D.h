// Aff3D.h -- a 3-D affine transform x -> matrix * x + vector (Aff3Df, Aff3Dd).
#ifndef __PYCA_AFF3D_H__
#define __PYCA_AFF3D_H__

#include <ostream>
#include <string>

#include "Mat3D.h"
#include "Vec3D.h"
#include "pycaKernel.h"

namespace PyCA {

/// The affine map x -> matrix * x + vector. Plain value semantics; a
/// default-constructed transform is the identity. Instantiated (and tested)
/// for float and double.
template <typename T>
class Aff3D {
 public:
  typedef T CoordinateType;
  typedef Aff3D<T> Self;
  typedef Mat3D<T> MatrixType;
  typedef Vec3D<T> VectorType;

  /// Linear part.
  MatrixType matrix;
  /// Translation.
  VectorType vector;

  /// The identity.
  PYCA_HOSTDEVICE Aff3D() : matrix(), vector(T(0), T(0), T(0)) {}
  PYCA_HOSTDEVICE Aff3D(const MatrixType& m, const VectorType& v) : matrix(m), vector(v) {}
  /// Linear map m, no translation.
  PYCA_HOSTDEVICE explicit Aff3D(const MatrixType& m) : matrix(m), vector(T(0), T(0), T(0)) {}
  /// Translation by v.
  PYCA_HOSTDEVICE explicit Aff3D(const VectorType& v) : matrix(), vector(v) {}

  /// Becomes the identity.
  PYCA_HOSTDEVICE void eye() {
    matrix.eye();
    vector = VectorType(T(0), T(0), T(0));
  }

  /// Replaces this transform by its inverse (x -> M^-1 x - M^-1 t) and
  /// returns true; returns false and leaves it unchanged when the matrix is
  /// numerically singular (Mat3D::computeInverse).
  bool invert() {
    MatrixType inv;
    if (!MatrixType::computeInverse(matrix.a, inv.a)) return false;
    matrix = inv;
    vector = -(inv * vector);
    return true;
  }

  /// Composition: (this * rhs)(x) = this(rhs(x)).
  PYCA_HOSTDEVICE Self operator*(const Self& rhs) const {
    return Self(matrix * rhs.matrix, matrix * rhs.vector + vector);
  }
  /// this = this * rhs (rhs applied first).
  PYCA_HOSTDEVICE Self& operator*=(const Self& rhs) { return *this = *this * rhs; }
  /// Applies the transform to the point v.
  PYCA_HOSTDEVICE VectorType operator*(const VectorType& v) const { return matrix * v + vector; }

  /// vOut = this(vIn); vIn and vOut may be the same object.
  PYCA_HOSTDEVICE void transformVector(const VectorType& vIn, VectorType& vOut) const {
    vOut = *this * vIn;
  }
  /// v = this(v), in place.
  PYCA_HOSTDEVICE void transformVector(VectorType& v) const { v = *this * v; }

  /// Exact equality of matrix and vector.
  PYCA_HOSTDEVICE bool operator==(const Self& o) const { return matrix == o.matrix && vector == o.vector; }
  PYCA_HOSTDEVICE bool operator!=(const Self& o) const { return !(*this == o); }

  /// Determinant of the linear part.
  PYCA_HOSTDEVICE T determinant() const { return matrix.det(); }

  /// Writes the PLUNC-style text form: the transpose of the homogeneous 4x4
  /// matrix (row-vector convention), one row per line:
  ///   m00 m10 m20 0 / m01 m11 m21 0 / m02 m12 m22 0 / t.x t.y t.z 1
  /// with enough digits to read back the same values. Throws PyCAException
  /// if the file cannot be written.
  void writePLUNCStyle(const std::string& filename) const;
  /// Reads the form writePLUNCStyle writes: 16 numbers, whitespace separated.
  /// Throws PyCAException (the transform unchanged) if the file cannot be
  /// opened, holds anything else than 16 numbers, or its last column is not
  /// (0, 0, 0, 1) within 1e-6.
  void readPLUNCStyle(const std::string& filename);
};

/// Text form: Aff3D(Mat3D((...),(...),(...)),Vec3D(x,y,z))
template <typename T>
std::ostream& operator<<(std::ostream& os, const Aff3D<T>& t) {
  return os << "Aff3D(" << t.matrix << "," << t.vector << ")";
}

typedef Aff3D<float> Aff3Df;
typedef Aff3D<double> Aff3Dd;

}  // namespace PyCA

#endif
