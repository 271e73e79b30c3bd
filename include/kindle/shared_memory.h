// Tensors whose bytes live in shared memory (an anonymous memfd), so another process can map
// them: the base of kindle.multiprocessing and of DataLoader workers (batches travel as file
// descriptors, not as pickled bytes).
#pragma once
#include "kindle/tensor.h"

namespace kindle {

// Moves t's storage into shared memory in place (all views see the move); no-op if it is there.
const Tensor& share_memory_(const Tensor& t);
bool is_shared(const Tensor& t);
// The memfd behind t's shared storage (shares it first). The storage owns the descriptor.
int shared_memory_fd(const Tensor& t);
// Maps `nbytes` of the shared memory behind `fd` (the caller keeps ownership of fd) and views
// them with the given geometry; checks that the geometry fits in the mapping.
Tensor tensor_from_shared_fd(int fd, size_t nbytes, DType dtype, IntArrayRef sizes,
                             IntArrayRef strides, int64_t storage_offset);

}  // namespace kindle
