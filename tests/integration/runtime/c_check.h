/* What the C checks share: the rank for messages, and CHECK / EXPECT, which print
 * "FAIL: rank R: ..." and return 1 from main. */
#ifndef TUTTI_TESTS_C_CHECK_H
#define TUTTI_TESTS_C_CHECK_H

#include <stdio.h>

#include "tutti/tutti.h"

static int g_rank = -1;

#define CHECK(call)                                                                       \
  do {                                                                                    \
    int rc_ = (call);                                                                     \
    if (rc_ < 0) {                                                                        \
      printf("FAIL: rank %d: %s returned %s: %s\n", g_rank, #call, tutti_error_name(rc_), \
             tutti_last_error());                                                         \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

#define EXPECT(cond, ...)                \
  do {                                   \
    if (!(cond)) {                       \
      printf("FAIL: rank %d: ", g_rank); \
      printf(__VA_ARGS__);               \
      printf("\n");                      \
      return 1;                          \
    }                                    \
  } while (0)

#endif
