// The whole C++ API of Kindle: #include <kindle/kindle.h>.
#pragma once
#include "kindle/ops.h"
#include "kindle/random.h"
#include "kindle/parallel.h"
#include "kindle/operators.h"
#include "kindle/factories.h"
#include "kindle/indexing.h"
#include "kindle/autograd.h"
#include "kindle/optim.h"
#include "kindle/shared_memory.h"
#include "kindle/warning.h"
