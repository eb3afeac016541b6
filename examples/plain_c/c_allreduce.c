/* A plain C program on libtutti: an int32 allreduce with every op (sum, prod, min, max, avg), then
 * a broadcast, an allgather and a reduce_scatter. Every element of every result is checked against
 * what the ranks' inputs say it must be; a wrong one is named on stderr. Errors come back as codes,
 * explained by tutti_last_error(). Exit status 0 only if every result is right.
 *
 *   tuttirun -np 3 -- tutti-c-allreduce */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tutti/tutti.h"

#define COUNT 4
/* The product over the ranks grows 24-fold every 4 ranks: exact in an int32 up to this many. */
#define MAX_RANKS_FOR_PROD 24

static void check(int rc, const char* what) {
  if (rc != 0) {
    fprintf(stderr, "%s failed: %s (%s)\n", what, tutti_error_name(rc), tutti_last_error());
    exit(1);
  }
}

/* What rank r contributes at index i: 1, 2, 3, 4 in turn, starting at 1 + i. The indices see
 * different values, so elements that trade places show up as wrong. */
static int32_t input(int r, int i) {
  return 1 + (r + i) % 4;
}

/* The op applied over every rank's input at index i, the way the reader would do it by hand. */
static int32_t expected(tutti_op_t op, int size, int i) {
  int32_t out = input(0, i);
  for (int r = 1; r < size; ++r) {
    int32_t v = input(r, i);
    if (op == TUTTI_SUM || op == TUTTI_AVG) out += v;
    if (op == TUTTI_PROD) out *= v;
    if (op == TUTTI_MIN && v < out) out = v;
    if (op == TUTTI_MAX && v > out) out = v;
  }
  return op == TUTTI_AVG ? out / size : out; /* integer avg: the sum divided once, truncated */
}

static int wrong = 0;

static void expect(const char* what, int index, int32_t got, int32_t want) {
  if (got != want) {
    fprintf(stderr, "rank %d: %s [%d] is %d, expected %d\n", tutti_rank(), what, index, (int)got,
            (int)want);
    ++wrong;
  }
}

int main(void) {
  check(tutti_init(), "tutti_init");
  int rank = tutti_rank(), size = tutti_size();

  int32_t send[COUNT], recv[COUNT];
  for (int i = 0; i < COUNT; ++i) send[i] = input(rank, i);
  const tutti_op_t ops[] = {TUTTI_SUM, TUTTI_PROD, TUTTI_MIN, TUTTI_MAX, TUTTI_AVG};
  const char* op_names[] = {"allreduce sum", "allreduce prod", "allreduce min", "allreduce max",
                            "allreduce avg"};
  for (int k = 0; k < 5; ++k) {
    check(tutti_allreduce(send, recv, COUNT, TUTTI_INT32, ops[k]), op_names[k]);
    if (ops[k] == TUTTI_PROD && size > MAX_RANKS_FOR_PROD) continue; /* overflowed: nothing exact */
    for (int i = 0; i < COUNT; ++i) expect(op_names[k], i, recv[i], expected(ops[k], size, i));
  }

  /* The last rank broadcasts 42, 43, ...; everyone else starts from -1. */
  const int root = size - 1;
  int32_t buf[COUNT];
  for (int i = 0; i < COUNT; ++i) buf[i] = rank == root ? 42 + i : -1;
  check(tutti_broadcast(buf, COUNT, TUTTI_INT32, root), "broadcast");
  for (int i = 0; i < COUNT; ++i) expect("broadcast", i, buf[i], 42 + i);

  /* Each rank gives its rank; everyone gets 0, 1, ..., size - 1. */
  int32_t mine = rank;
  int32_t* all = malloc(sizeof(int32_t) * (size_t)size);
  if (all == NULL) return 1;
  check(tutti_allgather(&mine, all, 1, TUTTI_INT32), "allgather");
  for (int r = 0; r < size; ++r) expect("allgather", r, all[r], r);

  /* Block b of every rank holds input(rank, b); rank b gets the sum of block b. */
  for (int b = 0; b < size; ++b) all[b] = input(rank, b);
  int32_t block = -1;
  check(tutti_reduce_scatter(all, &block, 1, TUTTI_INT32, TUTTI_SUM), "reduce_scatter");
  expect("reduce_scatter sum", 0, block, expected(TUTTI_SUM, size, rank));
  free(all);

  /* A bad argument is an error code, not a crash. */
  if (tutti_allreduce(NULL, recv, COUNT, TUTTI_INT32, TUTTI_SUM) != TUTTI_ERR_INVALID_ARGUMENT) {
    fprintf(stderr, "rank %d: allreduce from NULL did not return TUTTI_ERR_INVALID_ARGUMENT\n",
            rank);
    ++wrong;
  }

  check(tutti_barrier(), "barrier");
  printf("rank %d of %d: C API %s\n", rank, size, wrong == 0 ? "correct" : "WRONG");
  check(tutti_finalize(), "tutti_finalize");
  return wrong == 0 ? 0 : 1;
}
