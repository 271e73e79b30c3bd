// <torch/torch.h> for libtorch programs built against Kindle (see kindle/torch_compat.h).
#pragma once
#include <kindle/torch_compat.h>
