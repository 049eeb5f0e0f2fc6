// PyCA.h -- everything a C++ program needs: types, memory, containers, operators.
#ifndef __PYCA_H__
#define __PYCA_H__

#include "pycaConst.h"
#include "pycaUtils.h"
#include "mem.h"
#include "estream.h"
#include "Vec2D.h"
#include "Vec3D.h"
#include "Mat3D.h"
#include "Aff3D.h"
#include "GridInfo.h"
#include "PyCAException.h"
#include "conditionMacro.h"
#include "MemAlloc.h"
#include "MemPool.h"
#include "MemoryManager.h"
#include "CudaUtils.h"
#include "Image3D.h"
#include "Field3D.h"
#include "ManagedImage3D.h"
#include "ManagedField3D.h"
#include "IOpers.h"
#include "FOpers.h"
#include "IFOpers.h"
#include "HFOpers.h"
#include "VFOpers.h"
#include "Reduction.h"
#include "interp.h"
#include "MemOpers.h"

#endif
