// The names the C++ fragments of the docs leave to the reader (doc_blocks.py compiles each
// fragment marked <!-- doc-test: fragment --> inside a function after this header,
// -fsyntax-only: nothing here is defined or run). A fragment that needs another name gets its
// declaration here.
#ifndef TUTTI_DOCS_PRELUDE_HPP_
#define TUTTI_DOCS_PRELUDE_HPP_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <tutti/elastic.hpp>
#include <tutti/options.hpp>
#include <tutti/store.hpp>
#include <tutti/tutti.hpp>
#include <utility>
#include <vector>

extern size_t n;          // an element count
extern const void* send;  // buffers of n elements
extern void* recv;
extern std::vector<float> weights;  // a model's weights
extern std::vector<float> buf;      // point-to-point buffers
extern std::vector<int64_t> in;
extern int rank, size, prev, tag;  // who, how many, a neighbour, a message tag
extern int64_t steps;              // how long to train
extern tutti::World world;         // the job's world
extern tutti::Communicator comm;   // a communicator

struct Layer {  // a layer of a model, with its gradient
  std::string name;
  float* grad;
  size_t size;
};
extern std::vector<Layer> layers;
template <class T>
T& reversed(T& range);  // the same range, back to front

void optimizer_step();
void repartition(int rank, int size);  // give each rank its share of the data
void train_step(const tutti::Communicator& comm, std::vector<float>& weights);
void train_step(const tutti::Communicator& comm, int step);
void restore_last_good_state();

#endif
