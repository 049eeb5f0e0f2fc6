// pyca_test_utils.h -- helpers shared by the Boost.Test suites.
#ifndef PYCA_TEST_UTILS_H
#define PYCA_TEST_UTILS_H

#include <boost/test/unit_test.hpp>
#include <string>

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Checks that stmt throws ExcT whose what() contains msg.
#define CHECK_PYCA_THROW(stmt, ExcT, msg)                                        \
  BOOST_CHECK_EXCEPTION(stmt, ExcT, [&](const ExcT& e) {                          \
    bool ok = contains(e.what(), msg);                                            \
    if (!ok) BOOST_TEST_MESSAGE("unexpected message: " << e.what());              \
    return ok;                                                                    \
  })

#endif
