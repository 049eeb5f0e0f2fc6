// IOpers.h -- free operators on images (namespace PyCA::Opers).
// Every operator checks grids and memory types, then runs on the back end of
// its output's memory type (MEM_DEVICE: CUDA, otherwise the CPU).
#ifndef __PYCA_IOPERS_H__
#define __PYCA_IOPERS_H__

#include "Image3D.h"
#include "estream.h"

namespace PyCA {
class Field3D;

namespace Opers {

/// a_o = a_i. Works across host, pinned and device memory.
void Copy(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);
/// a_o = a_i where a_mask != 0.
void Copy(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st = nullptr);
/// a_o = component dim (0, 1, 2) of a_i.
void Copy(Image3D& a_o, const Field3D& a_i, int dim, StreamT st = nullptr);

/// a_o = c.
void SetMem(Image3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
/// a_o = c where a_mask != 0.
void SetMem(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st = nullptr,
            bool onDev = false);

/// a_o = a_i * c (optionally only where a_mask != 0).
void MulC(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr, bool onDev = false);
void MulC(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask,
          StreamT st = nullptr, bool onDev = false);
/// a_o *= c (optionally only where a_mask != 0).
void MulC_I(Image3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
void MulC_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st = nullptr,
            bool onDev = false);

/// a_o = a_i + a_i1 (optionally only where a_mask != 0).
void Add(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, StreamT st = nullptr);
void Add(Image3D& a_o, const Image3D& a_i, const Image3D& a_i1, const Image3D& a_mask,
         StreamT st = nullptr);
/// a_o = a_i + c (the legacy also names AddC this way).
void Add(Image3D& a_o, const Image3D& a_i, const float& c, StreamT st = nullptr, bool onDev = false);
void Add(Image3D& a_o, const Image3D& a_i, const float& c, const Image3D& a_mask,
         StreamT st = nullptr, bool onDev = false);
/// a_o += a_i (optionally masked); a_o += c.
void Add_I(Image3D& a_o, const Image3D& a_i, StreamT st = nullptr);
void Add_I(Image3D& a_o, const Image3D& a_i, const Image3D& a_mask, StreamT st = nullptr);
void Add_I(Image3D& a_o, const float& c, StreamT st = nullptr, bool onDev = false);
void Add_I(Image3D& a_o, const float& c, const Image3D& a_mask, StreamT st = nullptr,
           bool onDev = false);

}  // namespace Opers
}  // namespace PyCA

#endif
