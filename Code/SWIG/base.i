// base.i -- memory managers, managed containers, CUDA utilities.

%shared_ptr(PyCA::MemoryManager)

%ignore PyCA::MemoryManager::getPool;
%ignore PyCA::ThreadMemoryManager::instance;
%ignore PyCA::ThreadMemoryManager::instancePtr;
%rename(instance) PyCA::ThreadMemoryManager::instanceShared;
%ignore PyCA::MemPool;
%ignore PyCA::MEMPOOL_ALIGN_ELEMS;

PYCA_KEEPALIVE(PyCA::MemoryManager::grid)

%include "MemoryManager.h"
%include "ManagedImage3D.h"
%include "ManagedField3D.h"

%extend PyCA::MemoryManager {
  std::string __str__() const {
    std::ostringstream os;
    PyCA::MemoryManagerStats s = $self->stats();
    os << "MemoryManager: " << PyCA::MemTypeName($self->memType()) << ", "
       << $self->grid().toString() << ", " << s.numPools << " pools (" << s.poolsInUse
       << " in use, peak " << s.peakInUse << "), " << s.bytesHeld << " bytes held";
    return os.str();
  }
  %pythoncode %{
    __repr__ = __str__
  %}
}

%include "CudaUtils.h"
