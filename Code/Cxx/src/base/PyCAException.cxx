#include "PyCAException.h"

#include <sstream>

namespace PyCA {

PyCAException::PyCAException(const char* file, int line, const std::string& text,
                             const std::exception* cause)
    : mFile(file ? file : "unknown file"), mLine(line), mText(text) {
  if (cause) mText += std::string("\n   Caused by:\n") + cause->what();
  mWhat = "PyCAException : From " + Location() + " : " + mText;
}

std::string PyCAException::Location() const {
  std::ostringstream os;
  os << mFile << ":" << mLine;
  return os.str();
}

}  // namespace PyCA
