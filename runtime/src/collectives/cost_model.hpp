// The allreduce cost model behind kAuto: for each algorithm a predicted time for `bytes` on a given
// placement, as latency terms (steps x alpha of the link they cross) plus bytes/bandwidth terms
// (bytes moved x beta, bytes reduced x gamma) with each algorithm's step and byte counts. The
// constants were measured on the development machine (cost_model.cc says how); a tuning file from
// `tutti-bench --tune` (TUTTI_TUNE_FILE) replaces an algorithm's prediction by the alpha + beta
// line fitted on the placement it was measured on.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collectives.hpp"

namespace tutti::collectives {

enum class Link { kShm, kTcp };
std::string_view to_string(Link link);

struct Placement {
  int ranks = 1;
  int hosts = 1;                   // distinct hosts; 1 when unknown
  int max_local = 1;               // the most ranks on one host
  bool window = false;             // the transport has a LocalWindow (every rank on one host)
  Link flat = Link::kShm;          // the slowest channel a flat algorithm's ring of ranks crosses
  Link local = Link::kShm;         // channels between ranks of one host
  std::string transport = "auto";  // TUTTI_TRANSPORT, part of a tuning entry's key
  // Ranks per CPU while all run, and while one per host runs (cpu_share.hpp): a TCP link's
  // message and byte costs are CPU work (the kernel's copies, wake-ups), so they scale by it.
  double cpu_share = 1;
  double leaders_cpu_share = 1;
};

struct LinkCost {
  double alpha_s = 0;          // per message on the critical path
  double beta_s_per_byte = 0;  // per byte through the link
};

// One fitted line from a tuning file: time = alpha + bytes * beta for `algorithm` on `ranks`
// ranks over `hosts` hosts with TUTTI_TRANSPORT=`transport`.
struct TunedLine {
  Algorithm algorithm = Algorithm::kRing;
  int ranks = 0;
  int hosts = 0;
  std::string transport;
  double alpha_s = 0;
  double beta_s_per_byte = 0;
};

struct CostModel {
  LinkCost shm;                      // framed byte ring between two local ranks
  LinkCost tcp;                      // TCP connection between two ranks
  LinkCost window;                   // a LocalWindow step (flag round trip) and copy per byte
  double reduce_s_per_byte = 0;      // c = a op b, per byte of c
  size_t segment_bytes = 256 << 10;  // TUTTI_SEGMENT_BYTES: the pipeline fill unit
  std::vector<TunedLine> tuned;      // from TUTTI_TUNE_FILE; wins where its key matches
  std::string tuned_from;            // the file they came from (for the decision table)

  // The measured defaults of cost_model.cc, without tuning lines.
  static CostModel defaults();
  // defaults() with this segment size, plus the tuning file when one is named (a bad file is an
  // Error(kConfig) naming it).
  static CostModel configured(size_t segment_bytes, const std::string& tune_file);
};

// Each algorithm's modeled seconds for `bytes` on `p` (the registry's entries point here).
namespace model {
double ring(const CostModel& m, double bytes, const Placement& p);
double tree(const CostModel& m, double bytes, const Placement& p);
double halving_doubling(const CostModel& m, double bytes, const Placement& p);
double window(const CostModel& m, double bytes, const Placement& p);
double hierarchical(const CostModel& m, double bytes, const Placement& p);
}  // namespace model

// The registry's algorithms that apply to the placement, in registry order (allreduce_registry.cc:
// ring, tree, hd always with more than one rank, shm with a window, hier with more than one host
// and some host holding several ranks).
std::vector<Algorithm> candidates(const Placement& p);

// Predicted seconds for one allreduce of `bytes` with `algorithm` (never kAuto).
double predict(const CostModel& model, Algorithm algorithm, size_t bytes, const Placement& p);

// Whether halving-doubling should exchange whole vectors in log2(p) rounds (recursive doubling)
// rather than halves in 2 log2(p) rounds (Rabenseifner) for `count` elements on `p`: never with
// fewer elements than ranks, else by the model's built-in link constants (not the tuned lines:
// every rank must decide alike).
bool recursive_doubling_pays(const CostModel& model, size_t count, size_t element_bytes,
                             const Placement& p);

// The candidate with the least predicted time (ties: the earlier in candidates()).
Algorithm cheapest(const CostModel& model, size_t bytes, const Placement& p);

// Sizes 8 B .. 256 MiB by candidate: predicted microseconds and the pick, as text lines.
std::string decision_table(const CostModel& model, const Placement& p);

}  // namespace tutti::collectives
