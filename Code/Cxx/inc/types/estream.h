// estream.h -- the CUDA stream handle type, declared without CUDA headers.
#ifndef __PYCA_ESTREAM_H__
#define __PYCA_ESTREAM_H__

#include <cstddef>

struct CUstream_st;

namespace PyCA {

/// A CUDA stream (cudaStream_t) or NULL for the default stream. Ignored on CPU.
typedef CUstream_st* StreamT;

/// Creates nStream CUDA streams. Throws "Cuda support not compiled" in CPU builds.
void StreamCreate(int nStream);
/// Destroys the streams made by StreamCreate. Throws in CPU builds.
void StreamDestroy();
/// Stream number id (NULL for id 0 when no stream was created).
StreamT GetStream(int id);
/// True when nstreams streams are available.
bool CheckStreamCondition(size_t nstreams);
/// Prints a warning that an operation ignores its stream argument.
void StreamIncompatibleWarning(const char* what, const char* file, int line);
void StreamIncompatibleWarning(const char* what, const char* file, int line, const char* sol);

}  // namespace PyCA

#endif
