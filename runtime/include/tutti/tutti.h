/* tutti C API: collectives on raw buffers for any framework or plain C program.
 * Link with -ltutti. Every function returns 0 on success or a negative TUTTI_ERR_* code; the
 * message of the last failure on the calling thread is tutti_last_error(). No C++ exception crosses
 * this API. Collectives are synchronous and must be called by every rank in the same order with
 * matching count, dtype and op; the communicator may be used by one thread at a time. */
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
  TUTTI_UINT8 = 6,
  TUTTI_INT8 = 7,
  TUTTI_INT16 = 8,
  TUTTI_BOOL = 9 /* one byte, 0 or 1; sum/max = or, prod/min = and, bxor = xor; no avg */
} tutti_dtype_t;

typedef enum {
  TUTTI_SUM = 0,
  TUTTI_PROD = 1,
  TUTTI_MIN = 2,
  TUTTI_MAX = 3,
  TUTTI_AVG = 4,
  TUTTI_BAND = 5, /* bitwise: integer types and bool only */
  TUTTI_BOR = 6,
  TUTTI_BXOR = 7
} tutti_op_t;

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
  TUTTI_ERR_ABORTED = -10, /* the communicator was aborted (by a rank, or the launcher is gone) */
  TUTTI_ERR_DEVICE = -11   /* a CUDA or NCCL call failed, or no device/CUDA for a device buffer */
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
TUTTI_API int tutti_allreduce(const void* send, void* recv, size_t count, tutti_dtype_t dtype,
                              tutti_op_t op);
/* Every rank's buf (count elements) becomes root's. */
TUTTI_API int tutti_broadcast(void* buf, size_t count, tutti_dtype_t dtype, int root);
/* recv (size * count elements) = every rank's send (count elements) in rank order. */
TUTTI_API int tutti_allgather(const void* send, void* recv, size_t count, tutti_dtype_t dtype);
/* send holds size * recv_count elements; this rank gets the reduction of block `rank`. */
TUTTI_API int tutti_reduce_scatter(const void* send, void* recv, size_t recv_count,
                                   tutti_dtype_t dtype, tutti_op_t op);
TUTTI_API int tutti_barrier(void);
/* The world's forms of tutti_comm_reduce ... tutti_comm_alltoallv. */
TUTTI_API int tutti_reduce(const void* send, void* recv, size_t count, tutti_dtype_t dtype,
                           tutti_op_t op, int root);
TUTTI_API int tutti_gather(const void* send, void* recv, size_t count, tutti_dtype_t dtype,
                           int root);
TUTTI_API int tutti_gatherv(const void* send, void* recv, const size_t* counts, tutti_dtype_t dtype,
                            int root);
TUTTI_API int tutti_scatter(const void* send, void* recv, size_t count, tutti_dtype_t dtype,
                            int root);
TUTTI_API int tutti_scatterv(const void* send, void* recv, const size_t* counts,
                             tutti_dtype_t dtype, int root);
TUTTI_API int tutti_allgatherv(const void* send, void* recv, const size_t* counts,
                               tutti_dtype_t dtype);
TUTTI_API int tutti_reduce_scatterv(const void* send, void* recv, const size_t* counts,
                                    tutti_dtype_t dtype, tutti_op_t op);
TUTTI_API int tutti_alltoall(const void* send, void* recv, size_t count, tutti_dtype_t dtype);
TUTTI_API int tutti_alltoallv(const void* send, const size_t* send_counts, void* recv,
                              const size_t* recv_counts, tutti_dtype_t dtype);

TUTTI_API int tutti_cross_rank(void); /* index of this rank's host */
TUTTI_API int tutti_cross_size(void); /* number of hosts */

/* ---- Communicators ------------------------------------------------------------------------
 * A tutti_comm_t is a handle on a communicator: the world, or a split, group or dup of another.
 * Every handle a function returns is the caller's to tutti_comm_free (the communicator lives until
 * its last handle is freed; freeing the world's handle does not finalize). One thread uses a
 * communicator at a time; different communicators may be used from different threads at once. */
typedef struct tutti_comm* tutti_comm_t;
/* A posted point-to-point operation: complete it with tutti_wait (which frees it) or poll it with
 * tutti_test (which frees it once it reports completion), or drop it with tutti_request_free. */
typedef struct tutti_request* tutti_request_t;

TUTTI_API int tutti_comm_world(tutti_comm_t* out);
/* MPI_Comm_split: ranks with the same color form a communicator ordered by key; a negative color
 * gives *out = NULL. Every rank of comm calls it. */
TUTTI_API int tutti_comm_split(tutti_comm_t comm, int color, int key, tutti_comm_t* out);
/* Only the n listed ranks of comm call it; they form *out in the order listed. */
TUTTI_API int tutti_comm_group(tutti_comm_t comm, const int* ranks, int n, tutti_comm_t* out);
TUTTI_API int tutti_comm_dup(tutti_comm_t comm, tutti_comm_t* out);
/* The survivors go on: after a call failed because a peer died, every rank still alive calls it
 * and gets *out, a communicator of the ranks still here, renumbered in their order in comm
 * (Communicator::shrink in tutti.hpp; docs/ELASTIC.md). A live rank that calls it too late gets
 * TUTTI_ERR_TIMEOUT. comm stays broken; free it. */
TUTTI_API int tutti_comm_shrink(tutti_comm_t comm, tutti_comm_t* out);
TUTTI_API int tutti_comm_free(tutti_comm_t comm);
/* From any thread: every pending and later call on comm, on every rank, fails with
 * TUTTI_ERR_ABORTED naming this rank and the reason. Other communicators go on. */
TUTTI_API int tutti_comm_abort(tutti_comm_t comm, const char* reason);

/* Return the value, or a negative TUTTI_ERR_* code. */
TUTTI_API int tutti_comm_rank(tutti_comm_t comm);
TUTTI_API int tutti_comm_size(tutti_comm_t comm);
TUTTI_API int tutti_comm_local_rank(tutti_comm_t comm);
TUTTI_API int tutti_comm_local_size(tutti_comm_t comm);
TUTTI_API int tutti_comm_cross_rank(tutti_comm_t comm);
TUTTI_API int tutti_comm_cross_size(tutti_comm_t comm);

TUTTI_API int tutti_comm_allreduce(tutti_comm_t comm, const void* send, void* recv, size_t count,
                                   tutti_dtype_t dtype, tutti_op_t op);
/* allreduce with every input multiplied by prescale and the result by postscale, both inside the
 * reduce loops (sum or avg on floating types; else TUTTI_ERR_INVALID_ARGUMENT). */
TUTTI_API int tutti_comm_allreduce_scaled(tutti_comm_t comm, const void* send, void* recv,
                                          size_t count, tutti_dtype_t dtype, tutti_op_t op,
                                          double prescale, double postscale);
TUTTI_API int tutti_comm_broadcast(tutti_comm_t comm, void* buf, size_t count, tutti_dtype_t dtype,
                                   int root);
TUTTI_API int tutti_comm_allgather(tutti_comm_t comm, const void* send, void* recv, size_t count,
                                   tutti_dtype_t dtype);
TUTTI_API int tutti_comm_reduce_scatter(tutti_comm_t comm, const void* send, void* recv,
                                        size_t recv_count, tutti_dtype_t dtype, tutti_op_t op);
TUTTI_API int tutti_comm_barrier(tutti_comm_t comm);

/* The rest of the set (see the C++ header for each one's meaning). `counts`, `send_counts` and
 * `recv_counts` hold one entry per rank of comm, the same on every rank; a buffer only the root
 * uses may be NULL elsewhere. */
TUTTI_API int tutti_comm_reduce(tutti_comm_t comm, const void* send, void* recv, size_t count,
                                tutti_dtype_t dtype, tutti_op_t op, int root);
TUTTI_API int tutti_comm_gather(tutti_comm_t comm, const void* send, void* recv, size_t count,
                                tutti_dtype_t dtype, int root);
TUTTI_API int tutti_comm_gatherv(tutti_comm_t comm, const void* send, void* recv,
                                 const size_t* counts, tutti_dtype_t dtype, int root);
TUTTI_API int tutti_comm_scatter(tutti_comm_t comm, const void* send, void* recv, size_t count,
                                 tutti_dtype_t dtype, int root);
TUTTI_API int tutti_comm_scatterv(tutti_comm_t comm, const void* send, void* recv,
                                  const size_t* counts, tutti_dtype_t dtype, int root);
TUTTI_API int tutti_comm_allgatherv(tutti_comm_t comm, const void* send, void* recv,
                                    const size_t* counts, tutti_dtype_t dtype);
TUTTI_API int tutti_comm_reduce_scatterv(tutti_comm_t comm, const void* send, void* recv,
                                         const size_t* counts, tutti_dtype_t dtype, tutti_op_t op);
TUTTI_API int tutti_comm_alltoall(tutti_comm_t comm, const void* send, void* recv, size_t count,
                                  tutti_dtype_t dtype);
TUTTI_API int tutti_comm_alltoallv(tutti_comm_t comm, const void* send, const size_t* send_counts,
                                   void* recv, const size_t* recv_counts, tutti_dtype_t dtype);

/* Point-to-point: a message to peer with tag (0 .. 2^31-1) is received by the receive from this
 * rank with the same tag, in order; sizes must match (TUTTI_ERR_MISMATCH on both sides). */
TUTTI_API int tutti_comm_send(tutti_comm_t comm, const void* buf, size_t count, tutti_dtype_t dtype,
                              int peer, int tag);
TUTTI_API int tutti_comm_recv(tutti_comm_t comm, void* buf, size_t count, tutti_dtype_t dtype,
                              int peer, int tag);
TUTTI_API int tutti_comm_isend(tutti_comm_t comm, const void* buf, size_t count,
                               tutti_dtype_t dtype, int peer, int tag, tutti_request_t* request);
TUTTI_API int tutti_comm_irecv(tutti_comm_t comm, void* buf, size_t count, tutti_dtype_t dtype,
                               int peer, int tag, tutti_request_t* request);
/* *done = 1 once complete (the request is then freed), else 0. */
TUTTI_API int tutti_test(tutti_request_t request, int* done);
/* Waits for completion (the communicator's timeout) and frees the request, even on failure. */
TUTTI_API int tutti_wait(tutti_request_t request);
TUTTI_API int tutti_request_free(tutti_request_t request);

/* ---- Engine: asynchronous named collectives (Horovod's model) -----------------------------
 * Any thread enqueues a tensor by name and gets a request at once; the communicator's engine (a
 * background thread with a communicator of its own) agrees with the other ranks which names are
 * ready everywhere, fuses ready allreduces, runs them and finishes the requests. Ranks may enqueue
 * in different orders; every rank must enqueue every name (or join). A name may be reused once
 * its previous request finished. Buffers stay valid (and send unchanged) until then. Finish a
 * request with tutti_wait / tutti_wait_for / tutti_poll, or hand it to tutti_request_then.
 * A communicator is a process set: the tutti_comm_*_async forms run on its members only, with
 * an engine of its own; the first asynchronous call on a communicator is collective over it.
 * Settings: TUTTI_CYCLE_TIME, TUTTI_FUSION_THRESHOLD, TUTTI_CACHE_CAPACITY, TUTTI_STALL_WARNING,
 * TUTTI_STALL_TIMEOUT, TUTTI_TIMELINE (README). */
enum {
  TUTTI_PENDING = 1 /* tutti_wait_for: not finished yet; the request is still the caller's */
};

/* Called once when an operation finished: status 0 or a TUTTI_ERR_* code, and its message. */
typedef void (*tutti_callback_t)(int status, const char* message, void* user_data);

/* recv = op over ranks of send (count elements); prescale/postscale as tutti_comm_allreduce_scaled.
 */
TUTTI_API int tutti_comm_allreduce_async(tutti_comm_t comm, const char* name, const void* send,
                                         void* recv, size_t count, tutti_dtype_t dtype,
                                         tutti_op_t op, double prescale, double postscale,
                                         tutti_request_t* request);
/* Every rank's rows (row_count elements each; ranks may differ in rows) into recv, in rank order.
 * recv holds recv_capacity elements (too few: this rank's request fails, the others go on);
 * rows_per_rank (NULL or one entry per rank) receives how many rows each rank sent. */
TUTTI_API int tutti_comm_allgather_async(tutti_comm_t comm, const char* name, const void* send,
                                         size_t rows, size_t row_count, tutti_dtype_t dtype,
                                         void* recv, size_t recv_capacity, size_t* rows_per_rank,
                                         tutti_request_t* request);
TUTTI_API int tutti_comm_broadcast_async(tutti_comm_t comm, const char* name, void* buf,
                                         size_t count, tutti_dtype_t dtype, int root,
                                         tutti_request_t* request);
/* send holds size * recv_count elements; recv gets the reduction of block `rank`. */
TUTTI_API int tutti_comm_reduce_scatter_async(tutti_comm_t comm, const char* name, const void* send,
                                              void* recv, size_t recv_count, tutti_dtype_t dtype,
                                              tutti_op_t op, tutti_request_t* request);
/* send holds send_rows[p] rows (row_count elements each) for each rank p in order; recv (capacity
 * recv_capacity elements) gets the rows sent to this rank, in rank order; rows_per_rank as for
 * allgather. */
TUTTI_API int tutti_comm_alltoall_async(tutti_comm_t comm, const char* name, const void* send,
                                        const size_t* send_rows, size_t row_count,
                                        tutti_dtype_t dtype, void* recv, size_t recv_capacity,
                                        size_t* rows_per_rank, tutti_request_t* request);
TUTTI_API int tutti_comm_barrier_async(tutti_comm_t comm, tutti_request_t* request);
/* This rank has no more data: it takes part in the others' allreduce (with the op's identity),
 * allgather (no rows), broadcast (not as root) and barrier until every rank has joined; then the
 * request finishes and *last_joined (if not NULL) is the rank that joined last. */
TUTTI_API int tutti_comm_join_async(tutti_comm_t comm, int* last_joined, tutti_request_t* request);

/* The world's forms. */
TUTTI_API int tutti_allreduce_async(const char* name, const void* send, void* recv, size_t count,
                                    tutti_dtype_t dtype, tutti_op_t op, tutti_request_t* request);
TUTTI_API int tutti_allgather_async(const char* name, const void* send, size_t rows,
                                    size_t row_count, tutti_dtype_t dtype, void* recv,
                                    size_t recv_capacity, size_t* rows_per_rank,
                                    tutti_request_t* request);
TUTTI_API int tutti_broadcast_async(const char* name, void* buf, size_t count, tutti_dtype_t dtype,
                                    int root, tutti_request_t* request);
TUTTI_API int tutti_reduce_scatter_async(const char* name, const void* send, void* recv,
                                         size_t recv_count, tutti_dtype_t dtype, tutti_op_t op,
                                         tutti_request_t* request);
TUTTI_API int tutti_alltoall_async(const char* name, const void* send, const size_t* send_rows,
                                   size_t row_count, tutti_dtype_t dtype, void* recv,
                                   size_t recv_capacity, size_t* rows_per_rank,
                                   tutti_request_t* request);
TUTTI_API int tutti_barrier_async(tutti_request_t* request);
TUTTI_API int tutti_join_async(int* last_joined, tutti_request_t* request);

/* *done = 1 once finished; the request is then freed and its result returned (as tutti_test). */
TUTTI_API int tutti_poll(tutti_request_t request, int* done);
/* Waits up to timeout_ms: TUTTI_PENDING if it has not finished (the request stays the caller's),
 * else frees it and returns its result. */
TUTTI_API int tutti_wait_for(tutti_request_t request, long timeout_ms);
/* Takes the request: callback runs once when it finished (at once, on this thread, if it already
 * has; else on the engine's thread), then the request is freed. Engine requests only. */
TUTTI_API int tutti_request_then(tutti_request_t request, tutti_callback_t callback,
                                 void* user_data);

typedef struct {
  unsigned long long cycles;      /* negotiation cycles */
  unsigned long long tensors;     /* operations completed */
  unsigned long long collectives; /* data collectives run; a fused batch counts once */
  unsigned long long fused;       /* tensors that ran in a fused batch of two or more */
  unsigned long long cache_hits;  /* tensors negotiated by their response-cache bit alone */
  unsigned long long announced;   /* tensors this rank announced by name */
} tutti_engine_stats_t;
TUTTI_API int tutti_comm_engine_stats(tutti_comm_t comm, tutti_engine_stats_t* stats);

/* The engine timeline: Chrome trace JSON (chrome://tracing, Perfetto), one file per rank ("{rank}"
 * in path becomes the world rank; else ".rank<N>" goes before the extension). */
TUTTI_API int tutti_start_timeline(const char* path);
TUTTI_API int tutti_stop_timeline(void);

/* GPU buffers (a libtutti built with TUTTI_WITH_CUDA): every collective above that takes device
 * buffers (allreduce, broadcast, allgather, reduce_scatter, blocking or _async) finds them by
 * address. This thread's later calls on device buffers read their inputs after the work already
 * enqueued on `stream` (a cudaStream_t; NULL, the default, is the legacy default stream), and work
 * enqueued there after a blocking call sees its results. */
TUTTI_API int tutti_set_stream(void* stream);
/* Stream-ordered device calls, as NCCL's: with `on` non-zero, this thread's later blocking calls on
 * device buffers return once their work is enqueued on the stream (after the ranks agreed on the
 * host) instead of once it completed. What fails after the return (a peer died, NCCL's asynchronous
 * error, the call's timeout) is returned by the communicator's next device call,
 * tutti_comm_device_done or tutti_comm_device_wait. Host buffers are done when a call returns. */
TUTTI_API int tutti_set_enqueue_only(int on);
/* *done = 1 once every device call on `comm` that returned once enqueued completed, else 0 (never
 * blocks); _wait waits for them. Both return the error of one that failed. */
TUTTI_API int tutti_comm_device_done(tutti_comm_t comm, int* done);
TUTTI_API int tutti_comm_device_wait(tutti_comm_t comm);

/* Message of the last failed call on this thread ("" if none). Valid until the next call. */
TUTTI_API const char* tutti_last_error(void);
/* Short name of an error code ("TUTTI_ERR_TIMEOUT"). */
TUTTI_API const char* tutti_error_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_TUTTI_H_ */
