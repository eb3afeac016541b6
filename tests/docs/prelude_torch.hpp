// The names the libtorch fragments of the docs leave to the reader (see prelude.hpp).
#ifndef TUTTI_DOCS_PRELUDE_TORCH_HPP_
#define TUTTI_DOCS_PRELUDE_TORCH_HPP_

#include <torch/torch.h>

#include <tutti/torch.hpp>
#include <tutti/torch_elastic.hpp>

#include "prelude.hpp"

struct NetImpl : torch::nn::Module {  // a model
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

extern std::vector<std::pair<torch::Tensor, torch::Tensor>> my_shard;  // this rank's batches

#endif
