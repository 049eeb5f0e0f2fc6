// Vec3D.h -- a 3-vector value type (Vec3Di, Vec3Df, Vec3Dd, Vec3Du).
#ifndef __PYCA_VEC3D_H__
#define __PYCA_VEC3D_H__

#include <cmath>
#include <iostream>
#include <istream>
#include <ostream>
#include <stdexcept>

#include "pycaKernel.h"

namespace PyCA {

/// Three components x, y, z of type T; plain value semantics.
template <typename T>
class Vec3D {
 public:
  T x, y, z;

  PYCA_HOSTDEVICE Vec3D() : x(0), y(0), z(0) {}
  PYCA_HOSTDEVICE explicit Vec3D(T v) : x(v), y(v), z(v) {}
  PYCA_HOSTDEVICE Vec3D(T x_, T y_, T z_) : x(x_), y(y_), z(z_) {}
  template <typename U>
  PYCA_HOSTDEVICE explicit Vec3D(const Vec3D<U>& o) : x(T(o.x)), y(T(o.y)), z(T(o.z)) {}

  /// Component i (0, 1, 2). Throws std::out_of_range otherwise (host only).
  T get(unsigned int i) const { return (*this)[checked(i)]; }
  void set(unsigned int i, T v) { (*this)[checked(i)] = v; }
  PYCA_HOSTDEVICE void set(T x_, T y_, T z_) { x = x_; y = y_; z = z_; }

  PYCA_HOSTDEVICE T& operator[](unsigned int i) { return i == 0 ? x : (i == 1 ? y : z); }
  PYCA_HOSTDEVICE const T& operator[](unsigned int i) const { return i == 0 ? x : (i == 1 ? y : z); }

  double lengthSquared() const { return double(x) * x + double(y) * y + double(z) * z; }
  double length() const { return std::sqrt(lengthSquared()); }
  double normL2() const { return length(); }
  double normL1() const { return std::fabs(double(x)) + std::fabs(double(y)) + std::fabs(double(z)); }
  T prod() const { return x * y * z; }
  T sum() const { return x + y + z; }
  T maxElement() const { return x > y ? (x > z ? x : z) : (y > z ? y : z); }
  T minElement() const { return x < y ? (x < z ? x : z) : (y < z ? y : z); }

  void scale(T sx, T sy, T sz) { x *= sx; y *= sy; z *= sz; }
  void translate(T tx, T ty, T tz) { x += tx; y += ty; z += tz; }
  void negate() { x = -x; y = -y; z = -z; }
  /// In place: each component becomes 1/component.
  void invert() { x = T(1) / x; y = T(1) / y; z = T(1) / z; }
  /// Returns (1/x, 1/y, 1/z).
  Vec3D inverse() const { return Vec3D(T(1) / x, T(1) / y, T(1) / z); }
  /// Scales to unit length (no-op for the zero vector).
  void normalize() {
    double l = length();
    if (l > 0) { x = T(x / l); y = T(y / l); z = T(z / l); }
  }
  double distanceSquared(const Vec3D& o) const { return (*this - o).lengthSquared(); }
  double distance(const Vec3D& o) const { return std::sqrt(distanceSquared(o)); }
  double dot(const Vec3D& o) const { return double(x) * o.x + double(y) * o.y + double(z) * o.z; }
  Vec3D cross(const Vec3D& o) const {
    return Vec3D(y * o.z - z * o.y, z * o.x - x * o.z, x * o.y - y * o.x);
  }

  void writeASCII(std::ostream& os = std::cerr) const { os << "(" << x << ", " << y << ", " << z << ")"; }
  void readASCII(std::istream& is = std::cin) { char c; is >> c >> x >> c >> y >> c >> z >> c; }
  void writeBinary(std::ostream& os) const { os.write(reinterpret_cast<const char*>(&x), 3 * sizeof(T)); }
  void readBinary(std::istream& is) { is.read(reinterpret_cast<char*>(&x), 3 * sizeof(T)); }

  PYCA_HOSTDEVICE bool operator==(const Vec3D& o) const { return x == o.x && y == o.y && z == o.z; }
  PYCA_HOSTDEVICE bool operator!=(const Vec3D& o) const { return !(*this == o); }
  bool operator<(const Vec3D& o) const { return x < o.x && y < o.y && z < o.z; }
  bool operator<=(const Vec3D& o) const { return x <= o.x && y <= o.y && z <= o.z; }
  bool operator>(const Vec3D& o) const { return x > o.x && y > o.y && z > o.z; }
  bool operator>=(const Vec3D& o) const { return x >= o.x && y >= o.y && z >= o.z; }

  PYCA_HOSTDEVICE Vec3D operator-() const { return Vec3D(-x, -y, -z); }
  PYCA_HOSTDEVICE Vec3D& operator+=(const Vec3D& o) { x += o.x; y += o.y; z += o.z; return *this; }
  PYCA_HOSTDEVICE Vec3D& operator-=(const Vec3D& o) { x -= o.x; y -= o.y; z -= o.z; return *this; }
  PYCA_HOSTDEVICE Vec3D& operator*=(const Vec3D& o) { x *= o.x; y *= o.y; z *= o.z; return *this; }
  PYCA_HOSTDEVICE Vec3D& operator/=(const Vec3D& o) { x /= o.x; y /= o.y; z /= o.z; return *this; }
  PYCA_HOSTDEVICE Vec3D& operator+=(T s) { x += s; y += s; z += s; return *this; }
  PYCA_HOSTDEVICE Vec3D& operator-=(T s) { x -= s; y -= s; z -= s; return *this; }
  PYCA_HOSTDEVICE Vec3D& operator*=(T s) { x *= s; y *= s; z *= s; return *this; }
  PYCA_HOSTDEVICE Vec3D& operator/=(T s) { x /= s; y /= s; z /= s; return *this; }

  PYCA_HOSTDEVICE Vec3D operator+(const Vec3D& o) const { Vec3D r(*this); return r += o; }
  PYCA_HOSTDEVICE Vec3D operator-(const Vec3D& o) const { Vec3D r(*this); return r -= o; }
  PYCA_HOSTDEVICE Vec3D operator*(const Vec3D& o) const { Vec3D r(*this); return r *= o; }
  PYCA_HOSTDEVICE Vec3D operator/(const Vec3D& o) const { Vec3D r(*this); return r /= o; }
  PYCA_HOSTDEVICE Vec3D operator+(T s) const { Vec3D r(*this); return r += s; }
  PYCA_HOSTDEVICE Vec3D operator-(T s) const { Vec3D r(*this); return r -= s; }
  PYCA_HOSTDEVICE Vec3D operator*(T s) const { Vec3D r(*this); return r *= s; }
  PYCA_HOSTDEVICE Vec3D operator/(T s) const { Vec3D r(*this); return r /= s; }

 private:
  static unsigned int checked(unsigned int i) {
    if (i > 2) throw std::out_of_range("Vec3D index out of range (0..2)");
    return i;
  }
};

template <typename T>
PYCA_HOSTDEVICE inline Vec3D<T> operator+(T s, const Vec3D<T>& v) { return v + s; }
template <typename T>
PYCA_HOSTDEVICE inline Vec3D<T> operator*(T s, const Vec3D<T>& v) { return v * s; }

/// Legacy text form: Vec3D(a,b,c)
template <typename T>
std::ostream& operator<<(std::ostream& os, const Vec3D<T>& v) {
  return os << "Vec3D(" << v.x << "," << v.y << "," << v.z << ")";
}

typedef Vec3D<int> Vec3Di;
typedef Vec3D<float> Vec3Df;
typedef Vec3D<double> Vec3Dd;
typedef Vec3D<unsigned int> Vec3Du;

}  // namespace PyCA

#endif
