// PyCAException.h -- the exception every PyCA failure throws.
#ifndef __PYCA_EXCEPTION_H__
#define __PYCA_EXCEPTION_H__

#include <exception>
#include <string>

namespace PyCA {

/// what() is "PyCAException : From <file>:<line> : <text>", built once at
/// construction (thread-safe, unlike the legacy static buffer).
class PyCAException : public std::exception {
 public:
  PyCAException(const char* file = "unknown file", int line = 0,
                const std::string& text = "undefined exception",
                const std::exception* cause = nullptr);
  ~PyCAException() noexcept override = default;

  const char* what() const noexcept override { return mWhat.c_str(); }
  /// The message without location.
  const std::string& Text() const { return mText; }
  /// "file:line".
  std::string Location() const;
  virtual std::string TypeDescription() const { return "PyCAException"; }

 protected:
  std::string mFile;
  int mLine;
  std::string mText;
  std::string mWhat;
};

/// Out of memory: an allocation failed or a MemoryManager limit was hit.
/// Python sees MemoryError.
class PyCAMemoryException : public PyCAException {
 public:
  using PyCAException::PyCAException;
};

/// An argument is of the wrong kind (e.g. a negative grid size). Python sees ValueError.
class PyCAValueException : public PyCAException {
 public:
  using PyCAException::PyCAException;
};

}  // namespace PyCA

#endif
