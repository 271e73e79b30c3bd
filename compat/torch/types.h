// <torch/types.h> for libtorch programs built against Kindle: all of it is in <torch/torch.h>.
#pragma once
#include <torch/torch.h>
