// libtutti_torch: tutti's Horovod-style API for libtorch C++ trainers (see docs/LIBTORCH.md).
#pragma once

#include "tutti/torch_elastic.hpp"
#include "tutti/torch_openmp.hpp"
#include "tutti/torch_ops.hpp"
#include "tutti/torch_optimizer.hpp"
#include "tutti/torch_state.hpp"
