/* c_comms_check: the C API's communicator handles from a plain C program: world, split, group
 * (and a rank it does not list), dup, collectives and point-to-point on them, abort, free. Prints
 * "c comms OK" on rank 0 and exits 0, or names the first failure and exits 1. */
#include <stdio.h>
#include <string.h>

#include "c_check.h"
#include "tutti/tutti.h"

int main(void) {
  CHECK(tutti_init());
  tutti_comm_t world = NULL, half = NULL, copy = NULL, group = NULL;
  CHECK(tutti_comm_world(&world));
  g_rank = tutti_comm_rank(world);
  const int size = tutti_comm_size(world);
  EXPECT(tutti_cross_size() >= 1 && tutti_cross_rank() >= 0, "cross rank/size");

  /* Even and odd ranks; the sum over each half. */
  CHECK(tutti_comm_split(world, g_rank % 2, g_rank, &half));
  double x = g_rank, want = 0;
  for (int r = g_rank % 2; r < size; r += 2) want += r;
  CHECK(tutti_comm_allreduce(half, &x, &x, 1, TUTTI_FLOAT64, TUTTI_SUM));
  EXPECT(x == want, "split sum %g, want %g", x, want);

  /* A negative color gives no communicator. */
  tutti_comm_t none = world;
  CHECK(tutti_comm_split(world, g_rank == 0 ? -1 : 0, 0, &none));
  EXPECT((g_rank == 0) == (none == NULL), "negative color");
  if (none) CHECK(tutti_comm_free(none));

  /* group of ranks 0 and size-1, listed backwards; other ranks get an error. */
  int listed[2] = {size - 1, 0};
  int rc = tutti_comm_group(world, listed, size > 1 ? 2 : 1, &group);
  if (g_rank == 0 || g_rank == size - 1) {
    EXPECT(rc == 0, "group: %s", tutti_last_error());
    EXPECT(tutti_comm_rank(group) == (g_rank == size - 1 ? 0 : 1) || size == 1, "group order");
    int v = 1;
    CHECK(tutti_comm_allreduce(group, &v, &v, 1, TUTTI_INT32, TUTTI_SUM));
    EXPECT(v == tutti_comm_size(group), "group sum %d", v);
    CHECK(tutti_comm_free(group));
  } else {
    EXPECT(rc == TUTTI_ERR_INVALID_ARGUMENT && strstr(tutti_last_error(), "not among"),
           "group by a rank it does not list: %d %s", rc, tutti_last_error());
  }

  /* Point-to-point around the ring, nonblocking. */
  if (size > 1) {
    int next = (g_rank + 1) % size, prev = (g_rank + size - 1) % size;
    long out = 1000 + g_rank, in = -1;
    tutti_request_t r_in, r_out;
    CHECK(tutti_comm_irecv(world, &in, 1, TUTTI_INT64, prev, 42, &r_in));
    CHECK(tutti_comm_isend(world, &out, 1, TUTTI_INT64, next, 42, &r_out));
    int done = 0;
    while (!done) CHECK(tutti_test(r_in, &done));
    CHECK(tutti_wait(r_out));
    EXPECT(in == 1000 + prev, "ring message %ld", in);
  }

  /* The rest of the set, each once with results checked; the world forms are the same calls. */
  {
    enum { kMax = 8 };
    size_t counts[kMax], rcounts[kMax];
    int total = 0;
    for (int r = 0; r < size; ++r) {
      counts[r] = (size_t)(r % 2 + 1); /* 1, 2, 1, 2, ... */
      total += r % 2 + 1;
    }
    const int root = size - 1;
    short all[3 * kMax], mine[2] = {(short)g_rank, (short)(100 + g_rank)};
    long sum = -1, one = g_rank + 1;
    CHECK(tutti_comm_reduce(world, &one, g_rank == root ? &sum : NULL, 1, TUTTI_INT64, TUTTI_SUM,
                            root));
    if (g_rank == root) EXPECT(sum == (long)size * (size + 1) / 2, "reduce %ld", sum);
    CHECK(tutti_gatherv(mine, g_rank == 0 ? all : NULL, counts, TUTTI_INT16, 0));
    if (g_rank == 0) {
      int at = 0;
      for (int r = 0; r < size; ++r) {
        EXPECT(all[at] == r, "gatherv block %d starts with %d", r, all[at]);
        if (counts[r] == 2) EXPECT(all[at + 1] == 100 + r, "gatherv block %d", r);
        at += (int)counts[r];
      }
    }
    memset(all, 0, sizeof all);
    CHECK(tutti_comm_allgatherv(world, mine, all, counts, TUTTI_INT16));
    EXPECT(total < 1 || all[total - (int)counts[size - 1]] == size - 1, "allgatherv last block");
    unsigned char bits = (unsigned char)(1u << (g_rank % 8)), orred = 0;
    CHECK(tutti_comm_allreduce(world, &bits, &orred, 1, TUTTI_UINT8, TUTTI_BOR));
    EXPECT(orred == (unsigned char)((1u << (size < 8 ? size : 8)) - 1), "bor %u", orred);
    EXPECT(tutti_comm_allreduce(world, &sum, &sum, 1, TUTTI_FLOAT64, TUTTI_BXOR) ==
               TUTTI_ERR_INVALID_ARGUMENT,
           "bxor on float64 must be refused");
    float fin[3] = {1, 2, 3}, fout[3];
    CHECK(tutti_comm_allreduce_scaled(world, fin, fout, 3, TUTTI_FLOAT32, TUTTI_SUM, 0.5, 4.0));
    for (int i = 0; i < 3; ++i)
      EXPECT(fout[i] == (float)(2 * size * (i + 1)), "scaled allreduce %d: %g", i, fout[i]);
    EXPECT(tutti_comm_allreduce_scaled(world, &one, &one, 1, TUTTI_INT64, TUTTI_SUM, 2, 1) ==
               TUTTI_ERR_INVALID_ARGUMENT,
           "a scale on int64 must be refused");
    int sendv[kMax], recvv[kMax];
    for (int p = 0; p < size; ++p) {
      sendv[p] = 100 * g_rank + p;
      rcounts[p] = 1;
    }
    CHECK(tutti_comm_alltoallv(world, sendv, rcounts, recvv, rcounts, TUTTI_INT32));
    for (int p = 0; p < size; ++p) EXPECT(recvv[p] == 100 * p + g_rank, "alltoallv from %d", p);
    EXPECT(tutti_comm_gatherv(world, mine, all, NULL, TUTTI_INT16, 0) == TUTTI_ERR_INVALID_ARGUMENT,
           "NULL counts must be refused");
  }

  /* Stream-ordered calls change nothing for host buffers (done when the call returns), and a
   * communicator with no device call in flight is done at once. */
  {
    CHECK(tutti_set_enqueue_only(1));
    int v = 1, done = -1;
    CHECK(tutti_comm_allreduce(world, &v, &v, 1, TUTTI_INT32, TUTTI_SUM));
    EXPECT(v == size, "enqueue-only allreduce of host buffers: %d, want %d", v, size);
    CHECK(tutti_comm_device_done(world, &done));
    EXPECT(done == 1, "device_done without device calls: %d", done);
    CHECK(tutti_comm_device_wait(world));
    EXPECT(tutti_comm_device_done(world, NULL) == TUTTI_ERR_INVALID_ARGUMENT, "NULL done");
    CHECK(tutti_set_enqueue_only(0));
  }

  /* Abort a dup: every rank's next call on it fails with TUTTI_ERR_ABORTED; the world goes on. */
  CHECK(tutti_comm_dup(world, &copy));
  if (g_rank == 0) CHECK(tutti_comm_abort(copy, "stopping the dup"));
  CHECK(tutti_comm_barrier(world));
  rc = tutti_comm_barrier(copy);
  EXPECT(rc == TUTTI_ERR_ABORTED && strstr(tutti_last_error(), "stopping the dup"),
         "aborted dup: %s %s", tutti_error_name(rc), tutti_last_error());
  CHECK(tutti_comm_free(copy));
  CHECK(tutti_comm_barrier(world));

  /* Bad handles are errors, not crashes. */
  EXPECT(tutti_comm_rank(NULL) == TUTTI_ERR_INVALID_ARGUMENT, "null handle");
  EXPECT(tutti_comm_split(world, 0, 0, NULL) == TUTTI_ERR_INVALID_ARGUMENT, "null output");
  EXPECT(tutti_wait(NULL) == TUTTI_ERR_INVALID_ARGUMENT, "null request");

  CHECK(tutti_comm_free(half));
  CHECK(tutti_comm_free(world));
  CHECK(tutti_finalize());
  if (g_rank == 0) printf("c comms OK\n");
  return 0;
}
