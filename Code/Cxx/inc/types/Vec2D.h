// Vec2D.h -- a 2-vector value type (Vec2Di, Vec2Df, Vec2Dd, Vec2Du).
// C++ only (the legacy module did not wrap it); Opers::MaxMin returns one.
#ifndef __PYCA_VEC2D_H__
#define __PYCA_VEC2D_H__

#include <cmath>
#include <ostream>
#include <stdexcept>

#include "pycaKernel.h"

namespace PyCA {

/// Two components x, y of type T; plain value semantics (like Vec3D).
template <typename T>
class Vec2D {
 public:
  typedef T value_type;

  T x, y;

  /// (0, 0).
  PYCA_HOSTDEVICE Vec2D() : x(0), y(0) {}
  /// (v, v).
  PYCA_HOSTDEVICE explicit Vec2D(T v) : x(v), y(v) {}
  PYCA_HOSTDEVICE Vec2D(T x_, T y_) : x(x_), y(y_) {}
  /// Converts each component (C++ conversion, e.g. float -> int truncates).
  template <typename U>
  PYCA_HOSTDEVICE explicit Vec2D(const Vec2D<U>& o) : x(T(o.x)), y(T(o.y)) {}

  /// Component i (0 or 1). Throws std::out_of_range otherwise (host only).
  T get(unsigned int i) const { return (*this)[checked(i)]; }
  /// Sets both components. (No set(i, v): for Vec2D<unsigned int> it would
  /// be the same signature.)
  PYCA_HOSTDEVICE void set(T x_, T y_) { x = x_; y = y_; }

  /// Component i, unchecked: 0 is x, anything else y.
  PYCA_HOSTDEVICE T& operator[](unsigned int i) { return i == 0 ? x : y; }
  PYCA_HOSTDEVICE const T& operator[](unsigned int i) const { return i == 0 ? x : y; }

  double lengthSquared() const { return double(x) * x + double(y) * y; }
  double length() const { return std::sqrt(lengthSquared()); }
  double dot(const Vec2D& o) const { return double(x) * o.x + double(y) * o.y; }
  T prod() const { return x * y; }
  T sum() const { return x + y; }
  T maxElement() const { return x > y ? x : y; }
  T minElement() const { return x < y ? x : y; }

  PYCA_HOSTDEVICE bool operator==(const Vec2D& o) const { return x == o.x && y == o.y; }
  PYCA_HOSTDEVICE bool operator!=(const Vec2D& o) const { return !(*this == o); }

  PYCA_HOSTDEVICE Vec2D operator-() const { return Vec2D(-x, -y); }
  PYCA_HOSTDEVICE Vec2D& operator+=(const Vec2D& o) { x += o.x; y += o.y; return *this; }
  PYCA_HOSTDEVICE Vec2D& operator-=(const Vec2D& o) { x -= o.x; y -= o.y; return *this; }
  PYCA_HOSTDEVICE Vec2D& operator*=(const Vec2D& o) { x *= o.x; y *= o.y; return *this; }
  PYCA_HOSTDEVICE Vec2D& operator/=(const Vec2D& o) { x /= o.x; y /= o.y; return *this; }
  PYCA_HOSTDEVICE Vec2D& operator+=(T s) { x += s; y += s; return *this; }
  PYCA_HOSTDEVICE Vec2D& operator-=(T s) { x -= s; y -= s; return *this; }
  PYCA_HOSTDEVICE Vec2D& operator*=(T s) { x *= s; y *= s; return *this; }
  PYCA_HOSTDEVICE Vec2D& operator/=(T s) { x /= s; y /= s; return *this; }

  PYCA_HOSTDEVICE Vec2D operator+(const Vec2D& o) const { Vec2D r(*this); return r += o; }
  PYCA_HOSTDEVICE Vec2D operator-(const Vec2D& o) const { Vec2D r(*this); return r -= o; }
  PYCA_HOSTDEVICE Vec2D operator*(const Vec2D& o) const { Vec2D r(*this); return r *= o; }
  PYCA_HOSTDEVICE Vec2D operator/(const Vec2D& o) const { Vec2D r(*this); return r /= o; }
  PYCA_HOSTDEVICE Vec2D operator+(T s) const { Vec2D r(*this); return r += s; }
  PYCA_HOSTDEVICE Vec2D operator-(T s) const { Vec2D r(*this); return r -= s; }
  PYCA_HOSTDEVICE Vec2D operator*(T s) const { Vec2D r(*this); return r *= s; }
  PYCA_HOSTDEVICE Vec2D operator/(T s) const { Vec2D r(*this); return r /= s; }

 private:
  static unsigned int checked(unsigned int i) {
    if (i > 1) throw std::out_of_range("Vec2D index out of range (0..1)");
    return i;
  }
};

template <typename T>
PYCA_HOSTDEVICE inline Vec2D<T> operator*(T s, const Vec2D<T>& v) { return v * s; }

/// Text form: Vec2D(a,b)
template <typename T>
std::ostream& operator<<(std::ostream& os, const Vec2D<T>& v) {
  return os << "Vec2D(" << v.x << "," << v.y << ")";
}

typedef Vec2D<int> Vec2Di;
typedef Vec2D<float> Vec2Df;
typedef Vec2D<double> Vec2Dd;
typedef Vec2D<unsigned int> Vec2Du;

}  // namespace PyCA

#endif
