/* tutti C API: collectives on raw buffers for any framework or plain C program.
 * Link with -ltutti. Every function returns 0 on success or a negative TUTTI_ERR_* code; the message
 * of the last failure on the calling thread is tutti_last_error(). No C++ exception crosses this API.
 * Collectives are synchronous and must be called by every rank in the same order with matching
 * count, dtype and op; the communicator may be used by one thread at a time. */
#ifndef TUTTI_TUTTI_H_
#define TUTTI_TUTTI_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TUTTI_API __attribute__((visibility("default")))
#else
#define TUTTI_API
#endif

typedef enum {
  TUTTI_FLOAT32 = 0,
  TUTTI_FLOAT64 = 1,
  TUTTI_FLOAT16 = 2,
  TUTTI_BFLOAT16 = 3,
  TUTTI_INT32 = 4,
  TUTTI_INT64 = 5,
  TUTTI_UINT8 = 6
} tutti_dtype_t;

typedef enum { TUTTI_SUM = 0, TUTTI_PROD = 1, TUTTI_MIN = 2, TUTTI_MAX = 3, TUTTI_AVG = 4 } tutti_op_t;

enum {
  TUTTI_OK = 0,
  TUTTI_ERR_INVALID_ARGUMENT = -1, /* bad pointer, dtype, op or root */
  TUTTI_ERR_NOT_INITIALIZED = -2,  /* tutti_init() not called, or already finalized */
  TUTTI_ERR_TIMEOUT = -3,          /* a deadline passed: a peer never arrived or stalled */
  TUTTI_ERR_PEER_FAILURE = -4,     /* a peer died, disconnected or aborted */
  TUTTI_ERR_MISMATCH = -5,         /* ranks called non-matching collectives */
  TUTTI_ERR_AUTH = -6,             /* wrong job token or protocol */
  TUTTI_ERR_SYSTEM = -7,           /* an OS call failed */
  TUTTI_ERR_CONFIG = -8,           /* bad TUTTI_* variable */
  TUTTI_ERR_INTERNAL = -9,         /* a bug in tutti: please report it */
  TUTTI_ERR_ABORTED = -10          /* the communicator was aborted (by a rank, or the launcher is gone) */
};

/* Joins the world described by the environment (tuttirun, Open MPI, torchrun/Kubeflow, Slurm, PMI).
 * Calling it again while initialized is a no-op that returns 0. */
TUTTI_API int tutti_init(void);
TUTTI_API int tutti_finalize(void);
TUTTI_API int tutti_initialized(void);

/* Return the value, or a negative TUTTI_ERR_* code when not initialized. */
TUTTI_API int tutti_rank(void);
TUTTI_API int tutti_size(void);
TUTTI_API int tutti_local_rank(void);
TUTTI_API int tutti_local_size(void);

/* recv = op over all ranks of send, count elements. send == recv means in place. */
TUTTI_API int tutti_allreduce(const void* send, void* recv, size_t count, tutti_dtype_t dtype, tutti_op_t op);
/* Every rank's buf (count elements) becomes root's. */
TUTTI_API int tutti_broadcast(void* buf, size_t count, tutti_dtype_t dtype, int root);
/* recv (size * count elements) = every rank's send (count elements) in rank order. */
TUTTI_API int tutti_allgather(const void* send, void* recv, size_t count, tutti_dtype_t dtype);
/* send holds size * recv_count elements; this rank gets the reduction of block `rank`. */
TUTTI_API int tutti_reduce_scatter(const void* send, void* recv, size_t recv_count, tutti_dtype_t dtype,
                                   tutti_op_t op);
TUTTI_API int tutti_barrier(void);

/* Message of the last failed call on this thread ("" if none). Valid until the next call. */
TUTTI_API const char* tutti_last_error(void);
/* Short name of an error code ("TUTTI_ERR_TIMEOUT"). */
TUTTI_API const char* tutti_error_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_TUTTI_H_ */
