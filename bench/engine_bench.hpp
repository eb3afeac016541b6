// tutti-bench engine: steps per second of a training step's gradient sync, three ways, interleaved
// round by round in the same processes: (a) one blocking allreduce per tensor, (b) the engine
// (every tensor enqueued by name, in backward order, then all waited), (c) one allreduce of the
// whole concatenated buffer. Cases: T tensors of S bytes, or ResNet-50's 161 gradients.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace tutti::bench {

// ResNet-50's (torchvision) parameter sizes in elements, in parameter order: 161 tensors,
// 25,557,032 elements.
std::vector<size_t> resnet50_parameter_sizes();

// args: what follows "engine" on the command line. Returns the exit code.
int run_engine_bench(std::span<const std::string> args);

}  // namespace tutti::bench
