// kindle::nn for C++: modules, layers, losses, initialisers (see kindle/nn/module.h for the
// holder style).
#pragma once
#include "kindle/nn/adaptive.h"
#include "kindle/nn/container.h"
#include "kindle/nn/functional.h"
#include "kindle/nn/init.h"
#include "kindle/nn/layers.h"
#include "kindle/nn/layers_extra.h"
#include "kindle/nn/loss.h"
#include "kindle/nn/module.h"
#include "kindle/nn/options.h"
#include "kindle/nn/rnn.h"
#include "kindle/nn/spatial.h"
#include "kindle/nn/transformer.h"
#include "kindle/nn/utils.h"
