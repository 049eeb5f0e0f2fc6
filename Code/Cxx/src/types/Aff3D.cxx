// Aff3D: the PLUNC-style text files, and the float/double instantiations.
#include "Aff3D.h"

#include "AtomicFile.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "PyCAException.h"

namespace PyCA {

// PLUNC stores the transpose of the homogeneous matrix: token 4 * c + r is
// element (r, c) for r, c < 3, tokens 12..14 the translation, tokens 3, 7,
// 11, 15 the homogeneous column (0, 0, 0, 1).

template <typename T>
void Aff3D<T>::writePLUNCStyle(const std::string& filename) const {
  // Written whole, then moved into place: a kill leaves the earlier file.
  std::ostringstream os;
  os.precision(std::numeric_limits<T>::max_digits10);
  for (int c = 0; c < 3; ++c)
    os << matrix(0, c) << " " << matrix(1, c) << " " << matrix(2, c) << " 0\n";
  os << vector.x << " " << vector.y << " " << vector.z << " 1\n";
  std::string why;
  if (!detail::writeFileAtomically(filename, os.str(), &why))
    throw PyCAException(__FILE__, __LINE__, "cannot open '" + filename + "' for writing (" + why + ")");
}

template <typename T>
void Aff3D<T>::readPLUNCStyle(const std::string& filename) {
  std::ifstream is(filename.c_str());
  if (!is)
    throw PyCAException(__FILE__, __LINE__, "cannot open '" + filename + "' for reading");
  std::ostringstream content;
  content << is.rdbuf();
  std::istringstream tokens(content.str());
  const std::string bad = "'" + filename + "' is not a PLUNC-style affine transform: ";
  std::vector<double> v;
  std::string tok;
  while (tokens >> tok) {
    if (v.size() == 16) throw PyCAException(__FILE__, __LINE__, bad + "more than 16 values");
    const char* s = tok.c_str();
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !std::isfinite(d))
      throw PyCAException(__FILE__, __LINE__, bad + "'" + tok + "' is not a finite number");
    v.push_back(d);
  }
  if (v.size() != 16)
    throw PyCAException(__FILE__, __LINE__,
                        bad + "expected 16 values (a 4x4 matrix), found " + std::to_string(v.size()));
  if (std::fabs(v[3]) > 1e-6 || std::fabs(v[7]) > 1e-6 || std::fabs(v[11]) > 1e-6 ||
      std::fabs(v[15] - 1.0) > 1e-6)
    throw PyCAException(__FILE__, __LINE__, bad + "the last column is not (0, 0, 0, 1)");
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) matrix(r, c) = T(v[4 * c + r]);
  vector = VectorType(T(v[12]), T(v[13]), T(v[14]));
}

template class Aff3D<float>;
template class Aff3D<double>;

}  // namespace PyCA
