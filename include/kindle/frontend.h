// The C++ front end, all of it: the core (kindle.h), nn modules, optimizers and schedulers,
// data loading and checkpoints. Link with kindle_frontend (or the kindle library that
// includes it).
#pragma once
#include "kindle/cuda.h"
#include "kindle/data.h"
#include "kindle/kindle.h"
#include "kindle/nn.h"
#include "kindle/optimizers.h"
#include "kindle/serialize.h"
#include "kindle/save_load.h"
