/* The names the C fragments of the docs leave to the reader (doc_blocks.py compiles each
 * fragment marked <!-- doc-test: fragment --> inside a function after this header, -fsyntax-only:
 * nothing here is defined or run). A fragment that needs another name gets its declaration here. */
#ifndef TUTTI_DOCS_PRELUDE_H_
#define TUTTI_DOCS_PRELUDE_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tutti/tutti.h>

extern size_t n;  /* an element count */
extern float x[]; /* buffers of n floats */
extern float buf[];
extern float w2[];
extern int peer;         /* another rank */
extern tutti_comm_t set; /* a communicator: a process set */

#endif
