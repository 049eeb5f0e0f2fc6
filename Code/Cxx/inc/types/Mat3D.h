// Mat3D.h -- a 3x3 matrix value type (Mat3Df, Mat3Dd), row-major.
#ifndef __PYCA_MAT3D_H__
#define __PYCA_MAT3D_H__

#include <cmath>
#include <iostream>
#include <limits>
#include <ostream>
#include <stdexcept>

#include "Vec3D.h"
#include "pycaKernel.h"

namespace PyCA {

// Scalar names of the f2c LAPACK interface the legacy header declared.
typedef double doublereal;
typedef long int integer;
typedef long long longint;
typedef float real;

/// A 3x3 matrix of T stored row-major: element (r, c) is a[3 * r + c].
/// Plain value semantics; a default-constructed matrix is the identity.
/// Instantiated (and tested) for float and double.
template <typename T>
class Mat3D {
 public:
  typedef T value_type;

  /// Row-major elements.
  T a[9];

  /// The identity.
  PYCA_HOSTDEVICE Mat3D() { eye(); }
  /// From nine values in row-major order.
  PYCA_HOSTDEVICE Mat3D(T a00, T a01, T a02, T a10, T a11, T a12, T a20, T a21, T a22)
      : a{a00, a01, a02, a10, a11, a12, a20, a21, a22} {}
  /// From a row-major array of nine values.
  PYCA_HOSTDEVICE explicit Mat3D(const T* rowMajor) {
    for (int i = 0; i < 9; ++i) a[i] = rowMajor[i];
  }
  /// Converts each element (float <-> double).
  template <typename U>
  PYCA_HOSTDEVICE explicit Mat3D(const Mat3D<U>& o) {
    for (int i = 0; i < 9; ++i) a[i] = T(o.a[i]);
  }

  /// Element (r, c), unchecked (r, c in 0..2).
  PYCA_HOSTDEVICE T& operator()(unsigned int r, unsigned int c) { return a[3 * r + c]; }
  PYCA_HOSTDEVICE const T& operator()(unsigned int r, unsigned int c) const { return a[3 * r + c]; }
  /// Element idx of the row-major array, unchecked (idx in 0..8).
  PYCA_HOSTDEVICE T& operator()(unsigned int idx) { return a[idx]; }
  PYCA_HOSTDEVICE const T& operator()(unsigned int idx) const { return a[idx]; }

  /// Element (r, c). Throws std::out_of_range unless r, c are in 0..2.
  T get(unsigned int r, unsigned int c) const { return a[checked(r, c)]; }
  /// Sets element (r, c). Throws std::out_of_range unless r, c are in 0..2.
  void set(unsigned int r, unsigned int c, T v) { a[checked(r, c)] = v; }

  /// Becomes the identity.
  PYCA_HOSTDEVICE void eye() {
    for (int i = 0; i < 9; ++i) a[i] = (i % 4 == 0) ? T(1) : T(0);
  }

  /// A new matrix, the transpose of this one.
  PYCA_HOSTDEVICE Mat3D Transpose() const {
    return Mat3D(a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8]);
  }

  /// Determinant (accumulated in double, returned as T).
  PYCA_HOSTDEVICE T det() const { return T(detOf(a)); }

  /// Replaces this matrix by its inverse and returns true; returns false and
  /// leaves the matrix unchanged if it is numerically singular (see computeInverse).
  bool invert() { return computeInverse(a, a); }

  /// Writes the inverse of the row-major 3x3 matrix `in` to `out` and returns
  /// true. `in` and `out` may be the same array (the legacy computed the
  /// cofactors from partly overwritten entries when they were). Returns false,
  /// leaving `out` untouched, when the matrix is numerically singular:
  /// |det| <= 8 eps(T) * |row0| |row1| |row2| (a zero row or a NaN included),
  /// or when the inverse does not fit in T.
  static bool computeInverse(const T* in, T* out) {
    double m[9];
    for (int i = 0; i < 9; ++i) m[i] = double(in[i]);
    const double d = detOf(m);
    double bound = 1.0;  // Hadamard's bound: |det| <= product of the row lengths
    for (int r = 0; r < 3; ++r)
      bound *= std::sqrt(m[3 * r] * m[3 * r] + m[3 * r + 1] * m[3 * r + 1] + m[3 * r + 2] * m[3 * r + 2]);
    const double tol = 8.0 * double(std::numeric_limits<T>::epsilon());
    if (!(std::fabs(d) > tol * bound)) return false;  // also catches NaN and a zero row
    // Adjugate (transposed cofactors) over the determinant.
    const double c[9] = {
        m[4] * m[8] - m[5] * m[7], m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
        m[5] * m[6] - m[3] * m[8], m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
        m[3] * m[7] - m[4] * m[6], m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3]};
    T r[9];
    for (int i = 0; i < 9; ++i) {
      r[i] = T(c[i] / d);
      if (!std::isfinite(double(r[i]))) return false;
    }
    for (int i = 0; i < 9; ++i) out[i] = r[i];
    return true;
  }

  /// Three lines "a00 a01 a02" etc.
  void writeASCII(std::ostream& os = std::cerr) const {
    for (int r = 0; r < 3; ++r)
      os << a[3 * r] << " " << a[3 * r + 1] << " " << a[3 * r + 2] << "\n";
  }

  /// Matrix product this * m.
  PYCA_HOSTDEVICE Mat3D operator*(const Mat3D& m) const {
    Mat3D p;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        p.a[3 * r + c] = a[3 * r] * m.a[c] + a[3 * r + 1] * m.a[3 + c] + a[3 * r + 2] * m.a[6 + c];
    return p;
  }
  /// this = this * m.
  PYCA_HOSTDEVICE Mat3D& operator*=(const Mat3D& m) { return *this = *this * m; }
  /// Matrix-vector product this * v.
  PYCA_HOSTDEVICE Vec3D<T> operator*(const Vec3D<T>& v) const {
    return Vec3D<T>(a[0] * v.x + a[1] * v.y + a[2] * v.z, a[3] * v.x + a[4] * v.y + a[5] * v.z,
                    a[6] * v.x + a[7] * v.y + a[8] * v.z);
  }

  /// Exact element-wise equality.
  PYCA_HOSTDEVICE bool operator==(const Mat3D& m) const {
    for (int i = 0; i < 9; ++i)
      if (a[i] != m.a[i]) return false;
    return true;
  }
  PYCA_HOSTDEVICE bool operator!=(const Mat3D& m) const { return !(*this == m); }

 private:
  template <typename U>
  PYCA_HOSTDEVICE static double detOf(const U* m) {
    return double(m[0]) * (double(m[4]) * m[8] - double(m[5]) * m[7]) -
           double(m[1]) * (double(m[3]) * m[8] - double(m[5]) * m[6]) +
           double(m[2]) * (double(m[3]) * m[7] - double(m[4]) * m[6]);
  }
  static unsigned int checked(unsigned int r, unsigned int c) {
    if (r > 2 || c > 2) throw std::out_of_range("Mat3D index out of range (row and column 0..2)");
    return 3 * r + c;
  }
};

/// Text form: Mat3D((a00,a01,a02),(a10,a11,a12),(a20,a21,a22))
template <typename T>
std::ostream& operator<<(std::ostream& os, const Mat3D<T>& m) {
  os << "Mat3D(";
  for (int r = 0; r < 3; ++r)
    os << (r ? ",(" : "(") << m.a[3 * r] << "," << m.a[3 * r + 1] << "," << m.a[3 * r + 2] << ")";
  return os << ")";
}

typedef Mat3D<float> Mat3Df;
typedef Mat3D<double> Mat3Dd;

}  // namespace PyCA

#endif
