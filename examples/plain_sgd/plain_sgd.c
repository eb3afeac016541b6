/* plain_sgd: data-parallel training in plain C with tutti.h and nothing else (no framework).
 *
 * A two-layer perceptron (784 -> 32 tanh -> 10 softmax) learns Fashion-MNIST with hand-written
 * gradients. Every rank trains on its own shard of the training set; as soon as backpropagation
 * has produced a layer's gradient, the rank enqueues it with tutti_allreduce_async (average over
 * ranks) and goes on to the next layer, so the output layer's gradient travels while the hidden
 * layer's is being computed. The engine negotiates, fuses and reduces them; the rank waits for
 * all of them before its SGD step. Every rank therefore applies the same update and ends with the
 * same weights, which the program checks at the end, together with the loss.
 *
 *   tuttirun -np 2 -- plain_sgd [--data DIR] [--train N] [--epochs E] [--batch B] [--lr R]
 *                               [--target-loss L]
 * Exits 0 when the final training loss is below L and the weights agree on every rank. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tutti/tutti.h"

enum { kPixels = 784, kHidden = 32, kClasses = 10 };

typedef struct {
  float w1[kHidden][kPixels], b1[kHidden];
  float w2[kClasses][kHidden], b2[kClasses];
} Model;

static int g_rank;

static void die(const char* what, int code) {
  fprintf(stderr, "plain_sgd rank %d: %s: %s (%s)\n", g_rank, what, tutti_last_error(),
          tutti_error_name(code));
  exit(1);
}
#define CHECK(call)                \
  do {                             \
    int rc_ = (call);              \
    if (rc_ != 0) die(#call, rc_); \
  } while (0)

static uint32_t be32(const unsigned char* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads `n` records of an IDX file (gzip), `record` bytes each, after its header. */
static unsigned char* read_idx(const char* path, int dims, size_t n, size_t record) {
  gzFile f = gzopen(path, "rb");
  if (!f) {
    fprintf(stderr, "plain_sgd: cannot open %s (install dataset-fashion-mnist)\n", path);
    exit(1);
  }
  unsigned char header[16];
  size_t header_bytes = 4 + 4 * (size_t)dims;
  if (gzread(f, header, (unsigned)header_bytes) != (int)header_bytes || be32(header + 4) < n) {
    fprintf(stderr, "plain_sgd: %s is not an IDX file with %zu records\n", path, n);
    exit(1);
  }
  unsigned char* data = malloc(n * record);
  if (!data || gzread(f, data, (unsigned)(n * record)) != (int)(n * record)) {
    fprintf(stderr, "plain_sgd: %s ends early\n", path);
    exit(1);
  }
  gzclose(f);
  return data;
}

/* The same pseudo-random start on every rank (rank 0's is broadcast anyway). */
static float uniform(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xFFFFFF) / 16777216.0f - 0.5f;
}

/* Forward pass of one image; returns its loss and fills the activations. */
static float forward(const Model* m, const float* x, int label, float* h, float* p) {
  for (int j = 0; j < kHidden; ++j) {
    float a = m->b1[j];
    for (int i = 0; i < kPixels; ++i) a += m->w1[j][i] * x[i];
    h[j] = tanhf(a);
  }
  float top = -1e30f, sum = 0;
  for (int k = 0; k < kClasses; ++k) {
    float z = m->b2[k];
    for (int j = 0; j < kHidden; ++j) z += m->w2[k][j] * h[j];
    p[k] = z;
    if (z > top) top = z;
  }
  for (int k = 0; k < kClasses; ++k) sum += (p[k] = expf(p[k] - top));
  for (int k = 0; k < kClasses; ++k) p[k] /= sum;
  return -logf(p[label] > 1e-12f ? p[label] : 1e-12f);
}

static uint64_t fnv(const void* data, size_t n) {
  const unsigned char* p = data;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h >> 1;
}

int main(int argc, char** argv) {
  const char* dir = "/usr/share/datasets/fashion-mnist";
  size_t train = 6000;
  int epochs = 3, batch = 32;
  float lr = 0.1f, target = 0.8f;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--data"))
      dir = argv[i + 1];
    else if (!strcmp(argv[i], "--train"))
      train = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--epochs"))
      epochs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch"))
      batch = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--lr"))
      lr = strtof(argv[i + 1], NULL);
    else if (!strcmp(argv[i], "--target-loss"))
      target = strtof(argv[i + 1], NULL);
    else {
      fprintf(stderr, "plain_sgd: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (train == 0 || train > 60000 || epochs < 1 || batch < 1) {
    fprintf(stderr, "plain_sgd: --train must be 1..60000, --epochs and --batch >= 1\n");
    return 2;
  }
  CHECK(tutti_init());
  g_rank = tutti_rank();
  const int size = tutti_size();

  char path[4096];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  unsigned char* pixels = read_idx(path, 3, train, kPixels);
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
  unsigned char* labels = read_idx(path, 1, train, 1);

  Model* m = calloc(1, sizeof(Model));
  Model* g = calloc(1, sizeof(Model));
  float* x = malloc(sizeof(float) * kPixels);
  if (!m || !g || !x) return 1;
  uint64_t seed = 42;
  for (int j = 0; j < kHidden; ++j)
    for (int i = 0; i < kPixels; ++i) m->w1[j][i] = uniform(&seed) * 0.1f;
  for (int k = 0; k < kClasses; ++k)
    for (int j = 0; j < kHidden; ++j) m->w2[k][j] = uniform(&seed) * 0.5f;
  /* Rank 0's start, everywhere (as a trainer restoring a checkpoint on rank 0 would). */
  tutti_request_t start;
  CHECK(tutti_broadcast_async("model", m, sizeof(Model) / sizeof(float), TUTTI_FLOAT32, 0, &start));
  CHECK(tutti_wait(start));

  /* This rank's shard: images rank, rank + size, ... (the same number on every rank). */
  const size_t shard = train / (size_t)size;
  const int steps = (int)(shard / (size_t)batch);
  float loss = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double epoch_loss = 0;
    for (int step = 0; step < steps; ++step) {
      memset(g, 0, sizeof(Model));
      float dz1[kHidden];
      for (int b = 0; b < batch; ++b) {
        size_t n = ((size_t)step * (size_t)batch + (size_t)b) * (size_t)size + (size_t)g_rank;
        for (int i = 0; i < kPixels; ++i) x[i] = pixels[n * kPixels + (size_t)i] / 255.0f;
        float h[kHidden], p[kClasses];
        epoch_loss += forward(m, x, labels[n], h, p);
        p[labels[n]] -= 1.0f; /* d loss / d logits */
        for (int j = 0; j < kHidden; ++j) dz1[j] = 0;
        for (int k = 0; k < kClasses; ++k) {
          g->b2[k] += p[k] / (float)batch;
          for (int j = 0; j < kHidden; ++j) {
            g->w2[k][j] += p[k] * h[j] / (float)batch;
            dz1[j] += p[k] * m->w2[k][j];
          }
        }
        for (int j = 0; j < kHidden; ++j) {
          float d = dz1[j] * (1 - h[j] * h[j]) / (float)batch;
          g->b1[j] += d;
          for (int i = 0; i < kPixels; ++i) g->w1[j][i] += d * x[i];
        }
      }
      /* Layer by layer, last layer first, each as soon as it is final (here: after the batch;
       * a framework would do it per layer during backpropagation). */
      tutti_request_t r[4];
      CHECK(tutti_allreduce_async("w2.grad", g->w2, g->w2, kClasses * kHidden, TUTTI_FLOAT32,
                                  TUTTI_AVG, &r[0]));
      CHECK(tutti_allreduce_async("b2.grad", g->b2, g->b2, kClasses, TUTTI_FLOAT32, TUTTI_AVG,
                                  &r[1]));
      CHECK(tutti_allreduce_async("w1.grad", g->w1, g->w1, kHidden * kPixels, TUTTI_FLOAT32,
                                  TUTTI_AVG, &r[2]));
      CHECK(
          tutti_allreduce_async("b1.grad", g->b1, g->b1, kHidden, TUTTI_FLOAT32, TUTTI_AVG, &r[3]));
      for (int i = 0; i < 4; ++i) CHECK(tutti_wait(r[i]));
      float* w = (float*)m;
      const float* d = (const float*)g;
      for (size_t i = 0; i < sizeof(Model) / sizeof(float); ++i) w[i] -= lr * d[i];
    }
    float mean = (float)(epoch_loss / ((double)steps * batch));
    CHECK(tutti_allreduce(&mean, &loss, 1, TUTTI_FLOAT32, TUTTI_AVG));
    if (g_rank == 0) printf("epoch %d: training loss %.4f\n", epoch + 1, loss);
  }

  /* Every rank must hold the very same weights. */
  long long h = (long long)fnv(m, sizeof(Model)), lo = h, hi = h;
  CHECK(tutti_allreduce(&h, &lo, 1, TUTTI_INT64, TUTTI_MIN));
  CHECK(tutti_allreduce(&h, &hi, 1, TUTTI_INT64, TUTTI_MAX));
  tutti_engine_stats_t stats;
  tutti_comm_t world;
  CHECK(tutti_comm_world(&world));
  CHECK(tutti_comm_engine_stats(world, &stats));
  CHECK(tutti_comm_free(world));
  int ok = loss < target && lo == hi;
  if (g_rank == 0)
    printf(
        "final loss %.4f (target < %.2f); weights %s on all %d ranks; engine: %llu tensors in "
        "%llu collectives, %llu from the cache\n%s\n",
        loss, target, lo == hi ? "identical" : "DIFFER", size, stats.tensors, stats.collectives,
        stats.cache_hits, ok ? "ok: plain_sgd converged" : "FAIL: plain_sgd");
  free(pixels);
  free(labels);
  free(m);
  free(g);
  free(x);
  CHECK(tutti_finalize());
  return ok ? 0 : 1;
}
